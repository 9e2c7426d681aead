//! Generates the C header from this crate's source into `OUT_DIR` (the committed copy,
//! `include/leveldb_bloom.h` at the top of the repository, is checked against it by
//! `tests/header.rs`).

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");

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
