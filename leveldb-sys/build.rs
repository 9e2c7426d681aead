//! Generates Rust bindings for LevelDB's C API (`leveldb/c.h`) with bindgen and links
//! `libleveldb`. Needs LevelDB's headers (Debian: libleveldb-dev) and libclang (libclang-dev).
//! `LEVELDB_INCLUDE_DIR` overrides the directory holding `leveldb/c.h` (default /usr/include),
//! `LEVELDB_LIB_DIR` adds a directory to search for the library.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-env-changed=LEVELDB_INCLUDE_DIR");
    println!("cargo::rerun-if-env-changed=LEVELDB_LIB_DIR");
    let include_dir = env::var_os("LEVELDB_INCLUDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/include"));
    let header = include_dir.join("leveldb/c.h");
    if !header.is_file() {
        panic!(
            "{} not found: install LevelDB's headers (Debian: libleveldb-dev) \
             or set LEVELDB_INCLUDE_DIR",
            header.display()
        );
    }

    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_arg(format!("-I{}", include_dir.display()))
        .allowlist_item("leveldb_.*")
        .rust_target(bindgen::RustTarget::stable(85, 0).expect("a Rust version bindgen knows"))
        .rust_edition(bindgen::RustEdition::Edition2024)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .unwrap_or_else(|e| panic!("bindgen on {}: {e}", header.display()));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("leveldb_c.rs"))
        .expect("write leveldb_c.rs");

    if let Some(dir) = env::var_os("LEVELDB_LIB_DIR") {
        println!(
            "cargo::rustc-link-search=native={}",
            PathBuf::from(dir).display()
        );
    }
    println!("cargo::rustc-link-lib=leveldb");
}
