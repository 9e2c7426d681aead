//! One pass over a table: its counts, its filters and how well they work (the rate their
//! layouts predict, and the rate measured on absent keys), and what is damaged.

use leveldb_bloom::{AnyPolicy, FilterBlockReader, FilterPolicy, bloom, compact};

use super::{BUILTIN_POLICY, FilterShape, Keys, Problem, TableReport};
use crate::failure::{Failure, Kind};
use crate::table::{self, BlockCheck, IndexEntry, RawBlock, Table, TableFile};

/// The most memory a table's false-positive measurement keeps user keys in (a sample beyond),
/// counting each key's bytes and [`SAMPLE_KEY_OVERHEAD`].
const SAMPLE_KEY_BYTES: usize = 8 << 20;
/// What a sampled key costs besides its bytes: where it ends.
const SAMPLE_KEY_OVERHEAD: usize = size_of::<usize>();
/// How many of a table's keys at most have their neighbours asked of the filters (spread
/// evenly over the table): enough for the rate, a bounded share of the table's reading.
const PROBED_KEYS: usize = 4096;

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
/// cannot be read, or the system fails a read ([`Kind::Io`]: that says nothing of the
/// bytes); damage inside data blocks is a [`Problem`].
pub fn analyze(name: String, file: &dyn TableFile, keys: Keys) -> Result<TableReport, Failure> {
    let table = Table::open(file)?;
    if let Some(e) = table
        .filter_unread
        .as_ref()
        .filter(|e| e.kind() == Kind::Io)
    {
        return Err(e.clone());
    }
    let mut report = TableReport {
        file: name,
        data_blocks: table.index.len() as u64,
        filter_policy: table.filter_policy.clone(),
        ..TableReport::default()
    };
    if let Some(e) = &table.filter_unread {
        report.warnings.push(Problem {
            what: format!("{} (LevelDB reads the table without its filter)", e.what()),
            ..problem(e)
        });
    }
    let ours = table.filter_policy.as_deref() == Some(BUILTIN_POLICY);
    let policy = AnyPolicy::reader();
    let filters = table.filter_block(&policy).filter(|_| ours);
    report.filters_read = filters.is_some();
    let mut walk = Walk::new(&table, keys, filters);
    let last_block = table.index.len().saturating_sub(1);
    for (i, entry) in table.index.iter().enumerate() {
        walk.data_block(file, entry, i == last_block, &mut report)?;
    }
    // The other blocks' checksums, as `Table::open` read them.
    for &block in &table.structure {
        check(Ok(block), &mut report, &mut walk.checksums);
    }
    let Walk {
        mut checksums,
        keys_in_filter,
        sample,
        ..
    } = walk;
    // Checksum problems come first, data blocks' first.
    checksums.append(&mut report.problems);
    report.problems = checksums;
    let Some(f) = filters else {
        return Ok(report);
    };
    count_filters(f, &keys_in_filter, &mut report);
    measure_false_positives(&table, f, &sample, keys, &mut report);
    Ok(report)
}

/// A block's checksum, every block LevelDB reads: a mismatch or an unreadable trailer is a
/// problem for `checksums`.
fn check(
    block: Result<BlockCheck, &Failure>,
    report: &mut TableReport,
    checksums: &mut Vec<Problem>,
) {
    report.blocks_checked += 1;
    match block {
        Ok(block) if !block.checksum_ok => checksums.push(Problem {
            offset: block.offset,
            what: "block checksum mismatch".into(),
            count: 1,
        }),
        Ok(block) => report.compressed_blocks += u64::from(block.compressed),
        Err(e) => checksums.push(problem(e)),
    }
}

/// The walk over a table's data blocks, in order, and what it carries from one block to
/// the next.
struct Walk<'t> {
    table: &'t Table<'t>,
    keys: Keys,
    filters: Option<FilterBlockReader<'t, AnyPolicy>>,
    /// Keys per filter: LevelDB adds each entry's user key to the filter of its block's
    /// offset.
    keys_in_filter: Vec<u64>,
    /// A sample of the user keys, for the false-positive measurement.
    sample: KeySample,
    /// The checksum problems found so far.
    checksums: Vec<Problem>,
    /// The last key read, and the index separator of the block before.
    previous_key: Vec<u8>,
    previous_separator: Option<&'t [u8]>,
}

/// What the walk counts in one data block.
#[derive(Default)]
struct BlockTally {
    /// Keys its filter does not find.
    missed: u64,
    /// Keys at or below the key before them.
    out_of_order: u64,
    first: Option<Vec<u8>>,
}

impl<'t> Walk<'t> {
    fn new(
        table: &'t Table<'t>,
        keys: Keys,
        filters: Option<FilterBlockReader<'t, AnyPolicy>>,
    ) -> Self {
        Walk {
            table,
            keys,
            filters,
            keys_in_filter: vec![0; filters.map_or(0, |f| f.num_filters())],
            sample: KeySample::default(),
            checksums: Vec::new(),
            previous_key: Vec::new(),
            previous_separator: None,
        }
    }

