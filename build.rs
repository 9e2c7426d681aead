//! Generates the C header from the `ffi` module into `OUT_DIR` (the committed copy in
//! `include/` is checked against it by `tests/header.rs`), and tells the tests which
//! instruction-set levels (`src/cpu.rs`) the processor building them has.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");
    processor_levels();

    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("leveldb_bloom.h");
    let version = |part: &str| env::var(format!("CARGO_PKG_VERSION_{part}")).unwrap();
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is readable");
    let version_macros = format!(
        "\n/* The version of the library this header belongs to; leveldb_bloom_version() returns\n \
         * the library's, to detect a mismatch at run time. */\n\
         #define LEVELDB_BLOOM_VERSION_MAJOR {}\n\
         #define LEVELDB_BLOOM_VERSION_MINOR {}\n\
         #define LEVELDB_BLOOM_VERSION_PATCH {}\n\
         #define LEVELDB_BLOOM_VERSION \"{}\"\n",
        version("MAJOR"),
        version("MINOR"),
        version("PATCH"),
        env::var("CARGO_PKG_VERSION").unwrap(),
    );
    config.after_includes = Some(config.after_includes.unwrap_or_default() + &version_macros);
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write_to_file(&out);
}

/// `leveldb_bloom_test_popcnt` and `leveldb_bloom_test_avx2` where the processor building an
/// x86-64 library has those levels: tests of a level it lacks are ignored with that reason,
/// rather than passing without running (a test checks the cfg against the processor the
/// tests run on).
fn processor_levels() {
    println!("cargo::rustc-check-cfg=cfg(leveldb_bloom_test_popcnt)");
    println!("cargo::rustc-check-cfg=cfg(leveldb_bloom_test_avx2)");
    #[cfg(target_arch = "x86_64")]
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        use std::arch::is_x86_feature_detected as has;
        if has!("popcnt") {
            println!("cargo::rustc-cfg=leveldb_bloom_test_popcnt");
        }
        if has!("avx2") && has!("bmi1") && has!("bmi2") && has!("popcnt") {
            println!("cargo::rustc-cfg=leveldb_bloom_test_avx2");
        }
    }
}
