//! Compiles the drop-in's C++: the policy object once, and (outside Windows) the string code
//! once per libstdc++ string layout. No LevelDB header or library is used (policy.cc says
//! why).

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
    cxx()
        .out_dir(out_dir.join("policy"))
        .file("src/policy.cc")
        .compile("leveldb_bloom_dropin_policy");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows") {
        return;
    }
    // Each layout's string code, for the static route's one case (string_ops.cc).
    for layout in ["cxx11", "old"] {
        cxx()
            .out_dir(out_dir.join(layout))
            .define(
                "_GLIBCXX_USE_CXX11_ABI",
                if layout == "cxx11" { "1" } else { "0" },
            )
            .define("LEVELDB_BLOOM_DROPIN_LAYOUT", layout)
            .file("src/string_ops.cc")
            .compile(&format!("leveldb_bloom_dropin_string_ops_{layout}"));
    }
    // Nothing may stay unresolved: the drop-in needs libstdc++ and libc, never a libleveldb
    // (a test checks its dependencies).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    // The policy's calls into the library, and the library's own calls, bind to this
    // library's copy: another libleveldb_bloom earlier in the lookup order must not be handed
    // the drop-in's objects.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic-functions");
}
