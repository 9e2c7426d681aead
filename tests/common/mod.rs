//! Helpers shared by the integration tests: reproducible random inputs without a
//! dependency, and proptest strategies. (Not every test uses every helper.)
#![allow(dead_code)]

/// splitmix64: a fixed seed gives the same inputs on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (> 0).
    #[allow(dead_code)] // not every test uses every helper
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }

    /// `len` random bytes.
    #[allow(dead_code)]
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut bytes = vec![0; len];
        self.fill(&mut bytes);
        bytes
    }

    /// `min..min + spread` random bytes.
    #[allow(dead_code)]
    pub fn bytes_of_length(&mut self, min: u64, spread: u64) -> Vec<u8> {
        let len = min + self.below(spread);
        self.bytes(len as usize)
    }
}

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
/// tables of C API rows are written once and run for each kind.
pub struct PolicyKind {
    /// The policy at 10 bits per key, in Rust.
    pub rust: leveldb_bloom::FilterPolicy,
    /// Makes a policy of the kind through the C API, at the bits per key given.
    make: fn(f64) -> *mut leveldb_bloom::ffi::leveldb_bloom_policy,
}

impl PolicyKind {
    /// Bloom, then compact.
    pub fn all() -> [PolicyKind; 2] {
        use leveldb_bloom::ffi::{
            leveldb_bloom_policy_create, leveldb_bloom_policy_create_compact,
        };
        [
            PolicyKind {
                rust: leveldb_bloom::BloomPolicy::new(10).unwrap().into(),
                make: |bits_per_key| leveldb_bloom_policy_create(bits_per_key as std::ffi::c_int),
            },
            PolicyKind {
                rust: leveldb_bloom::CompactPolicy::new(10.0).unwrap().into(),
                make: |bits_per_key| leveldb_bloom_policy_create_compact(bits_per_key),
            },
        ]
    }

    pub fn name(&self) -> &'static str {
        match self.rust.format() {
            leveldb_bloom::Format::Bloom => "bloom",
            leveldb_bloom::Format::Compact => "compact",
        }
    }

    /// `leveldb_bloom_policy_format`'s answer.
    pub fn format(&self) -> std::ffi::c_int {
        self.rust.format() as std::ffi::c_int
    }

    /// A policy at 10 bits per key, as `rust`.
    pub fn create(&self) -> *mut leveldb_bloom::ffi::leveldb_bloom_policy {
        (self.make)(10.0)
    }

    /// A small policy of the kind (1 or 1.5 bits per key), for rows that destroy it.
    pub fn create_small(&self) -> *mut leveldb_bloom::ffi::leveldb_bloom_policy {
        (self.make)(1.5)
    }
}

/// Keys as the C API takes them: pointer and length arrays, and slices. Borrows the keys.
pub struct CKeys {
    pub ptrs: Vec<*const std::ffi::c_char>,
    pub lens: Vec<usize>,
    pub slices: Vec<leveldb_bloom::ffi::leveldb_bloom_slice>,
}

impl CKeys {
    pub fn new<K: AsRef<[u8]>>(keys: &[K]) -> Self {
        let keys = keys.iter().map(AsRef::as_ref);
        CKeys {
            ptrs: keys.clone().map(|k| k.as_ptr().cast()).collect(),
            lens: keys.clone().map(<[u8]>::len).collect(),
            slices: keys
                .map(|k| leveldb_bloom::ffi::leveldb_bloom_slice {
                    data: k.as_ptr().cast(),
                    len: k.len(),
                })
                .collect(),
        }
    }
}
