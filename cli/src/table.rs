//! Reading a LevelDB table file (LevelDB's `doc/table_format.md`): the footer, block handles,
//! blocks with their trailers (compression type and masked CRC32C), and the prefix-compressed
//! entries with their restart array. Every length read from the file is checked against the
//! bytes that are there before anything is sized by it, so corrupt input is a [`Failure`]
//! at its offset, never a panic or a huge allocation. A file is read block by block, as
//! LevelDB reads it ([`TableFile`]): memory follows the largest block, not the file.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::os::unix::fs::FileExt;

use leveldb_bloom::{FilterBlockReader, FilterPolicy};

use crate::failure::{Failure, Kind};

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

/// What is wrong with the table's bytes at `offset`: damage.
fn damage(offset: u64, what: impl Into<String>) -> Failure {
    Failure::at_offset(offset, Kind::Damaged, what)
}

/// A table's bytes, read where they are needed.
pub trait TableFile {
    /// The table's length in bytes: the file's, or the part of it LevelDB reads.
    fn size(&self) -> u64;
    /// The `len` bytes at `offset`, which lie inside the table.
    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, Failure>;
}

/// Bytes in memory (a fuzzer's input, a test's table).
impl<T: AsRef<[u8]>> TableFile for T {
    fn size(&self) -> u64 {
        self.as_ref().len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, Failure> {
        usize::try_from(offset)
            .ok()
            .and_then(|start| self.as_ref().get(start..start.checked_add(len)?))
            .map(Cow::Borrowed)
            .ok_or_else(|| damage(offset, "read past the end of the table"))
    }
}

/// A table in an open file, its first `len` bytes (the size a MANIFEST records, or all).
pub struct OpenTable {
    file: File,
    len: u64,
}

impl OpenTable {
    pub fn new(file: File, len: u64) -> OpenTable {
        OpenTable { file, len }
    }
}

impl TableFile for OpenTable {
    fn size(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, Failure> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(damage(offset, "read past the end of the table"));
        }
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|_| {
            Failure::at_offset(offset, Kind::Io, format!("{len} bytes: out of memory"))
        })?;
        bytes.resize(len, 0);
        self.file.read_exact_at(&mut bytes, offset).map_err(|e| {
            Failure::at_offset(offset, Kind::Io, format!("cannot read the file: {e}"))
        })?;
        Ok(Cow::Owned(bytes))
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

/// A varint of at most 5 bytes, its bits past 32 dropped, as LevelDB's `GetVarint32` reads
/// one (in block entries and version edits alike).
pub(crate) fn varint32(data: &[u8], pos: &mut usize) -> Option<u32> {
    let mut value = 0u32;
    for shift in (0..=28).step_by(7) {
        let byte = *data.get(*pos)?;
        *pos += 1;
        value |= u32::from(byte & 0x7f).wrapping_shl(shift);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
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
#[derive(Debug, Clone)]
pub struct RawBlock<'a> {
    pub handle: BlockHandle,
    /// The block's bytes and its trailer.
    bytes: Cow<'a, [u8]>,
    pub compression: u8,
    pub masked_crc: u32,
}

impl<'a> RawBlock<'a> {
    /// The block's bytes as stored (compressed or not), without the trailer.
    pub fn stored(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() - TRAILER_LEN]
    }

    /// The block `handle` points at in `file`, with its trailer.
    pub fn locate<F: TableFile + ?Sized>(
        file: &'a F,
        handle: BlockHandle,
    ) -> Result<RawBlock<'a>, Failure> {
        let start = usize::try_from(handle.offset).ok();
        let end = start.and_then(|s| {
            s.checked_add(usize::try_from(handle.size).ok()?)?
                .checked_add(TRAILER_LEN)
        });
        let (Some(start), Some(end)) = (start, end) else {
            return Err(damage(handle.offset, "block handle out of range"));
        };
        if end as u64 > file.size() {
            return Err(damage(
                handle.offset,
                format!(
                    "block of {} bytes runs past the end of the file ({} bytes): truncated?",
                    handle.size,
                    file.size()
                ),
            ));
        }
        let bytes = file.read_at(start as u64, end - start)?;
        let body_end = end - start - TRAILER_LEN;
        Ok(RawBlock {
            handle,
            compression: bytes[body_end],
            masked_crc: u32::from_le_bytes(bytes[body_end + 1..].try_into().expect("4 bytes")),
            bytes,
        })
    }

