//! Compiles the drop-in's C++: the policy object once, and (outside Windows, where the drop-in
//! never writes a string itself) the string code once per libstdc++ string layout. No LevelDB
//! header or library is used (policy.cc says why).

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
        // The Rust code exports what the library exports.
        .flag("-fvisibility=hidden")
        .include("../include")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true);
    build
}

fn main() {
    println!("cargo:rerun-if-changed=src/policy.cc");
    println!("cargo:rerun-if-changed=src/string_ops.cc");
    println!("cargo:rerun-if-changed=../include/leveldb_bloom.h");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let policy = || {
        cxx()
            .out_dir(out_dir.join("policy"))
            .file("src/policy.cc")
            .compile("leveldb_bloom_dropin_policy")
    };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows") {
        policy();
        return;
    }
    // Each layout's string code; what libstdc++ string functions it imports is written down
    // for owner.rs: where the drop-in is linked into the program itself, those imports are
    // the drop-in's, not evidence of the program's string.
    let mut own_imports = std::collections::BTreeSet::new();
    for layout in ["cxx11", "old"] {
        let mut build = cxx();
        build
            .out_dir(out_dir.join(layout))
            .define(
                "_GLIBCXX_USE_CXX11_ABI",
                if layout == "cxx11" { "1" } else { "0" },
            )
            .define("LEVELDB_BLOOM_DROPIN_LAYOUT", layout)
            .file("src/string_ops.cc");
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
        build.compile(&format!("leveldb_bloom_dropin_string_ops_{layout}"));
    }
    let mut list = String::from(
        "/// The libstdc++ string functions the drop-in's string code imports (build.rs).\n\
         pub(crate) const OWN_STRING_IMPORTS: &[&[u8]] = &[\n",
    );
    for name in &own_imports {
        let _ = writeln!(list, "    b\"{name}\",");
    }
    list.push_str("];\n");
    std::fs::write(out_dir.join("own_string_imports.rs"), list).expect("OUT_DIR is writable");
    policy();
    // Nothing may stay unresolved: the drop-in needs libstdc++ and libc, never a libleveldb
    // (a test checks its dependencies).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    // The policy's calls into the library, and the library's own calls, bind to this
    // library's copy: another libleveldb_bloom earlier in the lookup order must not be handed
    // the drop-in's objects.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic-functions");
}
