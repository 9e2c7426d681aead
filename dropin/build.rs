//! Compiles the C++ shim against LevelDB's installed headers (`leveldb/filter_policy.h`).

fn main() {
    println!("cargo:rerun-if-changed=src/shim.cc");
    println!("cargo:rerun-if-changed=../include/leveldb_bloom.h");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("src/shim.cc")
        // Without type information the shim's class names none of its base's either, so it
        // links with LevelDB built by its own CMake (-fno-rtti), which emits none, as with
        // Debian's (RTTI on). typeid and dynamic_cast on the drop-in's policy object are
        // therefore not supported (docs/drop-in.md).
        .flag("-fno-rtti")
        .include("../include")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("leveldb_bloom_dropin_shim");
    // The shim's class derives from leveldb::FilterPolicy (its destructor lives in
    // libleveldb): the shared drop-in must name libleveldb as a dependency, or preloading
    // it into a process without LevelDB fails. `-z defs` turns any such gap into a link error.
    println!("cargo:rustc-link-lib=dylib=leveldb");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    // The shim's calls into the C API, and the library's own calls, bind to this library's
    // copy of it: another libleveldb_bloom earlier in the lookup order must not be handed
    // the drop-in's objects.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic-functions");
}
