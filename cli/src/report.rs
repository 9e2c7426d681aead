//! What one pass over a table finds: its counts, its filters and how well they work, and
//! what is damaged. `inspect` shows the counts, `verify` the damage.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use leveldb_bloom::{CompactPolicy, FilterBlockReader, FilterPolicy, bloom, compact};

use crate::table::{self, BlockCheck, RawBlock, Table, TableFile};

/// The filter policy whose filters this tool reads (LevelDB's Bloom filters, and the
/// compact filters that keep its name).
pub const BUILTIN_POLICY: &str = leveldb_bloom::NAME;

/// The most memory a table's false-positive measurement keeps user keys in (a sample beyond),
/// counting each key's bytes and [`SAMPLE_KEY_OVERHEAD`].
const SAMPLE_KEY_BYTES: usize = 8 << 20;
/// What a sampled key costs besides its bytes: where it ends.
const SAMPLE_KEY_OVERHEAD: usize = size_of::<usize>();
/// How many of a table's keys at most have their neighbours asked of the filters (spread
/// evenly over the table): enough for the rate, a bounded share of the table's reading.
const PROBED_KEYS: usize = 4096;

/// How keys are stored: database tables hold internal keys (the user key and an 8-byte
/// tag), tables written with `TableBuilder` directly hold user keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    Internal,
    User,
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

/// How the keys of the table in `file` are stored, as they show it: internal keys when every
/// key ends in a tag of LevelDB's value types (0, a deletion, or 1, a value) and there is a
/// key; user keys otherwise. (A table that cannot be read: internal keys, as in a database.)
pub fn keys_of(file: &dyn TableFile) -> Keys {
    let Ok(table) = Table::open(file) else {
        return Keys::Internal;
    };
    let (mut any, mut all_internal) = (false, true);
    for entry in &table.index {
        let Ok(block) = RawBlock::locate(file, entry.handle).and_then(RawBlock::contents) else {
            continue;
        };
        let _ = table::for_each_entry(&block, entry.handle.offset, usize::MAX, |key, _| {
            any = true;
            all_internal &= key.len() >= 8 && key[key.len() - 8] <= 1;
        });
        if !all_internal {
            break;
        }
    }
    if any && all_internal {
        Keys::Internal
    } else {
        Keys::User
    }
}

