//! A database's write-ahead logs, read as LevelDB's recovery reads them (`db/db_impl.cc`,
//! `DBImpl::Recover` and `RecoverLogFile`): every log file numbered from the MANIFEST's log
//! number on, and the previous log number's, in order; each record a write batch
//! (`db/write_batch.cc`: an 8-byte sequence number, a 4-byte count, then each put as
//! `1, key, value` and each deletion as `0, key`, lengths as varints). Their records are
//! part of the database until a compaction writes them into a table, so damage here is damage
//! to the database: LevelDB with paranoid checks refuses to open it, and without them drops
//! the damaged records, for good at the next compaction.

use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::files;
use crate::log_reader::LogReader;
use crate::table::varint32;

/// What one write-ahead log holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogReport {
    /// The file's name.
    pub file: String,
    /// Write batches read.
    pub batches: u64,
    /// Puts and deletions in them.
    pub records: u64,
    /// The first damage LevelDB's paranoid recovery stops at.
    pub damage: Option<LogDamage>,
    /// Intact records LevelDB's recovery skips without a word (after a zeroed header).
    pub skipped: Vec<SkippedRecords>,
    /// The sequence numbers its batches hold, `[first, end)` a batch.
    #[serde(skip)]
    pub sequences: Vec<(u64, u64)>,
}

/// Where LevelDB's log reader skips the rest of a block at a zeroed header that is not
/// followed by zeros only, and what intact write batches the skipped bytes hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedRecords {
    /// The zeroed header's offset.
    pub offset: u64,
    /// How many of the skipped bytes are not zero.
    pub nonzero_bytes: u64,
    /// Whole write batches with valid checksums in the skipped bytes.
    pub batches: u64,
    /// Their puts and deletions.
    pub records: u64,
}

/// Where a log is damaged: the byte offset in the file (for a damaged batch, the offset of
/// the log record holding it) and what LevelDB says of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogDamage {
    pub offset: u64,
    pub what: String,
}

/// One record of a write batch as recovery applies it: its sequence number, its user key, and
/// its value (`None` for a deletion).
pub type Visit<'v> = dyn FnMut(u64, &[u8], Option<&[u8]>) + 'v;

/// Reads the log at `path`, a block at a time: its batches and records, or the damage
/// recovery stops at. A file that cannot be read is damage too (LevelDB's recovery fails on
/// it).
pub fn read_log(path: &Path) -> LogReport {
    read_log_visiting(path, None)
}

/// [`read_log`], showing `visit` each record of every whole batch recovery applies, in the
/// log's order.
pub fn read_log_records(path: &Path, visit: &mut Visit<'_>) -> LogReport {
    read_log_visiting(path, Some(visit))
}

/// [`read_log`], and [`read_log_records`] where there is a visitor (without one, no batch is
/// parsed twice).
fn read_log_visiting(path: &Path, mut visit: Option<&mut Visit<'_>>) -> LogReport {
    let mut report = LogReport {
        file: path
            .file_name()
            .map(|n| files::shown(Path::new(n)))
            .unwrap_or_default(),
        batches: 0,
        records: 0,
        damage: None,
        skipped: Vec::new(),
        sequences: Vec::new(),
    };
    let cannot_read = |offset: u64, e: &dyn std::fmt::Display| LogDamage {
        offset,
        what: format!("cannot be read: {e}"),
    };
    let mut file = match files::open_regular(path) {
        Ok((file, _)) => file,
        Err(e) => {
            report.damage = Some(cannot_read(0, &e.what()));
            return report;
        }
    };
    let mut reader = LogReader::default();
    let mut block = vec![0u8; LogReader::BLOCK_SIZE];
    let mut at = 0usize;
    loop {
        let mut filled = 0;
        while filled < block.len() {
            match file.read(&mut block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    report.damage = Some(cannot_read((at + filled) as u64, &e));
                    return report;
                }
            }
        }
        let last = filled < block.len();
        if filled == 0
            || !report.block(
                &mut reader,
                at,
                &block[..filled],
                last,
                visit.as_deref_mut(),
            )
        {
            return report;
        }
        at += filled;
    }
}

/// A log's bytes read as [`read_log`] reads the file named `file`.
pub fn log_of(file: String, data: &[u8]) -> LogReport {
    let mut report = LogReport {
        file,
        batches: 0,
        records: 0,
        damage: None,
        skipped: Vec::new(),
        sequences: Vec::new(),
    };
    let mut reader = LogReader::default();
    for (i, block) in data.chunks(LogReader::BLOCK_SIZE).enumerate() {
        let at = i * LogReader::BLOCK_SIZE;
        let last = block.len() < LogReader::BLOCK_SIZE;
        if !report.block(&mut reader, at, block, last, None) {
            break;
        }
    }
    report
}

