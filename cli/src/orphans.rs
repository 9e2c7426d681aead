//! Table files outside a database's current version, and the records only they hold. A crash
//! between a compaction writing its output and the MANIFEST naming it leaves such a file
//! (LevelDB deletes it at its next open, `DBImpl::RemoveObsoleteFiles`); so does a MANIFEST
//! rolled back by hand. Its records that are newer than the version's last sequence number
//! and in no write-ahead log are records the database as LevelDB opens it lacks.

use crate::table::{self, RawBlock, Table, TableFile};

/// The write-ahead logs' sequence ranges (`[first, end)`, one a batch) sorted and merged, for
/// [`records_beyond`].
pub fn merged_ranges(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (first, end) in ranges {
        match merged.last_mut() {
            Some(last) if first <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((first, end)),
        }
    }
    merged
}

/// Whether `sequence` lies in one of the sorted, disjoint ranges `held`.
fn held_in(held: &[(u64, u64)], sequence: u64) -> bool {
    let after = held.partition_point(|&(first, _)| first <= sequence);
    after > 0 && sequence < held[after - 1].1
}

/// How many records of the table `file` (internal keys) are newer than `last_sequence`
/// and in none of the write-ahead logs' sequence ranges `held` ([`merged_ranges`]): records a
/// database's current version lacks, which only this file holds. `Err` where the table or a
/// block of it cannot be read.
pub fn records_beyond(
    file: &dyn TableFile,
    last_sequence: u64,
    held: &[(u64, u64)],
) -> Result<u64, table::Error> {
    let table = Table::open(file)?;
    let mut lacking = 0;
    for entry in &table.index {
        let block = RawBlock::locate(file, entry.handle)?.contents()?;
        table::for_each_entry(&block, entry.handle.offset, usize::MAX, |key, _| {
            let Some(tag) = key.len().checked_sub(8).map(|at| &key[at..]) else {
                return;
            };
            let sequence = u64::from_le_bytes(tag.try_into().expect("8 bytes")) >> 8;
            if sequence > last_sequence && !held_in(held, sequence) {
                lacking += 1;
            }
        })?;
    }
    Ok(lacking)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ranges_merge_and_hold_what_they_held() {
        let held = merged_ranges(vec![(10, 12), (1, 3), (3, 5), (11, 20), (30, 31)]);
        assert_eq!(held, vec![(1, 5), (10, 20), (30, 31)]);
        let slow = |s: u64| held.iter().any(|&(a, b)| (a..b).contains(&s));
        for sequence in 0..40 {
            assert_eq!(
                held_in(&held, sequence),
                slow(sequence),
                "sequence {sequence}"
            );
        }
        assert!(!held_in(&[], 7));
    }
}
