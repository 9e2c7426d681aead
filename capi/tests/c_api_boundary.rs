//! Every exported function at the edges of its contract: NULL in each pointer argument,
//! zero and maximal lengths, negative counts for LevelDB's callback API. Each row is a call
//! as written (its name in a failure report), what it returned, and the documented answer;
//! all rows of a test run and every mismatch is reported. The rows of the functions that
//! take a policy are written once and run for each policy kind.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::{null, null_mut};

use leveldb_bloom_capi::leveldb_bloom_status::*;
use leveldb_bloom_capi::*;

mod common;
use common::PolicyKind;
use leveldb_bloom::{BloomPolicy, CompactPolicy, FilterBlockBuilder, FilterPolicy, compact};

/// What a call returned, in a comparable form.
#[derive(Debug, PartialEq)]
enum Answer {
    Status(leveldb_bloom_status),
    Bool(bool),
    Size(usize),
    Null,
    NotNull,
    Text(String),
    /// A malloc'd filter from the create callback: its bytes.
    Filter(Vec<u8>),
    /// A status, and the batch results after the call.
    Batch(leveldb_bloom_status, Vec<u8>),
    Returned,
    Int(c_int),
    Float(f64),
}
use Answer::*;

/// A call as written, what it returned, and the documented answer.
type Row = (String, Answer, Answer);

/// The row of the call `$got`, named by its own text.
macro_rules! row {
    ($got:expr, $want:expr $(,)?) => {
        (stringify!($got).to_owned(), $got, $want)
    };
}

const OK: Answer = Status(LEVELDB_BLOOM_OK);
const NULL_ARG: Answer = Status(LEVELDB_BLOOM_ERR_NULL_ARGUMENT);
const INVALID: Answer = Status(LEVELDB_BLOOM_ERR_INVALID_ARGUMENT);
const TOO_SMALL: Answer = Status(LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL);
const ALWAYS_MATCH_FILTER: [u8; 2] = [0, 0];

/// The name every policy gives: LevelDB's Bloom policy's, whose filters they read.
fn leveldb_name() -> Answer {
    Text("leveldb.BuiltinBloomFilter2".into())
}

fn status(code: c_int) -> Answer {
    Status(leveldb_bloom_status::try_from(code).expect("a documented status"))
}

fn pointer<T>(p: *const T) -> Answer {
    if p.is_null() { Null } else { NotNull }
}

/// `Returned`, once `call` has.
fn returned(call: impl FnOnce()) -> Answer {
    call();
    Returned
}

/// `answer` of a policy just created (or NULL), which it then destroys.
fn of_policy<T>(
    p: *mut leveldb_bloom_policy,
    answer: impl FnOnce(*mut leveldb_bloom_policy) -> T,
) -> T {
    let answer = answer(p);
    // SAFETY: NULL or a policy just created, destroyed once.
    unsafe { leveldb_bloom_policy_destroy(p) };
    answer
}

/// Whether a policy was created; destroys it.
fn created(p: *mut leveldb_bloom_policy) -> Answer {
    of_policy(p, |p| pointer(p))
}

