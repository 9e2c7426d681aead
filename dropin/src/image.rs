//! The objects loaded in the process (the program and its shared objects) as the dynamic
//! linker mapped them: which one holds an address, what its dynamic symbol table defines and
//! imports, and what a name resolves to in its lookup scope.
//!
//! Everything is read from the memory of the loaded object, within its own readable loadable
//! segments, never from its file: the file at that path may have been replaced since it was
//! loaded (a package upgrade renames a new build over it), or the path may be relative to a
//! directory the program has left.

use std::ffi::{CStr, CString, c_int, c_void};

/// A loaded object.
#[derive(Debug, Clone)]
pub(crate) struct LoadedObject {
    /// Its name in the dynamic linker's list; `None` for the program itself.
    name: Option<CString>,
    /// Its load address (`dlpi_addr`), which with the name identifies it.
    base: usize,
    /// Its readable loadable segments, `[start, end)`.
    readable: Vec<(usize, usize)>,
    /// Where its dynamic section is mapped, if it has one.
    dynamic: Option<usize>,
}

impl PartialEq for LoadedObject {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.base == other.base
    }
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

#[cfg(target_pointer_width = "64")]
type ElfSym = libc::Elf64_Sym;
#[cfg(target_pointer_width = "32")]
type ElfSym = libc::Elf32_Sym;
#[cfg(target_pointer_width = "64")]
type ElfPhdr = libc::Elf64_Phdr;
#[cfg(target_pointer_width = "32")]
type ElfPhdr = libc::Elf32_Phdr;

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
const DT_HASH: isize = 4;
const DT_STRTAB: isize = 5;
const DT_SYMTAB: isize = 6;
const DT_STRSZ: isize = 10;
const DT_GNU_HASH: isize = 0x6fff_fef5;
/// The most entries a dynamic section is read for, and symbols a table is read for.
const MAX_DYNAMIC_ENTRIES: usize = 1 << 12;
const MAX_SYMBOLS: usize = 1 << 22;

impl LoadedObject {
    /// The object whose loadable segments hold `address`, if any does.
    pub(crate) fn holding(address: *const c_void) -> Option<Self> {
        struct Search {
            address: usize,
            found: Option<LoadedObject>,
        }
        unsafe extern "C" fn visit(
            info: *mut libc::dl_phdr_info,
            _size: libc::size_t,
            data: *mut c_void,
        ) -> c_int {
            // SAFETY: `data` is the `Search` handed to dl_iterate_phdr below, alive and not
            // otherwise borrowed during the iteration; `info` is the dynamic linker's entry
            // for one object, valid during this call, its `dlpi_phdr` an array of
            // `dlpi_phnum` headers and its `dlpi_name` NULL or a C string.
            unsafe {
                let search = &mut *data.cast::<Search>();
                let info = &*info;
                let headers = if info.dlpi_phdr.is_null() {
                    &[]
                } else {
                    std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum))
                };
                let base = info.dlpi_addr as usize;
                let range = |h: &ElfPhdr| {
                    let start = base.wrapping_add(h.p_vaddr as usize);
                    (start, start.wrapping_add(h.p_memsz as usize))
                };
                let holds = headers.iter().any(|h| {
                    let (start, end) = range(h);
                    h.p_type == libc::PT_LOAD && start <= search.address && search.address < end
                });
                if !holds {
                    return 0;
                }
                let name = if info.dlpi_name.is_null() {
                    None
                } else {
                    Some(CStr::from_ptr(info.dlpi_name).to_owned())
                };
                search.found = Some(LoadedObject {
                    name: name.filter(|n| !n.is_empty()),
                    base,
                    readable: headers
                        .iter()
                        .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_R != 0)
                        .map(range)
                        .collect(),
                    dynamic: headers
                        .iter()
                        .find(|h| h.p_type == libc::PT_DYNAMIC)
                        .map(|h| range(h).0),
                });
                1
            }
        }
        let mut search = Search {
            address: address as usize,
            found: None,
        };
        // SAFETY: `visit` matches the callback type and only reads what the dynamic linker
        // hands it; `search` outlives the call.
        unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut search).cast()) };
        search.found
    }

    /// The drop-in's own object.
    pub(crate) fn own() -> Option<Self> {
        Self::holding(Self::own as *const c_void)
    }

    /// Whether this is the program itself (the drop-in linked in, when it is the drop-in's).
    pub(crate) fn is_program(&self) -> bool {
        self.name.is_none()
    }

    /// How messages name the object.
    pub(crate) fn describe(&self) -> String {
        match &self.name {
            Some(name) => name.to_string_lossy().escape_debug().to_string(),
            None => "the program".to_owned(),
        }
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
        // while it is loaded: its code called the drop-in (and is on the stack), or it is
        // the drop-in or the program. Plain data, read unaligned.
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

    /// The object's dynamic symbols, read from its memory.
    pub(crate) fn dynamic_symbols(&self) -> Result<Vec<Symbol<'_>>, String> {
        let dynamic = self.dynamic.ok_or("it has no dynamic section")?;
        let (mut strtab, mut strsz, mut symtab, mut hash, mut gnu_hash) =
            (None, None, None, None, None);
        for i in 0..MAX_DYNAMIC_ENTRIES {
            let entry: ElfDyn = self
                .read(dynamic + i * size_of::<ElfDyn>())
                .ok_or("its dynamic section is not mapped")?;
            match entry.tag {
                DT_NULL => break,
                DT_STRTAB => strtab = Some(self.address_of(entry.value)),
                DT_STRSZ => strsz = Some(entry.value),
                DT_SYMTAB => symtab = Some(self.address_of(entry.value)),
                DT_HASH => hash = Some(self.address_of(entry.value)),
                DT_GNU_HASH => gnu_hash = Some(self.address_of(entry.value)),
                _ => {}
            }
        }
        let missing = "its dynamic section names no symbol table";
        let (strtab, strsz, symtab) = (
            strtab.ok_or(missing)?,
            strsz.ok_or(missing)?,
            symtab.ok_or(missing)?,
        );
        if !self.maps(strtab, strsz) {
            return Err("its string table is not mapped".to_owned());
        }
        let count = match (gnu_hash, hash) {
            (Some(table), _) => self.gnu_hash_symbols(table),
            (None, Some(table)) => self.hash_symbols(table),
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
            let Some(rest) = strings.get(sym.st_name as usize..) else {
                continue;
            };
            let name = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())];
            if name.is_empty() {
                continue;
            }
            symbols.push(Symbol {
                name,
                imported: sym.st_shndx == SHN_UNDEF,
                address: self.base.wrapping_add(sym.st_value as usize),
            });
        }
        Ok(symbols)
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

    /// The object's lookup scope: what its own references to a name bind to.
    pub(crate) fn scope(&self) -> Option<Scope> {
        let handle = match &self.name {
            // The program's scope is the process's global one.
            // SAFETY: dlopen(NULL) returns the program's handle; it loads nothing.
            None => unsafe { libc::dlopen(std::ptr::null(), libc::RTLD_LAZY) },
            // SAFETY: `name` is a C string; RTLD_NOLOAD only finds an object already loaded
            // (by the name the dynamic linker knows it by), never loads one; whatever it
            // finds is checked against the load address below.
            Some(name) => unsafe {
                libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD)
            },
        };
        if handle.is_null() {
            return None;
        }
        let scope = Scope(handle);
        // The handle must be this very object: same load address.
        #[repr(C)]
        struct LinkMap {
            l_addr: usize,
        }
        let mut map: *const LinkMap = std::ptr::null();
        // SAFETY: RTLD_DI_LINKMAP writes a `struct link_map*` (whose first member is
        // l_addr) for a live handle.
        let ok = unsafe {
            libc::dlinfo(scope.0, libc::RTLD_DI_LINKMAP, (&raw mut map).cast()) == 0
                && !map.is_null()
                && (*map).l_addr == self.base
        };
        ok.then_some(scope)
    }
}

