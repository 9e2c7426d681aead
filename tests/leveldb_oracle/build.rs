//! Compiles the oracle: LevelDB's own `Table` reading and writing (`src/table_oracle.cc`,
//! over `cpp_tests/support`), against the installed LevelDB.

fn main() {
    println!("cargo:rerun-if-changed=src/table_oracle.cc");
    println!("cargo:rerun-if-changed=../../cpp_tests/support/support.h");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("src/table_oracle.cc")
        .include("../../cpp_tests/support")
        .include("../../include")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("leveldb_table_oracle");
    println!("cargo:rustc-link-lib=dylib=leveldb");
}
