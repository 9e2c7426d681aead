//! LevelDB's `leveldb.BuiltinBloomFilter2` policy (`util/bloom.cc`).
//!
//! A filter is a bit array followed by one byte holding the number of probes `k`. Each key
//! sets `k` bits chosen by double hashing from its [`bloom_hash`].

use crate::error::Error;
use crate::hash::bloom_hash;
use crate::remainder::Remainder;

/// The policy name LevelDB stores in a table's metaindex (`"filter." + NAME`).
pub const NAME: &str = "leveldb.BuiltinBloomFilter2";

/// Probe counts above this are reserved for other encodings: their filters always match.
pub const MAX_PROBES: u8 = 30;

/// The smallest bit array a filter has, however few keys it holds.
const MIN_BITS: u64 = 64;

/// LevelDB's Bloom filter policy for a given number of bits per key.
///
/// Filters it builds are byte-identical to LevelDB 1.23's `NewBloomFilterPolicy(bits_per_key)`
/// and queries answer exactly as LevelDB does, malformed filters included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomPolicy {
    bits_per_key: u32,
    probes: u8,
}

impl BloomPolicy {
    /// Creates the policy. Format rule: `k = floor(bits_per_key * 0.69)` in double precision,
    /// clamped to `1..=30`. A negative `bits_per_key` is refused (LevelDB has undefined
    /// behaviour there); 0 is valid and gives one probe into a 64-bit array.
    pub fn new(bits_per_key: i32) -> Result<Self, Error> {
        let Ok(bits_per_key) = u32::try_from(bits_per_key) else {
            return Err(Error::NegativeBitsPerKey(bits_per_key));
        };
        // `as` saturates, and the clamp bounds the value anyway.
        let probes = (f64::from(bits_per_key) * 0.69) as u64;
        let probes = probes.clamp(1, u64::from(MAX_PROBES)) as u8;
        Ok(BloomPolicy {
            bits_per_key,
            probes,
        })
    }

    /// The bits per key this policy was created with.
    pub fn bits_per_key(&self) -> i32 {
        self.bits_per_key as i32
    }

    /// The number of probes `k` per key, the byte that ends every filter it builds.
    pub fn probes(&self) -> u8 {
        self.probes
    }

    /// The policy name, `leveldb.BuiltinBloomFilter2`.
    pub fn name(&self) -> &'static str {
        NAME
    }

    /// The length in bytes of the filter for `num_keys` keys (duplicates count).
    ///
    /// Format rule: `bits = max(num_keys * bits_per_key, 64)`, rounded up to whole bytes, plus
    /// one byte for `k`. A size that overflows `usize` is [`Error::TooLarge`].
    pub fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        let bits = u64::try_from(num_keys)
            .ok()
            .and_then(|n| n.checked_mul(u64::from(self.bits_per_key)))
            .ok_or(Error::TooLarge)?
            .max(MIN_BITS);
        let bytes = bits.div_ceil(8);
        usize::try_from(bytes)
            .ok()
            .and_then(|b| b.checked_add(1))
            .ok_or(Error::TooLarge)
    }

    /// Builds the filter for `keys` and **appends** it to `dst`, as LevelDB's `CreateFilter`
    /// does. On error `dst` is unchanged.
    pub fn create_filter<I>(&self, keys: I, dst: &mut Vec<u8>) -> Result<(), Error>
    where
        I: IntoIterator,
        I::IntoIter: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        let keys = keys.into_iter();
        let len = self.filter_len(keys.len())?;
        dst.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
        let start = dst.len();
        dst.resize(start + len, 0);
        self.write_filter(keys, &mut dst[start..]);
        Ok(())
    }

    /// Builds the filter for `keys` into the start of `out` and returns its length, for callers
    /// that bring their own memory. Every byte of the filter is written; bytes of `out` past it
    /// are left alone. If `out` is shorter than [`filter_len`](Self::filter_len), nothing is
    /// written and the error says how many bytes are needed.
    pub fn create_filter_into<I>(&self, keys: I, out: &mut [u8]) -> Result<usize, Error>
    where
        I: IntoIterator,
        I::IntoIter: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        let keys = keys.into_iter();
        let needed = self.filter_len(keys.len())?;
        let Some(filter) = out.get_mut(..needed) else {
            return Err(Error::BufferTooSmall { needed });
        };
        filter.fill(0);
        self.write_filter(keys, filter);
        Ok(needed)
    }

    /// Sets the probe bits of every key in a zeroed `filter` of the right length, and its
    /// last byte to `k`.
    pub(crate) fn write_filter<I>(&self, keys: I, filter: &mut [u8])
    where
        I: Iterator,
        I::Item: AsRef<[u8]>,
    {
        let (k, array) = filter
            .split_last_mut()
            .expect("a filter is at least 9 bytes");
        *k = self.probes;
        let remainder = Remainder::new(array.len() as u64 * 8);
        for key in keys {
            let (mut h, delta) = probe_start(key.as_ref());
            for _ in 0..self.probes {
                let bit = remainder.of(h);
                array[(bit / 8) as usize] |= 1 << (bit % 8);
                h = h.wrapping_add(delta);
            }
        }
    }

    /// Whether `key` may be in `filter`; see [`key_may_match`].
    pub fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        key_may_match(key, filter)
    }
}

