//! The compact query against a second decoder written from `docs/compact-format.md` alone,
//! bit by bit and without any of the library's shortcuts (windows, branch-free reads,
//! unrolled columns, code compiled per processor): on well-formed filters of every size, and
//! on filters with flipped bits, cut short, or made of random bytes, where the document's
//! rules decide the answer. The key hash is `XXH3_64bits` from the `xxhash-rust` crate
//! (`cpp_tests/xxh3_test.cc` predicts the library's answers from Debian's libxxhash).

mod common;

use common::random_bytes;
use leveldb_bloom::compact::is_compact;
use leveldb_bloom::{CompactPolicy, FilterPolicy};
use xxhash_rust::xxh3::xxh3_64;

/// The query on a filter ending in 31, as `docs/compact-format.md` ("Layout", "A key's
/// equations", "Query") states it.
fn documented_may_match(key: &[u8], filter: &[u8]) -> bool {
    let t = if filter.len() < 48 { 2 } else { 3 };
    if filter.len() < t {
        return true;
    }
    let payload = &filter[..filter.len() - t];
    let v = if t == 2 {
        u64::from(filter[filter.len() - 2])
    } else {
        u64::from(filter[filter.len() - 3]) + 256 * u64::from(filter[filter.len() - 2])
    };
    let p = 8 * payload.len() as u64;
    let r = v % 32 + 1;
    let seed = (v / 32) % 4;
    let share = if t == 2 { 2 } else { (v / 128) % 4 };
    let m0 = p / r;
    let m = if t == 2 {
        let less = v / 128;
        m0 - less * m0.min((m0 / 16).max(1))
    } else {
        let trim = v / 512;
        m0 - (u128::from(m0) * u128::from(trim) / 512) as u64
    };
    if m == 0 {
        return true;
    }
    let e = p - r * m;
    let widest = if filter.len() >= 2048 { 120 } else { 57 };
    let w = m.min(widest);
    let we = e.clamp(1, widest);
    let hi = |x: u64, y: u64| ((u128::from(x) * u128::from(y)) >> 64) as u64;
    let h = xxh3_64(key);
    let a = (h ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xd6e8_feb8_6659_fd93);
    // The top `width` bits of `(x * 0xbf58476d1ce4e5b9) * 2^64 + x * 0xc2b2ae3d27d4eb4f`.
    let coefficients_of = |x: u64, width: u64| {
        let bits = u128::from(x.wrapping_mul(0xbf58_476d_1ce4_e5b9)) << 64
            | u128::from(x.wrapping_mul(0xc2b2_ae3d_27d4_eb4f));
        (bits >> (128 - width)) | 1
    };
    let start = hi(a, m - w + 1);
    let coefficients = coefficients_of(a, w);
    let big_r = a.wrapping_mul(0x94d0_49bb_1331_11eb);
    let result = big_r >> (64 - r);
    let extra_result = big_r >> 31 & 1;
    let s = [16u128, 14, 12, 8][share as usize];
    let held = u128::from(big_r % (1 << 31)) * u128::from(m) < u128::from(e) * s * (1 << 27);
    let g = a.wrapping_mul(0xff51_afd7_ed55_8ccd);
    let extra_start = hi(g, e.max(1) - we + 1);
    let extra_coefficients = coefficients_of(g, we);
    let bit = |j: u64| u64::from(payload[(j / 8) as usize] >> (j % 8) & 1);
    let parity = |from: u64, coefficients: u128, width: u64| {
        (0..width)
            .filter(|i| coefficients >> i & 1 == 1)
            .fold(0, |acc, i| acc ^ bit(from + i))
    };
    let main = (0..r).all(|j| parity(j * m + start, coefficients, w) == result >> j & 1);
    let extra = !held || parity(r * m + extra_start, extra_coefficients, we) == extra_result;
    main && extra
}

/// Asks `filter` about `keys` both ways; returns how many answered "may match".
fn compare(filter: &[u8], keys: &[Vec<u8>], what: &str) -> u64 {
    assert!(is_compact(filter));
    let policy = CompactPolicy::new(10.0).unwrap();
    let mut hits = 0;
    for key in keys {
        let want = documented_may_match(key, filter);
        assert_eq!(
            policy.key_may_match(key, filter),
            want,
            "{what}: filter {filter:02x?}, key {key:02x?}"
        );
        hits += u64::from(want);
    }
    hits
}