/// # Safety
/// `p` is a static NUL-terminated string.
unsafe fn text(p: *const c_char) -> Answer {
    // SAFETY: forwarded.
    Text(
        unsafe { CStr::from_ptr(p) }
            .to_str()
            .expect("UTF-8")
            .to_owned(),
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

/// A batch call's status and its `n` results, which start as 0x55 (so that what the call
/// left alone shows).
fn results(n: usize, call: impl FnOnce(*mut u8) -> Answer) -> Answer {
    let mut r = vec![0x55u8; n];
    let Status(s) = call(r.as_mut_ptr()) else {
        unreachable!()
    };
    Batch(s, r)
}

/// A live policy of one kind, the keys and filters the rows ask about, and the caller's
/// buffers the rows write.
struct Fixture<'k, P> {
    kind: &'k PolicyKind<P>,
    p: *mut leveldb_bloom_policy,
    /// A filter block builder of `p`.
    b: *mut leveldb_bloom_filter_block_builder,
    key: &'static [u8],
    /// Certainly absent from `filter`. On the heap, like the filters: the rows hold pointers
    /// to it across calls that reborrow the whole fixture, which would invalidate pointers
    /// into the fixture itself (Stacked Borrows).
    absent: Vec<u8>,
    /// Of `key`, as the Rust policy builds it.
    filter: Vec<u8>,
    no_keys_filter: Vec<u8>,
    empty_key_filter: Vec<u8>,
    /// Window 0 holds the empty key and `key`; windows 1 (offsets 2048..4095) to
    /// `LAST_WINDOW` are empty; past them every key may match.
    rust_block: Vec<u8>,
    buf: [u8; 64],
    len: usize,
    block: *const u8,
    block_len: usize,
    stats: leveldb_bloom_stats,
}

/// The offset of the last window of `Fixture::rust_block`: thousands of windows in, each
/// of which both builders write; a few dozen under Miri, whose interpreter takes seconds a
/// thousand windows and finds the same in fewer.
const LAST_WINDOW_OFFSET: u64 = (if cfg!(miri) { 1 << 16 } else { 1 << 24 }) - 1;
/// An empty window between the first and the last.
const EMPTY_WINDOW_OFFSET: u64 = LAST_WINDOW_OFFSET / 2;
/// The first window past the last: every key may match.
const PAST_THE_WINDOWS: u64 = LAST_WINDOW_OFFSET + 2048;

/// The pointers and lengths the rows pass, named as the rows name them.
#[derive(Clone, Copy)]
struct Args {
    p: *mut leveldb_bloom_policy,
    state: *mut c_void,
    b: *mut leveldb_bloom_filter_block_builder,
    keys: [*const c_char; 1],
    lens: [usize; 1],
    huge_lens: [usize; 1],
    null_key: [*const c_char; 1],
    slices: [leveldb_bloom_slice; 1],
    null_slice: [leveldb_bloom_slice; 1],
    absent_keys: [*const c_char; 1],
    k: *const c_char,
    kl: usize,
    a: *const c_char,
    al: usize,
    f: *const u8,
    fl: usize,
}

impl<'k, P: FilterPolicy + Clone> Fixture<'k, P> {
    fn new(kind: &'k PolicyKind<P>) -> Self {
        let p = kind.create();
        assert!(!p.is_null());
        let key: &'static [u8] = b"present";
        let filter = rust_filter(&kind.rust, &[key]);
        let absent = (0..1000u32)
            .map(u32::to_le_bytes)
            .find(|k| !kind.rust.key_may_match(k, &filter))
            .expect("some key is certainly absent")
            .to_vec();
        let mut rust_block = FilterBlockBuilder::new(kind.rust.clone());
        rust_block.start_block(0).unwrap();
        rust_block.add_key(b"").unwrap();
        rust_block.add_key(key).unwrap();
        rust_block.start_block(4096).unwrap();
        rust_block.start_block(LAST_WINDOW_OFFSET).unwrap();
        let rust_block = rust_block.finish().unwrap().to_vec();
        Fixture {
            kind,
            p,
            // SAFETY: a live policy.
            b: unsafe { leveldb_bloom_filter_block_builder_create(p) },
            key,
            absent,
            filter,
            no_keys_filter: rust_filter(&kind.rust, &[]),
            empty_key_filter: rust_filter(&kind.rust, &[b""]),
            rust_block,
            buf: [0; 64],
            len: 0,
            block: null(),
            block_len: 0,
            stats: leveldb_bloom_stats::default(),
        }
    }

    /// From here on, the policy (and its builder) count: `leveldb_bloom_policy_counted`.
    fn count(&mut self) {
        // SAFETY: live objects, each replaced and destroyed once.
        unsafe {
            let counted = leveldb_bloom_policy_counted(self.p);
            assert!(!counted.is_null());
            leveldb_bloom_filter_block_builder_destroy(self.b);
            leveldb_bloom_policy_destroy(self.p);
            self.p = counted;
            self.b = leveldb_bloom_filter_block_builder_create(counted);
        }
    }

    fn args(&self) -> Args {
        let k = self.key.as_ptr().cast::<c_char>();
        let a = self.absent.as_ptr().cast::<c_char>();
        Args {
            p: self.p,
            state: self.p.cast(),
            b: self.b,
            keys: [k],
            lens: [self.key.len()],
            huge_lens: [usize::MAX],
            null_key: [null()],
            slices: [leveldb_bloom_slice {
                data: k,
                len: self.key.len(),
            }],
            null_slice: [leveldb_bloom_slice {
                data: null(),
                len: 3,
            }],
            absent_keys: [a],
            k,
            kl: self.key.len(),
            a,
            al: self.absent.len(),
            f: self.filter.as_ptr(),
            fl: self.filter.len(),
        }
    }

    /// The Rust policy's filter of `keys`.
    fn rust_filter(&self, keys: &[&[u8]]) -> Vec<u8> {
        rust_filter(&self.kind.rust, keys)
    }

    /// Runs `rows` on this fixture; the rows named with the policy kind.
    fn rows(mut self, rows: unsafe fn(&mut Self) -> Vec<Row>) -> Vec<Row> {
        // SAFETY: the rows pass the fixture's live pointers with their true lengths, and
        // NULLs and impossible lengths, which the library must refuse before reading
        // anything.
        let rows = unsafe { rows(&mut self) };
        let name = self.kind.name;
        let named = |(what, got, want)| (format!("{name}: {what}"), got, want);
        rows.into_iter().map(named).collect()
    }
}

impl<P> Drop for Fixture<'_, P> {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        unsafe {
            leveldb_bloom_filter_block_builder_destroy(self.b);
            leveldb_bloom_policy_destroy(self.p);
        }
    }
}

/// The arguments of a call of any function `probes!` lists, by the rows' names; the values
/// of `Fixture::probe` make a call that succeeds.
#[derive(Clone, Copy)]
struct Call {
    p: *const leveldb_bloom_policy,
    /// LevelDB's callbacks' state.
    state: *mut c_void,
    b: *mut leveldb_bloom_filter_block_builder,
    keys: *const *const c_char,
    lens: *const usize,
    n: usize,
    /// The callbacks' count of keys.
    num_keys: c_int,
    slices: *const leveldb_bloom_slice,
    key: *const c_char,
    key_len: usize,
    f: *const u8,
    fl: usize,
    out: *mut u8,
    cap: usize,
    /// Also the create callback's filter length.
    out_len: *mut usize,
    results: *mut u8,
    block: *const u8,
    block_len: usize,
    offset: u64,
    offsets: *const u64,
    /// The builder's block, when it finishes.
    finished: *mut *const u8,
    finished_len: *mut usize,
}