/// Whether `key` may be in a `leveldb.BuiltinBloomFilter2` filter, answered as LevelDB 1.23
/// answers, whatever the bytes. The policy that built the filter does not matter: `k` is
/// read from the filter.
///
/// Format rules: a filter shorter than 2 bytes matches nothing; a last byte `k` of 0 or
/// above 30 always matches (reserved for other encodings); otherwise the key may match iff
/// each of its `k` probes into the `(len - 1) * 8` bits finds a set bit.
pub fn key_may_match(key: &[u8], filter: &[u8]) -> bool {
    query(key, filter, Remainder::new)
}

/// [`key_may_match`], with the remainder for the filter's bit count supplied by the caller
/// (the C API's policies cache it).
#[inline]
pub(crate) fn query(key: &[u8], filter: &[u8], remainder: impl FnOnce(u64) -> Remainder) -> bool {
    let Some((&k, array)) = filter.split_last() else {
        return false;
    };
    if array.is_empty() {
        return false;
    }
    if k > MAX_PROBES {
        return true;
    }
    let remainder = remainder(array.len() as u64 * 8);
    let (mut h, delta) = probe_start(key);
    // Every probe runs and the answers are combined: no branch on bits that are set at
    // random, so nothing to mispredict for absent keys.
    let mut all_set = true;
    for _ in 0..k {
        let bit = remainder.of(h);
        all_set &= array[(bit / 8) as usize] & (1 << (bit % 8)) != 0;
        h = h.wrapping_add(delta);
    }
    all_set
}

/// [`key_may_match`] for many keys against one filter: `results[i]` answers `keys[i]`.
/// Keys past `results.len()` are not read; results past the keys are left alone.
pub fn keys_may_match<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    for (key, result) in keys.into_iter().zip(results) {
        *result = key_may_match(key, filter);
    }
}

/// Where a key's probes start and how far apart they are.
///
/// Format rule: `h = hash(key)`, `delta = h.rotate_right(17)`; probe `i` is at `h % bits`,
/// then `h += delta` with 32-bit wrapping. Over an array of 2^32 bits or more the position
/// is `h` itself.
#[inline]
fn probe_start(key: &[u8]) -> (u32, u32) {
    let h = bloom_hash(key);
    (h, h.rotate_right(17))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn filter(bits_per_key: i32, keys: &[&str]) -> String {
        let mut dst = Vec::new();
        BloomPolicy::new(bits_per_key)
            .unwrap()
            .create_filter(keys, &mut dst)
            .unwrap();
        hex(&dst)
    }

    // Vectors produced by libleveldb 1.23 (shared/docs/leveldb-filter-format.md, section 2).
    #[test]
    fn leveldb_filter_vectors() {
        assert_eq!(filter(10, &["hello", "world"]), "114000414410401006");
        assert_eq!(filter(10, &[]), "000000000000000006");
        assert_eq!(filter(10, &["hello"; 7]), "40110000040000410006");
        assert_eq!(filter(0, &["hello", "world"]), "004000000000001001");
    }

    #[test]
    fn probes_follow_the_documented_rule() {
        let k = |bpk| BloomPolicy::new(bpk).unwrap().probes();
        assert_eq!(
            [k(0), k(1), k(2), k(10), k(16), k(43), k(44)],
            [1, 1, 1, 6, 11, 29, 30]
        );
        assert_eq!(k(i32::MAX), 30);
        assert_eq!(BloomPolicy::new(-1), Err(Error::NegativeBitsPerKey(-1)));
    }

    #[test]
    fn create_filter_appends_and_keeps_existing_bytes() {
        let policy = BloomPolicy::new(10).unwrap();
        let mut dst = b"prefix".to_vec();
        policy.create_filter(["hello", "world"], &mut dst).unwrap();
        assert_eq!(&dst[..6], b"prefix");
        assert_eq!(hex(&dst[6..]), "114000414410401006");
    }

    #[test]
    fn filter_len_overflow_is_an_error() {
        let policy = BloomPolicy::new(i32::MAX).unwrap();
        assert_eq!(policy.filter_len(usize::MAX), Err(Error::TooLarge));
        assert_eq!(BloomPolicy::new(10).unwrap().filter_len(0), Ok(9));
    }

    #[test]
    fn create_filter_into_writes_only_the_filter() {
        let policy = BloomPolicy::new(10).unwrap();
        let mut out = [0xffu8; 10];
        assert_eq!(
            policy.create_filter_into(["hello", "world"], &mut out),
            Ok(9)
        );
        assert_eq!(hex(&out), "114000414410401006ff");
        let mut short = [0u8; 8];
        assert_eq!(
            policy.create_filter_into(["a"], &mut short),
            Err(Error::BufferTooSmall { needed: 9 })
        );
    }

    #[test]
    fn malformed_filters_answer_as_leveldb_documents() {
        assert!(!key_may_match(b"x", b""));
        assert!(!key_may_match(b"x", b"\x06"));
        assert!(key_may_match(b"x", &[0, 0, 0]));
        assert!(key_may_match(b"x", &[0, 0, 31]));
        assert!(key_may_match(b"x", &[0, 0, 255]));
        assert!(!key_may_match(b"x", &[0, 0, 1]));
    }
}
