//! The C API's behaviour on valid calls: sizes, what is and is not written, callbacks,
//! builder misuse. NULLs and impossible lengths are in `c_api_boundary.rs`; compatibility
//! with LevelDB itself is tested by the C++ harness against the real library.

use leveldb_bloom::FilterPolicy;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::{null, null_mut};

use leveldb_bloom::BloomPolicy;
use leveldb_bloom_capi::leveldb_bloom_status::*;
use leveldb_bloom_capi::*;

const OK: c_int = LEVELDB_BLOOM_OK as c_int;

struct Policy(*mut leveldb_bloom_policy);

impl Policy {
    fn new(bits_per_key: c_int) -> Self {
        let p = leveldb_bloom_policy_create(bits_per_key);
        assert!(!p.is_null());
        Policy(p)
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_bloom_policy_create, destroyed once.
        unsafe { leveldb_bloom_policy_destroy(self.0) }
    }
}

fn key_arrays(keys: &[&[u8]]) -> (Vec<*const c_char>, Vec<usize>) {
    (
        keys.iter().map(|k| k.as_ptr().cast()).collect(),
        keys.iter().map(|k| k.len()).collect(),
    )
}

fn rust_filter(bits_per_key: i32, keys: &[&[u8]]) -> Vec<u8> {
    let mut filter = Vec::new();
    BloomPolicy::new(bits_per_key)
        .unwrap()
        .create_filter(keys, &mut filter)
        .unwrap();
    filter
}

#[test]
fn callbacks_build_malloced_filters_and_never_an_empty_one() {
    let p = leveldb_bloom_policy_create(10);
    let state = p.cast::<c_void>();
    let keys: [&[u8]; 2] = [b"hello", b"world"];
    let (ptrs, lens) = key_arrays(&keys);
    // SAFETY: valid arrays; every returned buffer is malloc'd and freed here.
    unsafe {
        let take = |filter: *mut c_char, len: usize| {
            assert!(!filter.is_null());
            let bytes = std::slice::from_raw_parts(filter.cast::<u8>(), len).to_vec();
            libc::free(filter.cast());
            bytes
        };
        let mut len = 0usize;
        let f = leveldb_bloom_cb_create_filter(state, ptrs.as_ptr(), lens.as_ptr(), 2, &mut len);
        let filter = take(f, len);
        assert_eq!(filter, rust_filter(10, &keys));
        assert_eq!(
            leveldb_bloom_cb_key_may_match(
                state,
                b"hello".as_ptr().cast(),
                5,
                filter.as_ptr().cast(),
                filter.len()
            ),
            1
        );

        let always = [0u8, 0u8];
        let refused = [
            leveldb_bloom_cb_create_filter(state, ptrs.as_ptr(), lens.as_ptr(), -1, &mut len),
            leveldb_bloom_cb_create_filter(null_mut(), ptrs.as_ptr(), lens.as_ptr(), 2, &mut len),
            leveldb_bloom_cb_create_filter(state, null(), lens.as_ptr(), 2, &mut len),
        ];
        for f in refused {
            assert_eq!(take(f, len), always);
        }
        assert!(may_match_everything(&always));
        assert!(
            leveldb_bloom_cb_create_filter(state, ptrs.as_ptr(), lens.as_ptr(), 2, null_mut())
                .is_null()
        );
        assert_eq!(
            leveldb_bloom_cb_key_may_match(
                null_mut(),
                b"x".as_ptr().cast(),
                1,
                filter.as_ptr().cast(),
                filter.len()
            ),
            1
        );
        assert_eq!(
            leveldb_bloom_cb_key_may_match(state, b"x".as_ptr().cast(), 1, null(), 0),
            1
        );
        leveldb_bloom_cb_destructor(state);
        leveldb_bloom_cb_destructor(null_mut());
    }
}

/// `k` = 0 runs no probe, so the filter matches any key (LevelDB's answer for every last
/// byte is compared by cpp_tests/bloom_query_test.cc).
fn may_match_everything(filter: &[u8]) -> bool {
    let policy = BloomPolicy::new(10).unwrap();
    (0..1000u32).all(|i| policy.key_may_match(&i.to_le_bytes(), filter))
}

#[test]
fn filter_block_builder_misuse() {
    let p = Policy::new(10);
    // SAFETY: live policy and builder, valid out-pointers, or NULL where tested.
    unsafe {
        assert!(leveldb_bloom_filter_block_builder_create(null()).is_null());
        let b = leveldb_bloom_filter_block_builder_create(p.0);
        assert_eq!(leveldb_bloom_filter_block_builder_start_block(b, 0), OK);
        assert_eq!(
            leveldb_bloom_filter_block_builder_add_key(b, b"k".as_ptr().cast(), 1),
            OK
        );
        assert_eq!(leveldb_bloom_filter_block_builder_add_key(b, null(), 0), OK);
        assert_eq!(
            leveldb_bloom_filter_block_builder_add_key(b, null(), 1),
            LEVELDB_BLOOM_ERR_NULL_ARGUMENT as c_int
        );
        assert_eq!(leveldb_bloom_filter_block_builder_start_block(b, 6000), OK);
        assert_eq!(
            leveldb_bloom_filter_block_builder_start_block(b, 4095),
            LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS as c_int
        );
        assert_eq!(
            leveldb_bloom_filter_block_builder_start_block(null_mut(), 0),
            LEVELDB_BLOOM_ERR_NULL_ARGUMENT as c_int
        );

        let (mut block, mut block_len) = (null::<u8>(), 0usize);
        assert_eq!(
            leveldb_bloom_filter_block_builder_finish(b, null_mut(), &mut block_len),
            LEVELDB_BLOOM_ERR_NULL_ARGUMENT as c_int
        );
        assert_eq!(
            leveldb_bloom_filter_block_builder_finish(b, &mut block, &mut block_len),
            OK
        );
        let first = std::slice::from_raw_parts(block, block_len).to_vec();
        assert_eq!(
            leveldb_bloom_filter_block_builder_finish(b, &mut block, &mut block_len),
            OK
        );
        assert_eq!(std::slice::from_raw_parts(block, block_len), &first[..]);
        assert_eq!(
            leveldb_bloom_filter_block_builder_add_key(b, b"k".as_ptr().cast(), 1),
            LEVELDB_BLOOM_ERR_ALREADY_FINISHED as c_int
        );
        assert_eq!(
            leveldb_bloom_filter_block_builder_start_block(b, 10000),
            LEVELDB_BLOOM_ERR_ALREADY_FINISHED as c_int
        );

        assert!(leveldb_bloom_filter_block_may_match(
            p.0,
            block,
            block_len,
            0,
            b"k".as_ptr().cast(),
            1
        ));
        assert!(leveldb_bloom_filter_block_may_match(
            null(),
            block,
            block_len,
            0,
            b"zz".as_ptr().cast(),
            2
        ));
        assert!(leveldb_bloom_filter_block_may_match(
            p.0,
            null(),
            0,
            0,
            b"zz".as_ptr().cast(),
            2
        ));
        assert!(leveldb_bloom_filter_block_may_match(
            p.0,
            block,
            block_len,
            0,
            null(),
            2
        ));
        // Window 1 (offsets 2048..4095) holds an empty filter: nothing matches there.
        assert!(!leveldb_bloom_filter_block_may_match(
            p.0,
            block,
            block_len,
            2048,
            b"k".as_ptr().cast(),
            1
        ));
        leveldb_bloom_filter_block_builder_destroy(b);
        leveldb_bloom_filter_block_builder_destroy(null_mut());
    }
}
