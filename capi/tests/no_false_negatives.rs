//! Property: a key that was added is never reported absent, through any API: the Rust
//! single and batch queries, the filter block builder and reader, and the C API's create
//! calls, queries, batches, LevelDB callbacks and filter block functions; for both formats,
//! LevelDB's Bloom filters and the compact filters (any bits per key from 0 to 32, fractional
//! too, duplicate keys included). A false negative would make stored data invisible. (The
//! drop-in's C++ object calls the same C API; the C++ interop tests check it finds every key
//! of real databases.)

mod common;

use std::ffi::{c_char, c_void};
use std::ptr::null;

use common::{CKeys, keys_with_duplicates};
use leveldb_bloom::{
    BloomPolicy, CompactPolicy, FilterBlockBuilder, FilterBlockReader, FilterPolicy,
};
use leveldb_bloom_capi::*;
use proptest::prelude::*;

/// Keys of a data block, and how far past the previous block it starts.
fn layout() -> impl Strategy<Value = Vec<(u64, Vec<Vec<u8>>)>> {
    let key = prop::collection::vec(any::<u8>(), 0..40);
    let block = (0u64..9000, prop::collection::vec(key, 0..40));
    prop::collection::vec(block, 1..12)
}

/// The keys of `keys_with_duplicates`, split into one data block per gap.
fn split(keys: Vec<Vec<u8>>, gaps: Vec<u64>) -> Vec<(u64, Vec<Vec<u8>>)> {
    let n = keys.len();
    let mut keys = keys.into_iter();
    gaps.iter()
        .enumerate()
        .map(|(i, &gap)| {
            let count = (i + 1) * n / gaps.len() - i * n / gaps.len();
            (gap, keys.by_ref().take(count).collect())
        })
        .collect()
}

/// A compact policy's bits per key: every whole number from 0 to 32, and fractions.
fn compact_bits_per_key() -> impl Strategy<Value = f64> {
    prop_oneof![(0u32..=32).prop_map(f64::from), 0.0f64..=32.0]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn added_keys_always_match_bloom(bits_per_key in 0i32..40, blocks in layout()) {
        let policy_c = leveldb_bloom_policy_create(bits_per_key);
        let checked = added_keys_always_match(BloomPolicy::new(bits_per_key).unwrap(), policy_c, &blocks);
        // SAFETY: created above, destroyed once.
        unsafe { leveldb_bloom_policy_destroy(policy_c) };
        checked?;
    }

    #[test]
    fn added_keys_always_match_compact(
        bits_per_key in compact_bits_per_key(),
        keys in keys_with_duplicates(),
        gaps in prop::collection::vec(0u64..6000, 1..8),
    ) {
        let policy_c = leveldb_bloom_policy_create_compact(bits_per_key);
        let blocks = split(keys, gaps);
        let checked = added_keys_always_match(CompactPolicy::new(bits_per_key).unwrap(), policy_c, &blocks);
        // SAFETY: created above, destroyed once.
        unsafe { leveldb_bloom_policy_destroy(policy_c) };
        checked?;
    }
}

/// Every key of `blocks` matches through the Rust API (one filter over all of them, single
/// and batch; a filter block of the blocks at their offsets), and through the C API of
/// `policy_c`, a live policy of the same format and bits per key as `policy`.
fn added_keys_always_match<P: FilterPolicy + Clone>(
    policy: P,
    policy_c: *mut leveldb_bloom_policy,
    blocks: &[(u64, Vec<Vec<u8>>)],
) -> Result<(), TestCaseError> {
    prop_assert!(!policy_c.is_null());
    let all: Vec<&[u8]> = blocks
        .iter()
        .flat_map(|(_, keys)| keys.iter().map(Vec::as_slice))
        .collect();

    // One filter over every key: single and batch queries.
    let mut filter = Vec::new();
    policy.create_filter(&all, &mut filter).unwrap();
    prop_assert_eq!(filter.len(), policy.filter_len(all.len()).unwrap());
    for key in &all {
        prop_assert!(policy.key_may_match(key, &filter));
    }
    let mut results = vec![false; all.len()];
    policy.keys_may_match(all.iter().copied(), &filter, &mut results);
    prop_assert!(results.iter().all(|&r| r));

    // A filter block, queried at each block's offset.
    let mut builder = FilterBlockBuilder::new(policy.clone());
    let mut offset = 0u64;
    let mut placed = Vec::new();
    for (gap, keys) in blocks {
        offset += gap;
        builder.start_block(offset).unwrap();
        for key in keys {
            builder.add_key(key).unwrap();
            placed.push((offset, key.as_slice()));
        }
    }
    let block = builder.finish().unwrap().to_vec();
    let reader = FilterBlockReader::new(&policy, &block);
    for &(offset, key) in &placed {
        prop_assert!(reader.key_may_match(offset, key));
    }
    let mut results = vec![false; placed.len()];
    reader.keys_may_match(placed.iter().copied(), &mut results);
    prop_assert!(results.iter().all(|&r| r));

    // The C API, each way in: the same bytes, and every key matches.
    // SAFETY: every pointer is valid for its length.
    unsafe { check_c_api(policy_c, policy, &all, &placed) }
}

