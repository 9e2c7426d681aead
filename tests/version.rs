//! The version is written once, in the workspace's Cargo.toml (the crates inherit it, CMake
//! reads it). The Python and Go packages are built without that file and carry copies:
//! each must equal it.

use std::path::Path;

/// The text between `before` and the next `"` in the file at `path` (relative to the
/// repository).
fn quoted_after(path: &str, before: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = text
        .find(before)
        .unwrap_or_else(|| panic!("{path} has no {before:?}"))
        + before.len();
    let len = text[start..].find('"').expect("a closing quote");
    text[start..start + len].to_owned()
}

#[test]
fn every_copy_of_the_version_is_the_crate_s() {
    let version = env!("CARGO_PKG_VERSION");
    for (path, before) in [
        ("bindings/python/pyproject.toml", "\nversion = \""),
        (
            "bindings/python/leveldb_bloom/__init__.py",
            "__version__ = \"",
        ),
        (
            "bindings/python/leveldb_bloom/_native.py",
            "EXPECTED_VERSION = \"",
        ),
        ("bindings/go/leveldbbloom.go", "const PackageVersion = \""),
    ] {
        assert_eq!(quoted_after(path, before), version, "{path}");
    }
    // The header's numbers, which cbindgen writes from the crate's.
    let header = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include/leveldb_bloom.h"),
    )
    .unwrap();
    let parts: Vec<&str> = version.split('.').collect();
    for (name, part) in ["MAJOR", "MINOR", "PATCH"].iter().zip(parts) {
        let line = format!("#define LEVELDB_BLOOM_VERSION_{name} {part}\n");
        assert!(header.contains(&line), "the header lacks {line:?}");
    }
}
