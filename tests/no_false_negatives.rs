//! Property: a key that was added is never reported absent, through any API: the Rust
//! single and batch queries, the filter block builder and reader, and the C API's create
//! calls, queries, batches, LevelDB callbacks and filter block functions. A false negative
//! would make stored data invisible. (The drop-in's C++ object calls the same C API; the
//! C++ interop tests check it finds every key of real databases.)

use std::ffi::{c_char, c_void};
use std::ptr::null;

use leveldb_bloom::ffi::*;
use leveldb_bloom::{BloomPolicy, FilterBlockBuilder, FilterBlockReader};
use proptest::prelude::*;

/// Keys of a data block, and how far past the previous block it starts.
fn layout() -> impl Strategy<Value = Vec<(u64, Vec<Vec<u8>>)>> {
    let key = prop::collection::vec(any::<u8>(), 0..40);
    let block = (0u64..9000, prop::collection::vec(key, 0..40));
    prop::collection::vec(block, 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn added_keys_always_match(bits_per_key in 0i32..40, blocks in layout()) {
        let policy = BloomPolicy::new(bits_per_key).unwrap();
        let all: Vec<&[u8]> = blocks.iter().flat_map(|(_, keys)| keys.iter().map(Vec::as_slice)).collect();

        // One filter over every key: single and batch queries.
        let mut filter = Vec::new();
        policy.create_filter(&all, &mut filter).unwrap();
        for key in &all {
            prop_assert!(leveldb_bloom::key_may_match(key, &filter));
        }
        let mut results = vec![false; all.len()];
        leveldb_bloom::bloom::keys_may_match(all.iter().copied(), &filter, &mut results);
        prop_assert!(results.iter().all(|&r| r));

        // A filter block, queried at each block's offset.
        let mut builder = FilterBlockBuilder::new(policy);
        let mut offset = 0u64;
        let mut placed = Vec::new();
        for (gap, keys) in &blocks {
            offset += gap;
            builder.start_block(offset).unwrap();
            for key in keys {
                builder.add_key(key).unwrap();
                placed.push((offset, key.as_slice()));
            }
        }
        let block = builder.finish().unwrap().to_vec();
        let reader = FilterBlockReader::new(&block);
        for &(offset, key) in &placed {
            prop_assert!(reader.key_may_match(offset, key));
        }
        let mut results = vec![false; placed.len()];
        reader.keys_may_match(placed.iter().copied(), &mut results);
        prop_assert!(results.iter().all(|&r| r));

        // The C API, each way in.
        // SAFETY: every pointer is valid for its length; objects are destroyed once.
        unsafe { check_c_api(bits_per_key, &all, &placed)? };
    }
}

/// # Safety
/// None beyond the C API's contracts, which this function keeps.
unsafe fn check_c_api(
    bits_per_key: i32,
    keys: &[&[u8]],
    placed: &[(u64, &[u8])],
) -> Result<(), TestCaseError> {
    let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
    let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
    let n = keys.len();
    // SAFETY: per this function's contract.
    unsafe {
        let policy = leveldb_bloom_policy_create(bits_per_key);
        let mut filter = vec![0u8; leveldb_bloom_filter_len(policy, n)];
        let mut len = 0;
        let status = leveldb_bloom_create_filter(
            policy,
            ptrs.as_ptr(),
            lens.as_ptr(),
            n,
            filter.as_mut_ptr(),
            filter.len(),
            &mut len,
        );
        prop_assert_eq!(status, 0);
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
        leveldb_bloom_policy_destroy(policy);
    }
    Ok(())
}