    /// Whether the stored checksum is that of the block's bytes and its type byte.
    pub fn checksum_ok(&self) -> bool {
        let crc = crc32c::crc32c_append(crc32c::crc32c(self.stored()), &[self.compression]);
        unmask_crc(self.masked_crc) == crc
    }

    /// The block's contents, uncompressed.
    pub fn contents(self) -> Result<Cow<'a, [u8]>, Failure> {
        let at = self.handle.offset;
        match self.compression {
            0 => Ok(match self.bytes {
                Cow::Borrowed(bytes) => Cow::Borrowed(&bytes[..bytes.len() - TRAILER_LEN]),
                Cow::Owned(mut bytes) => {
                    bytes.truncate(bytes.len() - TRAILER_LEN);
                    Cow::Owned(bytes)
                }
            }),
            1 => {
                let stored = self.stored();
                let len = snap::raw::decompress_len(stored)
                    .map_err(|e| damage(at, format!("snappy block: {e}")))?;
                if len > stored.len().saturating_mul(SNAPPY_MAX_EXPANSION) + 64 {
                    return Err(damage(
                        at,
                        format!("snappy block claims {len} bytes from {}", stored.len()),
                    ));
                }
                snap::raw::Decoder::new()
                    .decompress_vec(stored)
                    .map(Cow::Owned)
                    .map_err(|e| damage(at, format!("snappy block: {e}")))
            }
            other => Err(damage(at, foreign_compression(other, self.stored()))),
        }
    }
}

/// What a block of compression type `kind`, which LevelDB 1.23 cannot read (it knows 0, none,
/// and 1, Snappy), holds, named from its `stored` bytes: LevelDB's newer releases write zstd
/// as type 2; Minecraft Bedrock's LevelDB (leveldb-mcpe) writes zlib as type 2 and raw
/// deflate as type 4.
fn foreign_compression(kind: u8, stored: &[u8]) -> String {
    const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
    // What inflating may make of a block, at most: far beyond any real block's ratio.
    let limit = stored
        .len()
        .saturating_mul(SNAPPY_MAX_EXPANSION)
        .max(1 << 16);
    let zlib = || miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(stored, limit).is_ok();
    let deflate = || miniz_oxide::inflate::decompress_to_vec_with_limit(stored, limit).is_ok();
    let what = match kind {
        2 if stored.starts_with(&ZSTD_MAGIC) => {
            "a zstd-compressed block (compression type 2, as LevelDB's newer releases write it)"
                .to_owned()
        }
        2 if zlib() => "a zlib-compressed block (compression type 2, as Minecraft Bedrock's \
                        LevelDB, leveldb-mcpe, writes it)"
            .to_owned(),
        2 => "compression type 2 (zstd in LevelDB's newer releases, zlib in leveldb-mcpe), \
              and the block is neither"
            .to_owned(),
        4 if deflate() => "a raw-deflate-compressed block (compression type 4, as Minecraft \
                           Bedrock's LevelDB, leveldb-mcpe, writes it)"
            .to_owned(),
        other => format!("unknown compression type {other}"),
    };
    format!("{what}: not readable by LevelDB 1.23")
}

/// How many bytes of keys a block's entries may rebuild, for each byte of the block. LevelDB
/// stores a whole key at least every `block_restart_interval` entries (16 by default), so its
/// blocks rebuild less than 16 times their size; a block that asks for more would make the
/// work and memory spent on a small file grow without bound.
pub const MAX_KEY_BYTES_PER_BLOCK_BYTE: usize = 64;

