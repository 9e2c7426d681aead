//! Reading a LevelDB table file (LevelDB's `doc/table_format.md`): the footer, block handles,
//! blocks with their trailers (compression type and masked CRC32C), and the prefix-compressed
//! entries with their restart array. Every length read from the file is checked against the
//! bytes that are there before anything is sized by it, so corrupt input is an [`Error`]
//! naming the offset, never a panic or a huge allocation.

use std::borrow::Cow;
use std::fmt;

use leveldb_bloom::{FilterBlockReader, FilterPolicy};

/// The last 8 bytes of every table file.
pub const MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// Two block handles padded to 40 bytes, then the magic number.
pub const FOOTER_LEN: usize = 48;
/// After each block: one byte of compression type, four of masked CRC32C.
pub const TRAILER_LEN: usize = 5;
/// The metaindex key of a filter block is this prefix and the policy's name.
pub const FILTER_KEY_PREFIX: &[u8] = b"filter.";
/// Snappy expands at most about 21 times (a 3-byte copy makes 64 bytes): a block that claims
/// more is corrupt, and its claim is not allocated.
const SNAPPY_MAX_EXPANSION: usize = 32;

/// What is wrong, and where in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub offset: u64,
    pub what: String,
}

impl Error {
    fn at(offset: u64, what: impl Into<String>) -> Error {
        Error {
            offset,
            what: what.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.what)
    }
}

/// Where a block is: its offset and its size without the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    /// Decodes two varint64s from `data` at `*pos`.
    fn decode(data: &[u8], pos: &mut usize) -> Option<BlockHandle> {
        Some(BlockHandle {
            offset: varint64(data, pos)?,
            size: varint64(data, pos)?,
        })
    }
}

/// A LevelDB varint (7 bits a byte, least significant first), at most 10 bytes.
pub(crate) fn varint64(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// A varint that must fit 32 bits (at most 5 bytes).
fn varint32(data: &[u8], pos: &mut usize) -> Option<u32> {
    let start = *pos;
    let value = varint64(data, pos)?;
    (*pos - start <= 5)
        .then_some(value)
        .and_then(|v| u32::try_from(v).ok())
}

/// CRC32C as LevelDB stores it: rotated and offset, so that a CRC of data holding CRCs is
/// not itself trivial.
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(0xa282_ead8).rotate_left(15)
}

/// [`unmask_crc`]'s inverse.
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// A block as stored: its bytes, compression type and checksum.
#[derive(Debug, Clone, Copy)]
pub struct RawBlock<'a> {
    pub handle: BlockHandle,
    pub stored: &'a [u8],
    pub compression: u8,
    pub masked_crc: u32,
}

impl<'a> RawBlock<'a> {
    /// The block `handle` points at in `file`, with its trailer.
    pub fn locate(file: &'a [u8], handle: BlockHandle) -> Result<RawBlock<'a>, Error> {
        let start = usize::try_from(handle.offset).ok();
        let end = start.and_then(|s| {
            s.checked_add(usize::try_from(handle.size).ok()?)?
                .checked_add(TRAILER_LEN)
        });
        let (Some(start), Some(end)) = (start, end) else {
            return Err(Error::at(handle.offset, "block handle out of range"));
        };
        if end > file.len() {
            return Err(Error::at(
                handle.offset,
                format!(
                    "block of {} bytes runs past the end of the file ({} bytes): truncated?",
                    handle.size,
                    file.len()
                ),
            ));
        }
        let body_end = end - TRAILER_LEN;
        Ok(RawBlock {
            handle,
            stored: &file[start..body_end],
            compression: file[body_end],
            masked_crc: u32::from_le_bytes(file[body_end + 1..end].try_into().expect("4 bytes")),
        })
    }

    /// Whether the stored checksum is that of the block's bytes and its type byte.
    pub fn checksum_ok(&self) -> bool {
        let crc = crc32c::crc32c_append(crc32c::crc32c(self.stored), &[self.compression]);
        unmask_crc(self.masked_crc) == crc
    }

    /// The block's contents, uncompressed.
    pub fn contents(&self) -> Result<Cow<'a, [u8]>, Error> {
        let at = self.handle.offset;
        match self.compression {
            0 => Ok(Cow::Borrowed(self.stored)),
            1 => {
                let len = snap::raw::decompress_len(self.stored)
                    .map_err(|e| Error::at(at, format!("snappy block: {e}")))?;
                if len > self.stored.len().saturating_mul(SNAPPY_MAX_EXPANSION) + 64 {
                    return Err(Error::at(
                        at,
                        format!("snappy block claims {len} bytes from {}", self.stored.len()),
                    ));
                }
                snap::raw::Decoder::new()
                    .decompress_vec(self.stored)
                    .map(Cow::Owned)
                    .map_err(|e| Error::at(at, format!("snappy block: {e}")))
            }
            other => Err(Error::at(at, format!("unknown compression type {other}"))),
        }
    }
}

