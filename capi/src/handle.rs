//! What a policy object holds: the policy of the format chosen at its creation, its counts
//! if it was asked to count, and the function its single-key queries run (chosen by
//! `query::query_for`). Every other file of the C API reads policy objects through these
//! types.

use leveldb_bloom::{
    AnyPolicy, Counted, Error, FilterBlockBuilder, FilterBlockReader, FilterPolicy,
};

/// A query whose arguments passed `leveldb_bloom_key_may_match`'s checks: `key` and `filter`
/// not NULL, pointing to `key_len` and `filter_len` readable bytes, both lengths below
/// `isize::MAX`.
pub type Query =
    unsafe extern "C" fn(&leveldb_bloom_policy, *const u8, usize, *const u8, usize) -> bool;

/// A filter policy named `leveldb.BuiltinBloomFilter2`: LevelDB's Bloom filters, or the
/// opt-in compact format, for one bits-per-key setting, counting its work or not. Immutable
/// after creation: one policy may be used from any number of threads at once.
#[allow(non_camel_case_types)]
pub struct leveldb_bloom_policy {
    /// How `leveldb_bloom_key_may_match` answers for this policy, chosen when it is made,
    /// so that a single-key query branches on nothing but its arguments' checks.
    pub(crate) query: Query,
    /// The policy of the format chosen at creation, which builds and answers.
    pub(crate) format: AnyPolicy,
    /// The same policy counting its work (`leveldb_bloom_policy_counted`), its counts shared
    /// with the filter block builders made from it; `None` for a policy that counts nothing.
    /// Every count is the library's [`Counted`]'s.
    pub(crate) counted: Option<Counted<AnyPolicy>>,
}

/// Runs `$body` with `$policy` bound to the policy that does a handle's work: its counting
/// policy if it counts, else its format's.
macro_rules! with_policy {
    ($handle:expr, |$policy:ident| $body:expr) => {
        match &$handle.counted {
            Some($policy) => $body,
            None => {
                let $policy = &$handle.format;
                $body
            }
        }
    };
}

impl leveldb_bloom_policy {
    /// The function that answers this policy's single-key queries once their arguments have
    /// passed `leveldb_bloom_key_may_match`'s checks ([`Query`]): for a caller that makes
    /// those checks itself, one call fewer (the drop-in's `KeyMayMatch`). Rust only.
    pub fn checked_query(&self) -> Query {
        self.query
    }

    /// Counts, if this policy counts, a filter of `num_keys` keys that other code wrote for
    /// it in its format (for the drop-in: LevelDB's own Bloom policy). Rust only.
    pub fn record_filter_written_elsewhere(&self, num_keys: usize) {
        if let Some(counted) = &self.counted {
            counted.record_filter_written_elsewhere(num_keys);
        }
    }

    /// Builds the filter for `keys` into the start of `out`, counted if this policy counts.
    pub(crate) fn create_filter_into<I>(&self, keys: I, out: &mut [u8]) -> Result<usize, Error>
    where
        I: IntoIterator<IntoIter: ExactSizeIterator, Item: AsRef<[u8]>>,
    {
        with_policy!(self, |policy| policy.create_filter_into(keys, out))
    }

    /// A counting policy's single-key answer, counted (what `query_for` gives such a policy).
    pub(crate) fn counted_key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        with_policy!(self, |policy| policy.key_may_match(key, filter))
    }

    /// `keys` against one `filter` into `results`, counted if this policy counts.
    pub(crate) fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        with_policy!(self, |policy| policy.keys_may_match(keys, filter, results))
    }

    /// Whether `key` may be in the data block at `block_offset`, by the filter `block`,
    /// counted if this policy counts (a query no filter answers included).
    pub(crate) fn filter_block_may_match(
        &self,
        block: &[u8],
        block_offset: u64,
        key: &[u8],
    ) -> bool {
        with_policy!(self, |policy| FilterBlockReader::new(policy, block)
            .key_may_match(block_offset, key))
    }

    /// [`filter_block_may_match`](Self::filter_block_may_match) for many queries.
    pub(crate) fn filter_block_may_match_batch<'k>(
        &self,
        block: &[u8],
        queries: impl IntoIterator<Item = (u64, &'k [u8])>,
        results: &mut [bool],
    ) {
        with_policy!(self, |policy| FilterBlockReader::new(policy, block)
            .keys_may_match(queries, results))
    }

    /// A filter block builder whose filters count as this policy's.
    pub(crate) fn filter_block_builder(&self) -> BlockBuilder {
        match &self.counted {
            None => BlockBuilder::Uncounted(FilterBlockBuilder::new(self.format)),
            Some(counted) => BlockBuilder::Counted(FilterBlockBuilder::new(counted.clone())),
        }
    }
}

/// A filter block builder of a counting policy or of one that counts nothing.
pub(crate) enum BlockBuilder {
    Uncounted(FilterBlockBuilder<AnyPolicy>),
    Counted(FilterBlockBuilder<Counted<AnyPolicy>>),
}

/// Runs `$body` with `$builder` bound to the builder inside a [`BlockBuilder`].
macro_rules! with_builder {
    ($block_builder:expr, |$builder:ident| $body:expr) => {
        match $block_builder {
            $crate::handle::BlockBuilder::Uncounted($builder) => $body,
            $crate::handle::BlockBuilder::Counted($builder) => $body,
        }
    };
}
pub(crate) use with_builder;
