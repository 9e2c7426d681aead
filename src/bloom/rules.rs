//! LevelDB's Bloom filter format as LevelDB 1.23 states it (`util/bloom.cc`, `util/hash.cc`),
//! written to be read, not to be fast: the reference every fast path of this crate is
//! tested against (`tests` below, on every code path the processor has).
//!
//! - A key's hash is LevelDB's `Hash(key, seed 0xbc9f1d34)`: a Murmur-like mix of its
//!   little-endian 32-bit words, then of the 1 to 3 bytes left.
//! - A filter for `n` keys at `bits_per_key` has `max(n * bits_per_key, 64)` bits, rounded
//!   up to whole bytes, then one byte: `k = clamp(floor(bits_per_key * 0.69), 1, 30)`.
//! - A key sets `k` bits: starting from its hash `h`, bit `h % bits`, then `h += delta` with
//!   `delta = h rotated right by 17`, all modulo 2^32.
//! - A query of a filter shorter than 2 bytes answers "no"; one whose last byte is above 30
//!   answers "may match" (reserved for other encodings); otherwise "may match" exactly when
//!   all `k` bits of the key are set.

/// LevelDB's `Hash(data, n, seed)`.
pub(crate) fn hash(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0xc6a4_a793;
    let mut h = seed ^ (data.len() as u32).wrapping_mul(M);
    let mut words = data.chunks_exact(4);
    for word in &mut words {
        h = h.wrapping_add(u32::from_le_bytes(word.try_into().expect("4 bytes")));
        h = h.wrapping_mul(M);
        h ^= h >> 16;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        for (i, &byte) in rest.iter().enumerate() {
            h = h.wrapping_add(u32::from(byte) << (8 * i));
        }
        h = h.wrapping_mul(M);
        h ^= h >> 24;
    }
    h
}

/// `BloomHash(key)`.
pub(crate) fn bloom_hash(key: &[u8]) -> u32 {
    hash(key, 0xbc9f_1d34)
}

/// `BloomFilterPolicy(bits_per_key)`'s `k`.
pub(crate) fn probes(bits_per_key: i32) -> u8 {
    ((f64::from(bits_per_key) * 0.69) as i32).clamp(1, 30) as u8
}

/// `CreateFilter(keys, n, dst)`: the filter's bytes.
pub(crate) fn create_filter(keys: &[&[u8]], bits_per_key: i32) -> Vec<u8> {
    let bits = (keys.len() * bits_per_key.max(0) as usize).max(64);
    let bytes = bits.div_ceil(8);
    let bits = bytes * 8;
    let mut filter = vec![0u8; bytes + 1];
    let k = probes(bits_per_key);
    filter[bytes] = k;
    for key in keys {
        let mut h = bloom_hash(key);
        let delta = h.rotate_right(17);
        for _ in 0..k {
            let bit = h as usize % bits;
            filter[bit / 8] |= 1 << (bit % 8);
            h = h.wrapping_add(delta);
        }
    }
    filter
}

/// `KeyMayMatch(key, filter)`.
pub(crate) fn key_may_match(key: &[u8], filter: &[u8]) -> bool {
    if filter.len() < 2 {
        return false;
    }
    let bits = (filter.len() - 1) * 8;
    let k = filter[filter.len() - 1];
    if k > 30 {
        return true;
    }
    let mut h = bloom_hash(key);
    let delta = h.rotate_right(17);
    for _ in 0..k {
        let bit = h as usize % bits;
        if filter[bit / 8] & (1 << (bit % 8)) == 0 {
            return false;
        }
        h = h.wrapping_add(delta);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BloomPolicy, FilterPolicy, cpu};

    /// Keys of every length up to 70 bytes, and every tail length of the hash.
    fn keys(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes().repeat(9)[..i % 71].to_vec()
            })
            .collect()
    }

    #[test]
    fn the_rules_build_leveldb_s_own_filter() {
        // LevelDB 1.23's filter of "hello" and "world" at 10 bits per key (the crate's
        // documented vector, which LevelDB built).
        let filter = create_filter(&[b"hello", b"world"], 10);
        assert_eq!(
            filter,
            [0x11, 0x40, 0x00, 0x41, 0x44, 0x10, 0x40, 0x10, 0x06]
        );
        assert!(key_may_match(b"hello", &filter) && key_may_match(b"world", &filter));
    }

    #[test]
    fn every_fast_path_builds_and_answers_as_the_rules() {
        for level in cpu::supported() {
            for bits_per_key in [0, 1, 5, 10, 16, 23, 44, 100] {
                if cfg!(miri) && ![1, 10, 44].contains(&bits_per_key) {
                    continue; // Miri interprets each instruction: a sample of the settings
                }
                let policy = BloomPolicy::new(bits_per_key).unwrap();
                assert_eq!(policy.probes(), probes(bits_per_key));
                for n in [0usize, 1, 2, 3, 7, 8, 9, 17, 100, 1000] {
                    if cfg!(miri) && ![0, 1, 9, 17].contains(&n) {
                        continue; // and of the sizes
                    }
                    let owned = keys(n, (n * 131 + bits_per_key as usize) as u64);
                    let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
                    let want = create_filter(&keys, bits_per_key);
                    let mut filter = vec![0u8; policy.filter_len(n).unwrap()];
                    policy.write_filter_at(level, keys.iter().copied(), &mut filter);
                    assert_eq!(
                        filter, want,
                        "{level:?}, {bits_per_key} bits per key, {n} keys"
                    );
                    let asked = self::keys(if cfg!(miri) { 4 } else { 300 }, 7 + n as u64);
                    let asked: Vec<&[u8]> = asked.iter().chain(&owned).map(Vec::as_slice).collect();
                    let mut batch = vec![false; asked.len()];
                    super::super::keys_may_match(level, asked.iter().copied(), &filter, &mut batch);
                    for (key, batch) in asked.iter().zip(batch) {
                        let rule = key_may_match(key, &filter);
                        assert_eq!(policy.key_may_match(key, &filter), rule, "{level:?}");
                        assert_eq!(batch, rule, "{level:?}: batch");
                    }
                }
            }
        }
    }

    #[test]
    fn malformed_filters_answer_as_the_rules() {
        let policy = BloomPolicy::new(10).unwrap();
        let owned = keys(if cfg!(miri) { 20 } else { 200 }, 3);
        let mut filters: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0xff], vec![0, 0]];
        for last in [0u8, 1, 6, 30, 31, 200, 255] {
            for len in [1usize, 2, 3, 9, 65] {
                let mut f: Vec<u8> = (0..len).map(|i| (i * 37) as u8).collect();
                f.push(last);
                filters.push(f);
            }
        }
        for filter in &filters {
            for key in &owned {
                assert_eq!(
                    policy.key_may_match(key, filter),
                    key_may_match(key, filter),
                    "{filter:?}"
                );
            }
        }
    }

    #[test]
    fn the_hash_is_the_crate_s() {
        for key in keys(if cfg!(miri) { 80 } else { 500 }, 11) {
            assert_eq!(crate::hash::bloom_hash(&key), bloom_hash(&key));
        }
    }
}
