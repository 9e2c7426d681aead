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
/// tests run on). Under Miri, which reports the instructions the build enables rather than
/// the processor's, the levels are those the target features give.
fn processor_levels() {
    println!("cargo::rustc-check-cfg=cfg(leveldb_bloom_test_popcnt)");
    println!("cargo::rustc-check-cfg=cfg(leveldb_bloom_test_avx2)");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        return;
    }
    let has: Box<dyn Fn(&str) -> bool> = if env::var_os("CARGO_CFG_MIRI").is_some() {
        let enabled = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
        Box::new(move |feature| enabled.split(',').any(|f| f == feature))
    } else {
        Box::new(host_has)
    };
    if has("popcnt") {
        println!("cargo::rustc-cfg=leveldb_bloom_test_popcnt");
    }
    if ["avx2", "bmi1", "bmi2", "popcnt"].iter().all(|f| has(f)) {
        println!("cargo::rustc-cfg=leveldb_bloom_test_avx2");
    }
}

/// Whether the processor running the build has `feature`.
fn host_has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        match feature {
            "popcnt" => has!("popcnt"),
            "avx2" => has!("avx2"),
            "bmi1" => has!("bmi1"),
            "bmi2" => has!("bmi2"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}
