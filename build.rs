//! Tells the tests which instruction-set levels (`src/cpu.rs`) the processor building them
//! has.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    processor_levels();
}

/// `leveldb_bloom_test_popcnt`, `leveldb_bloom_test_avx2` and `leveldb_bloom_test_avx512`
/// where the processor building an
/// x86-64 library has those levels: tests of a level it lacks are ignored with that reason,
/// rather than passing without running (a test checks the cfg against the processor the
/// tests run on). Under Miri, which reports the instructions the build enables rather than
/// the processor's, the levels are those the target features give.
fn processor_levels() {
    println!("cargo::rustc-check-cfg=cfg(leveldb_bloom_test_popcnt)");
    println!("cargo::rustc-check-cfg=cfg(leveldb_bloom_test_avx2)");
    println!("cargo::rustc-check-cfg=cfg(leveldb_bloom_test_avx512)");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        return;
    }
    let features: Vec<String> = if env::var_os("CARGO_CFG_MIRI").is_some() {
        let enabled = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
        enabled.split(',').map(str::to_owned).collect()
    } else {
        host_features()
    };
    let has = |feature: &str| features.iter().any(|f| f == feature);
    if has("popcnt") {
        println!("cargo::rustc-cfg=leveldb_bloom_test_popcnt");
    }
    if ["avx2", "bmi1", "bmi2", "popcnt"].into_iter().all(has) {
        println!("cargo::rustc-cfg=leveldb_bloom_test_avx2");
        let avx512 = [
            "avx512f",
            "avx512dq",
            "avx512bw",
            "avx512vl",
            "avx512vbmi",
            "avx512vpopcntdq",
        ];
        if avx512.into_iter().all(has) {
            println!("cargo::rustc-cfg=leveldb_bloom_test_avx512");
        }
    }
}

/// Which of the features the levels need the processor running the build has.
fn host_features() -> Vec<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let found = [
            ("popcnt", has!("popcnt")),
            ("avx2", has!("avx2")),
            ("bmi1", has!("bmi1")),
            ("bmi2", has!("bmi2")),
            ("avx512f", has!("avx512f")),
            ("avx512dq", has!("avx512dq")),
            ("avx512bw", has!("avx512bw")),
            ("avx512vl", has!("avx512vl")),
            ("avx512vbmi", has!("avx512vbmi")),
            ("avx512vpopcntdq", has!("avx512vpopcntdq")),
        ];
        found
            .into_iter()
            .filter(|&(_, has)| has)
            .map(|(f, _)| f.to_owned())
            .collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    Vec::new()
}
