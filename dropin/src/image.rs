//! The objects loaded in the process (the program and its shared objects) as the dynamic
//! linker mapped them: which one holds an address, what its dynamic symbol table defines and
//! imports, and where its imports were bound.
//!
//! Which object holds an address is asked of glibc's `_dl_find_object` (glibc 2.35 and
//! later), which takes no lock: it exists for unwinders, which must work in any thread at
//! any time, after `fork` too. Older glibc has only `dl_iterate_phdr`, whose lock is held
//! while the loader adds or removes an object and while another thread iterates, never while
//! an initializer runs; a `fork` that copies it held leaves the child's next iteration waiting
//! forever, so the drop-in's own iterations keep out of every `fork` (a handler lets each
//! finish first). Everything else is read from the memory of the loaded object, within its
//! own readable loadable segments, never from its file (the file at that path may have been
//! replaced since it was loaded).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

/// glibc's `struct dl_find_object` (<bits/dl_find_object.h>): the members read here, then
/// room for every member a glibc version adds after them.
#[repr(C)]
struct DlFindObject {
    flags: u64,
    map_start: *mut c_void,
    map_end: *mut c_void,
    link_map: *const LinkMap,
    rest: [u64; 16],
}

/// The public head of glibc's `struct link_map` (<link.h>), the part shared with debuggers.
#[repr(C)]
struct LinkMap {
    l_addr: usize,
    l_name: *const c_char,
    l_ld: *const c_void,
}

type FindObjectFn = unsafe extern "C" fn(*const c_void, *mut DlFindObject) -> c_int;

/// What the drop-in asked of the loader while it was being loaded.
pub(crate) struct Loader {
    /// `_dl_find_object`, where the C library has it (glibc 2.35 and later).
    find_object: Option<FindObjectFn>,
    /// The object that holds the drop-in's own code: the shared drop-in, or the program or
    /// library it is linked into (the static route).
    own: Option<LoadedObject>,
}

static LOADER: OnceLock<Loader> = OnceLock::new();

impl Loader {
    /// Asks the loader, once, while the drop-in is loaded (its initializer, on the loading
    /// thread, where the loader's lock is already this thread's).
    pub(crate) fn at_load() -> &'static Loader {
        LOADER.get_or_init(|| {
            // SAFETY: RTLD_DEFAULT and a C string; the result is NULL or glibc's function,
            // whose prototype is `int (void *, struct dl_find_object *)`.
            let find_object = unsafe {
                let f = libc::dlsym(libc::RTLD_DEFAULT, c"_dl_find_object".as_ptr());
                (!f.is_null()).then(|| std::mem::transmute::<*mut c_void, FindObjectFn>(f))
            };
            if find_object.is_none() {
                // SAFETY: the three handlers are `extern "C" fn()`s that never unwind and
                // only touch atomics (and yield the processor).
                unsafe {
                    libc::pthread_atfork(
                        Some(before_fork),
                        Some(after_fork),
                        Some(after_fork_in_child),
                    )
                };
            }
            Loader {
                find_object,
                own: iterated_to(own_address()),
            }
        })
    }

    /// Whether `object` holds the drop-in's own code.
    pub(crate) fn is_own(&self, object: &LoadedObject) -> bool {
        self.own.as_ref().is_some_and(|own| own.is(object))
    }

    /// What `at_load` found (`None` before it ran).
    pub(crate) fn get() -> Option<&'static Loader> {
        LOADER.get()
    }

    /// The object whose mapping holds `address`, found without a lock that could be held
    /// against the caller (module comment).
    pub(crate) fn holding(&self, address: *const c_void) -> Option<LoadedObject> {
        match self.find_object {
            Some(find) => found_by(find, address),
            None => iterated_to(address),
        }
    }
}