impl<P: FilterPolicy + Clone> Fixture<'_, P> {
    /// Makes `call` with the arguments of a call that succeeds, as `change` changes them:
    /// `key` into `buf` (its filter, its results), `key` in `filter` and at offset 0 of
    /// `rust_block`, the builder's block into `block`.
    fn probe(
        &mut self,
        change: impl FnOnce(&mut Call),
        call: impl FnOnce(Call) -> Answer,
    ) -> Answer {
        let arg = self.args();
        // Once: each `as_mut_ptr` would invalidate the pointers taken before it.
        let buf = self.buf.as_mut_ptr();
        let mut c = Call {
            p: arg.p,
            state: arg.state,
            b: arg.b,
            keys: arg.keys.as_ptr(),
            lens: arg.lens.as_ptr(),
            n: 1,
            num_keys: 1,
            slices: arg.slices.as_ptr(),
            key: arg.k,
            key_len: arg.kl,
            f: arg.f,
            fl: arg.fl,
            out: buf,
            cap: 64,
            out_len: &mut self.len,
            results: buf,
            block: self.rust_block.as_ptr(),
            block_len: self.rust_block.len(),
            offset: 0,
            offsets: &0,
            finished: &mut self.block,
            finished_len: &mut self.block_len,
        };
        change(&mut c);
        call(c)
    }
}

/// Each function the rows probe, as a `Fixture` method of its name that makes the call
/// (`Fixture::probe`) and answers as the expression after `=>`. A row states only what it
/// changes, `fx.create_filter(|c| c.keys = null())`, and that is its name in a failure
/// report. The name after `/`, for the batch functions: the same call into results of its
/// own (`results`).
macro_rules! probes {
    ($($method:ident $(/ $into:ident)? ($c:ident) => $answer:expr;)+) => {
        impl<P: FilterPolicy + Clone> Fixture<'_, P> {
            $(
                /// # Safety
                /// As `Fixture::rows` says.
                unsafe fn $method(&mut self, change: impl FnOnce(&mut Call)) -> Answer {
                    // SAFETY: forwarded.
                    self.probe(change, |$c| unsafe { $answer })
                }

                $(
                    /// # Safety
                    /// As `Fixture::rows` says.
                    unsafe fn $into(&mut self, n: usize, change: impl FnOnce(&mut Call)) -> Answer {
                        // SAFETY: forwarded, with `n` results.
                        results(n, |r| unsafe {
                            self.$method(|c| {
                                change(c);
                                c.results = r;
                            })
                        })
                    }
                )?
            )+
        }
    };
}

probes! {
    create_filter(c) =>
        status(leveldb_bloom_create_filter(c.p, c.keys, c.lens, c.n, c.out, c.cap, c.out_len));
    create_filter_slices(c) =>
        status(leveldb_bloom_create_filter_slices(c.p, c.slices, c.n, c.out, c.cap, c.out_len));
    key_may_match(c) => Bool(leveldb_bloom_key_may_match(c.p, c.key, c.key_len, c.f, c.fl));
    key_may_match_batch / key_may_match_batch_into(c) =>
        status(leveldb_bloom_key_may_match_batch(c.p, c.keys, c.lens, c.n, c.f, c.fl, c.results));
    cb_create_filter(c) => {
        let filter = leveldb_bloom_cb_create_filter(c.state, c.keys, c.lens, c.num_keys, c.out_len);
        if c.out_len.is_null() {
            pointer(filter)
        } else {
            take_filter(filter, *c.out_len)
        }
    };
    cb_key_may_match(c) =>
        Size(leveldb_bloom_cb_key_may_match(c.state, c.key, c.key_len, c.f.cast(), c.fl).into());
    finish(c) => status(leveldb_bloom_filter_block_builder_finish(c.b, c.finished, c.finished_len));
    block_may_match(c) => Bool(leveldb_bloom_filter_block_may_match(
        c.p, c.block, c.block_len, c.offset, c.key, c.key_len,
    ));
    block_may_match_batch / block_may_match_batch_into(c) =>
        status(leveldb_bloom_filter_block_may_match_batch(
            c.p, c.block, c.block_len, c.offsets, c.keys, c.lens, c.n, c.results,
        ));
}

fn rust_filter<P: FilterPolicy>(policy: &P, keys: &[&[u8]]) -> Vec<u8> {
    let mut f = Vec::new();
    policy.create_filter(keys, &mut f).unwrap();
    f
}

/// Every function that takes a policy (or its builder, or its filters), for each policy
/// kind: each group of rows on a policy of its own, the statistics after the work they count.
#[test]
fn every_per_policy_function_at_its_edges() {
    fn run<P: FilterPolicy + Clone>(kind: &PolicyKind<P>, rows: &mut Vec<Row>) {
        type Group<P> = for<'f, 'k> unsafe fn(&'f mut Fixture<'k, P>) -> Vec<Row>;
        let groups: [Group<P>; 7] = [
            sizes_rows,
            create_filter_rows,
            query_rows,
            callback_rows,
            builder_rows,
            block_query_rows,
            statistics_rows,
        ];
        for group in groups {
            rows.extend(Fixture::new(kind).rows(group));
        }
    }
    let mut rows = Vec::new();
    run(&PolicyKind::bloom(), &mut rows);
    run(&PolicyKind::compact(), &mut rows);
    assert_rows(&rows);
}

