//! Reading a database's files the way the command reads every file: only a regular file
//! (a symlink followed to one), never more than the length it reports, and without waiting
//! on a FIFO or a device that never ends.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A path as the command prints it: control characters (a terminal's escape sequences
/// among them) escaped, bytes that are not UTF-8 replaced.
pub fn shown(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// There is no such file.
    NotFound,
    /// Something other than a regular file is there: what it is.
    NotRegular(&'static str),
    /// Reading failed.
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotFound => f.write_str("no such file"),
            ReadError::NotRegular(what) => write!(f, "{what}, not a regular file"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// The whole contents of the regular file at `path`.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, ReadError> {
    let (file, len) = open_regular(path)?;
    read_at_most(file, len)
}

/// The regular file at `path`, open for reading, and its length.
pub fn open_regular(path: &Path) -> Result<(File, u64), ReadError> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. It
    // changes nothing for a regular file.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Io(e),
        })?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind_of(&meta)));
    }
    Ok((file, meta.len()))
}

/// At most `len` bytes of `file` (a file that grew since is read as it was).
fn read_at_most(file: File, len: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    let len_usize =
        usize::try_from(len).map_err(|_| ReadError::Io(io::Error::other("too large")))?;
    bytes
        .try_reserve_exact(len_usize)
        .map_err(|_| ReadError::Io(io::Error::other("out of memory")))?;
    file.take(len)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    Ok(bytes)
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "something"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"abc");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link).unwrap(), b"abc");
        assert!(matches!(
            read_regular(dir.path()),
            Err(ReadError::NotRegular("a directory"))
        ));
        assert!(matches!(
            read_regular(Path::new("/dev/zero")),
            Err(ReadError::NotRegular("a character device"))
        ));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_regular(&fifo),
            Err(ReadError::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            read_regular(&dir.path().join("none")),
            Err(ReadError::NotFound)
        ));
    }
}