/// The object holding `address`, as `_dl_find_object` names it.
fn found_by(find: FindObjectFn, address: *const c_void) -> Option<LoadedObject> {
    // SAFETY: all-zero bytes are a valid `DlFindObject` (integers and null pointers).
    let mut found: DlFindObject = unsafe { std::mem::zeroed() };
    // SAFETY: `find` is glibc's `_dl_find_object`, given an address and a result struct at
    // least as large as the C library's.
    if unsafe { find(address, &mut found) } != 0 || found.link_map.is_null() {
        return None;
    }
    // SAFETY: the link map of an object that is loaded: the caller's code (it called the
    // drop-in) or an object its bindings point into, which stays loaded while the caller that
    // depends on it does.
    let map = unsafe { &*found.link_map };
    let span = (found.map_start as usize, found.map_end as usize);
    LoadedObject::new(map.l_name, map.l_addr, program_headers(span)?, span)
}

/// Threads iterating the loader's list for the drop-in, and whether a `fork` waits for them.
static ITERATING: AtomicUsize = AtomicUsize::new(0);
static FORKING: AtomicBool = AtomicBool::new(false);

/// Before a `fork`: no new iteration starts, and those under way finish (a bounded wait: a
/// `fork` from a signal handler that interrupted one cannot wait for it).
extern "C" fn before_fork() {
    FORKING.store(true, SeqCst);
    for _ in 0..100_000 {
        if ITERATING.load(SeqCst) == 0 {
            return;
        }
        // SAFETY: no preconditions.
        unsafe { libc::sched_yield() };
    }
}

extern "C" fn after_fork() {
    FORKING.store(false, SeqCst);
}

/// In the child only the forking thread exists, and it iterates nothing.
extern "C" fn after_fork_in_child() {
    ITERATING.store(0, SeqCst);
    FORKING.store(false, SeqCst);
}

/// The object holding `address`, from `dl_iterate_phdr`.
fn iterated_to(address: *const c_void) -> Option<LoadedObject> {
    let address = address as usize;
    each_object(|object| object.spans(address))
}

/// The first object loaded after `object`, in the loader's order, for which `take` holds.
pub(crate) fn first_after<F: FnMut(&LoadedObject) -> bool>(
    object: &LoadedObject,
    mut take: F,
) -> Option<LoadedObject> {
    let mut past = false;
    each_object(|candidate| {
        if past {
            return take(candidate);
        }
        past = candidate.is(object);
        false
    })
}

/// The first loaded object, in the loader's order, for which `take` holds, from
/// `dl_iterate_phdr`, kept out of every `fork`.
fn each_object<F: FnMut(&LoadedObject) -> bool>(take: F) -> Option<LoadedObject> {
    struct Visit<F> {
        take: F,
        found: Option<LoadedObject>,
    }
    unsafe extern "C" fn visit_one<F: FnMut(&LoadedObject) -> bool>(
        info: *mut libc::dl_phdr_info,
        _: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the `Visit` below; `info` the loader's entry, whose `dlpi_phdr`
        // is an array of `dlpi_phnum` headers.
        let (visit, info) = unsafe { (&mut *data.cast::<Visit<F>>(), &*info) };
        let headers = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: as above.
            unsafe {
                std::slice::from_raw_parts(
                    info.dlpi_phdr.cast::<ElfPhdr>(),
                    usize::from(info.dlpi_phnum),
                )
            }
        };
        let base = info.dlpi_addr as usize;
        let object = span_of(base, headers)
            .and_then(|span| LoadedObject::new(info.dlpi_name, base, headers, span));
        match object {
            Some(object) if (visit.take)(&object) => {
                visit.found = Some(object);
                1
            }
            _ => 0,
        }
    }
    loop {
        while FORKING.load(SeqCst) {
            // SAFETY: no preconditions.
            unsafe { libc::sched_yield() };
        }
        ITERATING.fetch_add(1, SeqCst);
        if !FORKING.load(SeqCst) {
            break;
        }
        ITERATING.fetch_sub(1, SeqCst);
    }
    let mut visit = Visit { take, found: None };
    // SAFETY: `visit` matches the callback type and only reads what the loader hands it;
    // `visit` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit_one::<F>), (&raw mut visit).cast()) };
    ITERATING.fetch_sub(1, SeqCst);
    visit.found
}