/// The statistics: a policy that does not count refuses to say; a counting one
/// (`leveldb_bloom_policy_counted`) counts every function's work alike, after the rows of
/// `create_filter_rows`, `callback_rows` and `builder_rows`.
unsafe fn statistics_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        let Args { p, .. } = fx.args();
        let mut rows = vec![
            row!(
                status(leveldb_bloom_policy_stats(p, &mut fx.stats)),
                Status(LEVELDB_BLOOM_ERR_NOT_COUNTED)
            ),
            row!(
                status(leveldb_bloom_policy_stats_reset(p)),
                Status(LEVELDB_BLOOM_ERR_NOT_COUNTED)
            ),
            row!(pointer(leveldb_bloom_policy_counted(null())), Null),
        ];
        fx.count();
        rows.extend(create_filter_rows(fx));
        rows.extend(callback_rows(fx));
        rows.extend(builder_rows(fx));
        rows.extend(stats_rows(fx));
        rows
    }
}

/// Sizes: LevelDB's Bloom filter sizes, for both formats.
unsafe fn sizes_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    let Args { p, .. } = fx.args();
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        vec![
            row!(Size(leveldb_bloom_filter_len(p, 0)), Size(9)),
            row!(Size(leveldb_bloom_filter_len(p, 1)), Size(9)),
            row!(Size(leveldb_bloom_filter_len(p, 100)), Size(126)),
            row!(Size(leveldb_bloom_filter_len(p, usize::MAX)), Size(0)),
            row!(text(leveldb_bloom_policy_name(p)), leveldb_name()),
        ]
    }
}

/// `create_filter` and `create_filter_slices`: each pointer NULL, then lengths.
unsafe fn create_filter_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    let arg = fx.args();
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        vec![
            row!(
                {
                    fx.len = 12345;
                    fx.create_filter(|c| c.p = null())
                },
                NULL_ARG
            ),
            // an error stores 0 in *out_len
            row!(Size(fx.len), Size(0)),
            row!(fx.create_filter(|c| c.keys = null()), NULL_ARG),
            row!(fx.create_filter(|c| c.lens = null()), NULL_ARG),
            row!(
                fx.create_filter(|c| (c.keys, c.lens) = (arg.null_key.as_ptr(), &3)),
                NULL_ARG
            ),
            row!(fx.create_filter(|c| c.out = null_mut()), NULL_ARG),
            row!(fx.create_filter(|c| c.out_len = null_mut()), NULL_ARG),
            row!(
                fx.create_filter(|c| (c.keys, c.lens, c.n) = (null(), null(), 0)),
                OK
            ),
            // its bytes
            row!(
                Filter(fx.buf[..fx.len].to_vec()),
                Filter(fx.no_keys_filter.clone())
            ),
            // size query
            row!(
                fx.create_filter(|c| (c.out, c.cap) = (null_mut(), 0)),
                TOO_SMALL
            ),
            // needed length
            row!(Size(fx.len), Size(9)),
            row!(
                {
                    fx.buf.fill(0xa5);
                    fx.create_filter(|c| c.cap = 8)
                },
                TOO_SMALL
            ),
            // needed length
            row!(Size(fx.len), Size(9)),
            // nothing written
            row!(Bool(fx.buf.iter().all(|&b| b == 0xa5)), Bool(true)),
            row!(
                fx.create_filter(|c| c.lens = arg.huge_lens.as_ptr()),
                INVALID
            ),
            row!(fx.create_filter(|c| c.n = usize::MAX), INVALID),
            row!(
                fx.create_filter(|c| (c.keys, c.lens) = (arg.null_key.as_ptr(), &0)),
                OK
            ),
            // the empty key's filter
            row!(
                Filter(fx.buf[..fx.len].to_vec()),
                Filter(fx.empty_key_filter.clone())
            ),
            row!(
                {
                    fx.buf.fill(0xa5);
                    fx.create_filter(|_| ())
                },
                OK
            ),
            // its bytes
            row!(Filter(fx.buf[..fx.len].to_vec()), Filter(fx.filter.clone())),
            // nothing past them
            row!(
                Bool(fx.buf[fx.len..].iter().all(|&b| b == 0xa5)),
                Bool(true)
            ),
            // a compact marker exactly when the policy is compact
            row!(
                Bool(compact::is_compact(&fx.buf[..fx.len])),
                Bool(fx.kind.name == "compact")
            ),
            row!(fx.create_filter_slices(|c| c.p = null()), NULL_ARG),
            row!(fx.create_filter_slices(|c| c.slices = null()), NULL_ARG),
            row!(
                fx.create_filter_slices(|c| c.slices = arg.null_slice.as_ptr()),
                NULL_ARG
            ),
            row!(fx.create_filter_slices(|c| c.n = usize::MAX), INVALID),
            row!(
                fx.create_filter_slices(|c| c.out_len = null_mut()),
                NULL_ARG
            ),
            row!(fx.create_filter_slices(|c| c.cap = 8), TOO_SMALL),
            // needed length
            row!(Size(fx.len), Size(9)),
            row!(fx.create_filter_slices(|_| ()), OK),
            // its bytes
            row!(Filter(fx.buf[..fx.len].to_vec()), Filter(fx.filter.clone())),
        ]
    }
}