/// A lookup scope (a `dlopen` handle, closed when dropped).
pub(crate) struct Scope(*mut c_void);

impl Scope {
    /// The process's global scope: what the drop-in's own imports bind to.
    pub(crate) fn global() -> Self {
        Scope(libc::RTLD_DEFAULT)
    }

    /// Where `name` resolves in this scope.
    pub(crate) fn resolve(&self, name: &[u8]) -> Option<usize> {
        let name = CString::new(name).ok()?;
        // SAFETY: a live handle (or RTLD_DEFAULT) and a C string.
        let address = unsafe { libc::dlsym(self.0, name.as_ptr()) };
        (!address.is_null()).then_some(address as usize)
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if self.0 != libc::RTLD_DEFAULT {
            // SAFETY: a handle from dlopen, closed once; the object stays loaded (it was
            // loaded before, and its code called the drop-in).
            unsafe { libc::dlclose(self.0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drop_in_s_own_object_is_found() {
        let own = LoadedObject::own().expect("the test binary holds this code");
        // A test binary is the program itself.
        assert!(own.is_program());
        assert!(LoadedObject::holding(std::ptr::null()).is_none());
        // libc is a shared object of its own.
        let libc_object = LoadedObject::holding(libc::malloc as *const c_void).expect("libc");
        assert!(!libc_object.is_program());
        assert_ne!(libc_object, own);
    }

    #[test]
    fn symbols_are_read_from_memory_and_resolve_in_scope() {
        let libc_object = LoadedObject::holding(libc::malloc as *const c_void).expect("libc");
        let symbols = libc_object
            .dynamic_symbols()
            .expect("libc's dynamic symbols");
        let malloc = symbols
            .iter()
            .find(|s| s.name == b"malloc" && !s.imported)
            .expect("libc defines malloc");
        let scope = libc_object.scope().expect("libc's scope");
        assert_eq!(scope.resolve(b"malloc"), Some(malloc.address));
        assert_eq!(Scope::global().resolve(b"malloc"), Some(malloc.address));
        assert_eq!(scope.resolve(b"no such symbol"), None);
        // The program imports malloc (the test binary calls it through libc).
        let program = LoadedObject::own().expect("the program");
        let imports = program
            .dynamic_symbols()
            .expect("the program's dynamic symbols");
        assert!(imports.iter().any(|s| s.name == b"malloc" && s.imported));
    }
}