/// Reads the table in `file` and reports on it. `Err` when its structure (footer, index)
/// cannot be read; damage inside data blocks is a [`Problem`].
pub fn analyze(
    name: String,
    file: &dyn TableFile,
    keys: Keys,
) -> Result<TableReport, table::Error> {
    let table = Table::open(file)?;
    let mut report = TableReport {
        file: name,
        data_blocks: table.index.len() as u64,
        filter_policy: table.filter_policy.clone(),
        ..TableReport::default()
    };
    if let Some(e) = &table.filter_unread {
        report.warnings.push(Problem {
            offset: e.offset,
            what: format!("{} (LevelDB reads the table without its filter)", e.what),
            count: 1,
        });
    }
    // Every block LevelDB reads, its checksum (a data block's as the walk below reads it,
    // the others' as `Table::open` read them): these problems come first, data blocks first.
    let mut checksums: Vec<Problem> = Vec::new();
    let mut check = |block: Result<BlockCheck, &table::Error>, report: &mut TableReport| {
        report.blocks_checked += 1;
        match block {
            Ok(block) if !block.checksum_ok => checksums.push(Problem {
                offset: block.offset,
                what: "block checksum mismatch".into(),
                count: 1,
            }),
            Ok(block) => report.compressed_blocks += u64::from(block.compressed),
            Err(e) => checksums.push(problem(e.clone())),
        }
    };
    let ours = table.filter_policy.as_deref() == Some(BUILTIN_POLICY);
    // Reads both formats (Bloom filters exactly as LevelDB does).
    let policy = CompactPolicy::new(10.0).expect("10 bits per key is valid");
    let filters = table.filter_block(&policy).filter(|_| ours);
    report.filters_read = filters.is_some();
    // Keys per filter (LevelDB adds each entry's user key to the filter of its block's
    // offset), a sample of the user keys, and the keys the filters do not find.
    let mut keys_in_filter: Vec<u64> = vec![0; filters.map_or(0, |f| f.num_filters())];
    let mut sample = KeySample::default();
    let last_block = table.index.len().saturating_sub(1);
    // Key order, which LevelDB's lookups rely on: keys ascending within and across blocks,
    // each index separator at or above its block's last key and below the next block's first.
    let order = |a: &[u8], b: &[u8]| match keys {
        Keys::Internal => table::compare_internal_keys(a, b),
        Keys::User => a.cmp(b),
    };
    let mut previous_key: Vec<u8> = Vec::new();
    let mut previous_separator: Option<&[u8]> = None;
    for (i, entry) in table.index.iter().enumerate() {
        let raw = RawBlock::locate(file, entry.handle);
        check(raw.as_ref().map(BlockCheck::of), &mut report);
        let block = match raw.and_then(RawBlock::contents) {
            Ok(contents) => contents,
            Err(e) => {
                report.problems.push(problem(e));
                continue;
            }
        };
        let mut missed = 0u64;
        let mut out_of_order = 0u64;
        let mut block_first: Option<Vec<u8>> = None;
        let walked = table::for_each_entry(&block, entry.handle.offset, usize::MAX, |key, _| {
            if report.entries > 0 && order(&previous_key, key).is_ge() {
                out_of_order += 1;
            }
            previous_key.clear();
            previous_key.extend_from_slice(key);
            block_first.get_or_insert_with(|| key.to_vec());
            report.entries += 1;
            if report.first_key.is_none() {
                report.first_key = Some(key.to_vec());
            }
            if i == last_block {
                report.last_key = Some(key.to_vec());
            }
            let user_key = match keys {
                Keys::Internal => {
                    report.deletions += u64::from(key.len() >= 8 && key[key.len() - 8] == 0);
                    table::user_key_of(key)
                }
                Keys::User => key,
            };
            if let Some(f) = filters {
                let index = f.filter_index(entry.handle.offset);
                if let Some(count) = usize::try_from(index)
                    .ok()
                    .and_then(|i| keys_in_filter.get_mut(i))
                {
                    *count += 1;
                }
                missed += u64::from(!f.key_may_match(entry.handle.offset, user_key));
            }
            sample.add(user_key);
        });
        if let Err(e) = walked {
            report.problems.push(problem(e));
        }
        let at = |what: &str, count| Problem {
            offset: entry.handle.offset,
            what: format!("{what} (LevelDB's lookups miss keys here)"),
            count,
        };
        if out_of_order > 0 {
            report.problems.push(at("keys out of order", out_of_order));
        }
        if let Some(first) = &block_first {
            let last = &previous_key;
            if order(last, table.separator(entry)).is_gt() {
                report.problems.push(at(
                    "the index's separator for this block is below its last key",
                    1,
                ));
            }
            if previous_separator.is_some_and(|s| order(s, first).is_ge()) {
                report.problems.push(at(
                    "the index's separator for the block before is not below this block's \
                     first key",
                    1,
                ));
            }
        }
        previous_separator = Some(table.separator(entry));
        if missed > 0 {
            report.problems.push(Problem {
                offset: entry.handle.offset,
                what: "keys of this data block that its filter does not find (false negatives)"
                    .into(),
                count: missed,
            });
        }
    }
    for &block in &table.structure {
        check(Ok(block), &mut report);
    }
    checksums.append(&mut report.problems);
    report.problems = checksums;
    let Some(f) = filters else {
        return Ok(report);
    };
    report.filters = f.num_filters() as u64;
    let (mut filtered_keys, mut expected_sum) = (0u64, 0.0);
    for (i, &n) in keys_in_filter.iter().enumerate() {
        let filter = f.filter(i as u64);
        report.filter_shapes.insert(FilterShape {
            keys: n,
            filter: filter.map(|b| (b.len(), b.last().copied())),
        });
        let Some(filter) = filter else {
            report.other_filters += 1;
            continue;
        };
        report.filter_bytes += filter.len() as u64;
        let expected = if compact::is_compact(filter) {
            report.compact_filters += 1;
            compact::expected_false_positive_rate(filter)
        } else if let Some(fp) = bloom::expected_false_positive_rate(filter, n as usize) {
            report.bloom_filters += 1;
            Some(fp)
        } else {
            report.other_filters += 1;
            None
        };
        filtered_keys += n;
        expected_sum += n as f64 * expected.unwrap_or(1.0);
    }
    if filtered_keys > 0 && report.filter_bytes > 0 {
        let bits_per_key = report.filter_bytes as f64 * 8.0 / filtered_keys as f64;
        report.bits_per_key = Some(bits_per_key);
        report.expected_fp = Some(expected_sum / filtered_keys as f64);
        report.compact_fp_same_size = Some(compact::false_positive_rate_at(bits_per_key));
    }
    measure_false_positives(&table, f, &sample, keys, &mut report);
    Ok(report)
}

