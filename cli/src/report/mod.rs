//! What one pass over a table finds ([`TableReport`]): its counts, its filters and how well
//! they work, and what is damaged. `inspect` shows the counts, `verify` the damage. The
//! pass is [`analyze`]; what is printed of it, [`render`] and [`summary`].

mod analyze;
mod render;

use std::collections::BTreeSet;

use serde::Serialize;

use leveldb_bloom::compact;

use crate::table;

pub use analyze::{analyze, keys_of};
pub use render::{render, summary};

/// The filter policy whose filters this tool reads (LevelDB's Bloom filters, and the
/// compact filters that keep its name).
pub const BUILTIN_POLICY: &str = leveldb_bloom::NAME;

/// How keys are stored: database tables hold internal keys (the user key and an 8-byte
/// tag), tables written with `TableBuilder` directly hold user keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    Internal,
    User,
}

impl Keys {
    /// The order LevelDB keeps keys stored so in.
    fn compare(self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        match self {
            Keys::Internal => table::compare_internal_keys(a, b),
            Keys::User => a.cmp(b),
        }
    }
}

/// One filter of a table: how many keys its window holds, and its bytes' length and last
/// byte (`None` where the filter block has no filter there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FilterShape {
    pub keys: u64,
    pub filter: Option<(usize, Option<u8>)>,
}

/// The findings for one table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TableReport {
    pub file: String,
    /// The level in the current version (absent for a table file given alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// Every record of the data blocks, deletion markers and older versions included.
    pub entries: u64,
    /// Deletion markers among them (database tables only).
    pub deletions: u64,
    pub data_blocks: u64,
    /// Blocks stored snappy-compressed.
    pub compressed_blocks: u64,
    /// The policy named in the metaindex, `None` when the table has no filter block.
    pub filter_policy: Option<String>,
    pub filters: u64,
    pub bloom_filters: u64,
    pub compact_filters: u64,
    /// Filters neither format (all-zero, malformed or another policy's): read as "may match".
    pub other_filters: u64,
    /// The filters' own bytes (the filter block less its offset array).
    pub filter_bytes: u64,
    pub bits_per_key: Option<f64>,
    /// The rate the filters' layouts predict for absent keys.
    pub expected_fp: Option<f64>,
    /// The rate measured on neighbours of the table's own keys that it does not hold.
    pub measured_fp: Option<f64>,
    pub fp_probes: u64,
    pub false_positives: u64,
    /// The rate compact filters of the same size would give
    /// (`compact::false_positive_rate_at`).
    pub compact_fp_same_size: Option<f64>,
    /// Damage: what LevelDB would read wrongly or not at all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// What LevelDB reads anyway, but is not as LevelDB writes it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Problem>,
    /// The table's first and last keys (as stored), `None` for a table without entries.
    #[serde(skip)]
    pub first_key: Option<Vec<u8>>,
    #[serde(skip)]
    pub last_key: Option<Vec<u8>>,
    /// The table's filters' distinct shapes (empty when the filters were not read).
    #[serde(skip)]
    pub filter_shapes: BTreeSet<FilterShape>,
    /// Whether its keys were checked against filters that LevelDB's policy reads: a filter
    /// block under LevelDB's policy name that could be read.
    #[serde(skip)]
    pub filters_read: bool,
    /// The blocks whose checksums were checked.
    #[serde(skip)]
    pub blocks_checked: u64,
}

/// Something `verify` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// The offset of the block (or of the damage, when the table cannot be read at all).
    pub offset: u64,
    pub what: String,
    pub count: u64,
}

impl TableReport {
    /// Whether the filters let through well above their expected rate (enough samples for
    /// the difference not to be chance).
    pub fn fp_well_above_expected(&self) -> bool {
        match (self.measured_fp, self.expected_fp) {
            (Some(measured), Some(expected)) => {
                self.false_positives >= 20 && measured > 2.0 * expected
            }
            _ => false,
        }
    }
}

/// The totals over `tables`. The policy line names each policy with how many tables have
/// it ("none" for tables without a filter block).
pub fn total(tables: &[TableReport]) -> TableReport {
    let mut t = TableReport {
        file: "total".into(),
        ..TableReport::default()
    };
    let (mut keys, mut expected) = (0.0, 0.0);
    let mut policies: Vec<(&str, usize)> = Vec::new();
    for r in tables {
        t.entries += r.entries;
        t.deletions += r.deletions;
        t.data_blocks += r.data_blocks;
        t.compressed_blocks += r.compressed_blocks;
        t.filters += r.filters;
        t.bloom_filters += r.bloom_filters;
        t.compact_filters += r.compact_filters;
        t.other_filters += r.other_filters;
        t.filter_bytes += r.filter_bytes;
        t.fp_probes += r.fp_probes;
        t.false_positives += r.false_positives;
        if let (Some(bpk), Some(fp)) = (r.bits_per_key, r.expected_fp) {
            let n = r.filter_bytes as f64 * 8.0 / bpk;
            keys += n;
            expected += n * fp;
        }
        let policy = r.filter_policy.as_deref().unwrap_or("none");
        match policies.iter_mut().find(|(p, _)| *p == policy) {
            Some((_, n)) => *n += 1,
            None => policies.push((policy, 1)),
        }
    }
    t.filter_policy = match policies.as_slice() {
        [] => None,
        [(policy, _)] => Some(policy.to_string()),
        several => Some(
            several
                .iter()
                .map(|(p, n)| format!("{p} ({n})"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    };
    if keys > 0.0 {
        let bits_per_key = t.filter_bytes as f64 * 8.0 / keys;
        t.bits_per_key = Some(bits_per_key);
        t.expected_fp = Some(expected / keys);
        t.compact_fp_same_size = Some(compact::false_positive_rate_at(bits_per_key));
    }
    if t.fp_probes > 0 {
        t.measured_fp = Some(t.false_positives as f64 / t.fp_probes as f64);
    }
    t
}