/// The range the loadable segments of the object at `base` span, whole pages.
fn span_of(base: usize, headers: &[ElfPhdr]) -> Option<(usize, usize)> {
    let loads = headers.iter().filter(|h| h.p_type == libc::PT_LOAD);
    let start = loads
        .clone()
        .map(|h| base.wrapping_add(h.p_vaddr as usize))
        .min()?;
    let end = loads
        .map(|h| {
            base.wrapping_add(h.p_vaddr as usize)
                .wrapping_add(h.p_memsz as usize)
        })
        .max()?;
    Some((start & !0xfff, end))
}

/// An address in the drop-in's own code.
fn own_address() -> *const c_void {
    own_address as *const c_void
}

/// A loaded object, as found by [`Loader::holding`].
#[derive(Debug, Clone)]
pub(crate) struct LoadedObject {
    /// Its name in the dynamic linker's list; empty for the program itself.
    name: Vec<u8>,
    /// Its load address (`l_addr`).
    base: usize,
    /// The range its mapping spans.
    map: (usize, usize),
    /// Its readable loadable segments, `[start, end)`.
    readable: Vec<(usize, usize)>,
    /// Where its dynamic section is mapped (0: it has none).
    dynamic: usize,
}

/// A symbol of an object's dynamic symbol table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Symbol<'a> {
    pub(crate) name: &'a [u8],
    /// Imported (undefined here), rather than defined.
    pub(crate) imported: bool,
    /// Where a defined symbol is, in the process.
    pub(crate) address: usize,
}

/// An import the loader has bound: the symbol, and where its slot now points.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) target: usize,
}

// The ELF structures of the process's word size (`ElfW(Sym)` and the rest).
#[cfg(target_pointer_width = "32")]
use libc::{Elf32_Ehdr as ElfEhdr, Elf32_Phdr as ElfPhdr, Elf32_Sym as ElfSym};
#[cfg(target_pointer_width = "64")]
use libc::{Elf64_Ehdr as ElfEhdr, Elf64_Phdr as ElfPhdr, Elf64_Sym as ElfSym};

/// An entry of the dynamic section (`ElfW(Dyn)`).
#[derive(Clone, Copy)]
#[repr(C)]
struct ElfDyn {
    tag: isize,
    value: usize,
}

/// The section index of an undefined (imported) symbol.
const SHN_UNDEF: u16 = 0;
const DT_NULL: isize = 0;
const DT_PLTRELSZ: isize = 2;
const DT_HASH: isize = 4;
const DT_STRTAB: isize = 5;
const DT_SYMTAB: isize = 6;
const DT_RELA: isize = 7;
const DT_RELASZ: isize = 8;
const DT_STRSZ: isize = 10;
const DT_REL: isize = 17;
const DT_RELSZ: isize = 18;
const DT_PLTREL: isize = 20;
const DT_JMPREL: isize = 23;
const DT_GNU_HASH: isize = 0x6fff_fef5;
/// The most entries a dynamic section is read for, symbols and relocations a table is read
/// for.
const MAX_DYNAMIC_ENTRIES: usize = 1 << 12;
const MAX_SYMBOLS: usize = 1 << 22;
const MAX_RELOCATIONS: usize = 1 << 24;

/// The relocation types that bind a slot to a symbol's address: absolute, GOT data, PLT.
#[cfg(target_arch = "x86_64")]
const BINDING_RELOCATIONS: [u32; 3] = [1, 6, 7];
#[cfg(target_arch = "x86")]
const BINDING_RELOCATIONS: [u32; 3] = [1, 6, 7];
#[cfg(target_arch = "aarch64")]
const BINDING_RELOCATIONS: [u32; 3] = [257, 1025, 1026];
#[cfg(target_arch = "s390x")]
const BINDING_RELOCATIONS: [u32; 3] = [22, 10, 11];
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "s390x"
)))]
const BINDING_RELOCATIONS: [u32; 0] = [];

/// A relocation's `r_info`: its symbol's index and its type (`ELF64_R_SYM`/`ELF64_R_TYPE`,
/// `ELF32_R_SYM`/`ELF32_R_TYPE`).
#[cfg(target_pointer_width = "64")]
fn relocation_info(info: usize) -> (usize, u32) {
    (info >> 32, (info & 0xffff_ffff) as u32)
}
#[cfg(target_pointer_width = "32")]
fn relocation_info(info: usize) -> (usize, u32) {
    (info >> 8, (info & 0xff) as u32)
}