    /// One data block: its checksum, each of its entries, and its keys' order against the
    /// index's separators. `Err` where the system fails the block's read.
    fn data_block(
        &mut self,
        file: &dyn TableFile,
        entry: &'t IndexEntry,
        last: bool,
        report: &mut TableReport,
    ) -> Result<(), Failure> {
        let raw = match RawBlock::locate(file, entry.handle) {
            Err(e) if e.kind() == Kind::Io => return Err(e),
            raw => raw,
        };
        check(
            raw.as_ref().map(BlockCheck::of),
            report,
            &mut self.checksums,
        );
        let block = match raw.and_then(RawBlock::contents) {
            Ok(contents) => contents,
            Err(e) => {
                report.problems.push(problem(&e));
                return Ok(());
            }
        };
        let offset = entry.handle.offset;
        let mut tally = BlockTally::default();
        let walked = table::for_each_entry(&block, offset, usize::MAX, |key, _| {
            self.entry(key, offset, last, &mut tally, report);
        });
        if let Err(e) = walked {
            report.problems.push(problem(&e));
        }
        self.block_problems(entry, &tally, report);
        Ok(())
    }

    /// One entry of the data block at `offset` (`last`: the table's last block).
    fn entry(
        &mut self,
        key: &[u8],
        offset: u64,
        last: bool,
        tally: &mut BlockTally,
        report: &mut TableReport,
    ) {
        if report.entries > 0 && self.keys.compare(&self.previous_key, key).is_ge() {
            tally.out_of_order += 1;
        }
        self.previous_key.clear();
        self.previous_key.extend_from_slice(key);
        tally.first.get_or_insert_with(|| key.to_vec());
        report.entries += 1;
        if report.first_key.is_none() {
            report.first_key = Some(key.to_vec());
        }
        if last {
            report.last_key = Some(key.to_vec());
        }
        let user_key = match self.keys {
            Keys::Internal => {
                report.deletions += u64::from(key.len() >= 8 && key[key.len() - 8] == 0);
                table::user_key_of(key)
            }
            Keys::User => key,
        };
        if let Some(f) = self.filters {
            let index = f.filter_index(offset);
            if let Some(count) = usize::try_from(index)
                .ok()
                .and_then(|i| self.keys_in_filter.get_mut(i))
            {
                *count += 1;
            }
            tally.missed += u64::from(!f.key_may_match(offset, user_key));
        }
        self.sample.add(user_key);
    }

    /// What the block's tally and its separators say is wrong. Key order is what LevelDB's
    /// lookups rely on: keys ascending within and across blocks, each index separator at or
    /// above its block's last key and below the next block's first.
    fn block_problems(
        &mut self,
        entry: &'t IndexEntry,
        tally: &BlockTally,
        report: &mut TableReport,
    ) {
        let at = |what: &str, count| Problem {
            offset: entry.handle.offset,
            what: format!("{what} (LevelDB's lookups miss keys here)"),
            count,
        };
        if tally.out_of_order > 0 {
            report
                .problems
                .push(at("keys out of order", tally.out_of_order));
        }
        let separator = self.table.separator(entry);
        if let Some(first) = &tally.first {
            let last = &self.previous_key;
            if self.keys.compare(last, separator).is_gt() {
                report.problems.push(at(
                    "the index's separator for this block is below its last key",
                    1,
                ));
            }
            if (self.previous_separator).is_some_and(|s| self.keys.compare(s, first).is_ge()) {
                report.problems.push(at(
                    "the index's separator for the block before is not below this block's \
                     first key",
                    1,
                ));
            }
        }
        self.previous_separator = Some(separator);
        if tally.missed > 0 {
            report.problems.push(Problem {
                offset: entry.handle.offset,
                what: "keys of this data block that its filter does not find (false negatives)"
                    .into(),
                count: tally.missed,
            });
        }
    }
}

/// Each filter's shape and format, the filters' bytes, and the rate their layouts predict
/// (`keys_in_filter`: how many keys each holds).
fn count_filters<P: FilterPolicy>(
    f: FilterBlockReader<'_, P>,
    keys_in_filter: &[u64],
    report: &mut TableReport,
) {
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

/// The problem a failure to read the table is (each is at an offset in it).
fn problem(e: &Failure) -> Problem {
    Problem {
        offset: e.offset().unwrap_or_default(),
        what: e.what().to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzzer inputs that once failed (`cpp_tests/fuzz/regressions/table_reader/`); byte 0
    /// is the harness's flags, the rest the table file.
    #[test]
    fn an_index_entry_ending_past_2_to_the_64_is_out_of_order_not_a_panic() {
        let input = include_bytes!(
            "../../../cpp_tests/fuzz/regressions/table_reader/index-entry-end-overflow"
        );
        // Damaged further on too: an error, where the end's addition once overflowed.
        assert!(analyze(String::new(), &&input[1..], Keys::User).is_err());
    }
}
