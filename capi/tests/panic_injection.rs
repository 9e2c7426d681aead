//! No panic crosses the C boundary: with a panic forced inside each entry point's guard
//! (cargo feature `panic-injection`), each returns its documented answer instead: a status
//! of LEVELDB_BLOOM_ERR_PANIC, NULL, "may match", an always-match filter, or a static string.
//! Run with `cargo test --features panic-injection --test panic_injection`.
#![cfg(feature = "panic-injection")]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::{null, null_mut};

use leveldb_bloom::FilterPolicy;
use leveldb_bloom_capi::leveldb_bloom_status::*;
use leveldb_bloom_capi::panic_injection::arm;
use leveldb_bloom_capi::*;

mod common;
use common::{CKeys, PolicyKind};

const PANIC: c_int = LEVELDB_BLOOM_ERR_PANIC as c_int;

/// Calls `f` with a panic armed for its guarded work.
fn injected<T>(f: impl FnOnce() -> T) -> T {
    arm();
    f()
}

/// Silences the injected panics (expected) for every test of this binary; anything else (a
/// failed assertion) is still reported.
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&"panic injected for a test") {
                default_hook(info);
            }
        }));
    });
}

#[test]
fn every_policy_kind_answers_as_documented_after_a_panic() {
    fn run<P: FilterPolicy + Clone>(kind: &PolicyKind<P>) {
        println!("policy kind: {}", kind.name); // shown if an assertion fails
        every_per_policy_entry_point_after_a_panic(kind);
    }
    for_each_policy_kind!(run);
}

/// The entry points that take no policy: creation, names, messages, version, global counts.
#[test]
fn policy_free_entry_points_answer_as_documented_after_a_panic() {
    quiet_injected_panics();
    assert!(injected(|| leveldb_bloom_policy_create(10)).is_null());
    assert!(injected(|| leveldb_bloom_policy_create_compact(10.0)).is_null());
    assert!(injected(|| leveldb_bloom_policy_create_for_fp_rate(0.01, 1)).is_null());
    assert!(injected(|| leveldb_bloom_policy_create_for_fp_rate(0.01, 0)).is_null());
    let policy = leveldb_bloom_policy_create_compact(10.0);
    assert!(!policy.is_null(), "a panic leaves nothing armed");
    // SAFETY: static strings; a live policy destroyed once; a writable stats struct.
    unsafe {
        let name = |p: *const c_char| CStr::from_ptr(p).to_owned();
        assert_eq!(
            name(injected(|| leveldb_bloom_cb_name(null_mut()))),
            c"leveldb.BuiltinBloomFilter2"
        );
        assert_eq!(
            name(injected(|| leveldb_bloom_status_message(0))),
            c"internal error (a panic was caught)"
        );
        assert!(!injected(|| leveldb_bloom_version()).is_null());
        assert!(injected(|| leveldb_bloom_policy_counted(policy)).is_null());
        let mut stats = leveldb_bloom_stats::default();
        assert_eq!(injected(|| leveldb_bloom_global_stats(&mut stats)), PANIC);
        injected(|| leveldb_bloom_global_stats_reset());
        leveldb_bloom_policy_destroy(policy);
    }
}