/// Calls `f(key, value)` for each entry of a block's (uncompressed) `contents`, keys
/// rebuilt from their shared prefixes. `at` is the block's offset, for errors.
pub fn for_each_entry(
    contents: &[u8],
    at: u64,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Result<(), Error> {
    let bad = |what: &str| Error::at(at, format!("block: {what}"));
    let Some(restarts_at) = contents.len().checked_sub(4) else {
        return Err(bad("shorter than its restart count"));
    };
    let restarts = u32::from_le_bytes(contents[restarts_at..].try_into().expect("4 bytes"));
    let entries_end = (restarts as usize)
        .checked_mul(4)
        .and_then(|bytes| restarts_at.checked_sub(bytes))
        .ok_or_else(|| bad(&format!("{restarts} restarts do not fit")))?;
    // LevelDB reads a block without restart points as empty, and starts reading at the
    // first restart point: anything else hides entries from it.
    if entries_end > 0 {
        if restarts == 0 {
            return Err(bad(
                "entries but no restart points (LevelDB reads it as empty)",
            ));
        }
        let first = u32::from_le_bytes(
            contents[entries_end..entries_end + 4]
                .try_into()
                .expect("4"),
        );
        if first != 0 {
            return Err(bad(&format!("first restart point at {first}, not 0")));
        }
    }
    let mut key = Vec::new();
    let mut pos = 0;
    while pos < entries_end {
        let region = &contents[..entries_end];
        let (Some(shared), Some(unshared), Some(value_len)) = (
            varint32(region, &mut pos),
            varint32(region, &mut pos),
            varint32(region, &mut pos),
        ) else {
            return Err(bad(&format!("bad entry header at block byte {pos}")));
        };
        let (shared, unshared, value_len) =
            (shared as usize, unshared as usize, value_len as usize);
        if shared > key.len() {
            return Err(bad(&format!(
                "entry at block byte {pos} shares {shared} bytes of a {}-byte key",
                key.len()
            )));
        }
        let Some(rest) = region
            .get(pos..)
            .filter(|r| unshared.saturating_add(value_len) <= r.len())
        else {
            return Err(bad(&format!(
                "entry at block byte {pos} runs past the block"
            )));
        };
        key.truncate(shared);
        key.extend_from_slice(&rest[..unshared]);
        f(&key, &rest[unshared..unshared + value_len]);
        pos += unshared + value_len;
    }
    Ok(())
}

/// One data block, from the index.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// The index key: at least the block's last key, less than the next block's first.
    pub separator: Vec<u8>,
    pub handle: BlockHandle,
}

/// A table's structure: its index, and its filter block if the metaindex names one.
#[derive(Debug)]
pub struct Table<'a> {
    pub file: &'a [u8],
    pub metaindex: BlockHandle,
    pub index_handle: BlockHandle,
    pub index: Vec<IndexEntry>,
    /// The policy name from the metaindex's `filter.<name>` key.
    pub filter_policy: Option<String>,
    pub filter_handle: Option<BlockHandle>,
    filter_contents: Option<Cow<'a, [u8]>>,
}

