//! Where a policy builds a filter: appended to a `Vec`, or into the caller's memory. Both
//! policies' `create_filter` and `create_filter_into` are these around their own
//! `write_filter`, which fills a zeroed filter of exactly its length.

use crate::error::Error;

/// Appends `len` zeroed bytes to `dst` for `write` to fill. On error `dst` is unchanged.
pub(crate) fn append_filter(
    dst: &mut Vec<u8>,
    len: usize,
    write: impl FnOnce(&mut [u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    dst.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
    let start = dst.len();
    dst.resize(start + len, 0);
    let written = write(&mut dst[start..]);
    if written.is_err() {
        dst.truncate(start);
    }
    written
}

/// Zeroes the first `needed` bytes of `out` for `write` to fill and returns `needed`; bytes
/// past them are left alone. If `out` is shorter, nothing is written and the error says how
/// many bytes are needed.
pub(crate) fn fill_filter(
    out: &mut [u8],
    needed: usize,
    write: impl FnOnce(&mut [u8]) -> Result<(), Error>,
) -> Result<usize, Error> {
    let Some(filter) = out.get_mut(..needed) else {
        return Err(Error::BufferTooSmall { needed });
    };
    filter.fill(0);
    write(filter)?;
    Ok(needed)
}
