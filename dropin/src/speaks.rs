//! Whether a LevelDB speaks the drop-in's format, judged by its own Bloom policy before the
//! drop-in serves it: the policy names itself `leveldb.BuiltinBloomFilter2`, answers a known set
//! of the drop-in's Bloom filters exactly as the drop-in does (every member found, the same
//! answer for each absent key, LevelDB's answers for malformed filters), and, where the
//! drop-in builds compact filters, answers every key of a compact filter "may match" (else
//! that LevelDB's readers would lose the keys of compact tables). A fork that gives the name
//! to another filter (Basho's gives it to a murmur-hashed, prime-sized one) fails, and keeps
//! its own policy.
//!
//! The set is built once, while the drop-in is loaded; judging a policy asks it some 700
//! questions (tens of microseconds), once per policy made.

use std::ffi::{CStr, c_char, c_void};
use std::sync::OnceLock;

use leveldb_bloom::{BloomPolicy, CompactPolicy, FilterPolicy, NAME};

unsafe extern "C-unwind" {
    // policy.cc: a stock `leveldb::FilterPolicy`'s `Name()` and `KeyMayMatch()`.
    fn leveldb_bloom_dropin_stock_name(stock: *const c_void) -> *const c_char;
    fn leveldb_bloom_dropin_stock_key_may_match(
        stock: *const c_void,
        key: *const u8,
        key_len: usize,
        filter: *const u8,
        filter_len: usize,
    ) -> bool;
}

/// A filter and the keys asked of it, each with the answer a LevelDB of the format gives.
struct Question {
    filter: Vec<u8>,
    keys: Vec<(Vec<u8>, bool)>,
}

/// The questions for Bloom filters, and those for a compact filter.
struct Known {
    bloom: Vec<Question>,
    compact: Question,
}

static KNOWN: OnceLock<Known> = OnceLock::new();

/// Builds the questions, once, while the drop-in is loaded.
pub(crate) fn at_load() {
    KNOWN.get_or_init(known);
}

/// `n` keys of lengths 0 to 40 with bytes of every value (tails of 1 to 3 bytes at or above
/// 0x80 tell LevelDB's unsigned hash from older ones), drawn from `seed`.
fn keys(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u8
    };
    (0..n)
        .map(|i| (0..i % 41).map(|_| next()).collect())
        .collect()
}

/// `policy`'s filter of `keys`.
fn built(policy: &impl FilterPolicy, keys: &[Vec<u8>]) -> Vec<u8> {
    let mut filter = Vec::new();
    policy
        .create_filter(keys, &mut filter)
        .expect("a small filter builds");
    filter
}

fn known() -> Known {
    let mut bloom = Vec::new();
    // Filters at 10, 16 and 0 bits per key (6, 11 and 1 probes; the last the 64-bit minimum).
    for (bits, members, absent, seed) in [(10, 100, 300, 1), (16, 20, 100, 2), (0, 3, 60, 3)] {
        let policy = BloomPolicy::new(bits).expect("a valid bits per key");
        let members = keys(seed, members);
        let filter = built(&policy, &members);
        let keys = members
            .into_iter()
            .map(|k| (k, true))
            .chain(keys(seed + 100, absent).into_iter().map(|k| {
                let answer = leveldb_bloom::bloom::key_may_match(&k, &filter);
                (k, answer)
            }))
            .collect();
        bloom.push(Question { filter, keys });
    }
    // Malformed filters: too short (no match), 0 probes and the reserved probe counts (may
    // match), as LevelDB's rules answer them.
    for filter in [
        &[][..],
        &[0xff],
        &[0, 0],
        &[0xff, 0xff, 31],
        &[1, 2, 3, 255],
    ] {
        let keys = keys(4, 8)
            .into_iter()
            .map(|k| {
                let answer = leveldb_bloom::bloom::key_may_match(&k, filter);
                (k, answer)
            })
            .collect();
        bloom.push(Question {
            filter: filter.to_vec(),
            keys,
        });
    }
    let members = keys(5, 50);
    let filter = built(
        &CompactPolicy::new(10.0).expect("a valid bits per key"),
        &members,
    );
    let compact = Question {
        filter,
        keys: members
            .into_iter()
            .chain(keys(105, 50))
            .map(|k| (k, true))
            .collect(),
    };
    Known { bloom, compact }
}

/// The name the stock policy `stock` gives (where it keeps that string tells whose it is).
pub(crate) fn name_of(stock: *const c_void) -> *const c_char {
    // SAFETY: a live stock policy; `Name()` comes first in every LevelDB's interface.
    unsafe { leveldb_bloom_dropin_stock_name(stock) }
}

/// Whether the stock policy `stock` speaks the format (the module's comment); with
/// `compact`, also that its readers answer compact filters "may match". Says why not.
pub(crate) fn judge(stock: *const c_void, compact: bool) -> Result<(), String> {
    // Asked first: a policy of another name may have other functions after `Name()`.
    let name = name_of(stock);
    // SAFETY: LevelDB's policies name themselves with a static C string.
    let name = (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) });
    if name.map(CStr::to_bytes) != Some(NAME.as_bytes()) {
        return Err(format!(
            "its Bloom policy is named {:?}, not {NAME:?}",
            name.map(CStr::to_string_lossy).unwrap_or_default()
        ));
    }
    let known = KNOWN.get_or_init(known);
    let asked: &mut dyn Iterator<Item = &Question> = if compact {
        &mut known.bloom.iter().chain(std::iter::once(&known.compact))
    } else {
        &mut known.bloom.iter()
    };
    for question in asked {
        for (key, expected) in &question.keys {
            // SAFETY: a live stock policy, and two byte strings of these lengths.
            let answer = unsafe {
                leveldb_bloom_dropin_stock_key_may_match(
                    stock,
                    key.as_ptr(),
                    key.len(),
                    question.filter.as_ptr(),
                    question.filter.len(),
                )
            };
            if answer != *expected {
                let what = if std::ptr::eq(question, &known.compact) {
                    "answers a compact filter's key \"no match\" (its readers would lose the keys of compact tables)"
                } else {
                    "answers the drop-in's Bloom filters otherwise (another filter under LevelDB's name)"
                };
                return Err(format!("its Bloom policy {what}"));
            }
        }
    }
    Ok(())
}