/// The distinct user keys of a table as its walk meets them (ascending, in a table LevelDB
/// reads whole: a key's versions are next to each other), in one buffer, up to
/// [`SAMPLE_KEY_BYTES`] of them; the first ones where there are more.
#[derive(Default)]
struct KeySample {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    full: bool,
}

impl KeySample {
    fn add(&mut self, key: &[u8]) {
        if self.full
            || self
                .ends
                .last()
                .is_some_and(|_| self.key(self.len() - 1) == key)
        {
            return;
        }
        if self.bytes.len() + key.len() + SAMPLE_KEY_OVERHEAD * (self.ends.len() + 1)
            > SAMPLE_KEY_BYTES
        {
            self.full = true;
            return;
        }
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Whether the table holds `key` (it is among the sample, or beyond a full one's last).
    fn holds(&self, key: &[u8]) -> bool {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        self.full && low == self.len()
    }
}

fn problem(e: table::Error) -> Problem {
    Problem {
        offset: e.offset,
        what: e.what,
        count: 1,
    }
}

/// Asks the filters about absent keys next to real ones (each key with its last byte one
/// higher, and one lower), as LevelDB would: the filter of the block its index points to.
/// At most [`PROBED_KEYS`] keys' neighbours, spread evenly over the table.
fn measure_false_positives<P: FilterPolicy>(
    table: &Table<'_>,
    filters: FilterBlockReader<'_, P>,
    sample: &KeySample,
    keys: Keys,
    report: &mut TableReport,
) {
    let mut neighbour = Vec::new();
    let stride = sample.len().div_ceil(PROBED_KEYS).max(1);
    for i in (0..sample.len()).step_by(stride) {
        let key = sample.key(i);
        let Some(&last) = key.last() else { continue };
        for next in [last.checked_add(1), last.checked_sub(1)]
            .into_iter()
            .flatten()
        {
            neighbour.clear();
            neighbour.extend_from_slice(key);
            *neighbour.last_mut().expect("not empty") = next;
            if sample.holds(&neighbour) {
                continue;
            }
            let Some(block) = table.block_for(&neighbour, keys == Keys::Internal) else {
                continue; // past the table's last key: LevelDB asks no filter
            };
            let offset = table.index[block].handle.offset;
            report.fp_probes += 1;
            report.false_positives += u64::from(filters.key_may_match(offset, &neighbour));
        }
    }
    if report.fp_probes > 0 {
        report.measured_fp = Some(report.false_positives as f64 / report.fp_probes as f64);
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

// What `inspect` and `upgrade` print of the reports.

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".into(), |r| format!("{:.3}%", 100.0 * r))
}

fn row(r: &TableReport) -> String {
    format!(
        "{:<12} {:>5} {:>10} {:>9} {:>7}  {:<28} {:>8} {:>7} {:>7} {:>5}  {:>11} {:>8}  {:>9} {:>9}",
        r.file,
        r.level.map_or_else(|| "-".into(), |l| l.to_string()),
        r.entries,
        r.deletions,
        r.data_blocks,
        r.filter_policy.as_deref().unwrap_or("none"),
        r.filters,
        r.bloom_filters,
        r.compact_filters,
        r.other_filters,
        r.filter_bytes,
        r.bits_per_key
            .map_or_else(|| "-".into(), |b| format!("{b:.2}")),
        percent(r.expected_fp),
        percent(r.measured_fp),
    )
}

/// The readable table `inspect` prints: one row per table, the total, warnings, and the
/// files left out.
pub fn render(tables: &[TableReport], total: &TableReport, not_live: &[PathBuf]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<12} {:>5} {:>10} {:>9} {:>7}  {:<28} {:>8} {:>7} {:>7} {:>5}  {:>11} {:>8}  {:>9} {:>9}",
        "table",
        "level",
        "entries",
        "deletions",
        "blocks",
        "filter policy",
        "filters",
        "bloom",
        "compact",
        "other",
        "filter bytes",
        "bits/key",
        "expect fp",
        "measured"
    );
    for r in tables {
        let _ = writeln!(out, "{}", row(r));
    }
    let _ = writeln!(out, "{}", row(total));
    // The total's warning only adds something when there are several tables.
    let total_if_several = (tables.len() > 1).then_some(total);
    for r in tables.iter().chain(total_if_several) {
        if r.fp_well_above_expected() {
            let _ = writeln!(
                out,
                "warning: {}: {} false positives on neighbours of its keys, {:.1} times the {} \
                 its filters' layout predicts (keys that differ only in their last bytes \
                 defeat LevelDB's Bloom hash); compact filters of the same size: about {}",
                r.file,
                percent(r.measured_fp),
                r.measured_fp.unwrap_or(0.0) / r.expected_fp.unwrap_or(1.0),
                percent(r.expected_fp),
                percent(r.compact_fp_same_size),
            );
        }
    }
    for r in tables {
        for p in &r.problems {
            let _ = writeln!(
                out,
                "problem: {}: offset {}: {} ({})",
                r.file, p.offset, p.what, p.count
            );
        }
        for w in &r.warnings {
            let _ = writeln!(out, "warning: {}: offset {}: {}", r.file, w.offset, w.what);
        }
    }
    for path in not_live {
        let _ = writeln!(
            out,
            "not part of the current version (not counted): {}",
            crate::files::shown(path)
        );
    }
    out
}

/// The one-line totals `upgrade` prints before and after.
pub fn summary(label: &str, t: &TableReport) -> String {
    format!(
        "{label}: {} entries, {} filters ({} bloom, {} compact, {} other), {} filter bytes, \
         {} bits/key, expected fp {}, measured fp {}\n",
        t.entries,
        t.filters,
        t.bloom_filters,
        t.compact_filters,
        t.other_filters,
        t.filter_bytes,
        t.bits_per_key
            .map_or_else(|| "-".into(), |b| format!("{b:.2}")),
        percent(t.expected_fp),
        percent(t.measured_fp),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzzer inputs that once failed (`cpp_tests/fuzz/regressions/table_reader/`); byte 0
    /// is the harness's flags, the rest the table file.
    #[test]
    fn an_index_entry_ending_past_2_to_the_64_is_out_of_order_not_a_panic() {
        let input = include_bytes!(
            "../../cpp_tests/fuzz/regressions/table_reader/index-entry-end-overflow"
        );
        // Damaged further on too: an error, where the end's addition once overflowed.
        assert!(analyze(String::new(), &&input[1..], Keys::User).is_err());
    }
}