/// The program headers of the object whose mapping spans `map`: the table that follows the ELF
/// header at the start of the mapping, on the same page (which the header's own read proves
/// readable).
fn program_headers(map: (usize, usize)) -> Option<&'static [ElfPhdr]> {
    let (start, end) = map;
    if start == 0 || end <= start || end - start < size_of::<ElfEhdr>() {
        return None;
    }
    // SAFETY: the first bytes of the object's mapping: its first loadable segment, which
    // holds the ELF header, mapped readable as every ELF loader maps it.
    let header: ElfEhdr = unsafe { std::ptr::read_unaligned(start as *const ElfEhdr) };
    if header.e_ident[..4] != *b"\x7fELF" || usize::from(header.e_phentsize) != size_of::<ElfPhdr>()
    {
        return None;
    }
    let table = start.checked_add(header.e_phoff as usize)?;
    let table_end = table.checked_add(usize::from(header.e_phnum) * size_of::<ElfPhdr>())?;
    if table_end > (start | 0xfff) + 1 || table_end > end || table % align_of::<ElfPhdr>() != 0 {
        return None;
    }
    // SAFETY: aligned, inside the header's page (checked above), and mapped for as long as
    // the object is loaded, which its callers' code being on the stack ensures.
    Some(unsafe {
        std::slice::from_raw_parts(table as *const ElfPhdr, usize::from(header.e_phnum))
    })
}

