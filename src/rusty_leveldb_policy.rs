//! With the `rusty-leveldb` feature, every policy of this crate is a filter policy of
//! rusty-leveldb, the crates.io LevelDB (`rusty_leveldb::FilterPolicy`), so a Rust program
//! puts leveldb-bloom's filters in its database with one line
//! (`options.filter_policy = Rc::new(Box::new(CompactPolicy::new(10.0)?))`; tested with
//! LevelDB 1.23 as the judge in `tests/leveldb_oracle/tests/rusty_leveldb.rs`).
//!
//! rusty-leveldb hands a policy user keys (its `InternalFilterPolicy` strips the tags, as
//! LevelDB's does) and one byte string holding them all with the offset where each starts.
//! [`BloomPolicy`] then writes what LevelDB 1.23 writes; [`CompactPolicy`] writes compact
//! filters, which a stock reader (LevelDB, or rusty-leveldb's own `BloomPolicy`) answers
//! "may match". A filter too large to build is [`MATCH_ALL_FILTER`](crate::MATCH_ALL_FILTER),
//! never an empty one (which every reader would answer "no match").

use crate::{AnyPolicy, BloomPolicy, CompactPolicy, FilterPolicy, MATCH_ALL_FILTER};

/// The keys rusty-leveldb passes: `keys[key_offsets[i]..key_offsets[i + 1]]`, the last to
/// the end. An offset out of order or past the end (which rusty-leveldb never passes) gives
/// the empty key.
fn keys_at<'k>(
    keys: &'k [u8],
    key_offsets: &'k [usize],
) -> impl ExactSizeIterator<Item = &'k [u8]> + 'k {
    key_offsets.iter().enumerate().map(move |(i, &start)| {
        let end = key_offsets.get(i + 1).copied().unwrap_or(keys.len());
        keys.get(start..end).unwrap_or_default()
    })
}

/// The filter `policy` builds for the keys, or [`MATCH_ALL_FILTER`].
fn filter_for<P: FilterPolicy>(policy: &P, keys: &[u8], key_offsets: &[usize]) -> Vec<u8> {
    let mut filter = Vec::new();
    match policy.create_filter(keys_at(keys, key_offsets), &mut filter) {
        Ok(()) => filter,
        Err(_) => MATCH_ALL_FILTER.to_vec(),
    }
}

macro_rules! rusty_leveldb_policy {
    ($($policy:ty),*) => {$(
        impl rusty_leveldb::FilterPolicy for $policy {
            fn name(&self) -> &'static str {
                FilterPolicy::name(self)
            }

            fn create_filter(&self, keys: &[u8], key_offsets: &[usize]) -> Vec<u8> {
                filter_for(self, keys, key_offsets)
            }

            fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
                FilterPolicy::key_may_match(self, key, filter)
            }
        }
    )*};
}

rusty_leveldb_policy!(BloomPolicy, CompactPolicy, AnyPolicy);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_cut_where_rusty_leveldb_says_they_start() {
        let keys: Vec<&[u8]> = keys_at(b"helloworld!", &[0, 5, 5, 10]).collect();
        assert_eq!(keys, [&b"hello"[..], b"", b"world", b"!"]);
        let keys: Vec<&[u8]> = keys_at(b"abc", &[2, 1]).collect();
        assert_eq!(keys, [&b""[..], b"bc"]);
    }

    #[test]
    fn each_policy_builds_what_it_builds_itself_and_answers_for_it() {
        let bloom = BloomPolicy::new(10).unwrap();
        let compact = CompactPolicy::new(10.0).unwrap();
        let keys = b"key1key2key3";
        let offsets = [0, 4, 8];
        for policy in [AnyPolicy::Bloom(bloom), AnyPolicy::Compact(compact)] {
            let mut own = Vec::new();
            policy
                .create_filter(["key1", "key2", "key3"], &mut own)
                .unwrap();
            let filter = rusty_leveldb::FilterPolicy::create_filter(&policy, keys, &offsets);
            assert_eq!(filter, own);
            for key in [b"key1", b"key2", b"key3"] {
                assert!(rusty_leveldb::FilterPolicy::key_may_match(
                    &policy, key, &filter
                ));
            }
        }
    }
}
