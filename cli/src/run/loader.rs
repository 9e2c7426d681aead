//! Whether a preload can reach a program: its loader (an ELF file's `PT_INTERP`, a
//! script's interpreter's) must be glibc's, and it must not change the user or group ID.

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::files::shown;

/// The dynamic loader an ELF file's program headers name (`PT_INTERP`): `Some(None)` for a
/// statically linked one, `None` if it is not an ELF file this reads.
fn loader_named(data: &[u8]) -> Option<Option<Vec<u8>>> {
    use object::read::elf::{FileHeader, ProgramHeader};
    use object::{Endianness, elf};
    fn interp<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<Option<Vec<u8>>> {
        let header = H::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let headers = header.program_headers(endian, data).ok()?;
        Some(
            headers
                .iter()
                .find(|ph| ph.p_type(endian) == elf::PT_INTERP)
                .map(|ph| {
                    let path = ph.data(endian, data).unwrap_or_default();
                    path.split(|&b| b == 0).next().unwrap_or_default().to_vec()
                }),
        )
    }
    match object::FileKind::parse(data).ok()? {
        object::FileKind::Elf64 => interp::<elf::FileHeader64<Endianness>>(data),
        object::FileKind::Elf32 => interp::<elf::FileHeader32<Endianness>>(data),
        _ => None,
    }
}

/// Whether `loader` (a `PT_INTERP` path) is glibc's, the one loader that can preload the
/// drop-in: `ld-linux*.so.*` on most architectures, `ld64.so.*` (s390x, POWER), `ld.so.1`.
/// musl's (`ld-musl-*.so.1`) fails a program whose preload it cannot load.
fn is_glibc_loader(loader: &[u8]) -> bool {
    let name = loader.rsplit(|&b| b == b'/').next().unwrap_or(loader);
    name.starts_with(b"ld-linux") || name.starts_with(b"ld64.so.") || name == b"ld.so.1"
}

/// Why a preload cannot reach a program, and whether it may still be set for it (for the
/// programs it starts): not where the program's loader would fail on it.
pub(super) struct Unreached {
    pub(super) why: String,
    pub(super) preload: bool,
}

/// Why a preload cannot reach `program`, if it cannot (a script is judged by its
/// interpreter).
pub(super) fn unreachable(program: &Path, depth: u32) -> Option<Unreached> {
    let why = |why: String| Some(Unreached { why, preload: true });
    use std::os::unix::fs::MetadataExt;
    let meta = program.metadata().ok()?;
    let mode = meta.permissions().mode();
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // Secure execution (the loader ignoring LD_PRELOAD) when the program changes the ids.
    if (mode & 0o4000 != 0 && meta.uid() != uid) || (mode & 0o2000 != 0 && meta.gid() != gid) {
        return why(format!(
            "{} is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it",
            shown(program)
        ));
    }
    let mut head = Vec::new();
    std::fs::File::open(program)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut head)
        .ok()?;
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next()?;
        let interpreter = String::from_utf8_lossy(line);
        let interpreter = interpreter.split_whitespace().next()?;
        return (depth < 4)
            .then(|| unreachable(Path::new(interpreter), depth + 1))
            .flatten();
    }
    match loader_named(&head)? {
        None => why(format!(
            "{} is statically linked: no dynamic loader runs in it, so no preload reaches it",
            shown(program)
        )),
        Some(loader) if !is_glibc_loader(&loader) => Some(Unreached {
            why: format!(
                "{}'s dynamic loader, {}, is not glibc's (musl's, say): it cannot load the \
                 drop-in, and would not start the program with it preloaded",
                shown(program),
                String::from_utf8_lossy(&loader)
            ),
            preload: false,
        }),
        Some(_) => None,
    }
}