/// Queries: whatever cannot be answered may match.
unsafe fn query_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    let arg = fx.args();
    let (two_keys, two_lens) = ([arg.k, arg.a], [arg.kl, arg.al]);
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        vec![
            row!(
                fx.key_may_match(|c| (c.p, c.key, c.key_len) = (null(), b"x".as_ptr().cast(), 1)),
                Bool(true)
            ),
            row!(fx.key_may_match(|_| ()), Bool(true)),
            row!(
                fx.key_may_match(|c| (c.key, c.key_len) = (arg.a, arg.al)),
                Bool(false)
            ),
            row!(
                fx.key_may_match(|c| (c.key, c.key_len) = (null(), 1)),
                Bool(true)
            ),
            row!(fx.key_may_match(|c| c.key_len = usize::MAX), Bool(true)),
            row!(fx.key_may_match(|c| (c.f, c.fl) = (null(), 0)), Bool(true)),
            row!(fx.key_may_match(|c| c.fl = usize::MAX), Bool(true)),
            row!(fx.key_may_match(|c| c.fl = 0), Bool(false)),
            // too short, LevelDB's answer
            row!(
                fx.key_may_match(|c| (c.key, c.key_len, c.f, c.fl) = (arg.a, arg.al, &0xff, 1)),
                Bool(false)
            ),
            row!(
                fx.key_may_match(|c| (c.key, c.key_len) = (null(), 0)),
                Bool(fx.kind.rust.key_may_match(b"", &fx.filter))
            ),
            row!(fx.key_may_match_batch(|c| c.results = null_mut()), NULL_ARG),
            row!(
                fx.key_may_match_batch_into(1, |c| c.p = null()),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1])
            ),
            row!(
                fx.key_may_match_batch_into(1, |c| c.keys = null()),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1])
            ),
            row!(
                fx.key_may_match_batch_into(1, |c| c.lens = null()),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1])
            ),
            row!(
                fx.key_may_match_batch_into(1, |c| (c.keys, c.lens, c.f, c.fl) =
                    (arg.absent_keys.as_ptr(), &arg.al, null(), 0)),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1])
            ),
            row!(
                fx.key_may_match_batch_into(1, |c| c.lens = arg.huge_lens.as_ptr()),
                Batch(LEVELDB_BLOOM_ERR_INVALID_ARGUMENT, vec![1])
            ),
            row!(fx.key_may_match_batch(|c| c.n = usize::MAX), INVALID),
            row!(
                fx.key_may_match_batch(
                    |c| (c.keys, c.lens, c.n, c.results) = (null(), null(), 0, null_mut())
                ),
                OK
            ),
            row!(
                fx.key_may_match_batch_into(1, |_| ()),
                Batch(LEVELDB_BLOOM_OK, vec![1])
            ),
            row!(
                fx.key_may_match_batch_into(3, |c| (c.keys, c.lens, c.n) =
                    (two_keys.as_ptr(), two_lens.as_ptr(), 2)),
                Batch(LEVELDB_BLOOM_OK, vec![1, 0, 0x55])
            ),
        ]
    }
}

/// LevelDB's callbacks, with the policy as state.
unsafe fn callback_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    let arg = fx.args();
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        vec![
            row!(fx.cb_create_filter(|c| c.out_len = null_mut()), Null),
            row!(
                fx.cb_create_filter(|c| c.state = null_mut()),
                Filter(ALWAYS_MATCH_FILTER.to_vec())
            ),
            row!(
                fx.cb_create_filter(|c| c.num_keys = -1),
                Filter(ALWAYS_MATCH_FILTER.to_vec())
            ),
            row!(
                fx.cb_create_filter(|c| c.num_keys = c_int::MIN),
                Filter(ALWAYS_MATCH_FILTER.to_vec())
            ),
            row!(
                fx.cb_create_filter(|c| c.keys = null()),
                Filter(ALWAYS_MATCH_FILTER.to_vec())
            ),
            row!(
                fx.cb_create_filter(|c| c.lens = null()),
                Filter(ALWAYS_MATCH_FILTER.to_vec())
            ),
            row!(
                fx.cb_create_filter(|c| c.lens = arg.huge_lens.as_ptr()),
                Filter(ALWAYS_MATCH_FILTER.to_vec())
            ),
            row!(
                fx.cb_create_filter(|c| (c.keys, c.lens, c.num_keys) = (null(), null(), 0)),
                Filter(fx.no_keys_filter.clone())
            ),
            row!(fx.cb_create_filter(|_| ()), Filter(fx.filter.clone())),
            row!(
                fx.cb_key_may_match(
                    |c| (c.state, c.key, c.key_len) = (null_mut(), b"x".as_ptr().cast(), 1)
                ),
                Size(1)
            ),
            row!(fx.cb_key_may_match(|_| ()), Size(1)),
            row!(
                fx.cb_key_may_match(|c| (c.key, c.key_len) = (arg.a, arg.al)),
                Size(0)
            ),
            row!(
                fx.cb_key_may_match(|c| (c.key, c.key_len) = (null(), 1)),
                Size(1)
            ),
            row!(
                fx.cb_key_may_match(|c| (c.key, c.key_len, c.f, c.fl) = (arg.a, arg.al, null(), 0)),
                Size(1)
            ),
            row!(fx.cb_key_may_match(|c| c.fl = usize::MAX), Size(1)),
            row!(text(leveldb_bloom_cb_name(arg.state)), leveldb_name()),
        ]
    }
}