/// Calls `f(key, value)` for each entry of a block's (uncompressed) `contents`, keys
/// rebuilt from their shared prefixes, as LevelDB's block iterator reads them. `at` is the
/// block's offset, for errors.
///
/// Beyond what iterating needs, the restart points must be where LevelDB's lookups can use
/// them (increasing, each at an entry that shares nothing with the key before), and the keys
/// must rebuild to at most [`MAX_KEY_BYTES_PER_BLOCK_BYTE`] times the block's size, or
/// `key_bytes_limit` if smaller.
pub fn for_each_entry(
    contents: &[u8],
    at: u64,
    key_bytes_limit: usize,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Result<(), Failure> {
    let bad = |what: &str| damage(at, format!("block: {what}"));
    let restarts = Restarts::of(contents, &bad)?;
    let (entries_end, restart) = (restarts.entries_end, |i| restarts.at(i));
    let key_bytes_limit =
        key_bytes_limit.min(contents.len().saturating_mul(MAX_KEY_BYTES_PER_BLOCK_BYTE));
    let (mut key_bytes, mut next_restart) = (0usize, 0usize);
    let mut key = Vec::new();
    let mut pos = 0;
    while pos < entries_end {
        let entry_start = pos;
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
        if next_restart < restarts.count && restart(next_restart) <= entry_start {
            if restart(next_restart) != entry_start || shared != 0 {
                return Err(bad(&format!(
                    "restart point {next_restart} at block byte {} is not an entry that \
                     starts a key (LevelDB's lookups would read garbage)",
                    restart(next_restart)
                )));
            }
            next_restart += 1;
        }
        if shared > key.len() {
            return Err(bad(&format!(
                "entry at block byte {entry_start} shares {shared} bytes of a {}-byte key",
                key.len()
            )));
        }
        let Some(rest) = region
            .get(pos..)
            .filter(|r| unshared.saturating_add(value_len) <= r.len())
        else {
            return Err(bad(&format!(
                "entry at block byte {entry_start} runs past the block"
            )));
        };
        key_bytes = key_bytes.saturating_add(shared + unshared);
        if key_bytes > key_bytes_limit {
            return Err(bad(&format!(
                "its keys rebuild to more than {key_bytes_limit} bytes from {} (LevelDB's \
                 blocks stay under {MAX_KEY_BYTES_PER_BLOCK_BYTE} times their size): not read",
                contents.len()
            )));
        }
        key.truncate(shared);
        key.extend_from_slice(&rest[..unshared]);
        f(&key, &rest[unshared..unshared + value_len]);
        pos += unshared + value_len;
    }
    if entries_end > 0 && next_restart < restarts.count {
        return Err(bad(&format!(
            "restart point {next_restart} at block byte {} is past the last entry",
            restart(next_restart)
        )));
    }
    Ok(())
}

/// A block's restart array (its last `4 * count + 4` bytes): where its entries end, and
/// the offset of each entry that starts a key whole.
struct Restarts<'a> {
    contents: &'a [u8],
    entries_end: usize,
    count: usize,
}

impl<'a> Restarts<'a> {
    /// The restart array of a block's `contents`, where LevelDB can read from it (`bad`
    /// says why not).
    fn of(contents: &'a [u8], bad: &dyn Fn(&str) -> Failure) -> Result<Restarts<'a>, Failure> {
        let Some(restarts_at) = contents.len().checked_sub(4) else {
            return Err(bad("shorter than its restart count"));
        };
        let count = u32::from_le_bytes(contents[restarts_at..].try_into().expect("4 bytes"));
        let entries_end = (count as usize)
            .checked_mul(4)
            .and_then(|bytes| restarts_at.checked_sub(bytes))
            .ok_or_else(|| bad(&format!("{count} restarts do not fit")))?;
        let restarts = Restarts {
            contents,
            entries_end,
            count: count as usize,
        };
        // LevelDB reads a block without restart points as empty, and starts reading at the
        // first restart point: anything else hides entries from it.
        if entries_end > 0 {
            if count == 0 {
                return Err(bad(
                    "entries but no restart points (LevelDB reads it as empty)",
                ));
            }
            if restarts.at(0) != 0 {
                return Err(bad(&format!(
                    "first restart point at {}, not 0",
                    restarts.at(0)
                )));
            }
        }
        Ok(restarts)
    }

    /// The block offset of restart point `i`.
    fn at(&self, i: usize) -> usize {
        let word = &self.contents[self.entries_end + 4 * i..self.entries_end + 4 * i + 4];
        u32::from_le_bytes(word.try_into().expect("4 bytes")) as usize
    }
}

/// One data block, from the index.
#[derive(Debug, Clone, Copy)]
pub struct IndexEntry {
    pub handle: BlockHandle,
    /// Where its separator lies in the table's [`Table::separators`].
    separator_at: usize,
    separator_len: usize,
}

/// What reading a block found of its trailer: its checksum right or not, and whether it is
/// stored compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockCheck {
    pub offset: u64,
    pub checksum_ok: bool,
    pub compressed: bool,
}

