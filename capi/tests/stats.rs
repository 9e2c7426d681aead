//! The statistics C API: per-policy and global counts, resets, and counts that outlive
//! their policy. One test function, so that nothing else in this process counts meanwhile.

use std::ffi::{c_char, c_int, c_void};
use std::ptr::{null, null_mut};

use leveldb_bloom_capi::leveldb_bloom_status::*;
use leveldb_bloom_capi::*;

fn stats_of(policy: *const leveldb_bloom_policy) -> leveldb_bloom_stats {
    let mut s = leveldb_bloom_stats::default();
    // SAFETY: live policy, writable struct.
    assert_eq!(unsafe { leveldb_bloom_policy_stats(policy, &mut s) }, 0);
    s
}

fn global() -> leveldb_bloom_stats {
    let mut s = leveldb_bloom_stats::default();
    // SAFETY: writable struct.
    assert_eq!(unsafe { leveldb_bloom_global_stats(&mut s) }, 0);
    s
}

fn stats(filters_built: u64, keys_added: u64, queries: u64, no_match: u64) -> leveldb_bloom_stats {
    leveldb_bloom_stats {
        filters_built,
        keys_added,
        queries,
        no_match,
    }
}

#[test]
fn policy_and_global_statistics() {
    leveldb_bloom_global_stats_reset();
    assert_eq!(global(), stats(0, 0, 0, 0));
    // Counting policies, and one that counts nothing.
    let uncounted = leveldb_bloom_policy_create(10);
    // SAFETY: a live policy.
    let (a, b) = unsafe {
        (
            leveldb_bloom_policy_counted(uncounted),
            leveldb_bloom_policy_counted(uncounted),
        )
    };
    let keys: [&[u8]; 3] = [b"k1", b"k2", b"k3"];
    let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
    let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
    let mut filter = [0u8; 64];
    let mut len = 0;
    // SAFETY: live policies and builders, valid arrays and buffers.
    unsafe {
        let status = leveldb_bloom_create_filter(
            a,
            ptrs.as_ptr(),
            lens.as_ptr(),
            3,
            filter.as_mut_ptr(),
            64,
            &mut len,
        );
        assert_eq!(status, 0);
        let filter = &filter[..len];
        let query = |p, key: &[u8]| {
            leveldb_bloom_key_may_match(
                p,
                key.as_ptr().cast(),
                key.len(),
                filter.as_ptr(),
                filter.len(),
            )
        };
        // The uncounted policy's work counts nowhere.
        let before = global();
        assert!(query(uncounted, b"k1"));
        let mut unused = [0u8; 64];
        leveldb_bloom_create_filter(
            uncounted,
            ptrs.as_ptr(),
            lens.as_ptr(),
            3,
            unused.as_mut_ptr(),
            64,
            &mut len,
        );
        assert_eq!(global(), before);
        let mut s = leveldb_bloom_stats::default();
        let not_counted = LEVELDB_BLOOM_ERR_NOT_COUNTED as c_int;
        assert_eq!(leveldb_bloom_policy_stats(uncounted, &mut s), not_counted);
        assert_eq!(leveldb_bloom_policy_stats_reset(uncounted), not_counted);
        leveldb_bloom_policy_destroy(uncounted);

        assert!(query(a, b"k1"));
        let absent: Vec<bool> = (0..100u32).map(|i| query(a, &i.to_le_bytes())).collect();
        let rejected = absent.iter().filter(|&&m| !m).count() as u64;
        assert!(rejected > 50, "a 3-key filter rejects most absent keys");
        assert_eq!(stats_of(a), stats(1, 3, 101, rejected));

        // Callbacks and filter block builders count into their policy.
        let mut cb_len = 0;
        let cb = leveldb_bloom_cb_create_filter(
            b.cast::<c_void>(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            2,
            &mut cb_len,
        );
        libc::free(cb.cast());
        let builder = leveldb_bloom_filter_block_builder_create(b);
        assert_eq!(
            leveldb_bloom_filter_block_builder_start_block(builder, 0),
            0
        );
        for key in &keys {
            assert_eq!(
                leveldb_bloom_filter_block_builder_add_key(builder, key.as_ptr().cast(), key.len()),
                0
            );
        }
        assert_eq!(
            leveldb_bloom_filter_block_builder_start_block(builder, 5000),
            0
        ); // 1 filter + 1 empty
        assert_eq!(
            leveldb_bloom_filter_block_builder_add_key(builder, b"z".as_ptr().cast(), 1),
            0
        );
        let (mut block, mut block_len) = (null(), 0);
        assert_eq!(
            leveldb_bloom_filter_block_builder_finish(builder, &mut block, &mut block_len),
            0
        );
        assert!(leveldb_bloom_filter_block_may_match(
            b,
            block,
            block_len,
            0,
            b"k2".as_ptr().cast(),
            2
        ));
        assert!(!leveldb_bloom_filter_block_may_match(
            b,
            block,
            block_len,
            2048,
            b"k2".as_ptr().cast(),
            2
        ));
        // A data block past the block's filters: "may match" without a filter, counted.
        assert!(leveldb_bloom_filter_block_may_match(
            b,
            block,
            block_len,
            1 << 40,
            b"k2".as_ptr().cast(),
            2
        ));
        leveldb_bloom_filter_block_builder_destroy(builder);
        assert_eq!(stats_of(b), stats(3, 2 + 3 + 1, 3, 1));

        // Global = both; a destroyed policy's counts stay in it.
        assert_eq!(global(), stats(4, 9, 104, rejected + 1));
        leveldb_bloom_policy_destroy(b);
        assert_eq!(global(), stats(4, 9, 104, rejected + 1));

        // Resets are independent.
        assert_eq!(leveldb_bloom_policy_stats_reset(a), 0);
        assert_eq!(stats_of(a), stats(0, 0, 0, 0));
        assert_eq!(global().queries, 104);
        leveldb_bloom_global_stats_reset();
        assert_eq!(global(), stats(0, 0, 0, 0));
        assert!(query(a, b"k3"));
        assert_eq!((stats_of(a).queries, global().queries), (1, 1));

        // NULLs.
        let null_arg = LEVELDB_BLOOM_ERR_NULL_ARGUMENT as c_int;
        let mut s = leveldb_bloom_stats::default();
        assert_eq!(leveldb_bloom_policy_stats(null(), &mut s), null_arg);
        assert_eq!(leveldb_bloom_policy_stats(a, null_mut()), null_arg);
        assert_eq!(leveldb_bloom_policy_stats_reset(null()), null_arg);
        assert_eq!(leveldb_bloom_global_stats(null_mut()), null_arg);
        leveldb_bloom_policy_destroy(a);
    }
}