/// Builds `keys`' filter and `placed`'s filter block through every C entry point of
/// `policy`, checks that they equal what the Rust API builds with `rust` from the same
/// calls, and that every key matches through every C query.
///
/// # Safety
/// `policy` is a live policy; nothing else beyond the C API's contracts, which this
/// function keeps.
unsafe fn check_c_api<P: FilterPolicy>(
    policy: *mut leveldb_bloom_policy,
    rust: P,
    keys: &[&[u8]],
    placed: &[(u64, &[u8])],
) -> Result<(), TestCaseError> {
    let mut rust_filter = Vec::new();
    rust.create_filter(keys, &mut rust_filter).unwrap();
    let rust_filter = rust_filter.as_slice();
    // The block from the calls made below: start_block only where the offset changes.
    let mut rust_builder = FilterBlockBuilder::new(rust);
    let mut last = None;
    for &(offset, key) in placed {
        if last != Some(offset) {
            rust_builder.start_block(offset).unwrap();
            last = Some(offset);
        }
        rust_builder.add_key(key).unwrap();
    }
    let rust_block = rust_builder.finish().unwrap();
    let CKeys { ptrs, lens, slices } = CKeys::new(keys);
    let n = keys.len();
    // SAFETY: per this function's contract.
    unsafe {
        // Both create calls write the Rust filter's bytes.
        type Create<'a> = Box<dyn Fn(*mut u8, usize, &mut usize) -> i32 + 'a>;
        let creates: [Create; 2] = [
            Box::new(|out, cap, len| {
                leveldb_bloom_create_filter(policy, ptrs.as_ptr(), lens.as_ptr(), n, out, cap, len)
            }),
            Box::new(|out, cap, len| {
                leveldb_bloom_create_filter_slices(policy, slices.as_ptr(), n, out, cap, len)
            }),
        ];
        let filters = creates.map(|create| {
            let mut filter = vec![0xa5u8; leveldb_bloom_filter_len(policy, n)];
            let mut len = 0;
            let status = create(filter.as_mut_ptr(), filter.len(), &mut len);
            (status, len, filter)
        });
        for (status, len, filter) in &filters {
            prop_assert_eq!(*status, 0);
            prop_assert_eq!(&filter[..*len], rust_filter);
        }
        let (_, len, filter) = &filters[0];
        let len = *len;
        let mut results = vec![0u8; n];
        let status = leveldb_bloom_key_may_match_batch(
            policy,
            ptrs.as_ptr(),
            lens.as_ptr(),
            n,
            filter.as_ptr(),
            len,
            results.as_mut_ptr(),
        );
        prop_assert_eq!(status, 0);
        prop_assert!(results.iter().all(|&r| r == 1));
        let mut cb_len = 0;
        let cb = leveldb_bloom_cb_create_filter(
            policy.cast::<c_void>(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            n as i32,
            &mut cb_len,
        );
        prop_assert!(!cb.is_null());
        prop_assert_eq!(
            std::slice::from_raw_parts(cb.cast::<u8>(), cb_len),
            rust_filter
        );
        for (key, &len_) in ptrs.iter().zip(&lens) {
            prop_assert!(leveldb_bloom_key_may_match(
                policy,
                *key,
                len_,
                filter.as_ptr(),
                len
            ));
            prop_assert_eq!(
                leveldb_bloom_cb_key_may_match(policy.cast(), *key, len_, cb, cb_len),
                1
            );
        }
        libc::free(cb.cast());

        let builder = leveldb_bloom_filter_block_builder_create(policy);
        let mut last = None;
        for &(offset, key) in placed {
            if last != Some(offset) {
                prop_assert_eq!(
                    leveldb_bloom_filter_block_builder_start_block(builder, offset),
                    0
                );
                last = Some(offset);
            }
            prop_assert_eq!(
                leveldb_bloom_filter_block_builder_add_key(builder, key.as_ptr().cast(), key.len()),
                0
            );
        }
        let (mut block, mut block_len) = (null(), 0);
        prop_assert_eq!(
            leveldb_bloom_filter_block_builder_finish(builder, &mut block, &mut block_len),
            0
        );
        prop_assert_eq!(std::slice::from_raw_parts(block, block_len), rust_block);
        for &(offset, key) in placed {
            prop_assert!(leveldb_bloom_filter_block_may_match(
                policy,
                block,
                block_len,
                offset,
                key.as_ptr().cast(),
                key.len()
            ));
        }
        let offsets: Vec<u64> = placed.iter().map(|p| p.0).collect();
        let pptrs: Vec<*const c_char> = placed.iter().map(|p| p.1.as_ptr().cast()).collect();
        let plens: Vec<usize> = placed.iter().map(|p| p.1.len()).collect();
        let mut results = vec![0u8; placed.len()];
        let status = leveldb_bloom_filter_block_may_match_batch(
            policy,
            block,
            block_len,
            offsets.as_ptr(),
            pptrs.as_ptr(),
            plens.as_ptr(),
            placed.len(),
            results.as_mut_ptr(),
        );
        prop_assert_eq!(status, 0);
        prop_assert!(results.iter().all(|&r| r == 1));
        leveldb_bloom_filter_block_builder_destroy(builder);
    }
    Ok(())
}
