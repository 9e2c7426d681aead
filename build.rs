//! Tells the tests which instruction-set levels (`src/cpu.rs`) the processor building them
//! has.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    processor_levels();
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
