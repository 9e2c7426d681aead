//! Reading a database's files the way the command reads every file: only a regular file
//! (a symlink followed to one), never more than the length it reports, and without waiting
//! on a FIFO or a device that never ends.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::failure::{Failure, Kind};

pub use crate::failure::shown;

/// The whole contents of the regular file at `path`.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, Failure> {
    let (file, len) = open_regular(path)?;
    read_at_most(path, file, len)
}

/// The regular file at `path`, open for reading, and its length. Fails as
/// [`Kind::NotFound`] where there is no such file, as [`Kind::NotRegular`] where something
/// else is there, else as [`Kind::Io`].
pub fn open_regular(path: &Path) -> Result<(File, u64), Failure> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. It
    // changes nothing for a regular file.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Failure::at(path, Kind::NotFound, "no such file"),
            _ => Failure::from(e).within(path),
        })?;
    let meta = file.metadata().map_err(|e| Failure::from(e).within(path))?;
    if !meta.is_file() {
        let what = kind_of(&meta);
        return Err(Failure::at(
            path,
            Kind::NotRegular(what),
            format!("{what}, not a regular file"),
        ));
    }
    Ok((file, meta.len()))
}

/// At most `len` bytes of `file`, open at `path` (a file that grew since is read as it was).
fn read_at_most(path: &Path, file: File, len: u64) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    let len_usize = usize::try_from(len).map_err(|_| Failure::at(path, Kind::Io, "too large"))?;
    bytes
        .try_reserve_exact(len_usize)
        .map_err(|_| Failure::at(path, Kind::Io, "out of memory"))?;
    file.take(len)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::from(e).within(path))?;
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
        let kind = |path: &Path| read_regular(path).unwrap_err().kind();
        assert_eq!(kind(dir.path()), Kind::NotRegular("a directory"));
        assert_eq!(
            kind(Path::new("/dev/zero")),
            Kind::NotRegular("a character device")
        );
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(kind(&fifo), Kind::NotRegular("a FIFO"));
        let none = dir.path().join("none");
        assert_eq!(kind(&none), Kind::NotFound);
        assert_eq!(
            read_regular(&none).unwrap_err().to_string(),
            format!("{}: no such file", none.display())
        );
    }
}
