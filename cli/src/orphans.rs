//! Table files outside a database's current version, and the records only they hold. A crash
//! between a compaction writing its output and the MANIFEST naming it leaves such a file
//! (LevelDB deletes it at its next open, `DBImpl::RemoveObsoleteFiles`); so does a MANIFEST
//! rolled back by hand. Its records that are newer than the version's last sequence number,
//! in no write-ahead log, and not what the version holds for their keys are records the
//! database as LevelDB opens it lacks. A flush a power cut interrupted leaves, besides, such
//! a file holding records the version holds too (written again with the same values): none of
//! those is lost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::failure::Failure;
use crate::files;
use crate::manifest::LiveTable;
use crate::table::{self, BlockHandle, OpenTable, RawBlock, Table, TableFile, user_key_of};
use crate::wal;

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

/// What a record says of its key: its value, or `None` for a deletion marker.
pub type Said = Option<Vec<u8>>;

/// What a record with the 8-byte `tag` and `value` says of its key, if its type is one
/// LevelDB writes (`db/dbformat.h`: 0 a deletion, 1 a value).
fn said(tag: u64, value: &[u8]) -> Option<Said> {
    match tag & 0xff {
        0 => Some(None),
        1 => Some(Some(value.to_vec())),
        _ => None,
    }
}

/// How many records of the table `file` (internal keys) the current version lacks: newer than
/// `last_sequence`, in none of the write-ahead logs' sequence ranges `held`
/// ([`merged_ranges`]), the newest the table holds for its key, and not what `version`
/// holds for that key (`None` where it cannot tell: then the record counts as lacking). `Err`
/// where the table or a block of it cannot be read.
pub fn records_beyond(
    file: &dyn TableFile,
    last_sequence: u64,
    held: &[(u64, u64)],
    version: &mut dyn FnMut(&[u8]) -> Option<Said>,
) -> Result<u64, Failure> {
    let table = Table::open(file)?;
    let mut lacking = 0;
    let mut previous: Option<Vec<u8>> = None;
    for entry in &table.index {
        let block = RawBlock::locate(file, entry.handle)?.contents()?;
        table::for_each_entry(&block, entry.handle.offset, usize::MAX, |key, value| {
            let Some(tag) = key.len().checked_sub(8).map(|at| &key[at..]) else {
                return;
            };
            let tag = u64::from_le_bytes(tag.try_into().expect("8 bytes"));
            let user_key = user_key_of(key);
            // Entries of a key run newest first: an older one is shadowed by the table itself.
            if previous.as_deref() == Some(user_key) {
                return;
            }
            previous = Some(user_key.to_vec());
            let sequence = tag >> 8;
            if sequence > last_sequence
                && !held_in(held, sequence)
                && (said(tag, value).is_none() || version(user_key) != said(tag, value))
            {
                lacking += 1;
            }
        })?;
    }
    Ok(lacking)
}

/// The current version's tables and live logs, read for what they hold of a key as
/// LevelDB's `Get` finds it after recovery: the newest record of that key in the logs or in
/// any table whose range holds it.
pub struct Version<'a> {
    live: &'a [LiveTable],
    logs: &'a [PathBuf],
    /// Indexes read so far, by position in `live` (a few are kept: a lookup is rare).
    indexes: HashMap<usize, Index>,
    /// The newest record of each key in the logs (its sequence number and word), read at the
    /// first lookup.
    logged: Option<HashMap<Vec<u8>, (u64, Said)>>,
}

/// A table's open file and its index: each block's last user key (at most) and handle.
struct Index {
    file: OpenTable,
    blocks: Vec<(Vec<u8>, BlockHandle)>,
}

/// How many tables' indexes [`Version`] keeps.
const INDEXES_KEPT: usize = 32;

impl<'a> Version<'a> {
    /// The version of the tables `live` and the logs `logs` that recovery replays.
    pub fn new(live: &'a [LiveTable], logs: &'a [PathBuf]) -> Version<'a> {
        Version {
            live,
            logs,
            indexes: HashMap::new(),
            logged: None,
        }
    }

    /// What the version holds for `user_key`: the newest record's word, `Some(None)` where
    /// neither a log nor a table holds the key, `None` where a table that may hold it cannot
    /// be read.
    pub fn holds(&mut self, user_key: &[u8]) -> Option<Said> {
        let logs = self.logs;
        let logged = self.logged.get_or_insert_with(|| newest_logged(logs));
        let mut newest: Option<(u64, Said)> = logged
            .get(user_key)
            .map(|(sequence, word)| (sequence << 8, word.clone()));
        for at in 0..self.live.len() {
            let file = &self.live[at].file;
            if user_key < user_key_of(&file.smallest) || user_key > user_key_of(&file.largest) {
                continue;
            }
            if let Some((tag, word)) = self.newest_in(at, user_key)?
                && newest.as_ref().is_none_or(|(t, _)| tag >> 8 > t >> 8)
            {
                newest = Some((tag, word));
            }
        }
        Some(newest.and_then(|(_, word)| word))
    }

    /// The newest record of `user_key` in the live table `at` (its tag and word), `Ok(None)`
    /// where it has none, `None` where it cannot be read.
    fn newest_in(&mut self, at: usize, user_key: &[u8]) -> Option<Option<(u64, Said)>> {
        if !self.indexes.contains_key(&at) {
            if self.indexes.len() >= INDEXES_KEPT {
                self.indexes.clear();
            }
            self.indexes.insert(
                at,
                Index::read(&self.live[at].path, self.live[at].file.size)?,
            );
        }
        let index = &self.indexes[&at];
        let first = index
            .blocks
            .partition_point(|(last, _)| last.as_slice() < user_key);
        let mut found = None;
        for (_, handle) in index.blocks.get(first..)?.iter().take(2) {
            let block = RawBlock::locate(&index.file, *handle)
                .ok()?
                .contents()
                .ok()?;
            table::for_each_entry(&block, handle.offset, usize::MAX, |key, value| {
                if found.is_none() && key.len() >= 8 && user_key_of(key) == user_key {
                    let tag = u64::from_le_bytes(key[key.len() - 8..].try_into().expect("8"));
                    found = Some(said(tag, value).map(|word| (tag, word)));
                }
            })
            .ok()?;
            if found.is_some() {
                break;
            }
        }
        match found {
            Some(Some(record)) => Some(Some(record)),
            Some(None) => None,
            None => Some(None),
        }
    }
}

/// The newest record of each key in `logs`, as far as recovery reads them.
fn newest_logged(logs: &[PathBuf]) -> HashMap<Vec<u8>, (u64, Said)> {
    let mut newest: HashMap<Vec<u8>, (u64, Said)> = HashMap::new();
    for log in logs {
        wal::read_log_records(log, &mut |sequence, key, value| {
            if newest.get(key).is_none_or(|&(held, _)| held < sequence) {
                newest.insert(key.to_vec(), (sequence, value.map(<[u8]>::to_vec)));
            }
        });
    }
    newest
}

impl Index {
    fn read(path: &Path, size: u64) -> Option<Index> {
        let (opened, len) = files::open_regular(path).ok()?;
        let file = OpenTable::new(opened, len.min(size));
        let blocks = {
            let table = Table::open(&file).ok()?;
            table
                .index
                .iter()
                .map(|e| (user_key_of(table.separator(e)).to_vec(), e.handle))
                .collect()
        };
        Some(Index { file, blocks })
    }
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
