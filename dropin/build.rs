//! Compiles the drop-in's C++: the policy object once per libstdc++ string layout, and the
//! entry points. No LevelDB header or library is used (policy.cc says why).

use std::fmt::Write as _;
use std::path::PathBuf;

use object::{Object, ObjectSymbol};

/// The C++ flags every part shares.
fn cxx() -> cc::Build {
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        // Without type information the object names no C++ type of LevelDB's or ours, as
        // LevelDB built by its own CMake (-fno-rtti) does. typeid and dynamic_cast on the
        // drop-in's policy object are therefore not supported (docs/drop-in.md).
        .flag("-fno-rtti")
        // Only the entry points mark themselves as exported.
        .flag("-fvisibility=hidden")
        .include("../include")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true);
    build
}

/// The tail jump with which the entry points pass their caller's return address on to the
/// C++ bodies (lib.rs, `entry_points`), for the architectures that have one here: elsewhere
/// the drop-in builds without it and cannot tell a caller's string layout.
fn entry_jump() {
    println!("cargo::rustc-check-cfg=cfg(entry_jump)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let jump = match arch.as_str() {
        "x86_64" | "x86" => "jmp",
        "aarch64" | "arm" => "b",
        "s390x" => "jg",
        "riscv64" | "riscv32" => "tail",
        _ => return,
    };
    println!("cargo::rustc-cfg=entry_jump");
    println!("cargo::rustc-env=LEVELDB_BLOOM_DROPIN_JUMP={jump}");
}

fn main() {
    entry_jump();
    println!("cargo:rerun-if-changed=src/policy.cc");
    println!("cargo:rerun-if-changed=src/entry.cc");
    println!("cargo:rerun-if-changed=../include/leveldb_bloom.h");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // caller.rs names these constructors (StringAbi). What libstdc++ string functions the
    // policy objects import is written down for caller.rs: where the drop-in is linked into
    // the program itself, those imports are the drop-in's, not evidence of the program's
    // string.
    let mut own_imports = std::collections::BTreeSet::new();
    for (abi, cxx11) in [("cxx11_string", "1"), ("old_string", "0")] {
        let mut build = cxx();
        build
            .out_dir(out_dir.join(abi))
            .define("_GLIBCXX_USE_CXX11_ABI", cxx11)
            .define(
                "LEVELDB_BLOOM_DROPIN_NEW_POLICY",
                format!("leveldb_bloom_dropin_new_policy_{abi}").as_str(),
            )
            .file("src/policy.cc");
        for path in build.compile_intermediates() {
            let bytes = std::fs::read(&path).expect("the compiler's object file");
            let file = object::File::parse(&*bytes).expect("an object file");
            for symbol in file.symbols().filter(|s| s.is_undefined()) {
                let name = symbol.name().expect("a symbol name");
                if name.starts_with("_ZNSt7__cxx1112basic_string")
                    || name.starts_with("_ZNKSt7__cxx1112basic_string")
                    || name.starts_with("_ZNSs")
                    || name.starts_with("_ZNKSs")
                {
                    own_imports.insert(name.to_owned());
                }
            }
        }
        build.compile(&format!("leveldb_bloom_dropin_policy_{abi}"));
    }
    let mut list = String::from(
        "/// The libstdc++ string functions the drop-in's policy objects import (build.rs).\n\
         pub(crate) const OWN_STRING_IMPORTS: &[&[u8]] = &[\n",
    );
    for name in &own_imports {
        let _ = writeln!(list, "    b\"{name}\",");
    }
    list.push_str("];\n");
    std::fs::write(out_dir.join("own_string_imports.rs"), list).expect("OUT_DIR is writable");
    cxx()
        .out_dir(out_dir.join("entry"))
        .file("src/entry.cc")
        .compile("leveldb_bloom_dropin_entry");
    // Nothing may stay unresolved: the drop-in needs libstdc++ and libc, never a libleveldb
    // (a test checks its dependencies).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    // The entry points' calls into the library, and the library's own calls, bind to this
    // library's copy: another libleveldb_bloom earlier in the lookup order must not be handed
    // the drop-in's objects.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic-functions");
}