impl LogReport {
    /// Reads one block of the log at file offset `at`, each batch it completes as recovery
    /// applies it; `false` once recovery would stop (damage, or the log's last block).
    fn block(
        &mut self,
        reader: &mut LogReader,
        at: usize,
        block: &[u8],
        last: bool,
        mut visit: Option<&mut Visit<'_>>,
    ) -> bool {
        let mut damage = None;
        let read = reader.block(at, block, last, |(offset, batch)| {
            if damage.is_some() {
                return;
            }
            match batch_records(&batch) {
                Ok(count) => {
                    self.batches += 1;
                    self.records += count;
                    let first = u64::from_le_bytes(batch[..8].try_into().expect("8 bytes"));
                    self.sequences.push((first, first.saturating_add(count)));
                    if let Some(visit) = visit.as_deref_mut() {
                        visit_records(&batch, first, visit);
                    }
                }
                Err(what) => {
                    damage = Some(LogDamage {
                        offset: offset as u64,
                        what: what.to_string(),
                    })
                }
            }
        });
        for skip in reader.skipped.drain(..) {
            let counts = skip
                .records
                .iter()
                .filter_map(|(_, batch)| batch_records(batch).ok());
            let (batches, records) = counts.fold((0, 0), |(b, r), n| (b + 1, r + n));
            self.skipped.push(SkippedRecords {
                offset: skip.offset as u64,
                nonzero_bytes: skip.nonzero as u64,
                batches,
                records,
            });
        }
        self.damage = damage.or_else(|| {
            read.err().map(|e| LogDamage {
                offset: e.offset().unwrap_or_default(),
                what: e.what().to_owned(),
            })
        });
        self.damage.is_none() && !last
    }
}

/// The puts and deletions of a write batch, checked as `WriteBatch::Iterate` checks them;
/// `Err` with LevelDB's words.
fn batch_records(batch: &[u8]) -> Result<u64, &'static str> {
    let count = each_record(batch, |_, _| {})?;
    let declared = u32::from_le_bytes(batch[8..BATCH_HEADER].try_into().expect("4 bytes"));
    if count != u64::from(declared) {
        return Err("WriteBatch has wrong count");
    }
    Ok(count)
}

/// Shows `visit` the records of `batch` (one [`batch_records`] accepted), numbered from
/// `first`.
fn visit_records(batch: &[u8], first: u64, visit: &mut Visit<'_>) {
    let mut sequence = first;
    let _ = each_record(batch, |key, value| {
        visit(sequence, key, value);
        sequence = sequence.wrapping_add(1);
    });
}

/// A write batch's header: its sequence number and its count.
const BATCH_HEADER: usize = 12;

/// Each put (`key`, `Some(value)`) and deletion (`key`, `None`) of `batch` in order, and how
/// many; `Err` at the first that `WriteBatch::Iterate` refuses.
fn each_record(
    batch: &[u8],
    mut each: impl FnMut(&[u8], Option<&[u8]>),
) -> Result<u64, &'static str> {
    if batch.len() < BATCH_HEADER {
        return Err("log record too small");
    }
    let mut pos = BATCH_HEADER;
    let mut found = 0u64;
    let slice = |pos: &mut usize| -> Option<&[u8]> {
        let len = varint32(batch, pos)? as usize;
        let end = pos.checked_add(len).filter(|&end| end <= batch.len())?;
        let bytes = &batch[*pos..end];
        *pos = end;
        Some(bytes)
    };
    while pos < batch.len() {
        let tag = batch[pos];
        pos += 1;
        match tag {
            1 => {
                let key = slice(&mut pos).ok_or("bad WriteBatch Put")?;
                let value = slice(&mut pos).ok_or("bad WriteBatch Put")?;
                each(key, Some(value));
            }
            0 => each(slice(&mut pos).ok_or("bad WriteBatch Delete")?, None),
            _ => return Err("unknown WriteBatch tag"),
        }
        found += 1;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn batch(seq: u64, ops: &[(&[u8], Option<&[u8]>)]) -> Vec<u8> {
        let mut b = seq.to_le_bytes().to_vec();
        b.extend_from_slice(&(ops.len() as u32).to_le_bytes());
        for (key, value) in ops {
            b.push(u8::from(value.is_some()));
            varint(key.len() as u64, &mut b);
            b.extend_from_slice(key);
            if let Some(value) = value {
                varint(value.len() as u64, &mut b);
                b.extend_from_slice(value);
            }
        }
        b
    }

    #[test]
    fn batches_count_their_puts_and_deletions_as_leveldb_checks_them() {
        let good = batch(7, &[(b"a", Some(b"1")), (b"b", None), (b"c", Some(b""))]);
        assert_eq!(batch_records(&good), Ok(3));
        assert_eq!(batch_records(&batch(1, &[])), Ok(0));
        assert_eq!(batch_records(&good[..11]), Err("log record too small"));
        let mut wrong_count = good.clone();
        wrong_count[8] = 4;
        assert_eq!(
            batch_records(&wrong_count),
            Err("WriteBatch has wrong count")
        );
        assert_eq!(
            batch_records(&good[..good.len() - 1]),
            Err("bad WriteBatch Put")
        );
        let mut bad_tag = good.clone();
        bad_tag[12] = 9;
        assert_eq!(batch_records(&bad_tag), Err("unknown WriteBatch tag"));
    }

    #[test]
    fn records_are_shown_numbered_from_the_batch_s_sequence() {
        let good = batch(7, &[(b"a", Some(b"1")), (b"b", None), (b"c", Some(b""))]);
        let mut seen = Vec::new();
        visit_records(&good, 7, &mut |sequence, key, value| {
            seen.push((sequence, key.to_vec(), value.map(<[u8]>::to_vec)));
        });
        let expected = vec![
            (7, b"a".to_vec(), Some(b"1".to_vec())),
            (8, b"b".to_vec(), None),
            (9, b"c".to_vec(), Some(Vec::new())),
        ];
        assert_eq!(seen, expected);
    }
}
