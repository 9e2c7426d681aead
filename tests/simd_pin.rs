//! `LEVELDB_BLOOM_SIMD` (src/cpu.rs): under each value, in a child process of its own (the
//! choice is read once per process), the same filters give the same answers, Bloom (LevelDB's
//! bytes, built and batch-queried in AVX2 lanes where the processor has it) and compact
//! (built and queried by a version per instruction-set level); a value that is not one gets
//! one line on standard error and changes nothing else.

mod common;

use leveldb_bloom::{BloomPolicy, CompactPolicy, FilterPolicy};

const CHILD: &str = "child_builds_and_answers";

/// Runs the ignored test `CHILD` of this binary with `LEVELDB_BLOOM_SIMD` set to `value`;
/// returns the digest of its answers and its standard error.
fn run_child(value: &str) -> (String, String) {
    let out = common::this_test_binary()
        .args([
            CHILD,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LEVELDB_BLOOM_SIMD", value)
        .output()
        .expect("run the child test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "LEVELDB_BLOOM_SIMD={value:?}: {}\n{stdout}\n{stderr}",
        out.status
    );
    let digest = stdout
        .lines()
        .find_map(|line| line.split_once("answers: ")?.1.split_whitespace().next())
        .expect("the child prints its answers")
        .to_owned();
    (digest, stderr)
}

#[test]
fn every_value_builds_and_answers_alike() {
    let (auto, _) = run_child("auto");
    for value in ["", "portable", "popcnt", "avx2", "avx512"] {
        let (digest, stderr) = run_child(value);
        assert!(
            !stderr.contains("LEVELDB_BLOOM_SIMD"),
            "{value:?}: {stderr}"
        );
        assert_eq!(digest, auto, "{value:?}");
    }
}

#[test]
fn an_invalid_value_is_said_once_and_changes_nothing() {
    let (auto, _) = run_child("auto");
    let (digest, stderr) = run_child("avx1024-please");
    assert_eq!(digest, auto);
    let said = stderr.matches("LEVELDB_BLOOM_SIMD").count();
    assert_eq!(said, 1, "{stderr}");
    assert!(stderr.contains("using auto"), "{stderr}");
}

#[test]
#[ignore = "started by the tests above, with LEVELDB_BLOOM_SIMD set"]
fn child_builds_and_answers() {
    // LevelDB 1.23's bytes (tests/vectors/leveldb_filters.json, "hello_world" at 10 bits per
    // key), and no false negative around the 8-key groups of the lanes: every group size
    // around 8.
    let policy = BloomPolicy::new(10).unwrap();
    let mut filter = Vec::new();
    policy
        .create_filter(["hello", "world"], &mut filter)
        .unwrap();
    assert_eq!(
        filter,
        [0x11, 0x40, 0x00, 0x41, 0x44, 0x10, 0x40, 0x10, 0x06]
    );
    let keys: Vec<Vec<u8>> = (0..100u32)
        .map(|i| i.to_le_bytes().repeat(1 + i as usize % 5))
        .collect();
    for n in [7, 8, 9, 16, 100] {
        let mut filter = Vec::new();
        policy.create_filter(&keys[..n], &mut filter).unwrap();
        let mut results = vec![false; n];
        policy.keys_may_match(keys[..n].iter().map(Vec::as_slice), &filter, &mut results);
        assert!(results.iter().all(|&r| r), "{n} keys");
        for key in &keys[..n] {
            assert!(policy.key_may_match(key, &filter));
        }
    }
    // Bloom filters built and batch-queried eight keys at a time where the processor has
    // AVX2 (src/bloom/lanes.rs): the filters' bytes and every batch answer, keys of one length
    // and of mixed lengths.
    let mut answers = String::new();
    let absent: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| i.wrapping_mul(0x85eb_ca6b).to_le_bytes().repeat(4))
        .collect();
    for keys in [&keys, &absent[1000..]] {
        for n in [7, 8, 9, 16, 100, 1000] {
            let keys = &keys[..n.min(keys.len())];
            let mut filter = Vec::new();
            policy.create_filter(keys, &mut filter).unwrap();
            answers.extend(filter.iter().map(|b| format!("{b:02x}")));
            let mut results = vec![false; absent.len()];
            policy.keys_may_match(absent.iter().map(Vec::as_slice), &filter, &mut results);
            answers.extend(results.iter().map(|&r| if r { '1' } else { '0' }));
        }
    }
    // Compact filters (built and queried by a version per level): their bytes and every
    // answer.
    for bits_per_key in [6.0, 10.0, 16.0] {
        let compact = CompactPolicy::new(bits_per_key).unwrap();
        let mut filter = Vec::new();
        compact.create_filter(&keys, &mut filter).unwrap();
        answers.extend(filter.iter().map(|b| format!("{b:02x}")));
        for i in 0..3000u32 {
            let key = i
                .wrapping_mul(0x9e37_79b9)
                .to_le_bytes()
                .repeat(1 + i as usize % 7);
            answers.push(if compact.key_may_match(&key, &filter) {
                '1'
            } else {
                '0'
            });
        }
        assert!(keys.iter().all(|key| compact.key_may_match(key, &filter)));
    }
    println!("answers: {answers}");
}
