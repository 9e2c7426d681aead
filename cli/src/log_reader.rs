//! LevelDB's log format (`doc/log_format.md`), read as `log::Reader` reads it
//! (`db/log_reader.cc`): 32 KiB blocks of records, each a 7-byte header (masked CRC32C of
//! the type and payload, length, type) and its payload; a record larger than a block's rest
//! is split into FIRST, MIDDLE and LAST fragments. The MANIFEST ([`crate::manifest`]) and
//! the write-ahead logs ([`crate::wal`]) are such logs.

use crate::failure::{Failure, Kind};
use crate::table::unmask_crc;

/// The blocks a log is written in.
pub(crate) const BLOCK_SIZE: usize = 32768;
/// A fragment's header: checksum (4), length (2), type (1).
pub(crate) const HEADER_LEN: usize = 7;
/// The fragment types (`db/log_format.h`); zero is preallocated space.
const ZERO: u8 = 0;
pub(crate) const FULL: u8 = 1;
const FIRST: u8 = 2;
const MIDDLE: u8 = 3;
const LAST: u8 = 4;

/// What LevelDB's log reader reports as corruption at file offset `at`, in its words.
fn corruption(at: usize, what: impl Into<String>) -> Failure {
    Failure::at_offset(at as u64, Kind::Damaged, what)
}

/// The records of a LevelDB log file, fragments joined, as `log::Reader` with checksums
/// returns them; damage at its offset where it reports corruption. LevelDB reads the file
/// in 32 KiB blocks; only in the last block, read short, does a header or record cut off
/// by the file's end mean the writer died (the log ends there), as does a fragmented record
/// left open.
pub fn log_records(data: &[u8]) -> Result<Vec<Vec<u8>>, Failure> {
    log_records_at(data).map(|records| records.into_iter().map(|(_, r)| r).collect())
}

/// A log record: the offset of its first fragment's header, and its bytes.
pub type LogRecord = (usize, Vec<u8>);

/// [`log_records`], each record with the offset of its first fragment's header.
pub fn log_records_at(data: &[u8]) -> Result<Vec<LogRecord>, Failure> {
    let mut out = Vec::new();
    let mut reader = LogReader::default();
    for (i, block) in data.chunks(BLOCK_SIZE).enumerate() {
        let last = i * BLOCK_SIZE + block.len() == data.len() && block.len() < BLOCK_SIZE;
        reader.block(i * BLOCK_SIZE, block, last, |record| out.push(record))?;
    }
    Ok(out)
}

/// LevelDB's `log::Reader`, fed one 32 KiB block at a time (so that a log is read with one
/// block in memory, and the record being joined).
#[derive(Default)]
pub struct LogReader {
    fragment: Option<LogRecord>,
    /// Where a zeroed header made the reader skip the rest of a block, and the intact
    /// records the skipped bytes hold (see [`LogReader::block`]).
    pub skipped: Vec<Skipped>,
}

/// The rest of a block LevelDB's log reader skips at a zeroed header, where it is not all
/// zeros (what preallocated space holds): the header's offset, how many of the skipped
/// bytes are not zero, and the whole records with valid checksums that start in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub offset: usize,
    pub nonzero: usize,
    pub records: Vec<LogRecord>,
}

impl LogReader {
    /// The size of the blocks [`LogReader::block`] takes (the last may be shorter).
    pub const BLOCK_SIZE: usize = BLOCK_SIZE;