impl LoadedObject {
    /// The object the loader names `name`, loaded at `base`, with these program headers and
    /// mapping.
    fn new(
        name: *const c_char,
        base: usize,
        headers: &[ElfPhdr],
        map: (usize, usize),
    ) -> Option<Self> {
        let name = if name.is_null() {
            Vec::new()
        } else {
            // SAFETY: the loader's C string for a loaded object.
            unsafe { CStr::from_ptr(name) }.to_bytes().to_vec()
        };
        let at = |h: &ElfPhdr| base.wrapping_add(h.p_vaddr as usize);
        Some(LoadedObject {
            name,
            base,
            map,
            readable: headers
                .iter()
                .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_R != 0)
                .map(|h| (at(h), at(h).wrapping_add(h.p_memsz as usize)))
                .collect(),
            dynamic: headers
                .iter()
                .find(|h| h.p_type == libc::PT_DYNAMIC)
                .map_or(0, at),
        })
    }

    /// Whether this is the program itself.
    pub(crate) fn is_program(&self) -> bool {
        self.name.is_empty()
    }

    /// How messages name the object.
    pub(crate) fn describe(&self) -> String {
        if self.is_program() {
            "the program".to_owned()
        } else {
            String::from_utf8_lossy(&self.name)
                .escape_debug()
                .to_string()
        }
    }

    /// Whether `address` lies in the object's mapping.
    pub(crate) fn spans(&self, address: usize) -> bool {
        self.map.0 <= address && address < self.map.1
    }

    /// Whether `other` is this object (found again, at the same place).
    pub(crate) fn is(&self, other: &LoadedObject) -> bool {
        (self.base, self.map, self.dynamic) == (other.base, other.map, other.dynamic)
    }

    /// Where the object's own definition of the dynamic symbol `name` is, if it defines one
    /// (within its own mapping: not an absolute symbol).
    pub(crate) fn definition(&self, name: &[u8]) -> Option<usize> {
        self.dynamic_symbols()
            .ok()?
            .iter()
            .find(|s| !s.imported && s.name == name && s.address != self.base)
            .map(|s| s.address)
            .filter(|&address| self.spans(address))
    }

    /// Whether `[address, address + len)` lies in one of the object's readable segments.
    fn maps(&self, address: usize, len: usize) -> bool {
        address.checked_add(len).is_some_and(|end| {
            self.readable
                .iter()
                .any(|&(start, stop)| start <= address && end <= stop)
        })
    }

    /// The `T` at `address`, if the object maps all of it readable.
    fn read<T: Copy>(&self, address: usize) -> Option<T> {
        if !self.maps(address, size_of::<T>()) {
            return None;
        }
        // SAFETY: the bytes lie in a readable segment of this object, which stays mapped
        // while it is loaded (its code called the drop-in, and is on the stack). Plain
        // data, read unaligned.
        Some(unsafe { std::ptr::read_unaligned(address as *const T) })
    }

    /// An address the dynamic section holds: relocated in place by the dynamic linker on
    /// most architectures, an offset from the load address on the others.
    fn address_of(&self, value: usize) -> usize {
        if value < self.base {
            value.wrapping_add(self.base)
        } else {
            value
        }
    }

    /// The dynamic section's entries.
    fn dynamic_entries(&self) -> Result<Vec<ElfDyn>, String> {
        if self.dynamic == 0 {
            return Err("it has no dynamic section".to_owned());
        }
        let mut entries = Vec::new();
        for i in 0..MAX_DYNAMIC_ENTRIES {
            let entry: ElfDyn = self
                .read(self.dynamic + i * size_of::<ElfDyn>())
                .ok_or("its dynamic section is not mapped")?;
            if entry.tag == DT_NULL {
                return Ok(entries);
            }
            entries.push(entry);
        }
        Err("its dynamic section has no end".to_owned())
    }

    /// The object's dynamic symbols, in table order, read from its memory.
    pub(crate) fn dynamic_symbols(&self) -> Result<Vec<Symbol<'_>>, String> {
        let entries = self.dynamic_entries()?;
        let find = |tag| entries.iter().find(|e| e.tag == tag).map(|e| e.value);
        let missing = "its dynamic section names no symbol table";
        let strtab = self.address_of(find(DT_STRTAB).ok_or(missing)?);
        let strsz = find(DT_STRSZ).ok_or(missing)?;
        let symtab = self.address_of(find(DT_SYMTAB).ok_or(missing)?);
        if !self.maps(strtab, strsz) {
            return Err("its string table is not mapped".to_owned());
        }
        let count = match (find(DT_GNU_HASH), find(DT_HASH)) {
            (Some(table), _) => self.gnu_hash_symbols(self.address_of(table)),
            (None, Some(table)) => self.hash_symbols(self.address_of(table)),
            (None, None) => None,
        }
        .filter(|&n| n <= MAX_SYMBOLS)
        .ok_or("its symbol hash table cannot be read")?;
        // SAFETY: checked above: `strsz` bytes at `strtab` are mapped readable and stay so.
        let strings = unsafe { std::slice::from_raw_parts(strtab as *const u8, strsz) };
        let mut symbols = Vec::with_capacity(count);
        for i in 0..count {
            let sym: ElfSym = self
                .read(symtab + i * size_of::<ElfSym>())
                .ok_or("its symbol table is not mapped")?;
            let name = strings.get(sym.st_name as usize..).map_or(&[][..], |rest| {
                &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())]
            });
            symbols.push(Symbol {
                name,
                imported: sym.st_shndx == SHN_UNDEF,
                address: self.base.wrapping_add(sym.st_value as usize),
            });
        }
        Ok(symbols)
    }

    /// The imports among `symbols` (this object's, in table order) whose slots the loader has
    /// bound: where each slot points now. A slot still pointing into the object itself (a
    /// lazily bound call not yet made) is left out.
    pub(crate) fn bindings<'a>(&self, symbols: &[Symbol<'a>]) -> Result<Vec<Binding<'a>>, String> {
        let entries = self.dynamic_entries()?;
        let find = |tag| entries.iter().find(|e| e.tag == tag).map(|e| e.value);
        let mut tables = Vec::new();
        if let (Some(at), Some(size)) = (find(DT_RELA), find(DT_RELASZ)) {
            tables.push((self.address_of(at), size, true));
        }
        if let (Some(at), Some(size)) = (find(DT_REL), find(DT_RELSZ)) {
            tables.push((self.address_of(at), size, false));
        }
        if let (Some(at), Some(size)) = (find(DT_JMPREL), find(DT_PLTRELSZ)) {
            let rela = find(DT_PLTREL) == Some(DT_RELA as usize);
            tables.push((self.address_of(at), size, rela));
        }
        let word = size_of::<usize>();
        let mut bindings = Vec::new();
        for (at, size, rela) in tables {
            let entry = if rela { 3 * word } else { 2 * word };
            if size / entry > MAX_RELOCATIONS {
                return Err("its relocation tables cannot be read".to_owned());
            }
            for i in 0..size / entry {
                let (offset, info): (usize, usize) = (
                    self.read(at + i * entry)
                        .ok_or("its relocations are not mapped")?,
                    self.read(at + i * entry + word)
                        .ok_or("its relocations are not mapped")?,
                );
                let (symbol, kind) = relocation_info(info);
                if symbol == 0 || !BINDING_RELOCATIONS.contains(&kind) {
                    continue;
                }
                let Some(import) = symbols.get(symbol).filter(|s| s.imported) else {
                    continue;
                };
                let Some(target) = self.read::<usize>(self.base.wrapping_add(offset)) else {
                    continue;
                };
                if target != 0 && !self.spans(target) {
                    bindings.push(Binding {
                        name: import.name,
                        target,
                    });
                }
            }
        }
        Ok(bindings)
    }

    /// The symbol count of a GNU hash table: past the highest symbol any bucket starts,
    /// to the end of its chain.
    fn gnu_hash_symbols(&self, table: usize) -> Option<usize> {
        let word = |i: usize| self.read::<u32>(table + 4 * i).map(|w| w as usize);
        let (buckets, first, bloom_words) = (word(0)?, word(1)?, word(2)?);
        let buckets_at = 4 + bloom_words.checked_mul(size_of::<usize>() / 4)?;
        let mut last = 0;
        for b in 0..buckets.min(MAX_SYMBOLS) {
            last = last.max(word(buckets_at + b)?);
        }
        if last < first {
            return Some(first);
        }
        let chains_at = buckets_at + buckets;
        let mut symbol = last;
        while symbol < MAX_SYMBOLS {
            if word(chains_at + (symbol - first))? & 1 == 1 {
                return Some(symbol + 1);
            }
            symbol += 1;
        }
        None
    }

    /// The symbol count of a System V hash table: its chain count (64-bit words on s390x).
    fn hash_symbols(&self, table: usize) -> Option<usize> {
        if cfg!(target_arch = "s390x") {
            self.read::<u64>(table + 8).map(|n| n as usize)
        } else {
            self.read::<u32>(table + 4).map(|n| n as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loader() -> &'static Loader {
        Loader::at_load()
    }

    #[test]
    fn the_drop_in_s_own_object_is_found() {
        let loader = loader();
        let own = loader
            .holding(loader as *const Loader as *const c_void)
            .expect("the test binary holds this code");
        // A test binary is the program itself.
        assert!(own.is_program());
        assert!(loader.is_own(&own));
        assert!(loader.holding(std::ptr::null()).is_none());
        // libc is a shared object of its own.
        let libc_object = loader.holding(libc::malloc as *const c_void).expect("libc");
        assert!(!libc_object.is_program());
    }

    #[test]
    fn symbols_and_bindings_are_read_from_memory() {
        let loader = loader();
        let libc_object = loader.holding(libc::malloc as *const c_void).expect("libc");
        let symbols = libc_object
            .dynamic_symbols()
            .expect("libc's dynamic symbols");
        let malloc = symbols
            .iter()
            .find(|s| s.name == b"malloc" && !s.imported)
            .expect("libc defines malloc");
        // SAFETY: RTLD_DEFAULT and a C string.
        let resolved = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr()) };
        assert_eq!(malloc.address, resolved as usize);
        // The program imports malloc, and once called it is bound into libc.
        // SAFETY: malloc and free of one byte.
        unsafe { libc::free(libc::malloc(1)) };
        let program = loader
            .holding(loader as *const Loader as *const c_void)
            .expect("the program");
        let imports = program
            .dynamic_symbols()
            .expect("the program's dynamic symbols");
        let bound = program.bindings(&imports).expect("the program's bindings");
        let malloc_binding = bound
            .iter()
            .find(|b| b.name == b"malloc")
            .expect("malloc is bound");
        assert!(libc_object.spans(malloc_binding.target));
    }
}