impl BlockCheck {
    pub fn of(block: &RawBlock<'_>) -> BlockCheck {
        BlockCheck {
            offset: block.handle.offset,
            checksum_ok: block.checksum_ok(),
            compressed: block.compression == 1,
        }
    }
}

/// A table's structure: its index, and its filter block if the metaindex names one.
#[derive(Debug)]
pub struct Table<'a> {
    pub file: &'a dyn TableFile,
    /// The index's keys, one after another (one allocation for a table's whole index).
    separators: Vec<u8>,
    pub metaindex: BlockHandle,
    pub index_handle: BlockHandle,
    pub index: Vec<IndexEntry>,
    /// The policy name from the metaindex's `filter.<name>` key.
    pub filter_policy: Option<String>,
    pub filter_handle: Option<BlockHandle>,
    filter_contents: Option<Cow<'a, [u8]>>,
    /// Why the metaindex or the filter block could not be read, if so: LevelDB then reads
    /// the table without a filter.
    pub filter_unread: Option<Failure>,
    /// The blocks besides the data blocks that LevelDB reads, as `open` read them: the
    /// index, then the metaindex and the filter block where LevelDB reads them.
    pub structure: Vec<BlockCheck>,
}

/// Whether `file` ends as a LevelDB table does: a footer with the table magic number.
/// `Err` where the system fails the read.
pub fn has_table_magic(file: &dyn TableFile) -> Result<bool, Failure> {
    let Some(at) = file.size().checked_sub(8) else {
        return Ok(false);
    };
    match file.read_at(at, 8) {
        Ok(magic) => Ok(*magic == MAGIC.to_le_bytes()),
        Err(e) if e.kind() == Kind::Io => Err(e),
        Err(_) => Ok(false),
    }
}

impl std::fmt::Debug for dyn TableFile + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a table of {} bytes", self.size())
    }
}

/// The footer of the table in `file`: its metaindex's and its index's handles.
fn footer(file: &dyn TableFile) -> Result<(BlockHandle, BlockHandle), Failure> {
    let Some(footer_at) = file.size().checked_sub(FOOTER_LEN as u64) else {
        return Err(damage(
            0,
            format!(
                "{} bytes: shorter than a table footer (truncated?)",
                file.size()
            ),
        ));
    };
    let footer = file.read_at(footer_at, FOOTER_LEN)?;
    let magic = u64::from_le_bytes(footer[40..].try_into().expect("8 bytes"));
    if magic != MAGIC {
        return Err(damage(
            footer_at + 40,
            format!("not a LevelDB table (magic {magic:#018x})"),
        ));
    }
    let mut pos = 0;
    let handles = &footer[..40];
    let (Some(metaindex), Some(index_handle)) = (
        BlockHandle::decode(handles, &mut pos),
        BlockHandle::decode(handles, &mut pos),
    ) else {
        return Err(damage(footer_at, "bad block handles in the footer"));
    };
    Ok((metaindex, index_handle))
}

/// The entries of the index block (`index`, at `index_handle`): each data block's handle,
/// and the separators, in one buffer.
fn read_index(
    index: &[u8],
    index_handle: BlockHandle,
) -> Result<(Vec<IndexEntry>, Vec<u8>), Failure> {
    let mut entries: Vec<IndexEntry> = Vec::new();
    let mut separators: Vec<u8> = Vec::new();
    let mut bad_entry = None;
    // LevelDB writes index blocks with a restart point at every entry, so their keys
    // rebuild to no more than the block's size.
    for_each_entry(index, index_handle.offset, index.len(), |key, value| {
        let mut p = 0;
        let Some(handle) = BlockHandle::decode(value, &mut p) else {
            bad_entry.get_or_insert("bad block handle in the index");
            return;
        };
        // LevelDB writes the data blocks one after another, each once.
        if entries.last().is_some_and(|last| {
            let end = last.handle.offset.saturating_add(last.handle.size);
            handle.offset < end.saturating_add(TRAILER_LEN as u64)
        }) {
            bad_entry.get_or_insert("index entries out of order or overlapping");
        }
        entries.push(IndexEntry {
            handle,
            separator_at: separators.len(),
            separator_len: key.len(),
        });
        separators.extend_from_slice(key);
    })?;
    if let Some(what) = bad_entry {
        return Err(damage(index_handle.offset, what));
    }
    Ok((entries, separators))
}