impl<'a> Table<'a> {
    /// Reads the footer, the metaindex and the index of the table in `file`.
    pub fn open(file: &'a [u8]) -> Result<Table<'a>, Error> {
        let Some(footer_at) = file.len().checked_sub(FOOTER_LEN) else {
            return Err(Error::at(
                0,
                format!(
                    "{} bytes: shorter than a table footer (truncated?)",
                    file.len()
                ),
            ));
        };
        let footer = &file[footer_at..];
        let magic = u64::from_le_bytes(footer[40..].try_into().expect("8 bytes"));
        if magic != MAGIC {
            return Err(Error::at(
                footer_at as u64 + 40,
                format!("not a LevelDB table (magic {magic:#018x})"),
            ));
        }
        let mut pos = 0;
        let handles = &footer[..40];
        let (Some(metaindex), Some(index_handle)) = (
            BlockHandle::decode(handles, &mut pos),
            BlockHandle::decode(handles, &mut pos),
        ) else {
            return Err(Error::at(
                footer_at as u64,
                "bad block handles in the footer",
            ));
        };
        let mut table = Table {
            file,
            metaindex,
            index_handle,
            index: Vec::new(),
            filter_policy: None,
            filter_handle: None,
            filter_contents: None,
        };
        let meta = RawBlock::locate(file, metaindex)?.contents()?;
        let mut bad_handle = None;
        for_each_entry(&meta, metaindex.offset, |key, value| {
            if table.filter_policy.is_none() {
                if let Some(name) = key.strip_prefix(FILTER_KEY_PREFIX) {
                    let mut p = 0;
                    match BlockHandle::decode(value, &mut p) {
                        Some(h) => {
                            table.filter_policy = Some(String::from_utf8_lossy(name).into_owned());
                            table.filter_handle = Some(h);
                        }
                        None => bad_handle = Some("bad filter block handle in the metaindex"),
                    }
                }
            }
        })?;
        if let Some(what) = bad_handle {
            return Err(Error::at(metaindex.offset, what));
        }
        if let Some(handle) = table.filter_handle {
            table.filter_contents = Some(RawBlock::locate(file, handle)?.contents()?);
        }
        let index = RawBlock::locate(file, index_handle)?.contents()?;
        let mut entries = Vec::new();
        let mut bad_entry = false;
        for_each_entry(&index, index_handle.offset, |key, value| {
            let mut p = 0;
            match BlockHandle::decode(value, &mut p) {
                Some(handle) => entries.push(IndexEntry {
                    separator: key.to_vec(),
                    handle,
                }),
                None => bad_entry = true,
            }
        })?;
        if bad_entry {
            return Err(Error::at(
                index_handle.offset,
                "bad block handle in the index",
            ));
        }
        table.index = entries;
        Ok(table)
    }

    /// The filter block, as LevelDB reads it with `policy`.
    pub fn filter_block<'p, P: FilterPolicy>(
        &'p self,
        policy: &'p P,
    ) -> Option<FilterBlockReader<'p, P>> {
        let contents = self.filter_contents.as_deref()?;
        Some(FilterBlockReader::new(policy, contents))
    }

    /// Every block the table has, each once: data blocks, metaindex, index, filter.
    pub fn all_blocks(&self) -> Vec<BlockHandle> {
        let mut blocks: Vec<BlockHandle> = self.index.iter().map(|e| e.handle).collect();
        blocks.extend([self.metaindex, self.index_handle]);
        blocks.extend(self.filter_handle);
        blocks
    }

    /// The index of the data block LevelDB searches for `user_key`: the first whose
    /// separator's user key is at or after it (`internal`: separators carry an 8-byte tag).
    pub fn block_for(&self, user_key: &[u8], internal: bool) -> Option<usize> {
        let point = self.index.partition_point(|e| {
            let sep = if internal {
                user_key_of(&e.separator)
            } else {
                &e.separator
            };
            sep < user_key
        });
        (point < self.index.len()).then_some(point)
    }
}

/// The user key of an internal key (its last 8 bytes are the sequence number and type);
/// a key shorter than 8 bytes is returned whole.
pub fn user_key_of(internal_key: &[u8]) -> &[u8] {
    internal_key
        .len()
        .checked_sub(8)
        .map_or(internal_key, |n| &internal_key[..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masking_round_trips() {
        for crc in [0, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask_crc(mask_crc(crc)), crc);
        }
    }

    #[test]
    fn varints_reject_overlong_and_truncated() {
        let mut p = 0;
        assert_eq!(varint64(&[0x80, 0x01], &mut p), Some(128));
        assert_eq!(varint64(&[0x80], &mut 0), None);
        assert_eq!(varint32(&[0xff, 0xff, 0xff, 0xff, 0x7f], &mut 0), None);
        assert_eq!(varint64(&[0xff; 11], &mut 0), None);
    }

    #[test]
    fn short_and_foreign_files_are_errors() {
        assert!(Table::open(&[]).is_err());
        assert!(
            Table::open(&[0u8; 48])
                .unwrap_err()
                .what
                .contains("not a LevelDB table")
        );
    }
}
