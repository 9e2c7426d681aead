//! Compiles the drop-in's C++: the policy object once per libstdc++ string layout, and the
//! entry points. No LevelDB header or library is used (policy.cc says why).

use std::path::PathBuf;

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

fn main() {
    println!("cargo:rerun-if-changed=src/policy.cc");
    println!("cargo:rerun-if-changed=src/entry.cc");
    println!("cargo:rerun-if-changed=../include/leveldb_bloom.h");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // caller.rs names these constructors (StringAbi).
    for (abi, cxx11) in [("cxx11_string", "1"), ("old_string", "0")] {
        cxx()
            .out_dir(out_dir.join(abi))
            .define("_GLIBCXX_USE_CXX11_ABI", cxx11)
            .define(
                "LEVELDB_BLOOM_DROPIN_NEW_POLICY",
                format!("leveldb_bloom_dropin_new_policy_{abi}").as_str(),
            )
            .file("src/policy.cc")
            .compile(&format!("leveldb_bloom_dropin_policy_{abi}"));
    }
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