#[test]
fn well_formed_filters_answer_as_documented() {
    let mut rng = fastrand::Rng::with_seed(20250123);
    let (mut queries, mut hits) = (0u64, 0u64);
    // Under Miri, which interprets each instruction, a sample of the settings and sizes:
    // one key and narrow filters. Wide filters under Miri are the library's own tests'
    // (`compact::ribbon::tests` builds one and asks it at the highest level and at the
    // portable one): a wide build here, the costliest step of this file under Miri, would
    // add no path.
    let (settings, counts, least): (Vec<f64>, Vec<usize>, u64) = if cfg!(miri) {
        (vec![3.0, 10.0, 32.0], vec![1, 7, 65], 200)
    } else {
        let settings = vec![3.0, 3.5, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0];
        let counts = (1..=40)
            .chain([50, 64, 65, 100, 200, 300, 1000, 3000])
            .collect();
        (settings, counts, 100_000)
    };
    for bits_per_key in settings {
        let policy = CompactPolicy::new(bits_per_key).unwrap();
        // Narrow filters, and wide ones (2,048 bytes or more) from 600 keys at 32 bits per key.
        for &n in &counts {
            let keys: Vec<Vec<u8>> = (0..n).map(|_| random_bytes(&mut rng, 1..25)).collect();
            let mut filter = Vec::new();
            policy.create_filter(&keys, &mut filter).unwrap();
            assert!(is_compact(&filter), "bpk {bits_per_key}, {n} keys");
            // Under Miri, which interprets each instruction, forty of the keys.
            let present = if cfg!(miri) { 40 } else { n };
            let mut probes: Vec<Vec<u8>> = keys.iter().take(present).cloned().collect();
            let absent = if cfg!(miri) { 20 } else { 200 };
            probes.extend((0..absent).map(|_| random_bytes(&mut rng, 16..17)));
            hits += compare(&filter, &probes, &format!("bpk {bits_per_key}, {n} keys"));
            queries += probes.len() as u64;
        }
    }
    println!("compact_spec: {queries} queries on well-formed filters, {hits} may match");
    assert!(queries > least);
}

#[test]
fn malformed_filters_answer_as_documented() {
    let mut rng = fastrand::Rng::with_seed(7);
    let policy = CompactPolicy::new(10.0).unwrap();
    let few_result_bits = CompactPolicy::new(4.0).unwrap();
    let mut queries = 0u64;
    // Under Miri, which interprets each instruction, ten rounds (each case once) of fewer keys.
    let (rounds, most_keys) = if cfg!(miri) { (10, 40) } else { (6000, 150) };
    for round in 0..rounds {
        let n = rng.usize(..most_keys);
        let keys: Vec<Vec<u8>> = (0..n).map(|_| random_bytes(&mut rng, 8..9)).collect();
        let mut filter = Vec::new();
        if round % 2 == 0 {
            &policy
        } else {
            &few_result_bits
        }
        .create_filter(&keys, &mut filter)
        .unwrap();
        match round % 5 {
            // A few flipped bits anywhere but the last byte.
            0 | 1 => {
                for _ in 0..rng.usize(1..5) {
                    let at = rng.usize(..filter.len() - 1);
                    filter[at] ^= 1 << rng.u32(..8);
                }
            }
            // Cut short, last byte kept.
            2 => {
                filter.truncate(rng.usize(1..filter.len()));
                filter.push(31);
            }
            // Random bytes of every small length, both forms; every tenth round, lengths either
            // side of the wide form's.
            3 if round % 10 == 8 => filter = random_bytes(&mut rng, 2040..2060),
            3 => filter = random_bytes(&mut rng, 2..60),
            // Mostly ones: windows that reach the end, narrow, or wide every tenth round.
            _ => {
                let len = if round % 10 == 9 {
                    rng.usize(2040..2400)
                } else {
                    rng.usize(2..300)
                };
                filter = (0..len)
                    .map(|_| rng.u8(..) | rng.u8(..) | rng.u8(..))
                    .collect();
            }
        }
        let last = filter.len() - 1;
        filter[last] = 31;
        let mut probes = keys.clone();
        probes.extend((0..40).map(|_| random_bytes(&mut rng, 12..13)));
        compare(&filter, &probes, &format!("round {round}"));
        queries += probes.len() as u64;
    }
    println!("compact_spec: {queries} queries on malformed filters");
    assert!(queries > rounds * 50);
}