/// The filter block builder.
unsafe fn builder_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    let Args { b, k, kl, .. } = fx.args();
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        vec![
            row!(pointer(b), NotNull),
            row!(
                status(leveldb_bloom_filter_block_builder_start_block(b, 0)),
                OK
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_add_key(b, null(), 1)),
                NULL_ARG
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_add_key(b, k, usize::MAX)),
                INVALID
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_add_key(b, null(), 0)),
                OK
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_add_key(b, k, kl)),
                OK
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_start_block(b, 4096)),
                OK
            ),
            // backwards
            row!(
                status(leveldb_bloom_filter_block_builder_start_block(b, 0)),
                Status(LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS)
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_start_block(
                    b,
                    LAST_WINDOW_OFFSET,
                )),
                OK
            ),
            row!(fx.finish(|c| c.b = null_mut()), NULL_ARG),
            row!(fx.finish(|c| c.finished = null_mut()), NULL_ARG),
            row!(fx.finish(|c| c.finished_len = null_mut()), NULL_ARG),
            row!(fx.finish(|_| ()), OK),
            // the Rust builder's bytes
            row!(
                Filter(std::slice::from_raw_parts(fx.block, fx.block_len).to_vec()),
                Filter(fx.rust_block.clone())
            ),
            // builder_add_key after finish
            row!(
                status(leveldb_bloom_filter_block_builder_add_key(b, k, kl)),
                Status(LEVELDB_BLOOM_ERR_ALREADY_FINISHED)
            ),
        ]
    }
}

/// Filter block queries, on the block the Rust builder made (`builder_rows` proves the C
/// builder's equal).
unsafe fn block_query_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    let arg = fx.args();
    let three = (
        [0, 0, 2048],
        [arg.k, arg.a, arg.k],
        [arg.kl, arg.al, arg.kl],
    );
    // What the Rust policy answers for the absent key in window 0.
    let absent_may_match = fx
        .kind
        .rust
        .key_may_match(&fx.absent, &fx.rust_filter(&[b"", fx.key]));
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        vec![
            row!(
                fx.block_may_match(|c| (c.p, c.offset) = (null(), EMPTY_WINDOW_OFFSET)),
                Bool(true)
            ),
            row!(
                fx.block_may_match(
                    |c| (c.block, c.block_len, c.key, c.key_len) = (null(), 0, arg.a, arg.al)
                ),
                Bool(true)
            ),
            row!(
                fx.block_may_match(|c| (c.block_len, c.offset) = (usize::MAX, EMPTY_WINDOW_OFFSET)),
                Bool(true)
            ),
            row!(
                fx.block_may_match(|c| (c.key, c.key_len) = (null(), 1)),
                Bool(true)
            ),
            row!(fx.block_may_match(|c| c.offset = u64::MAX), Bool(true)),
            row!(fx.block_may_match(|_| ()), Bool(true)),
            row!(
                fx.block_may_match(|c| (c.key, c.key_len) = (arg.a, arg.al)),
                Bool(absent_may_match)
            ),
            row!(fx.block_may_match(|c| c.offset = 2048), Bool(false)),
            row!(
                fx.block_may_match(|c| c.offset = EMPTY_WINDOW_OFFSET),
                Bool(false)
            ),
            row!(
                fx.block_may_match(
                    |c| (c.offset, c.key, c.key_len) = (PAST_THE_WINDOWS, arg.a, arg.al)
                ),
                Bool(true)
            ),
            row!(
                fx.block_may_match_batch(|c| c.results = null_mut()),
                NULL_ARG
            ),
            row!(
                fx.block_may_match_batch_into(1, |c| (c.offsets, c.keys, c.lens) =
                    (null(), arg.absent_keys.as_ptr(), &arg.al)),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1])
            ),
            row!(
                fx.block_may_match_batch_into(1, |c| (c.block, c.block_len) = (null(), 0)),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1])
            ),
            row!(
                fx.block_may_match_batch_into(1, |c| c.keys = null()),
                Batch(LEVELDB_BLOOM_ERR_NULL_ARGUMENT, vec![1])
            ),
            row!(fx.block_may_match_batch(|c| c.n = usize::MAX), INVALID),
            row!(
                fx.block_may_match_batch_into(1, |_| ()),
                Batch(LEVELDB_BLOOM_OK, vec![1])
            ),
            row!(
                fx.block_may_match_batch_into(4, |c| (c.offsets, c.keys, c.lens, c.n) =
                    (three.0.as_ptr(), three.1.as_ptr(), three.2.as_ptr(), 3)),
                Batch(
                    LEVELDB_BLOOM_OK,
                    vec![1, u8::from(absent_may_match), 0, 0x55]
                )
            ),
        ]
    }
}

/// Statistics, after `create_filter_rows`, `callback_rows` and `builder_rows`.
unsafe fn stats_rows<P: FilterPolicy + Clone>(fx: &mut Fixture<'_, P>) -> Vec<Row> {
    let Args { p, .. } = fx.args();
    // SAFETY: as `Fixture::rows` says.
    unsafe {
        vec![
            row!(status(leveldb_bloom_policy_stats(p, null_mut())), NULL_ARG),
            row!(status(leveldb_bloom_policy_stats(p, &mut fx.stats)), OK),
            // filters built (create x3, slices x1, callbacks x2, block x1)
            row!(Size(fx.stats.filters_built as usize), Size(7)),
            row!(status(leveldb_bloom_policy_stats_reset(p)), OK),
        ]
    }
}