impl<'a> Table<'a> {
    /// Reads the footer, the metaindex and the index of the table in `file`.
    pub fn open(file: &'a dyn TableFile) -> Result<Table<'a>, Failure> {
        let (metaindex, index_handle) = footer(file)?;
        let mut table = Table {
            file,
            separators: Vec::new(),
            metaindex,
            index_handle,
            index: Vec::new(),
            filter_policy: None,
            filter_handle: None,
            filter_contents: None,
            filter_unread: None,
            structure: Vec::new(),
        };
        // LevelDB reads a table whose metaindex or filter block it cannot read without its
        // filter (`Table::ReadMeta`, `Table::ReadFilter`): not damage, but said.
        let filter_checks = table.read_filter();
        let index = RawBlock::locate(file, index_handle)?;
        table.structure.push(BlockCheck::of(&index));
        match filter_checks {
            Ok(checks) => table.structure.extend(checks),
            Err(e) => {
                table.filter_policy = None;
                table.filter_handle = None;
                table.filter_contents = None;
                table.filter_unread = Some(e);
            }
        }
        let (entries, separators) = read_index(&index.contents()?, index_handle)?;
        table.index = entries;
        table.separators = separators;
        Ok(table)
    }

    /// Finds the filter block in the metaindex and reads it: LevelDB's own policy name
    /// first, else another policy's (which LevelDB does not read). Returns what it found of
    /// the blocks it read.
    fn read_filter(&mut self) -> Result<Vec<BlockCheck>, Failure> {
        let meta = RawBlock::locate(self.file, self.metaindex)?;
        let mut checks = vec![BlockCheck::of(&meta)];
        let meta = meta.contents()?;
        let (mut ours, mut other) = (None, None);
        let mut bad_handle = false;
        let limit = meta.len().saturating_mul(MAX_KEY_BYTES_PER_BLOCK_BYTE);
        for_each_entry(&meta, self.metaindex.offset, limit, |key, value| {
            if let Some(name) = key.strip_prefix(FILTER_KEY_PREFIX) {
                let mut p = 0;
                match BlockHandle::decode(value, &mut p) {
                    Some(h) if name == leveldb_bloom::NAME.as_bytes() => {
                        ours = Some((name.to_vec(), h))
                    }
                    Some(h) => {
                        other.get_or_insert((name.to_vec(), h));
                    }
                    None => bad_handle = true,
                }
            }
        })?;
        if bad_handle {
            return Err(damage(
                self.metaindex.offset,
                "bad filter block handle in the metaindex",
            ));
        }
        let Some((name, handle)) = ours.or(other) else {
            return Ok(checks);
        };
        self.filter_policy = Some(String::from_utf8_lossy(&name).into_owned());
        self.filter_handle = Some(handle);
        let filter = RawBlock::locate(self.file, handle)?;
        checks.push(BlockCheck::of(&filter));
        self.filter_contents = Some(filter.contents()?);
        Ok(checks)
    }

    /// The index key of `entry`: at least its block's last key, less than the next block's
    /// first.
    pub fn separator(&self, entry: &IndexEntry) -> &[u8] {
        &self.separators[entry.separator_at..entry.separator_at + entry.separator_len]
    }

    /// The filter block, as LevelDB reads it with `policy`.
    pub fn filter_block<'p, P: FilterPolicy>(
        &'p self,
        policy: &'p P,
    ) -> Option<FilterBlockReader<'p, P>> {
        let contents = self.filter_contents.as_deref()?;
        Some(FilterBlockReader::new(policy, contents))
    }

    /// The index of the data block LevelDB searches for `user_key`: the first whose
    /// separator's user key is at or after it (`internal`: separators carry an 8-byte tag).
    pub fn block_for(&self, user_key: &[u8], internal: bool) -> Option<usize> {
        let point = self.index.partition_point(|e| {
            let sep = if internal {
                user_key_of(self.separator(e))
            } else {
                self.separator(e)
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

/// The order of LevelDB's `InternalKeyComparator` over the bytewise comparator: user keys
/// ascending, then the 8-byte tag (sequence number and type) descending. A key shorter than
/// 8 bytes compares as a user key with the least tag.
pub fn compare_internal_keys(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    fn split(k: &[u8]) -> (&[u8], std::cmp::Reverse<u64>) {
        let user = user_key_of(k);
        let tag = k[user.len()..].try_into().map_or(0, u64::from_le_bytes);
        (user, std::cmp::Reverse(tag))
    }
    split(a).cmp(&split(b))
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
        // GetVarint32: five bytes at most, the bits past 32 dropped.
        assert_eq!(
            varint32(&[0xff, 0xff, 0xff, 0xff, 0x7f], &mut 0),
            Some(u32::MAX)
        );
        assert_eq!(
            varint32(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut 0),
            None
        );
        assert_eq!(varint64(&[0xff; 11], &mut 0), None);
    }

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A block of `entries` (shared, key bytes, value) with restart points at `restarts`.
    fn block(entries: &[(usize, &[u8], &[u8])], restarts: &[u32]) -> Vec<u8> {
        let mut b = Vec::new();
        for &(shared, unshared, value) in entries {
            varint(shared as u64, &mut b);
            varint(unshared.len() as u64, &mut b);
            varint(value.len() as u64, &mut b);
            b.extend_from_slice(unshared);
            b.extend_from_slice(value);
        }
        for r in restarts {
            b.extend_from_slice(&r.to_le_bytes());
        }
        b.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
        b
    }

    /// Each entry sharing the whole key before it and adding a byte: a few bytes an entry
    /// that would rebuild keys of quadratic total length. Refused at the limit, quickly.
    #[test]
    fn keys_that_rebuild_without_bound_are_refused() {
        let mut entries = vec![(0, &b"a"[..], &b""[..])];
        for i in 1..20_000 {
            entries.push((i, b"b", b""));
        }
        let b = block(&entries, &[0]);
        let start = std::time::Instant::now();
        let mut seen = 0;
        let err = for_each_entry(&b, 0, usize::MAX, |_, _| seen += 1).unwrap_err();
        assert!(err.what().contains("rebuild to more than"), "{err}");
        assert!(seen < 20_000, "stopped at the limit");
        assert!(start.elapsed().as_secs() < 5);
        // A block as LevelDB writes it (a whole key every 16 entries) reads whole.
        let mut entries = Vec::new();
        let mut restarts = Vec::new();
        let mut offset = 0;
        for i in 0..1000usize {
            let shared = if i % 16 == 0 { 0 } else { 20 };
            if shared == 0 {
                restarts.push(offset);
            }
            let key: &[u8] = if shared == 0 {
                b"prefix-of-twenty-byt-key"
            } else {
                b"xyzw"
            };
            let mut one = Vec::new();
            varint(shared as u64, &mut one);
            varint(key.len() as u64, &mut one);
            varint(1, &mut one);
            offset += (one.len() + key.len() + 1) as u32;
            entries.push((shared, key, &b"v"[..]));
        }
        let b = block(&entries, &restarts);
        let mut seen = 0;
        for_each_entry(&b, 0, usize::MAX, |_, _| seen += 1).unwrap();
        assert_eq!(seen, 1000);
    }

    #[test]
    fn restart_points_must_start_whole_keys() {
        let entries = [(0, &b"key1"[..], &b"v"[..]), (3, b"2", b"v")];
        // The second entry starts at byte 8 and shares 3 bytes: no restart point.
        assert!(for_each_entry(&block(&entries, &[0]), 0, usize::MAX, |_, _| {}).is_ok());
        for restarts in [&[0, 8][..], &[0, 5], &[0, 100], &[4], &[0, 0]] {
            let err = for_each_entry(&block(&entries, restarts), 0, usize::MAX, |_, _| {});
            assert!(err.is_err(), "{restarts:?}");
        }
        // An empty block (LevelDB's: one restart point at 0) reads as empty.
        assert!(for_each_entry(&block(&[], &[0]), 0, usize::MAX, |_, _| {}).is_ok());
    }

    /// A table of the given data blocks, whose index has one entry per `index` handle (the
    /// blocks' offsets by number), an empty metaindex, checksums right.
    fn table_of(blocks: &[Vec<u8>], index: &[usize]) -> Vec<u8> {
        let mut file = Vec::new();
        let mut handles = Vec::new();
        let put = |file: &mut Vec<u8>, b: &[u8]| {
            let handle = BlockHandle {
                offset: file.len() as u64,
                size: b.len() as u64,
            };
            file.extend_from_slice(b);
            file.push(0);
            let crc = crc32c::crc32c_append(crc32c::crc32c(b), &[0]);
            file.extend_from_slice(&mask_crc(crc).to_le_bytes());
            handle
        };
        for b in blocks {
            handles.push(put(&mut file, b));
        }
        let meta = put(&mut file, &block(&[], &[0]));
        let values: Vec<Vec<u8>> = index
            .iter()
            .map(|&i| {
                let mut v = Vec::new();
                varint(handles[i].offset, &mut v);
                varint(handles[i].size, &mut v);
                v
            })
            .collect();
        let keys: Vec<Vec<u8>> = (0..index.len())
            .map(|i| format!("k{i:08}").into_bytes())
            .collect();
        let entries: Vec<(usize, &[u8], &[u8])> = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| (0, &k[..], &v[..]))
            .collect();
        let mut restarts = Vec::new();
        let mut at = 0u32;
        for (k, v) in keys.iter().zip(&values) {
            restarts.push(at);
            at += (3 + k.len() + v.len()) as u32;
        }
        let index_handle = put(&mut file, &block(&entries, &restarts));
        let mut footer = Vec::new();
        varint(meta.offset, &mut footer);
        varint(meta.size, &mut footer);
        varint(index_handle.offset, &mut footer);
        varint(index_handle.size, &mut footer);
        footer.resize(40, 0);
        footer.extend_from_slice(&MAGIC.to_le_bytes());
        file.extend_from_slice(&footer);
        file
    }

    /// An index whose entries repeat one block (or go backwards) would have a small file
    /// checked once per entry: refused, as LevelDB never writes it.
    #[test]
    fn index_entries_out_of_order_or_overlapping_are_refused() {
        let data = block(&[(0, &b"key"[..], &b"value"[..])], &[0]);
        let blocks = vec![data.clone(), data];
        assert!(Table::open(&table_of(&blocks, &[0, 1])).is_ok());
        for index in [&[0, 0][..], &[1, 0], &[0, 1, 1]] {
            let err = Table::open(&table_of(&blocks, index)).unwrap_err();
            assert!(
                err.what().contains("out of order or overlapping"),
                "{index:?}: {err}"
            );
        }
        // Many entries naming one block: refused at the second, whatever the count.
        let many = vec![0; 50_000];
        let start = std::time::Instant::now();
        assert!(Table::open(&table_of(&blocks, &many)).is_err());
        assert!(start.elapsed().as_secs() < 5);
    }

    #[test]
    fn short_and_foreign_files_are_errors() {
        assert!(Table::open(&[]).is_err());
        assert!(
            Table::open(&[0u8; 48])
                .unwrap_err()
                .what()
                .contains("not a LevelDB table")
        );
    }

    #[test]
    fn compression_types_leveldb_cannot_read_are_named_from_their_bytes() {
        let block = |compression, stored: &[u8]| {
            let mut bytes = stored.to_vec();
            bytes.extend_from_slice(&[0; TRAILER_LEN]);
            RawBlock {
                handle: BlockHandle {
                    offset: 7,
                    size: stored.len() as u64,
                },
                bytes: Cow::Owned(bytes),
                compression,
                masked_crc: 0,
            }
        };
        let said = |compression, stored: &[u8]| {
            block(compression, stored)
                .contents()
                .unwrap_err()
                .to_string()
        };
        let contents = b"a block's contents, a block's contents, a block's contents";
        assert_eq!(block(0, b"abc").contents().unwrap().as_ref(), b"abc");
        let zstd = ruzstd::encoding::compress_to_vec(
            &contents[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let zlib = miniz_oxide::deflate::compress_to_vec_zlib(contents, 6);
        let deflate = miniz_oxide::deflate::compress_to_vec(contents, 6);
        for (kind, stored, named) in [
            (
                2,
                &zstd[..],
                "a zstd-compressed block (compression type 2, as LevelDB's newer",
            ),
            (
                2,
                &zlib[..],
                "a zlib-compressed block (compression type 2, as Minecraft",
            ),
            (
                4,
                &deflate[..],
                "a raw-deflate-compressed block (compression type 4",
            ),
            (
                2,
                b"abc",
                "compression type 2 (zstd in LevelDB's newer releases, zlib in",
            ),
            (4, &zlib[..1], "unknown compression type 4"),
            (3, &zlib[..], "unknown compression type 3"),
            (255, b"abc", "unknown compression type 255"),
        ] {
            let said = said(kind, stored);
            assert!(
                said.starts_with(&format!("at offset 7: {named}"))
                    && said.ends_with("not readable by LevelDB 1.23"),
                "{said}"
            );
        }
    }
}