    /// Reads the block at file offset `at`, handing each record it completes to `record`;
    /// `last` when the file ends in it (read short).
    pub fn block(
        &mut self,
        at: usize,
        block: &[u8],
        last: bool,
        mut record: impl FnMut(LogRecord),
    ) -> Result<(), Failure> {
        let mut pos = 0;
        while pos < block.len() {
            let available = block.len() - pos;
            if available < HEADER_LEN {
                // The block's trailer, or the writer died in the last block.
                return Ok(());
            }
            let header = &block[pos..pos + HEADER_LEN];
            let len = usize::from(u16::from_le_bytes([header[4], header[5]]));
            let kind = header[6];
            if HEADER_LEN + len > available {
                return cut_short(at + pos, header, &block[pos + HEADER_LEN..], last);
            }
            if kind == ZERO && len == 0 {
                return self.zeroed(at, pos, block);
            }
            let payload = &block[pos + HEADER_LEN..pos + HEADER_LEN + len];
            let stored = unmask_crc(u32::from_le_bytes(header[..4].try_into().expect("4")));
            if stored != crc32c::crc32c_append(crc32c::crc32c(&[kind]), payload) {
                return Err(corruption(at + pos, "checksum mismatch"));
            }
            self.assemble(kind, at + pos, payload, &mut record)?;
            pos += HEADER_LEN + len;
        }
        Ok(())
    }

    /// Zeroed (preallocated) space at block offset `pos`: the rest of the block is skipped,
    /// which inside a fragmented record loses its middle. LevelDB says nothing of the
    /// records the skipped bytes may hold (`ReadPhysicalRecord`), even with paranoid checks;
    /// the reader finds them to say so.
    fn zeroed(&mut self, at: usize, pos: usize, block: &[u8]) -> Result<(), Failure> {
        if self.fragment.is_some() {
            return Err(corruption(at + pos, "error in middle of record"));
        }
        let nonzero = block[pos..].iter().filter(|&&b| b != 0).count();
        if nonzero > 0 {
            let records = intact_records(block, pos + HEADER_LEN)
                .into_iter()
                .map(|(offset, record)| (at + offset, record))
                .collect();
            self.skipped.push(Skipped {
                offset: at + pos,
                nonzero,
                records,
            });
        }
        Ok(())
    }

    /// One physical record of type `kind` at file offset `at`: a whole record for `record`,
    /// or a fragment of one, joined with the others.
    fn assemble(
        &mut self,
        kind: u8,
        at: usize,
        payload: &[u8],
        record: &mut impl FnMut(LogRecord),
    ) -> Result<(), Failure> {
        let partial = |f: &Option<LogRecord>| f.as_ref().is_some_and(|(_, r)| !r.is_empty());
        match kind {
            FULL | FIRST if partial(&self.fragment) => {
                return Err(corruption(at, "partial record without end"));
            }
            FULL => {
                self.fragment = None;
                record((at, payload.to_vec()));
            }
            FIRST => self.fragment = Some((at, payload.to_vec())),
            MIDDLE | LAST => {
                let Some((start, mut joined)) = self.fragment.take() else {
                    return Err(corruption(at, "missing start of fragmented record"));
                };
                joined.extend_from_slice(payload);
                if kind == LAST {
                    record((start, joined));
                } else {
                    self.fragment = Some((start, joined));
                }
            }
            _ => return Err(corruption(at, format!("unknown record type {kind}"))),
        }
        Ok(())
    }
}

/// A record whose length runs past the block, at file offset `at`: in the file's last
/// block the writer died in the record (a torn write: the log ends here), unless the bytes
/// that follow (`rest`) hold the record whole: then its length field is damaged, and
/// LevelDB's recovery drops the record as torn, silently.
fn cut_short(at: usize, header: &[u8], rest: &[u8], last: bool) -> Result<(), Failure> {
    if !last {
        return Err(corruption(at, "bad record length"));
    }
    if holds_record(header, rest) {
        return Err(corruption(
            at,
            "a record's length field is damaged (the bytes after it hold the record whole): \
             LevelDB drops it, and all after it, as a torn write",
        ));
    }
    Ok(())
}

/// Whether some start of `rest` is the payload `header`'s checksum was computed over (with
/// its type): a whole record behind a length field that claims more than `rest` holds.
fn holds_record(header: &[u8], rest: &[u8]) -> bool {
    let stored = unmask_crc(u32::from_le_bytes(header[..4].try_into().expect("4")));
    let mut crc = crc32c::crc32c(&header[6..7]);
    if crc == stored {
        return true;
    }
    rest.iter().any(|&byte| {
        crc = crc32c::crc32c_append(crc, &[byte]);
        crc == stored
    })
}

