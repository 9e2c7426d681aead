//! The compact query against a second decoder written from `docs/compact-format.md` alone,
//! bit by bit and without any of the library's shortcuts (word scans, `pdep`, windows,
//! branch-free reads): on well-formed filters of every size, and on filters with flipped
//! bits, cut short, or made of random bytes, where the document's rules for malformed
//! structure decide the answer. Only the key hash (`XXH3_64bits`, checked against libxxhash
//! by `tests/xxh3_oracle.rs`) is taken from the library.

mod common;

use common::Rng;
use leveldb_bloom::CompactPolicy;
use leveldb_bloom::FilterFormat;
use leveldb_bloom::compact::{is_compact, key_hash, key_may_match};

/// The query as `docs/compact-format.md` ("Layout", "Fingerprints", "Query") states it.
fn documented_may_match(key: &[u8], filter: &[u8]) -> bool {
    let marker = u64::from(filter[filter.len() - 1]);
    let payload = &filter[..filter.len() - 1];
    let p = 8 * payload.len() as u64;
    let l = (marker - 32) / 8 + 1;
    let kappa = (marker - 32) % 8;
    let z = (u128::from(p) * u128::from(8 + kappa) / u128::from(8 * (l + 2))) as u64;
    if z == 0 {
        return false;
    }
    let h = key_hash(key);
    let q = ((u128::from(h) * u128::from(z)) >> 64) as u64;
    let v = h & ((1 << l) - 1);
    let bit = |j: u64| payload[(j / 8) as usize] >> (j % 8) & 1 == 1;

    // 1. Bucket q's start s: just past the q-th zero (bit 0 for bucket 0).
    let mut s = 0;
    let mut zeros = 0;
    while zeros < q {
        if s == p {
            return true; // fewer than q zeros
        }
        if !bit(s) {
            zeros += 1;
        }
        s += 1;
    }
    let mut c = 0;
    while s + c < p && bit(s + c) {
        c += 1;
    }
    if s + c == p {
        return true; // the run reaches the payload's end
    }
    let r = s - q;
    // Runs of two or more ones that start before s.
    let m = (0..s)
        .filter(|&j| bit(j) && j + 1 < p && bit(j + 1) && (j == 0 || !bit(j - 1)))
        .count() as u64;
    // 2.
    if c == 0 {
        return false;
    }
    // 3. The fields must lie entirely after bit s + c.
    let u = r * l - m;
    let f = c * l - u64::from(c >= 2);
    if !(u + f < p && p - u - f > s + c) {
        return true;
    }
    let read =
        |at: u64, width: u64| (0..width).fold(0u64, |acc, t| acc | u64::from(bit(at + t)) << t);
    // 4.
    if c == 1 {
        return read(p - u - l, l) == v;
    }
    let field = read(p - u - (2 * l - 1), 2 * l - 1);
    let x = field & ((1 << l) - 1);
    let e = field >> l;
    if v == x || v == (x + e + 1) % (1 << l) {
        return true;
    }
    (1..=c - 2).any(|j| read(p - u - (2 * l - 1) - j * l, l) == v)
}

/// Asks `filter` about `keys` both ways; returns how many answered "may match".
fn compare(filter: &[u8], keys: &[Vec<u8>], what: &str) -> u64 {
    assert!(is_compact(filter));
    let mut hits = 0;
    for key in keys {
        let want = documented_may_match(key, filter);
        assert_eq!(
            key_may_match(key, filter),
            want,
            "{what}: filter {filter:02x?}, key {key:02x?}"
        );
        hits += u64::from(want);
    }
    hits
}

#[test]
fn well_formed_filters_answer_as_documented() {
    let mut rng = Rng(20250123);
    let (mut queries, mut hits) = (0u64, 0u64);
    for bits_per_key in [3.0, 3.5, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0] {
        let policy = CompactPolicy::new(bits_per_key).unwrap();
        for n in (1..=40).chain([50, 64, 65, 100, 200, 300, 1000]) {
            let keys: Vec<Vec<u8>> = (0..n).map(|_| rng.bytes_of_length(1, 24)).collect();
            let mut filter = Vec::new();
            policy.create_filter(&keys, &mut filter).unwrap();
            if !is_compact(&filter) {
                continue; // all zero: no fingerprint fitted
            }
            let mut probes = keys.clone();
            probes.extend((0..200).map(|_| rng.bytes(16)));
            hits += compare(&filter, &probes, &format!("bpk {bits_per_key}, {n} keys"));
            queries += probes.len() as u64;
        }
    }
    println!("compact_spec: {queries} queries on well-formed filters, {hits} may match");
    assert!(queries > 100_000);
}

#[test]
fn malformed_filters_answer_as_documented() {
    let mut rng = Rng(7);
    let policy = CompactPolicy::new(10.0).unwrap();
    let low_bits = CompactPolicy::new(4.0).unwrap();
    let mut queries = 0u64;
    for round in 0..6000 {
        let n = rng.below(150) as usize;
        let keys: Vec<Vec<u8>> = (0..n).map(|_| rng.bytes(8)).collect();
        let mut filter = Vec::new();
        if round % 2 == 0 { &policy } else { &low_bits }
            .create_filter(&keys, &mut filter)
            .unwrap();
        match round % 6 {
            // A few flipped bits anywhere but the marker.
            0 | 1 => {
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(filter.len() as u64 - 1) as usize;
                    filter[at] ^= 1 << rng.below(8);
                }
            }
            // Cut short, marker kept.
            2 => {
                let marker = filter[filter.len() - 1];
                filter.truncate(1 + rng.below(filter.len() as u64) as usize);
                filter.push(marker);
            }
            // Random bytes of every small length, any marker.
            3 => {
                filter = rng.bytes_of_length(2, 40);
            }
            // Mostly ones: long runs that cross words and reach the end.
            4 => {
                let len = 2 + rng.below(300) as usize;
                filter = (0..len)
                    .map(|_| rng.next() as u8 | rng.next() as u8 | rng.next() as u8)
                    .collect();
            }
            // Another marker on the same bytes.
            _ => {
                let last = filter.len() - 1;
                filter[last] = 32 + rng.below(224) as u8;
            }
        }
        let last = filter.len() - 1;
        filter[last] |= 0x20; // a compact marker (32..255)
        if !is_compact(&filter) {
            continue;
        }
        let mut probes = keys.clone();
        probes.extend((0..40).map(|_| rng.bytes(12)));
        compare(&filter, &probes, &format!("round {round}"));
        queries += probes.len() as u64;
    }
    println!("compact_spec: {queries} queries on malformed filters");
    assert!(queries > 100_000);
}