/// The functions that take no policy, or make one: NULLs, impossible settings, strings.
/// `rows`, whose C calls each run the compact format's search for a rate in full (thousands
/// of modelled filter sizes), natively only: under Miri each takes half a minute, and their
/// boundary is the one the `fp` policy of the test below crosses.
fn compact_rate_searches(rows: impl FnOnce() -> Vec<Row>) -> Vec<Row> {
    if cfg!(miri) { Vec::new() } else { rows() }
}

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
        .find(|k| {
            !CompactPolicy::new(10.0)
                .unwrap()
                .key_may_match(k, &compact_filter)
        })
        .expect("some key is certainly absent");
    let (a, al) = (absent.as_ptr().cast::<c_char>(), absent.len());
    let mut compact_block = FilterBlockBuilder::new(CompactPolicy::new(10.0).unwrap());
    compact_block.start_block(0).unwrap();
    compact_block.add_key(key).unwrap();
    let compact_block = compact_block.finish().unwrap().to_vec();

    // SAFETY: every non-NULL pointer below is valid for the length given with it; the rows
    // probe NULLs and impossible settings.
    let rows: Vec<Row> = unsafe {
        vec![
            row!(pointer(leveldb_bloom_policy_create(-1)), Null),
            row!(pointer(leveldb_bloom_policy_create(c_int::MIN)), Null),
            row!(
                returned(|| leveldb_bloom_policy_destroy(null_mut())),
                Returned
            ),
            row!(text(leveldb_bloom_policy_name(null())), leveldb_name()),
            row!(Size(leveldb_bloom_filter_len(null(), 1)), Size(0)),
            // no keys: a 64-bit filter whatever the bits per key
            row!(
                of_policy(leveldb_bloom_policy_create(c_int::MAX), |big| {
                    let (mut out, mut len) = ([0u8; 16], 0);
                    leveldb_bloom_create_filter(
                        big,
                        null(),
                        null(),
                        0,
                        out.as_mut_ptr(),
                        16,
                        &mut len,
                    );
                    Filter(out[..len].to_vec())
                }),
                Filter(vec![0, 0, 0, 0, 0, 0, 0, 0, 30])
            ),
            row!(
                returned(|| leveldb_bloom_cb_destructor(null_mut())),
                Returned
            ),
            row!(text(leveldb_bloom_cb_name(null_mut())), leveldb_name()),
            row!(
                pointer(leveldb_bloom_filter_block_builder_create(null())),
                Null
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_start_block(
                    null_mut(),
                    0,
                )),
                NULL_ARG
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_add_key(
                    null_mut(),
                    k,
                    kl,
                )),
                NULL_ARG
            ),
            row!(
                status(leveldb_bloom_filter_block_builder_finish(
                    null_mut(),
                    &mut block,
                    &mut block_len,
                )),
                NULL_ARG
            ),
            row!(
                returned(|| leveldb_bloom_filter_block_builder_destroy(null_mut())),
                Returned
            ),
            row!(
                status(leveldb_bloom_policy_stats(null(), &mut stats)),
                NULL_ARG
            ),
            row!(status(leveldb_bloom_policy_stats_reset(null())), NULL_ARG),
            row!(status(leveldb_bloom_global_stats(null_mut())), NULL_ARG),
            row!(
                text(leveldb_bloom_status_message(-1)),
                Text("unknown status".into())
            ),
            row!(
                text(leveldb_bloom_status_message(c_int::MAX)),
                Text("unknown status".into())
            ),
            row!(
                text(leveldb_bloom_version()),
                Text(env!("CARGO_PKG_VERSION").into())
            ),
            // Compact sizes at fractional and zero bits per key.
            // 725 bits
            row!(
                of_policy(leveldb_bloom_policy_create_compact(7.25), |p| Size(
                    leveldb_bloom_filter_len(p, 100)
                )),
                Size(92)
            ),
            // the 64-bit minimum
            row!(
                of_policy(leveldb_bloom_policy_create_compact(0.0), |p| Size(
                    leveldb_bloom_filter_len(p, 1000)
                )),
                Size(9)
            ),
            // Each format reads the other's filters as stock LevelDB does.
            // LevelDB's may-match
            row!(
                Bool(leveldb_bloom_key_may_match(
                    bloom,
                    a,
                    al,
                    compact_filter.as_ptr(),
                    compact_filter.len(),
                )),
                Bool(true)
            ),
            // as LevelDB
            row!(
                Bool(leveldb_bloom_key_may_match(
                    c,
                    a,
                    al,
                    bloom_filter.as_ptr(),
                    bloom_filter.len(),
                )),
                Bool(
                    BloomPolicy::new(10)
                        .unwrap()
                        .key_may_match(&absent, &bloom_filter)
                )
            ),
            // LevelDB's may-match
            row!(
                Bool(leveldb_bloom_filter_block_may_match(
                    bloom,
                    compact_block.as_ptr(),
                    compact_block.len(),
                    0,
                    a,
                    al,
                )),
                Bool(true)
            ),
            // Creation from bits per key: a number from 0 to 32, fractions allowed.
            row!(created(leveldb_bloom_policy_create_compact(f64::NAN)), Null),
            row!(
                created(leveldb_bloom_policy_create_compact(-f64::NAN)),
                Null
            ),
            row!(created(leveldb_bloom_policy_create_compact(-1.0)), Null),
            row!(
                created(leveldb_bloom_policy_create_compact(-f64::MIN_POSITIVE)),
                Null
            ),
            row!(
                created(leveldb_bloom_policy_create_compact(f64::NEG_INFINITY)),
                Null
            ),
            row!(
                created(leveldb_bloom_policy_create_compact(f64::INFINITY)),
                Null
            ),
            row!(
                created(leveldb_bloom_policy_create_compact(32.0f64.next_up())),
                Null
            ),
            row!(created(leveldb_bloom_policy_create_compact(33.0)), Null),
            row!(created(leveldb_bloom_policy_create_compact(f64::MAX)), Null),
            row!(created(leveldb_bloom_policy_create_compact(0.0)), NotNull),
            row!(created(leveldb_bloom_policy_create_compact(-0.0)), NotNull),
            row!(
                created(leveldb_bloom_policy_create_compact(f64::from_bits(1))),
                NotNull
            ),
            row!(created(leveldb_bloom_policy_create_compact(7.25)), NotNull),
            row!(created(leveldb_bloom_policy_create_compact(32.0)), NotNull),
            // Creation from a target rate: (0, 1), reachable, and a known format.
            row!(
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, 0)),
                NotNull
            ),
            row!(
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, 2)),
                Null
            ),
            row!(
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, -1)),
                Null
            ),
            row!(
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, c_int::MIN)),
                Null
            ),
            row!(
                created(leveldb_bloom_policy_create_for_fp_rate(0.01, c_int::MAX)),
                Null
            ),
            row!(
                created(leveldb_bloom_policy_create_for_fp_rate(f64::NAN, 7)),
                Null
            ),
        ]
        .into_iter()
        .chain([0, 1].into_iter().flat_map(|format| {
            [
                (0.0, Null),
                (-0.0, Null),
                (1.0, Null),
                (1.5, Null),
                (-0.01, Null),
                (f64::NAN, Null),
                (f64::INFINITY, Null),
                (f64::NEG_INFINITY, Null),
                (f64::from_bits(1), Null),
                (1e-300, Null), // out of reach
                (1.0f64.next_down(), NotNull),
                (0.5, NotNull),
                (1e-6, NotNull),
            ]
            .into_iter()
            .filter(move |(_, want)| format == 0 || *want == Null || !cfg!(miri))
            .map(move |(rate, want)| {
                let (what, got, want) = row!(
                    created(leveldb_bloom_policy_create_for_fp_rate(rate, format)),
                    want
                );
                (
                    format!("{what} with rate {rate:e}, format {format}"),
                    got,
                    want,
                )
            })
        }))
        .chain(compact_rate_searches(|| {
            vec![
                row!(
                    created(leveldb_bloom_policy_create_for_fp_rate(0.01, 1)),
                    NotNull
                ),
                // Compact: reachable down to about 8e-10 with 32 bits per key (filters of
                // about 60 keys need the most).
                row!(
                    created(leveldb_bloom_policy_create_for_fp_rate(1e-9, 1)),
                    NotNull
                ),
                row!(
                    Float(leveldb_bloom_policy_bits_per_key(fp)),
                    Float(CompactPolicy::for_fp_rate(0.01).unwrap().bits_per_key())
                ),
            ]
        }))
        .chain([
            row!(
                created(leveldb_bloom_policy_create_for_fp_rate(6e-10, 1)),
                Null
            ),
            // Format and bits per key.
            row!(Int(leveldb_bloom_policy_format(null())), Int(-1)),
            row!(Int(leveldb_bloom_policy_format(bloom)), Int(0)),
            row!(Int(leveldb_bloom_policy_format(c)), Int(1)),
            row!(Int(leveldb_bloom_policy_format(fp)), Int(1)),
            row!(Int(leveldb_bloom_policy_format(fp_bloom)), Int(0)),
            row!(
                Float(leveldb_bloom_policy_bits_per_key(null())),
                Float(-1.0)
            ),
            row!(Float(leveldb_bloom_policy_bits_per_key(bloom)), Float(10.0)),
            row!(Float(leveldb_bloom_policy_bits_per_key(c)), Float(10.0)),
            row!(
                of_policy(leveldb_bloom_policy_create_compact(7.25), |p| Float(
                    leveldb_bloom_policy_bits_per_key(p)
                )),
                Float(7.25)
            ),
            // in 64ths, above log2(100) (no filter does better) and below 8
            row!(
                Bool({
                    let bits = leveldb_bloom_policy_bits_per_key(fp);
                    (bits * 64.0).fract() == 0.0 && bits > 100f64.log2() && bits < 8.0
                }),
                Bool(true)
            ),
            row!(
                Float(leveldb_bloom_policy_bits_per_key(fp_bloom)),
                Float(f64::from(
                    leveldb_bloom::BloomPolicy::for_fp_rate(0.01)
                        .unwrap()
                        .bits_per_key(),
                ))
            ),
            row!(text(leveldb_bloom_policy_name(c)), leveldb_name()),
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
