//! What a policy object holds: the policy of the format chosen at its creation, its counts
//! if it was asked to count, and the function its single-key queries run (chosen by
//! `query::query_for`). Every other file of the C API reads policy objects through these
//! types.

use leveldb_bloom::{AnyPolicy, Counted, Error, FilterBlockBuilder, FilterPolicy, Stats};

/// A query whose arguments passed `leveldb_bloom_key_may_match`'s checks: `key` and `filter`
/// not NULL, pointing to `key_len` and `filter_len` readable bytes, both lengths below
/// `isize::MAX`.
pub(crate) type Query =
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
    /// The counts of a counting policy (`leveldb_bloom_policy_counted`), shared with the
    /// filter block builders made from it; `None` for a policy that counts nothing.
    pub(crate) stats: Option<Stats>,
}

impl leveldb_bloom_policy {
    /// Builds the filter for `keys` into the start of `out`, counted if this policy counts.
    pub(crate) fn create_filter_into<I>(&self, keys: I, out: &mut [u8]) -> Result<usize, Error>
    where
        I: IntoIterator<IntoIter: ExactSizeIterator, Item: AsRef<[u8]>>,
    {
        let keys = keys.into_iter();
        let num_keys = keys.len();
        let len = self.format.create_filter_into(keys, out)?;
        if let Some(stats) = &self.stats {
            stats.record_filter(num_keys);
        }
        Ok(len)
    }

    /// Counts one query's answer, if this policy counts; returns the answer.
    #[inline(always)]
    pub(crate) fn count_query(&self, may_match: bool) -> bool {
        if let Some(stats) = &self.stats {
            stats.record_query(may_match);
        }
        may_match
    }

    /// Counts `answers`, if this policy counts: queries answered for it, by its policy or
    /// (a filter block without a filter for the block) without one.
    pub(crate) fn count_queries(&self, answers: &[bool]) {
        if let Some(stats) = &self.stats {
            stats.record_queries(answers);
        }
    }

    /// A filter block builder whose filters count as this policy's.
    pub(crate) fn filter_block_builder(&self) -> BlockBuilder {
        match &self.stats {
            None => BlockBuilder::Uncounted(FilterBlockBuilder::new(self.format)),
            Some(stats) => BlockBuilder::Counted(FilterBlockBuilder::new(Counted::with_stats(
                self.format,
                stats.clone(),
            ))),
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
