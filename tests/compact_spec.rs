//! The compact query against a second decoder written from `docs/compact-format.md` alone,
//! bit by bit and without any of the library's shortcuts (word scans, `pdep`, windows,
//! branch-free reads, unrolled columns), for both versions of the format: on well-formed
//! filters of every size (version 2 as the library builds them, version 1 from the stored
//! vectors of the version that built them), and on filters with flipped bits, cut short, or
//! made of random bytes, where the document's rules decide the answer. Only the key hash
//! (`XXH3_64bits`, checked against libxxhash by `tests/xxh3_oracle.rs`) is taken from the
//! library.

mod common;

use common::Rng;
use leveldb_bloom::CompactPolicy;
use leveldb_bloom::FilterFormat;
use leveldb_bloom::compact::{is_compact, key_hash, key_may_match};

/// The query as `docs/compact-format.md` states it, by the filter's last byte.
fn documented_may_match(key: &[u8], filter: &[u8]) -> bool {
    if filter[filter.len() - 1] == 31 {
        documented_ribbon_may_match(key, filter)
    } else {
        documented_v1_may_match(key, filter)
    }
}

/// Version 2 as `docs/compact-format.md` ("Version 2: ribbon filters") states it.
fn documented_ribbon_may_match(key: &[u8], filter: &[u8]) -> bool {
    let params = u64::from(filter[filter.len() - 2]);
    let payload = &filter[..filter.len() - 2];
    let p = 8 * payload.len() as u64;
    let r = params % 32 + 1;
    let seed = params / 32;
    let m = p / r;
    if m == 0 {
        return true;
    }
    let w = if m < 1024 { m.min(32) } else { 57 };
    let h = key_hash(key);
    let a = (h ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xd6e8_feb8_6659_fd93);
    let start = ((u128::from(a) * u128::from(m - w + 1)) >> 64) as u64;
    let coefficients = (a.wrapping_mul(0xbf58_476d_1ce4_e5b9) >> (64 - w)) | 1;
    let result = a.wrapping_mul(0x94d0_49bb_1331_11eb) >> (64 - r);
    let bit = |j: u64| u64::from(payload[(j / 8) as usize] >> (j % 8) & 1);
    (0..r).all(|j| {
        let parity = (0..w)
            .filter(|i| coefficients >> i & 1 == 1)
            .fold(0, |acc, i| acc ^ bit(j * m + start + i));
        parity == result >> j & 1
    })
}

/// The filters of version 1 stored in `tests/vectors/compact_v1.txt` (its comment says how).
fn version_1_filters() -> Vec<Vec<u8>> {
    include_str!("vectors/compact_v1.txt")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let hex = line.split(' ').nth(2).expect("a filter field");
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                .collect()
        })
        .collect()
}

/// Version 1 as `docs/compact-format.md` ("Layout", "Fingerprints", "Query") states it.
fn documented_v1_may_match(key: &[u8], filter: &[u8]) -> bool {
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
    let mut version_1 = 0;
    for filter in version_1_filters() {
        if !is_compact(&filter) {
            continue; // all zero: no fingerprint fitted
        }
        assert!(filter[filter.len() - 1] >= 32);
        let probes: Vec<Vec<u8>> = (0..2000).map(|_| rng.bytes_of_length(1, 24)).collect();
        hits += compare(&filter, &probes, "a stored version-1 filter");
        queries += probes.len() as u64;
        version_1 += 1;
    }
    println!(
        "compact_spec: {queries} queries on well-formed filters ({version_1} of version 1), \
         {hits} may match"
    );
    assert!(version_1 > 40);
    assert!(queries > 100_000);
}

#[test]
fn malformed_filters_answer_as_documented() {
    let mut rng = Rng(7);
    let policy = CompactPolicy::new(10.0).unwrap();
    let low_bits = CompactPolicy::new(4.0).unwrap();
    let version_1 = version_1_filters();
    let mut queries = 0u64;
    for round in 0..6000 {
        let n = rng.below(150) as usize;
        let keys: Vec<Vec<u8>> = (0..n).map(|_| rng.bytes(8)).collect();
        let mut filter = Vec::new();
        if round % 2 == 0 { &policy } else { &low_bits }
            .create_filter(&keys, &mut filter)
            .unwrap();
        // Every third round starts from a stored filter of version 1 instead.
        if round % 3 == 0 {
            filter = version_1[rng.below(version_1.len() as u64) as usize].clone();
            if filter.len() < 2 {
                continue;
            }
        }
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
                filter[last] = 31 + rng.below(225) as u8;
            }
        }
        let last = filter.len() - 1;
        // A compact marker: 31 (version 2) or 32..255 (version 1).
        if filter[last] != 31 || round % 7 == 0 {
            filter[last] |= 0x20;
        }
        if round % 5 == 0 {
            filter[last] = 31;
        }
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
