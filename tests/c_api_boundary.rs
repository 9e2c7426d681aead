//! Every exported function at the edges of its contract: NULL in each pointer argument,
//! zero and maximal lengths, negative counts for LevelDB's callback API. Each row states the
//! documented answer; all rows run and every mismatch is reported. The rows of the functions
//! that take a policy are written once and run for each policy kind.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::{null, null_mut};

use leveldb_bloom::ffi::leveldb_bloom_status::*;
use leveldb_bloom::ffi::*;

mod common;
use common::PolicyKind;
use leveldb_bloom::{CompactPolicy, FilterBlockBuilder, FilterFormat, compact};

/// What a call returned, in a comparable form.
#[derive(Debug, PartialEq)]
enum Answer {
    Status(leveldb_bloom_status),
    Bool(bool),
    Size(usize),
    Null,
    NotNull,
    Text(&'static str),
    /// A malloc'd filter from the create callback: its bytes.
    Filter(Vec<u8>),
    /// A status, and the batch results after the call.
    Batch(leveldb_bloom_status, Vec<u8>),
    Returned,
    Int(c_int),
    Float(f64),
}
use Answer::*;

const OK: Answer = Status(LEVELDB_BLOOM_OK);
const NULL_ARG: Answer = Status(LEVELDB_BLOOM_ERR_NULL_ARGUMENT);
const INVALID: Answer = Status(LEVELDB_BLOOM_ERR_INVALID_ARGUMENT);
const TOO_SMALL: Answer = Status(LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL);
const ALWAYS_MATCH_FILTER: [u8; 2] = [0, 0];

fn status(code: c_int) -> Answer {
    Status(leveldb_bloom_status::try_from(code).expect("a documented status"))
}

fn pointer<T>(p: *const T) -> Answer {
    if p.is_null() { Null } else { NotNull }
}

/// Whether a policy was created; destroys it.
fn created(p: *mut leveldb_bloom_policy) -> Answer {
    let answer = pointer(p);
    // SAFETY: NULL or a policy just created, destroyed once.
    unsafe { leveldb_bloom_policy_destroy(p) };
    answer
}

/// # Safety
/// `p` is a static NUL-terminated string.
unsafe fn text(p: *const c_char) -> Answer {
    // SAFETY: forwarded.
    Text(
        unsafe { CStr::from_ptr(p) }
            .to_str()
            .expect("UTF-8")
            .to_owned()
            .leak(),
    )
}

/// Takes a malloc'd filter from the create callback.
///
/// # Safety
/// `filter` came from `leveldb_bloom_cb_create_filter` with length `len`.
unsafe fn take_filter(filter: *mut c_char, len: usize) -> Answer {
    if filter.is_null() {
        return Null;
    }
    // SAFETY: the callback returned `len` bytes from malloc; freed once here.
    unsafe {
        let bytes = std::slice::from_raw_parts(filter.cast::<u8>(), len).to_vec();
        libc::free(filter.cast());
        Filter(bytes)
    }
}

#[test]
fn every_policy_kind_answers_as_documented_at_its_edges() {
    for kind in PolicyKind::all() {
        every_per_policy_function_at_its_edges(&kind);
    }
}

/// Every function that takes a policy (or its builder, or its filters), given a policy of
/// `kind`: each pointer NULL, zero and maximal lengths, negative counts, and the answers on
/// present and absent keys.
fn every_per_policy_function_at_its_edges(kind: &PolicyKind) {
    let p = kind.create();
    assert!(!p.is_null());
    let rust_filter = |keys: &[&[u8]]| {
        let mut f = Vec::new();
        kind.rust.create_filter(keys, &mut f).unwrap();
        f
    };
    let key: &[u8] = b"present";
    let keys = [key.as_ptr().cast::<c_char>()];
    let lens = [key.len()];
    let huge_lens = [usize::MAX];
    let null_key = [null::<c_char>()];
    let slices = [leveldb_bloom_slice {
        data: keys[0],
        len: key.len(),
    }];
    let null_slice = [leveldb_bloom_slice {
        data: null(),
        len: 3,
    }];
    let filter = rust_filter(&[key]);
    let no_keys_filter = rust_filter(&[]);
    let empty_key_filter = rust_filter(&[b""]);
    let absent = (0..1000u32)
        .map(u32::to_le_bytes)
        .find(|k| !kind.rust.key_may_match(k, &filter))
        .expect("some key is certainly absent");
    let absent_keys = [absent.as_ptr().cast::<c_char>()];
    let (f, fl) = (filter.as_ptr(), filter.len());
    let (k, kl) = (keys[0], key.len());
    let (a, al) = (absent_keys[0], absent.len());
    let state = p.cast::<c_void>();
    let mut buf = [0u8; 64];
    let mut len = 0usize;
    // Filter block: window 0 holds the empty key and `key`; windows 1 (offsets 2048..4095)
    // to 8191 are empty; past them every key may match.
    let last_window_offset = u64::MAX >> 40;
    let mut rust_block = FilterBlockBuilder::new(kind.rust);
    rust_block.start_block(0).unwrap();
    rust_block.add_key(b"").unwrap();
    rust_block.add_key(key).unwrap();
    rust_block.start_block(4096).unwrap();
    rust_block.start_block(last_window_offset).unwrap();
    let rust_block = rust_block.finish().unwrap().to_vec();
    // SAFETY: a live policy.
    let b = unsafe { leveldb_bloom_filter_block_builder_create(p) };
    let (mut block, mut block_len) = (null::<u8>(), 0usize);
    let mut stats = leveldb_bloom_stats::default();

    // SAFETY: every non-NULL pointer below is valid for the length given with it, as the
    // contract requires; the rows probe NULLs and impossible lengths, which the library must
    // refuse before reading anything.
    let rows: Vec<(String, Answer, Answer)> = unsafe {
        let results = |n: usize, call: &mut dyn FnMut(*mut u8) -> c_int| {
            let mut r = vec![0x55u8; n];
            let code = call(r.as_mut_ptr());
            let Status(s) = status(code) else {
                unreachable!()
            };
            Batch(s, r)
        };
        vec![
            // Sizes: LevelDB's Bloom filter sizes, for both formats.
            (
                "filter_len(p, 0)",
                Size(leveldb_bloom_filter_len(p, 0)),
                Size(9),
            ),
            (
                "filter_len(p, 1)",
                Size(leveldb_bloom_filter_len(p, 1)),
                Size(9),
            ),
            (
                "filter_len(p, 100)",
                Size(leveldb_bloom_filter_len(p, 100)),
                Size(126),
            ),
            (
                "filter_len(p, SIZE_MAX)",
                Size(leveldb_bloom_filter_len(p, usize::MAX)),
                Size(0),
            ),
            (
                "policy_name(p)",
                text(leveldb_bloom_policy_name(p)),
                Text("leveldb.BuiltinBloomFilter2"),
            ),
            // create_filter: each pointer NULL, then lengths.
            (
                "create_filter(policy NULL)",
                status(leveldb_bloom_create_filter(
                    null(),
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter(keys NULL)",
                status(leveldb_bloom_create_filter(
                    p,
                    null(),
                    lens.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter(key_lens NULL)",
                status(leveldb_bloom_create_filter(
                    p,
                    keys.as_ptr(),
                    null(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter(key NULL, len 3)",
                status(leveldb_bloom_create_filter(
                    p,
                    null_key.as_ptr(),
                    [3usize].as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter(out NULL, cap 64)",
                status(leveldb_bloom_create_filter(
                    p,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    null_mut(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter(out_len NULL)",
                status(leveldb_bloom_create_filter(
                    p,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    null_mut(),
                )),
                NULL_ARG,
            ),
            (
                "create_filter(0 keys, arrays NULL)",
                status(leveldb_bloom_create_filter(
                    p,
                    null(),
                    null(),
                    0,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                OK,
            ),
            (
                "  ... its bytes",
                Filter(buf[..len].to_vec()),
                Filter(no_keys_filter.clone()),
            ),
            (
                "create_filter(out NULL, cap 0): size query",
                status(leveldb_bloom_create_filter(
                    p,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    null_mut(),
                    0,
                    &mut len,
                )),
                TOO_SMALL,
            ),
            ("  ... needed length", Size(len), Size(9)),
            (
                "create_filter(cap 8: one short)",
                {
                    buf.fill(0xa5);
                    status(leveldb_bloom_create_filter(
                        p,
                        keys.as_ptr(),
                        lens.as_ptr(),
                        1,
                        buf.as_mut_ptr(),
                        8,
                        &mut len,
                    ))
                },
                TOO_SMALL,
            ),
            ("  ... needed length", Size(len), Size(9)),
            (
                "  ... nothing written",
                Bool(buf.iter().all(|&b| b == 0xa5)),
                Bool(true),
            ),
            (
                "create_filter(key len SIZE_MAX)",
                status(leveldb_bloom_create_filter(
                    p,
                    keys.as_ptr(),
                    huge_lens.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                INVALID,
            ),
            (
                "create_filter(num_keys SIZE_MAX)",
                status(leveldb_bloom_create_filter(
                    p,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    usize::MAX,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                INVALID,
            ),
            (
                "create_filter(NULL key, len 0)",
                status(leveldb_bloom_create_filter(
                    p,
                    null_key.as_ptr(),
                    [0usize].as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                OK,
            ),
            (
                "  ... the empty key's filter",
                Filter(buf[..len].to_vec()),
                Filter(empty_key_filter.clone()),
            ),
            (
                "create_filter(one key)",
                {
                    buf.fill(0xa5);
                    status(leveldb_bloom_create_filter(
                        p,
                        keys.as_ptr(),
                        lens.as_ptr(),
                        1,
                        buf.as_mut_ptr(),
                        64,
                        &mut len,
                    ))
                },
                OK,
            ),
            (
                "  ... its bytes",
                Filter(buf[..len].to_vec()),
                Filter(filter.clone()),
            ),
            (
                "  ... nothing past them",
                Bool(buf[len..].iter().all(|&b| b == 0xa5)),
                Bool(true),
            ),
            (
                "  ... a compact marker exactly when the policy is compact",
                Bool(compact::is_compact(&buf[..len])),
                Bool(kind.name() == "compact"),
            ),
            (
                "create_filter_slices(policy NULL)",
                status(leveldb_bloom_create_filter_slices(
                    null(),
                    slices.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter_slices(keys NULL)",
                status(leveldb_bloom_create_filter_slices(
                    p,
                    null(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter_slices(slice data NULL, len 3)",
                status(leveldb_bloom_create_filter_slices(
                    p,
                    null_slice.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                NULL_ARG,
            ),
            (
                "create_filter_slices(num_keys SIZE_MAX)",
                status(leveldb_bloom_create_filter_slices(
                    p,
                    slices.as_ptr(),
                    usize::MAX,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                INVALID,
            ),
            (
                "create_filter_slices(out_len NULL)",
                status(leveldb_bloom_create_filter_slices(
                    p,
                    slices.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    null_mut(),
                )),
                NULL_ARG,
            ),
            (
                "create_filter_slices(cap 8: one short)",
                status(leveldb_bloom_create_filter_slices(
                    p,
                    slices.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    8,
                    &mut len,
                )),
                TOO_SMALL,
            ),
            ("  ... needed length", Size(len), Size(9)),
            (
                "create_filter_slices(one key)",
                status(leveldb_bloom_create_filter_slices(
                    p,
                    slices.as_ptr(),
                    1,
                    buf.as_mut_ptr(),
                    64,
                    &mut len,
                )),
                OK,
            ),
            (
                "  ... its bytes",
                Filter(buf[..len].to_vec()),
                Filter(filter.clone()),
            ),
            // Queries: whatever cannot be answered may match.
            (
                "key_may_match(policy NULL)",
                Bool(leveldb_bloom_key_may_match(
                    null(),
                    b"x".as_ptr().cast(),
                    1,
                    f,
                    fl,
                )),
                Bool(true),
            ),
            (
                "key_may_match(present key)",
                Bool(leveldb_bloom_key_may_match(p, k, kl, f, fl)),
                Bool(true),
            ),
            (
                "key_may_match(absent key)",
                Bool(leveldb_bloom_key_may_match(p, a, al, f, fl)),
                Bool(false),
            ),
            (
                "key_may_match(key NULL, len 1)",
                Bool(leveldb_bloom_key_may_match(p, null(), 1, f, fl)),
                Bool(true),
            ),
            (
                "key_may_match(key len SIZE_MAX)",
                Bool(leveldb_bloom_key_may_match(p, k, usize::MAX, f, fl)),
                Bool(true),
            ),
            (
                "key_may_match(filter NULL, len 0)",
                Bool(leveldb_bloom_key_may_match(p, k, kl, null(), 0)),
                Bool(true),
            ),
            (
                "key_may_match(filter len SIZE_MAX)",
                Bool(leveldb_bloom_key_may_match(p, k, kl, f, usize::MAX)),
                Bool(true),
            ),
            (
                "key_may_match(empty filter)",
                Bool(leveldb_bloom_key_may_match(p, k, kl, f, 0)),
                Bool(false),
            ),
            (
                "key_may_match(1-byte filter 0xff): too short, LevelDB's answer",
                Bool(leveldb_bloom_key_may_match(p, a, al, [0xffu8].as_ptr(), 1)),
                Bool(false),
            ),
            (
                "key_may_match(NULL key, len 0)",
                Bool(leveldb_bloom_key_may_match(p, null(), 0, f, fl)),
                Bool(kind.rust.key_may_match(b"", &filter)),
            ),
            (
                "key_may_match_batch(results NULL)",
                status(leveldb_bloom_key_may_match_batch(
                    p,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    f,
                    fl,
                    null_mut(),
                )),
                NULL_ARG,
            ),
            (
                "key_may_match_batch(policy NULL)",
                results(1, &mut |r| {
                    leveldb_bloom_key_may_match_batch(
                        null(),
                        keys.as_ptr(),
                        lens.as_ptr(),
                        1,
                        f,
                        fl,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1]),
            ),
            (
                "key_may_match_batch(keys NULL)",
                results(1, &mut |r| {
                    leveldb_bloom_key_may_match_batch(p, null(), lens.as_ptr(), 1, f, fl, r)
                }),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1]),
            ),
            (
                "key_may_match_batch(key_lens NULL)",
                results(1, &mut |r| {
                    leveldb_bloom_key_may_match_batch(p, keys.as_ptr(), null(), 1, f, fl, r)
                }),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1]),
            ),
            (
                "key_may_match_batch(filter NULL)",
                results(1, &mut |r| {
                    leveldb_bloom_key_may_match_batch(
                        p,
                        absent_keys.as_ptr(),
                        [al].as_ptr(),
                        1,
                        null(),
                        0,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1]),
            ),
            (
                "key_may_match_batch(key len SIZE_MAX)",
                results(1, &mut |r| {
                    leveldb_bloom_key_may_match_batch(
                        p,
                        keys.as_ptr(),
                        huge_lens.as_ptr(),
                        1,
                        f,
                        fl,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_ERR_INVALID_ARGUMENT, vec![1]),
            ),
            (
                "key_may_match_batch(num_keys SIZE_MAX)",
                status(leveldb_bloom_key_may_match_batch(
                    p,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    usize::MAX,
                    f,
                    fl,
                    buf.as_mut_ptr(),
                )),
                INVALID,
            ),
            (
                "key_may_match_batch(0 keys, all NULL but policy, filter)",
                status(leveldb_bloom_key_may_match_batch(
                    p,
                    null(),
                    null(),
                    0,
                    f,
                    fl,
                    null_mut(),
                )),
                OK,
            ),
            (
                "key_may_match_batch(present key)",
                results(1, &mut |r| {
                    leveldb_bloom_key_may_match_batch(p, keys.as_ptr(), lens.as_ptr(), 1, f, fl, r)
                }),
                Batch(LEVELDB_BLOOM_OK, vec![1]),
            ),
            (
                "key_may_match_batch(present, absent)",
                results(3, &mut |r| {
                    leveldb_bloom_key_may_match_batch(
                        p,
                        [k, a].as_ptr(),
                        [kl, al].as_ptr(),
                        2,
                        f,
                        fl,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_OK, vec![1, 0, 0x55]),
            ),
            // LevelDB's callbacks, with the policy as state.
            (
                "cb_create_filter(filter_length NULL)",
                pointer(leveldb_bloom_cb_create_filter(
                    state,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    null_mut(),
                )),
                Null,
            ),
            (
                "cb_create_filter(state NULL)",
                take_filter(
                    leveldb_bloom_cb_create_filter(
                        null_mut(),
                        keys.as_ptr(),
                        lens.as_ptr(),
                        1,
                        &mut len,
                    ),
                    len,
                ),
                Filter(ALWAYS_MATCH_FILTER.to_vec()),
            ),
            (
                "cb_create_filter(num_keys -1)",
                take_filter(
                    leveldb_bloom_cb_create_filter(
                        state,
                        keys.as_ptr(),
                        lens.as_ptr(),
                        -1,
                        &mut len,
                    ),
                    len,
                ),
                Filter(ALWAYS_MATCH_FILTER.to_vec()),
            ),
            (
                "cb_create_filter(num_keys INT_MIN)",
                take_filter(
                    leveldb_bloom_cb_create_filter(
                        state,
                        keys.as_ptr(),
                        lens.as_ptr(),
                        c_int::MIN,
                        &mut len,
                    ),
                    len,
                ),
                Filter(ALWAYS_MATCH_FILTER.to_vec()),
            ),
            (
                "cb_create_filter(key_array NULL)",
                take_filter(
                    leveldb_bloom_cb_create_filter(state, null(), lens.as_ptr(), 1, &mut len),
                    len,
                ),
                Filter(ALWAYS_MATCH_FILTER.to_vec()),
            ),
            (
                "cb_create_filter(key_length_array NULL)",
                take_filter(
                    leveldb_bloom_cb_create_filter(state, keys.as_ptr(), null(), 1, &mut len),
                    len,
                ),
                Filter(ALWAYS_MATCH_FILTER.to_vec()),
            ),
            (
                "cb_create_filter(key len SIZE_MAX)",
                take_filter(
                    leveldb_bloom_cb_create_filter(
                        state,
                        keys.as_ptr(),
                        huge_lens.as_ptr(),
                        1,
                        &mut len,
                    ),
                    len,
                ),
                Filter(ALWAYS_MATCH_FILTER.to_vec()),
            ),
            (
                "cb_create_filter(0 keys, arrays NULL)",
                take_filter(
                    leveldb_bloom_cb_create_filter(state, null(), null(), 0, &mut len),
                    len,
                ),
                Filter(no_keys_filter.clone()),
            ),
            (
                "cb_create_filter(one key)",
                take_filter(
                    leveldb_bloom_cb_create_filter(
                        state,
                        keys.as_ptr(),
                        lens.as_ptr(),
                        1,
                        &mut len,
                    ),
                    len,
                ),
                Filter(filter.clone()),
            ),
            (
                "cb_key_may_match(state NULL)",
                Size(
                    leveldb_bloom_cb_key_may_match(
                        null_mut(),
                        b"x".as_ptr().cast(),
                        1,
                        f.cast(),
                        fl,
                    )
                    .into(),
                ),
                Size(1),
            ),
            (
                "cb_key_may_match(present key)",
                Size(leveldb_bloom_cb_key_may_match(state, k, kl, f.cast(), fl).into()),
                Size(1),
            ),
            (
                "cb_key_may_match(absent key)",
                Size(leveldb_bloom_cb_key_may_match(state, a, al, f.cast(), fl).into()),
                Size(0),
            ),
            (
                "cb_key_may_match(key NULL, len 1)",
                Size(leveldb_bloom_cb_key_may_match(state, null(), 1, f.cast(), fl).into()),
                Size(1),
            ),
            (
                "cb_key_may_match(filter NULL)",
                Size(leveldb_bloom_cb_key_may_match(state, a, al, null(), 0).into()),
                Size(1),
            ),
            (
                "cb_key_may_match(filter len SIZE_MAX)",
                Size(leveldb_bloom_cb_key_may_match(state, k, kl, f.cast(), usize::MAX).into()),
                Size(1),
            ),
            (
                "cb_name(state)",
                text(leveldb_bloom_cb_name(state)),
                Text("leveldb.BuiltinBloomFilter2"),
            ),
            // Filter block builder.
            ("builder_create(p)", pointer(b), NotNull),
            (
                "builder_start_block(b, 0)",
                status(leveldb_bloom_filter_block_builder_start_block(b, 0)),
                OK,
            ),
            (
                "builder_add_key(key NULL, len 1)",
                status(leveldb_bloom_filter_block_builder_add_key(b, null(), 1)),
                NULL_ARG,
            ),
            (
                "builder_add_key(key len SIZE_MAX)",
                status(leveldb_bloom_filter_block_builder_add_key(b, k, usize::MAX)),
                INVALID,
            ),
            (
                "builder_add_key(key NULL, len 0)",
                status(leveldb_bloom_filter_block_builder_add_key(b, null(), 0)),
                OK,
            ),
            (
                "builder_add_key(key)",
                status(leveldb_bloom_filter_block_builder_add_key(b, k, kl)),
                OK,
            ),
            (
                "builder_start_block(b, 4096)",
                status(leveldb_bloom_filter_block_builder_start_block(b, 4096)),
                OK,
            ),
            (
                "builder_start_block(b, 0): backwards",
                status(leveldb_bloom_filter_block_builder_start_block(b, 0)),
                Status(LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS),
            ),
            (
                "builder_start_block(b, UINT64_MAX >> 40)",
                status(leveldb_bloom_filter_block_builder_start_block(
                    b,
                    last_window_offset,
                )),
                OK,
            ),
            (
                "builder_finish(NULL)",
                status(leveldb_bloom_filter_block_builder_finish(
                    null_mut(),
                    &mut block,
                    &mut block_len,
                )),
                NULL_ARG,
            ),
            (
                "builder_finish(block NULL)",
                status(leveldb_bloom_filter_block_builder_finish(
                    b,
                    null_mut(),
                    &mut block_len,
                )),
                NULL_ARG,
            ),
            (
                "builder_finish(block_len NULL)",
                status(leveldb_bloom_filter_block_builder_finish(
                    b,
                    &mut block,
                    null_mut(),
                )),
                NULL_ARG,
            ),
            (
                "builder_finish(b)",
                status(leveldb_bloom_filter_block_builder_finish(
                    b,
                    &mut block,
                    &mut block_len,
                )),
                OK,
            ),
            (
                "  ... the Rust builder's bytes",
                Filter(std::slice::from_raw_parts(block, block_len).to_vec()),
                Filter(rust_block.clone()),
            ),
            (
                "builder_add_key after finish",
                status(leveldb_bloom_filter_block_builder_add_key(b, k, kl)),
                Status(LEVELDB_BLOOM_ERR_ALREADY_FINISHED),
            ),
            // Filter block queries.
            (
                "filter_block_may_match(policy NULL)",
                Bool(leveldb_bloom_filter_block_may_match(
                    null(),
                    block,
                    block_len,
                    1 << 20,
                    k,
                    kl,
                )),
                Bool(true),
            ),
            (
                "filter_block_may_match(block NULL)",
                Bool(leveldb_bloom_filter_block_may_match(p, null(), 0, 0, a, al)),
                Bool(true),
            ),
            (
                "filter_block_may_match(block len SIZE_MAX)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p,
                    block,
                    usize::MAX,
                    1 << 20,
                    k,
                    kl,
                )),
                Bool(true),
            ),
            (
                "filter_block_may_match(key NULL, len 1)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p,
                    block,
                    block_len,
                    0,
                    null(),
                    1,
                )),
                Bool(true),
            ),
            (
                "filter_block_may_match(offset UINT64_MAX)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p,
                    block,
                    block_len,
                    u64::MAX,
                    k,
                    kl,
                )),
                Bool(true),
            ),
            (
                "filter_block_may_match(present key)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p, block, block_len, 0, k, kl,
                )),
                Bool(true),
            ),
            (
                "filter_block_may_match(absent key)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p, block, block_len, 0, a, al,
                )),
                Bool(kind.rust.key_may_match(&absent, &rust_filter(&[b"", key]))),
            ),
            (
                "filter_block_may_match(empty window 1)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p, block, block_len, 2048, k, kl,
                )),
                Bool(false),
            ),
            (
                "filter_block_may_match(empty window 512)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p,
                    block,
                    block_len,
                    1 << 20,
                    k,
                    kl,
                )),
                Bool(false),
            ),
            (
                "filter_block_may_match(past the last window)",
                Bool(leveldb_bloom_filter_block_may_match(
                    p,
                    block,
                    block_len,
                    1 << 30,
                    a,
                    al,
                )),
                Bool(true),
            ),
            (
                "filter_block_may_match_batch(results NULL)",
                status(leveldb_bloom_filter_block_may_match_batch(
                    p,
                    block,
                    block_len,
                    [0u64].as_ptr(),
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    null_mut(),
                )),
                NULL_ARG,
            ),
            (
                "filter_block_may_match_batch(offsets NULL)",
                results(1, &mut |r| {
                    leveldb_bloom_filter_block_may_match_batch(
                        p,
                        block,
                        block_len,
                        null(),
                        absent_keys.as_ptr(),
                        [al].as_ptr(),
                        1,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1]),
            ),
            (
                "filter_block_may_match_batch(block NULL)",
                results(1, &mut |r| {
                    leveldb_bloom_filter_block_may_match_batch(
                        p,
                        null(),
                        0,
                        [0u64].as_ptr(),
                        keys.as_ptr(),
                        lens.as_ptr(),
                        1,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1]),
            ),
            (
                "filter_block_may_match_batch(keys NULL)",
                results(1, &mut |r| {
                    leveldb_bloom_filter_block_may_match_batch(
                        p,
                        block,
                        block_len,
                        [0u64].as_ptr(),
                        null(),
                        lens.as_ptr(),
                        1,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1]),
            ),
            (
                "filter_block_may_match_batch(num_keys SIZE_MAX)",
                status(leveldb_bloom_filter_block_may_match_batch(
                    p,
                    block,
                    block_len,
                    [0u64].as_ptr(),
                    keys.as_ptr(),
                    lens.as_ptr(),
                    usize::MAX,
                    buf.as_mut_ptr(),
                )),
                INVALID,
            ),
            (
                "filter_block_may_match_batch(key at offset 0)",
                results(1, &mut |r| {
                    leveldb_bloom_filter_block_may_match_batch(
                        p,
                        block,
                        block_len,
                        [0u64].as_ptr(),
                        keys.as_ptr(),
                        lens.as_ptr(),
                        1,
                        r,
                    )
                }),
                Batch(LEVELDB_BLOOM_OK, vec![1]),
            ),
            (
                "filter_block_may_match_batch(present, absent, empty window)",
                results(4, &mut |r| {
                    leveldb_bloom_filter_block_may_match_batch(
                        p,
                        block,
                        block_len,
                        [0u64, 0, 2048].as_ptr(),
                        [k, a, k].as_ptr(),
                        [kl, al, kl].as_ptr(),
                        3,
                        r,
                    )
                }),
                Batch(
                    LEVELDB_BLOOM_OK,
                    vec![
                        1,
                        u8::from(kind.rust.key_may_match(&absent, &rust_filter(&[b"", key]))),
                        0,
                        0x55,
                    ],
                ),
            ),
            // Statistics count every policy's work alike.
            (
                "policy_stats(stats NULL)",
                status(leveldb_bloom_policy_stats(p, null_mut())),
                NULL_ARG,
            ),
            (
                "policy_stats(p)",
                status(leveldb_bloom_policy_stats(p, &mut stats)),
                OK,
            ),
            (
                "  ... filters built (create x3, slices x1, callbacks x2, block x1)",
                Size(stats.filters_built as usize),
                Size(7),
            ),
            (
                "policy_stats_reset(p)",
                status(leveldb_bloom_policy_stats_reset(p)),
                OK,
            ),
        ]
        .into_iter()
        .map(|(what, got, want)| (format!("{}: {what}", kind.name()), got, want))
        .collect()
    };
    assert_rows(&rows);
    // SAFETY: created above, destroyed once.
    unsafe {
        leveldb_bloom_filter_block_builder_destroy(b);
        leveldb_bloom_policy_destroy(p);
    }
}

/// The functions that take no policy, or make one: NULLs, impossible settings, strings.
#[test]
fn policy_free_functions_answer_as_documented_at_their_edges() {
    let bloom = leveldb_bloom_policy_create(10);
    let c = leveldb_bloom_policy_create_compact(10.0);
    assert!(!c.is_null());
    let fp = leveldb_bloom_policy_create_for_fp_rate(0.01, 1);
    let fp_bloom = leveldb_bloom_policy_create_for_fp_rate(0.01, 0);
    let mut stats = leveldb_bloom_stats::default();
    let (mut block, mut block_len) = (null::<u8>(), 0usize);
    let key: &[u8] = b"present";
    let (k, kl) = (key.as_ptr().cast::<c_char>(), key.len());
    let compact_filter = {
        let mut f = Vec::new();
        CompactPolicy::new(10.0)
            .unwrap()
            .create_filter([key], &mut f)
            .unwrap();
        f
    };
    let mut bloom_filter = Vec::new();
    leveldb_bloom::BloomPolicy::new(10)
        .unwrap()
        .create_filter([key], &mut bloom_filter)
        .unwrap();
    let absent = (0..1000u32)
        .map(u32::to_le_bytes)
        .find(|k| !compact::key_may_match(k, &compact_filter))
        .expect("some key is certainly absent");
    let (a, al) = (absent.as_ptr().cast::<c_char>(), absent.len());
    let mut compact_block = FilterBlockBuilder::new(CompactPolicy::new(10.0).unwrap());
    compact_block.start_block(0).unwrap();
    compact_block.add_key(key).unwrap();
    let compact_block = compact_block.finish().unwrap().to_vec();

    // SAFETY: every non-NULL pointer below is valid for the length given with it; the rows
    // probe NULLs and impossible settings.
    let rows: Vec<(&str, Answer, Answer)> = unsafe {
        vec![
            (
                "policy_create(-1)",
                pointer(leveldb_bloom_policy_create(-1)),
                Null,
            ),
            (
                "policy_create(INT_MIN)",
                pointer(leveldb_bloom_policy_create(c_int::MIN)),
                Null,
            ),
            (
                "policy_destroy(NULL)",
                {
                    leveldb_bloom_policy_destroy(null_mut());
                    Returned
                },
                Returned,
            ),
            (
                "policy_name(NULL)",
                text(leveldb_bloom_policy_name(null())),
                Text("leveldb.BuiltinBloomFilter2"),
            ),
            (
                "filter_len(NULL, 1)",
                Size(leveldb_bloom_filter_len(null(), 1)),
                Size(0),
            ),
            (
                "cb_destructor(NULL)",
                {
                    leveldb_bloom_cb_destructor(null_mut());
                    Returned
                },
                Returned,
            ),
            (
                "cb_name(NULL)",
                text(leveldb_bloom_cb_name(null_mut())),
                Text("leveldb.BuiltinBloomFilter2"),
            ),
            (
                "builder_create(NULL)",
                pointer(leveldb_bloom_filter_block_builder_create(null())),
                Null,
            ),
            (
                "builder_start_block(NULL)",
                status(leveldb_bloom_filter_block_builder_start_block(
                    null_mut(),
                    0,
                )),
                NULL_ARG,
            ),
            (
                "builder_add_key(NULL)",
                status(leveldb_bloom_filter_block_builder_add_key(
                    null_mut(),
                    k,
                    kl,
                )),
                NULL_ARG,
            ),
            (
                "builder_finish(NULL)",
                status(leveldb_bloom_filter_block_builder_finish(
                    null_mut(),
                    &mut block,
                    &mut block_len,
                )),
                NULL_ARG,
            ),
            (
                "builder_destroy(NULL)",
                {
                    leveldb_bloom_filter_block_builder_destroy(null_mut());
                    Returned
                },
                Returned,
            ),
            (
                "policy_stats(policy NULL)",
                status(leveldb_bloom_policy_stats(null(), &mut stats)),
                NULL_ARG,
            ),
            (
                "policy_stats_reset(NULL)",
                status(leveldb_bloom_policy_stats_reset(null())),
                NULL_ARG,
            ),
            (
                "global_stats(NULL)",
                status(leveldb_bloom_global_stats(null_mut())),
                NULL_ARG,
            ),
            (
                "status_message(-1)",
                text(leveldb_bloom_status_message(-1)),
                Text("unknown status"),
            ),
            (
                "status_message(INT_MAX)",
                text(leveldb_bloom_status_message(c_int::MAX)),
                Text("unknown status"),
            ),
            (
                "version()",
                text(leveldb_bloom_version()),
                Text(env!("CARGO_PKG_VERSION")),
            ),
            // Compact sizes at fractional and zero bits per key.
            (
                "filter_len(compact 7.25, 100): 725 bits",
                {
                    let p = leveldb_bloom_policy_create_compact(7.25);
                    let n = leveldb_bloom_filter_len(p, 100);
                    leveldb_bloom_policy_destroy(p);
                    Size(n)
                },
                Size(92),
            ),
            (
                "filter_len(compact 0, 1000): the 64-bit minimum",
                {
                    let p = leveldb_bloom_policy_create_compact(0.0);
                    let n = leveldb_bloom_filter_len(p, 1000);
                    leveldb_bloom_policy_destroy(p);
                    Size(n)
                },
                Size(9),
            ),
            // Each format reads the other's filters as stock LevelDB does.
            (
                "key_may_match(bloom, absent key, compact filter): LevelDB's may-match",
                Bool(leveldb_bloom_key_may_match(
                    bloom,
                    a,
                    al,
                    compact_filter.as_ptr(),
                    compact_filter.len(),
                )),
                Bool(true),
            ),
            (
                "key_may_match(compact, absent key, Bloom filter): as LevelDB",
                Bool(leveldb_bloom_key_may_match(
                    c,
                    a,
                    al,
                    bloom_filter.as_ptr(),
                    bloom_filter.len(),
                )),
                Bool(leveldb_bloom::key_may_match(&absent, &bloom_filter)),
            ),
            (
                "filter_block_may_match(bloom, absent key, compact block): LevelDB's may-match",
                Bool(leveldb_bloom_filter_block_may_match(
                    bloom,
                    compact_block.as_ptr(),
                    compact_block.len(),
                    0,
                    a,
                    al,
                )),
                Bool(true),
            ),
            // Creation from bits per key: a number from 0 to 32, fractions allowed.
            (
                "create_compact(NaN)",
                created(leveldb_bloom_policy_create_compact(f64::NAN)),
                Null,
            ),
            (
                "create_compact(-NaN)",
                created(leveldb_bloom_policy_create_compact(-f64::NAN)),
                Null,
            ),
            (
                "create_compact(-1)",
                created(leveldb_bloom_policy_create_compact(-1.0)),
                Null,
            ),
            (
                "create_compact(-tiny)",
                created(leveldb_bloom_policy_create_compact(-f64::MIN_POSITIVE)),
                Null,
            ),
            (
                "create_compact(-inf)",
                created(leveldb_bloom_policy_create_compact(f64::NEG_INFINITY)),
                Null,
            ),
            (
                "create_compact(inf)",
                created(leveldb_bloom_policy_create_compact(f64::INFINITY)),
                Null,
            ),
            (
                "create_compact(32 + ulp)",
                created(leveldb_bloom_policy_create_compact(32.0f64.next_up())),
                Null,
            ),
            (
                "create_compact(33)",
                created(leveldb_bloom_policy_create_compact(33.0)),
                Null,
            ),
            (
                "create_compact(DBL_MAX)",
                created(leveldb_bloom_policy_create_compact(f64::MAX)),
                Null,
            ),
            (
                "create_compact(0)",
                created(leveldb_bloom_policy_create_compact(0.0)),
                NotNull,
            ),
            (
                "create_compact(-0.0)",
                created(leveldb_bloom_policy_create_compact(-0.0)),
                NotNull,
            ),
            (
                "create_compact(denormal)",
                created(leveldb_bloom_policy_create_compact(f64::from_bits(1))),
                NotNull,
            ),
            (
                "create_compact(7.25)",
                created(leveldb_bloom_policy_create_compact(7.25)),
                NotNull,
            ),
            (
                "create_compact(32)",
                created(leveldb_bloom_policy_create_compact(32.0)),
                NotNull,
            ),
            // Creation from a target rate: (0, 1), reachable, and a known format.
            (
                "create_for_fp_rate(0.01, BLOOM)",
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, 0)),
                NotNull,
            ),
            (
                "create_for_fp_rate(0.01, COMPACT)",
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, 1)),
                NotNull,
            ),
            (
                "create_for_fp_rate(0.01, format 2)",
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, 2)),
                Null,
            ),
            (
                "create_for_fp_rate(0.01, format -1)",
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, -1)),
                Null,
            ),
            (
                "create_for_fp_rate(0.01, format INT_MIN)",
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, c_int::MIN)),
                Null,
            ),
            (
                "create_for_fp_rate(0.01, format INT_MAX)",
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, c_int::MAX)),
                Null,
            ),
            (
                "create_for_fp_rate(NaN, bad format)",
                created(leveldb_bloom_policy_create_for_fp_rate(f64::NAN, 7)),
                Null,
            ),
        ]
        .into_iter()
        .chain([0, 1].into_iter().flat_map(|format| {
            let name = move |what: &str| -> &'static str {
                format!("create_for_fp_rate({what}, format {format})").leak()
            };
            [
                (0.0, "0", Null),
                (-0.0, "-0.0", Null),
                (1.0, "1", Null),
                (1.5, "1.5", Null),
                (-0.01, "-0.01", Null),
                (f64::NAN, "NaN", Null),
                (f64::INFINITY, "inf", Null),
                (f64::NEG_INFINITY, "-inf", Null),
                (f64::from_bits(1), "denormal", Null),
                (1e-300, "1e-300 (out of reach)", Null),
                (1.0f64.next_down(), "1 - ulp", NotNull),
                (0.5, "0.5", NotNull),
                (1e-6, "1e-6", NotNull),
            ]
            .into_iter()
            .map(move |(rate, what, want)| {
                (
                    name(what),
                    created(leveldb_bloom_policy_create_for_fp_rate(rate, format)),
                    want,
                )
            })
        }))
        .chain([
            // Compact: 13/12 r + (r + 8) / 50 bits per key for r result bits, up to 32.
            (
                "create_for_fp_rate(2^-28, COMPACT): 31.05 bits per key",
                created(leveldb_bloom_policy_create_for_fp_rate(2f64.powi(-28), 1)),
                NotNull,
            ),
            (
                "create_for_fp_rate(2^-28 * 0.99, COMPACT): 29 result bits, 32.16 bits per key",
                created(leveldb_bloom_policy_create_for_fp_rate(
                    2f64.powi(-28) * 0.99,
                    1,
                )),
                Null,
            ),
            // Format and bits per key.
            (
                "policy_format(NULL)",
                Int(leveldb_bloom_policy_format(null())),
                Int(-1),
            ),
            (
                "policy_format(bloom)",
                Int(leveldb_bloom_policy_format(bloom)),
                Int(0),
            ),
            (
                "policy_format(compact)",
                Int(leveldb_bloom_policy_format(c)),
                Int(1),
            ),
            (
                "policy_format(for_fp_rate COMPACT)",
                Int(leveldb_bloom_policy_format(fp)),
                Int(1),
            ),
            (
                "policy_format(for_fp_rate BLOOM)",
                Int(leveldb_bloom_policy_format(fp_bloom)),
                Int(0),
            ),
            (
                "policy_bits_per_key(NULL)",
                Float(leveldb_bloom_policy_bits_per_key(null())),
                Float(-1.0),
            ),
            (
                "policy_bits_per_key(bloom 10)",
                Float(leveldb_bloom_policy_bits_per_key(bloom)),
                Float(10.0),
            ),
            (
                "policy_bits_per_key(compact 10)",
                Float(leveldb_bloom_policy_bits_per_key(c)),
                Float(10.0),
            ),
            (
                "policy_bits_per_key(compact 7.25)",
                {
                    let p = leveldb_bloom_policy_create_compact(7.25);
                    let b = leveldb_bloom_policy_bits_per_key(p);
                    leveldb_bloom_policy_destroy(p);
                    Float(b)
                },
                Float(7.25),
            ),
            (
                "policy_bits_per_key(for_fp_rate(0.01, COMPACT))",
                Float(leveldb_bloom_policy_bits_per_key(fp)),
                Float(CompactPolicy::for_fp_rate(0.01).unwrap().bits_per_key()),
            ),
            (
                "  ... is 7 result bits' 13/12 * 7 + (7 + 8) / 50",
                Bool(
                    (leveldb_bloom_policy_bits_per_key(fp) - (13.0 / 12.0 * 7.0 + 0.3)).abs()
                        < 1e-9,
                ),
                Bool(true),
            ),
            (
                "policy_bits_per_key(for_fp_rate(0.01, BLOOM))",
                Float(leveldb_bloom_policy_bits_per_key(fp_bloom)),
                Float(f64::from(
                    leveldb_bloom::BloomPolicy::for_fp_rate(0.01)
                        .unwrap()
                        .bits_per_key(),
                )),
            ),
            (
                "policy_name(compact)",
                text(leveldb_bloom_policy_name(c)),
                Text("leveldb.BuiltinBloomFilter2"),
            ),
        ])
        .collect()
    };
    assert_rows(&rows);
    // SAFETY: created above, destroyed once.
    unsafe {
        for p in [bloom, c, fp, fp_bloom] {
            leveldb_bloom_policy_destroy(p);
        }
    }
}

/// Fails with every row whose answer is not the documented one.
fn assert_rows<S: AsRef<str>>(rows: &[(S, Answer, Answer)]) {
    let mismatches: Vec<String> = rows
        .iter()
        .filter(|(_, got, want)| got != want)
        .map(|(what, got, want)| format!("{}: got {got:?}, documented {want:?}", what.as_ref()))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} rows differ:\n{}",
        mismatches.len(),
        rows.len(),
        mismatches.join("\n")
    );
}