/// Every entry point that takes a policy, given one of `kind`: the documented answers (-1,
/// -1.0, 0, ERR_PANIC, "may match", the always-match filter) after a panic, and a policy
/// and builder still usable after it.
fn every_per_policy_entry_point_after_a_panic<P: FilterPolicy + Clone>(kind: &PolicyKind<P>) {
    quiet_injected_panics();
    let policy = kind.create();
    assert!(!policy.is_null());
    let keys: [&[u8]; 2] = [b"hello", b"world"];
    let CKeys { ptrs, lens, slices } = CKeys::new(&keys);
    let mut filter = [0u8; 64];
    let mut len = 0usize;
    // SAFETY: valid pointers and lengths throughout; every object is destroyed once.
    unsafe {
        assert_eq!(leveldb_bloom_policy_format(policy), kind.format);
        assert_eq!(injected(|| leveldb_bloom_policy_format(policy)), -1);
        assert_eq!(leveldb_bloom_policy_bits_per_key(policy), 10.0);
        assert_eq!(injected(|| leveldb_bloom_policy_bits_per_key(policy)), -1.0);
        assert_eq!(injected(|| leveldb_bloom_filter_len(policy, 2)), 0);
        assert_eq!(
            CStr::from_ptr(injected(|| leveldb_bloom_policy_name(policy))),
            c"leveldb.BuiltinBloomFilter2"
        );

        assert_eq!(
            leveldb_bloom_create_filter(
                policy,
                ptrs.as_ptr(),
                lens.as_ptr(),
                2,
                filter.as_mut_ptr(),
                64,
                &mut len
            ),
            0
        );
        let filter = &filter[..len];
        assert_eq!(leveldb_bloom::compact::is_compact(filter), kind.format == 1);
        let absent = (0..1000u32)
            .map(|i| i.to_le_bytes())
            .find(|k| {
                !leveldb_bloom_key_may_match(
                    policy,
                    k.as_ptr().cast(),
                    4,
                    filter.as_ptr(),
                    filter.len(),
                )
            })
            .expect("some key is certainly absent");

        let mut out = [0xa5u8; 64];
        assert_eq!(
            injected(|| leveldb_bloom_create_filter(
                policy,
                ptrs.as_ptr(),
                lens.as_ptr(),
                2,
                out.as_mut_ptr(),
                64,
                &mut len
            )),
            PANIC
        );
        assert_eq!(
            injected(|| leveldb_bloom_create_filter_slices(
                policy,
                slices.as_ptr(),
                2,
                out.as_mut_ptr(),
                64,
                &mut len
            )),
            PANIC
        );

        // Queries: "may match" even for a key the filter certainly does not hold.
        assert!(injected(|| leveldb_bloom_key_may_match(
            policy,
            absent.as_ptr().cast(),
            4,
            filter.as_ptr(),
            filter.len()
        )));
        assert_eq!(
            injected(|| leveldb_bloom_cb_key_may_match(
                policy.cast(),
                absent.as_ptr().cast(),
                4,
                filter.as_ptr().cast(),
                filter.len()
            )),
            1
        );
        let absent_key = [absent.as_ptr().cast::<c_char>()];
        let mut results = [0u8; 2];
        assert_eq!(
            injected(|| leveldb_bloom_key_may_match_batch(
                policy,
                absent_key.as_ptr(),
                [4usize].as_ptr(),
                1,
                filter.as_ptr(),
                filter.len(),
                results.as_mut_ptr()
            )),
            PANIC
        );
        assert_eq!(
            results,
            [1, 0],
            "a panicking batch leaves every answer at may-match, and nothing past it"
        );

        // The callback never hands LevelDB an empty or missing filter, nor a compact one.
        let mut cb_len = 12345usize;
        let cb = injected(|| {
            leveldb_bloom_cb_create_filter(
                policy.cast::<c_void>(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                2,
                &mut cb_len,
            )
        });
        assert!(!cb.is_null());
        assert_eq!(std::slice::from_raw_parts(cb.cast::<u8>(), cb_len), &[0, 0]);
        libc::free(cb.cast());

        // Filter blocks.
        assert!(injected(|| leveldb_bloom_filter_block_builder_create(policy)).is_null());
        let builder = leveldb_bloom_filter_block_builder_create(policy);
        assert_eq!(
            injected(|| leveldb_bloom_filter_block_builder_start_block(builder, 0)),
            PANIC
        );
        assert_eq!(
            injected(|| leveldb_bloom_filter_block_builder_add_key(builder, ptrs[0], lens[0])),
            PANIC
        );
        assert_eq!(
            leveldb_bloom_filter_block_builder_start_block(builder, 0),
            0,
            "usable after"
        );
        for (&key, &key_len) in ptrs.iter().zip(&lens) {
            assert_eq!(
                leveldb_bloom_filter_block_builder_add_key(builder, key, key_len),
                0
            );
        }
        // The panic strikes before the filter is generated: nothing is lost.
        assert_eq!(
            injected(|| leveldb_bloom_filter_block_builder_start_block(builder, 4096)),
            PANIC
        );
        let (mut block, mut block_len) = (null(), 0usize);
        assert_eq!(
            injected(|| leveldb_bloom_filter_block_builder_finish(
                builder,
                &mut block,
                &mut block_len
            )),
            PANIC
        );
        // Window 1 (offsets 2048..4095) gets an empty filter: "no match" there.
        assert_eq!(
            leveldb_bloom_filter_block_builder_start_block(builder, 4096),
            0
        );
        assert_eq!(
            leveldb_bloom_filter_block_builder_finish(builder, &mut block, &mut block_len),
            0
        );
        let mut expected = leveldb_bloom::FilterBlockBuilder::new(kind.rust.clone());
        expected.start_block(0).unwrap();
        for key in keys {
            expected.add_key(key).unwrap();
        }
        expected.start_block(4096).unwrap();
        assert_eq!(
            std::slice::from_raw_parts(block, block_len),
            expected.finish().unwrap(),
            "the block is the one built without panics"
        );
        for (&key, &key_len) in ptrs.iter().zip(&lens) {
            assert!(leveldb_bloom_filter_block_may_match(
                policy, block, block_len, 0, key, key_len
            ));
        }
        assert!(!leveldb_bloom_filter_block_may_match(
            policy,
            block,
            block_len,
            0,
            absent_key[0],
            4
        ));
        assert!(injected(|| leveldb_bloom_filter_block_may_match(
            policy,
            block,
            block_len,
            0,
            absent_key[0],
            4
        )));
        assert!(!leveldb_bloom_filter_block_may_match(
            policy, block, block_len, 2048, ptrs[0], lens[0]
        ));
        assert!(injected(|| leveldb_bloom_filter_block_may_match(
            policy, block, block_len, 2048, ptrs[0], lens[0]
        )));
        let offsets = [2048u64]; // an empty filter's window: "no match" without a panic
        let mut results = [0u8; 1];
        assert_eq!(
            injected(|| leveldb_bloom_filter_block_may_match_batch(
                policy,
                block,
                block_len,
                offsets.as_ptr(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                1,
                results.as_mut_ptr()
            )),
            PANIC
        );
        assert_eq!(results, [1]);
        injected(|| leveldb_bloom_filter_block_builder_destroy(builder)); // leaks, never crashes
        // The panic struck before the builder was touched: it is whole, and freed now (no
        // leak left for Miri to report).
        leveldb_bloom_filter_block_builder_destroy(builder);
        leveldb_bloom_filter_block_builder_destroy(leveldb_bloom_filter_block_builder_create(
            policy,
        ));

        // Statistics.
        let mut stats = leveldb_bloom_stats::default();
        assert_eq!(
            injected(|| leveldb_bloom_policy_stats(policy, &mut stats)),
            PANIC
        );
        assert_eq!(injected(|| leveldb_bloom_policy_stats_reset(policy)), PANIC);

        // Destruction: a panic there leaks the object but returns normally. (The object is
        // created outside `injected`: the armed panic must strike the destructor.)
        // Each is whole after the panic, and freed for good after.
        let doomed = kind.create_small();
        injected(|| leveldb_bloom_cb_destructor(doomed.cast()));
        leveldb_bloom_cb_destructor(doomed.cast());
        let doomed = kind.create_small();
        injected(|| leveldb_bloom_policy_destroy(doomed));
        leveldb_bloom_policy_destroy(doomed);
        leveldb_bloom_policy_destroy(policy);
    }
}