/// The whole records (fragments joined) with valid checksums that start in `block` at or
/// after `from`: each offset is tried as a header, and a valid record read on from its end.
fn intact_records(block: &[u8], from: usize) -> Vec<LogRecord> {
    let mut out = Vec::new();
    let mut fragment: Option<LogRecord> = None;
    let mut pos = from;
    while pos + HEADER_LEN <= block.len() {
        let header = &block[pos..pos + HEADER_LEN];
        let len = usize::from(u16::from_le_bytes([header[4], header[5]]));
        let kind = header[6];
        let end = pos + HEADER_LEN + len;
        let valid = (FULL..=LAST).contains(&kind)
            && end <= block.len()
            && unmask_crc(u32::from_le_bytes(header[..4].try_into().expect("4")))
                == crc32c::crc32c_append(crc32c::crc32c(&[kind]), &block[pos + HEADER_LEN..end]);
        if !valid {
            pos += 1;
            continue;
        }
        let payload = &block[pos + HEADER_LEN..end];
        match kind {
            FULL => out.push((pos, payload.to_vec())),
            FIRST => fragment = Some((pos, payload.to_vec())),
            MIDDLE => {
                if let Some((_, joined)) = &mut fragment {
                    joined.extend_from_slice(payload);
                }
            }
            _ => out.extend(fragment.take().map(|(start, mut joined)| {
                joined.extend_from_slice(payload);
                (start, joined)
            })),
        }
        pos = end;
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A log record as LevelDB's writer frames it.
    pub(crate) fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let crc = crc32c::crc32c_append(crc32c::crc32c(&[kind]), payload);
        let mut out = crate::table::mask_crc(crc).to_le_bytes().to_vec();
        out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        out.push(kind);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn a_length_field_claiming_past_the_end_of_a_whole_record_is_damage() {
        let mut log = frame(FULL, b"one");
        let second = log.len();
        log.extend(frame(FULL, b"the second record, whole"));
        // Its length field, one bit flipped upward: it claims past the file's end.
        log[second + 5] ^= 0x10;
        let e = log_records(&log).unwrap_err();
        assert_eq!(e.offset(), Some(second as u64), "{e}");
        // A record the writer did not finish stays a torn end.
        let mut torn = frame(FULL, b"one");
        torn.extend_from_slice(&frame(FULL, b"the second record, whole")[..20]);
        assert_eq!(log_records(&torn).unwrap(), [b"one".to_vec()]);
    }

    #[test]
    fn a_torn_end_is_the_end_and_damage_elsewhere_is_damage() {
        let mut log = frame(FULL, b"one");
        log.extend(frame(FULL, b"two"));
        assert_eq!(
            log_records(&log).unwrap(),
            [b"one".to_vec(), b"two".to_vec()]
        );
        // A header or a record cut off by the end of the file: the writer died there.
        for cut in 1..frame(FULL, b"two").len() {
            let torn = &log[..log.len() - cut];
            assert_eq!(log_records(torn).unwrap(), [b"one".to_vec()], "cut {cut}");
        }
        // A fragmented record left open at the end is dropped.
        let mut open = frame(FULL, b"one");
        open.extend(frame(FIRST, b"tw"));
        assert_eq!(log_records(&open).unwrap(), [b"one".to_vec()]);
        // A flipped payload byte, an unknown type, a middle without a first.
        let mut flipped = log.clone();
        flipped[8] ^= 1;
        assert!(log_records(&flipped).is_err());
        assert!(log_records(&frame(9, b"x")).is_err());
        assert!(log_records(&frame(MIDDLE, b"x")).is_err());
        // A record that runs past a full block is corruption, not the end.
        let mut full = frame(FULL, &vec![7u8; BLOCK_SIZE - HEADER_LEN - 10]);
        full.extend_from_slice(&[0xff; 10]);
        full.extend(frame(FULL, b"next block"));
        assert!(log_records(&full).is_err());
    }
}
