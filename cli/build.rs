//! Links LevelDB as the drop-in does (`upgrade` calls its C API), and compiles the test
//! oracle: LevelDB's own `Table` iteration (`tests/support/table_oracle.cc`, over
//! `cpp_tests/support`), which only the tests call.

fn main() {
    println!("cargo:rerun-if-changed=tests/support/table_oracle.cc");
    println!("cargo:rerun-if-changed=../cpp_tests/support/support.h");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("tests/support/table_oracle.cc")
        .include("../cpp_tests/support")
        .include("../include")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("leveldb_bloom_table_oracle");
    println!("cargo:rustc-link-lib=dylib=leveldb");
}
