//! Helpers of the C API's integration tests: the Rust library's test helpers
//! (`tests/common`), a proptest strategy, the policy kinds of the C API, and keys laid out as C passes them.
#![allow(dead_code)]

#[path = "../../../tests/common/mod.rs"]
mod shared;
#[allow(unused_imports)] // not every test uses them
pub use shared::*;

/// 0..400 keys of 0..64 arbitrary bytes, some of them copies of others.
#[allow(dead_code)]
pub fn keys_with_duplicates() -> impl proptest::strategy::Strategy<Value = Vec<Vec<u8>>> {
    use proptest::prelude::*;
    let key = prop::collection::vec(any::<u8>(), 0..64);
    let copies = prop::collection::vec(any::<(prop::sample::Index, prop::sample::Index)>(), 0..40);
    (prop::collection::vec(key, 0..400), copies).prop_map(|(mut keys, copies)| {
        if !keys.is_empty() {
            for (from, to) in copies {
                let copy = keys[from.index(keys.len())].clone();
                let to = to.index(keys.len());
                keys[to] = copy;
            }
        }
        keys
    })
}

/// One kind of policy the C API makes, with the Rust policy that builds the same filters:
/// tables of C API rows are written once, generic over `P`, and run for each kind.
pub struct PolicyKind<P> {
    /// The policy at 10 bits per key, in Rust.
    pub rust: P,
    /// `"bloom"` or `"compact"`.
    pub name: &'static str,
    /// `leveldb_bloom_policy_format`'s answer.
    pub format: std::ffi::c_int,
    /// Makes a policy of the kind through the C API, at the bits per key given.
    make: fn(f64) -> *mut leveldb_bloom_capi::leveldb_bloom_policy,
}

/// Runs `$test` (a generic function of a `&PolicyKind<P>`) for each kind, Bloom then compact.
#[macro_export]
macro_rules! for_each_policy_kind {
    ($test:ident) => {
        $test(&common::PolicyKind::bloom());
        $test(&common::PolicyKind::compact());
    };
}

impl PolicyKind<leveldb_bloom::BloomPolicy> {
    pub fn bloom() -> Self {
        PolicyKind {
            rust: leveldb_bloom::BloomPolicy::new(10).unwrap(),
            name: "bloom",
            format: 0,
            make: |bits_per_key| {
                leveldb_bloom_capi::leveldb_bloom_policy_create(bits_per_key as std::ffi::c_int)
            },
        }
    }
}

impl PolicyKind<leveldb_bloom::CompactPolicy> {
    pub fn compact() -> Self {
        PolicyKind {
            rust: leveldb_bloom::CompactPolicy::new(10.0).unwrap(),
            name: "compact",
            format: 1,
            make: |bits_per_key| {
                leveldb_bloom_capi::leveldb_bloom_policy_create_compact(bits_per_key)
            },
        }
    }
}

impl<P> PolicyKind<P> {
    /// A policy at 10 bits per key, as `rust`.
    pub fn create(&self) -> *mut leveldb_bloom_capi::leveldb_bloom_policy {
        (self.make)(10.0)
    }

    /// A small policy of the kind (1 or 1.5 bits per key), for rows that destroy it.
    pub fn create_small(&self) -> *mut leveldb_bloom_capi::leveldb_bloom_policy {
        (self.make)(1.5)
    }
}

/// Keys as the C API takes them: pointer and length arrays, and slices. Borrows the keys.
pub struct CKeys {
    pub ptrs: Vec<*const std::ffi::c_char>,
    pub lens: Vec<usize>,
    pub slices: Vec<leveldb_bloom_capi::leveldb_bloom_slice>,
}

impl CKeys {
    pub fn new<K: AsRef<[u8]>>(keys: &[K]) -> Self {
        let keys = keys.iter().map(AsRef::as_ref);
        CKeys {
            ptrs: keys.clone().map(|k| k.as_ptr().cast()).collect(),
            lens: keys.clone().map(<[u8]>::len).collect(),
            slices: keys
                .map(|k| leveldb_bloom_capi::leveldb_bloom_slice {
                    data: k.as_ptr().cast(),
                    len: k.len(),
                })
                .collect(),
        }
    }
}
