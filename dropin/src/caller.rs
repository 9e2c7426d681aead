//! Which LevelDB asks for a policy, and which `std::string` it was built with.
//!
//! libstdc++ has two layouts of `std::string`: the C++11 one (`std::__cxx11::basic_string`,
//! the default since GCC 5) and the old copy-on-write one (`_GLIBCXX_USE_CXX11_ABI=0`, still
//! used by binaries built to run on many distributions, Python's manylinux wheels among
//! them). LevelDB hands `CreateFilter` a `std::string*` of its own layout, so the drop-in
//! must build the policy object of that layout (policy.cc is compiled once for each). The
//! layout is read, never guessed, from the symbols of the object (executable or shared
//! object) that holds the caller's code, as its ELF file on disk lists them:
//!
//! 1. functions of LevelDB's namespace that take or return a `std::string` (`DB::Open`,
//!    `DestroyDB`, `Status::ToString`, a test helper), defined there (a libleveldb, or a
//!    program with LevelDB compiled in) or imported (a program or module that uses a LevelDB
//!    beside it): their mangled names differ between the layouts, and they are LevelDB's own
//!    word on its layout;
//! 2. otherwise the object's imports of `std::string`'s members from libstdc++, less, where
//!    the drop-in is linked into that object itself (the static route), the ones the
//!    drop-in's own policy objects import (`OWN_STRING_IMPORTS`, listed by build.rs).
//!
//! Exactly one layout named tells; none or both, or a file that cannot be read, does not,
//! and the drop-in then leaves that LevelDB its own policy ([`program_policy_constructor`]).

use std::ffi::{CStr, CString, c_int, c_void};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use object::read::ReadCache;
use object::{Object, ObjectSymbol};

/// The two layouts of libstdc++'s `std::string`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringAbi {
    /// `std::__cxx11::basic_string<char>`.
    Cxx11,
    /// The copy-on-write `std::basic_string<char>` (`_GLIBCXX_USE_CXX11_ABI=0`).
    Old,
}

/// `leveldb::Status::ToString()` with the old string: it returns a `std::string`, which a
/// mangled name shows only by the C++11 layout's ABI tag (`...ToStringB5cxx11Ev`), so the
/// old layout's name carries no mark of its own.
const OLD_STRING_STATUS_TO_STRING: &[u8] = b"_ZNK7leveldb6Status8ToStringEv";

/// Marks of a `std::string` in a mangled signature, per layout: the C++11 type (or its ABI
/// tag on a function returning it), and the old type's abbreviation `Ss` as a parameter
/// (by reference, pointer or value).
const STRING_IN_SIGNATURE: [(&[u8], StringAbi); 7] = [
    (
        b"NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
        StringAbi::Cxx11,
    ),
    (b"B5cxx11", StringAbi::Cxx11),
    (b"RKSs", StringAbi::Old),
    (b"PKSs", StringAbi::Old),
    (b"PSs", StringAbi::Old),
    (b"RSs", StringAbi::Old),
    (b"ESs", StringAbi::Old),
];

include!(concat!(env!("OUT_DIR"), "/own_string_imports.rs"));

/// The layout a LevelDB function's mangled name shows, if it is one and shows one.
fn leveldb_signature(name: &[u8]) -> Option<StringAbi> {
    if name == OLD_STRING_STATUS_TO_STRING {
        return Some(StringAbi::Old);
    }
    if !(name.starts_with(b"_ZN7leveldb") || name.starts_with(b"_ZNK7leveldb")) {
        return None;
    }
    STRING_IN_SIGNATURE
        .iter()
        .find(|(mark, _)| name.windows(mark.len()).any(|w| w == *mark))
        .map(|&(_, abi)| abi)
}

/// Prefixes of the mangled names of `std::string`'s member functions, per layout.
const STRING_MEMBERS: [(&[u8], StringAbi); 4] = [
    (
        b"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
        StringAbi::Cxx11,
    ),
    (
        b"_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
        StringAbi::Cxx11,
    ),
    (b"_ZNSs", StringAbi::Old),
    (b"_ZNKSs", StringAbi::Old),
];

/// `leveldb::NewBloomFilterPolicy(int)`, under its Itanium C++ ABI name.
const NEW_BLOOM_FILTER_POLICY: &CStr = c"_ZN7leveldb20NewBloomFilterPolicyEi";

/// A LevelDB's own `NewBloomFilterPolicy`.
pub(crate) type NewPolicyFn = unsafe extern "C-unwind" fn(c_int) -> *const c_void;

/// A loaded object (the program or a shared object), as the dynamic linker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadedObject {
    /// Its name in the dynamic linker's list; `None` for the program itself.
    name: Option<CString>,
    /// Its load address (`dlpi_addr`), which with the name identifies it.
    base: usize,
}

impl LoadedObject {
    /// The object whose mapped segments hold `address`, if any does.
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
                let holds = headers.iter().any(|h| {
                    let start = base.wrapping_add(h.p_vaddr as usize);
                    h.p_type == libc::PT_LOAD
                        && search.address.wrapping_sub(start) < h.p_memsz as usize
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
    fn own() -> Option<Self> {
        Self::holding(Self::own as *const c_void)
    }

    /// The file the object was loaded from.
    fn path(&self) -> PathBuf {
        match &self.name {
            Some(name) => PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())),
            None => PathBuf::from("/proc/self/exe"),
        }
    }

    /// How messages name the object.
    pub(crate) fn describe(&self) -> String {
        match &self.name {
            Some(name) => name.to_string_lossy().escape_debug().to_string(),
            None => "the program".to_owned(),
        }
    }
}

/// Which layouts a set of symbols named.
#[derive(Default)]
struct Named {
    cxx11: bool,
    old: bool,
}

impl Named {
    fn add(&mut self, abi: StringAbi) {
        match abi {
            StringAbi::Cxx11 => self.cxx11 = true,
            StringAbi::Old => self.old = true,
        }
    }

    /// The layout, if exactly one was named.
    fn only(&self) -> Option<StringAbi> {
        match (self.cxx11, self.old) {
            (true, false) => Some(StringAbi::Cxx11),
            (false, true) => Some(StringAbi::Old),
            _ => None,
        }
    }
}

/// The string layout that `object`'s symbols name (see the module's comment), or why they
/// name none.
pub(crate) fn string_abi(object: &LoadedObject) -> Result<StringAbi, String> {
    let path = object.path();
    let file = File::open(&path).map_err(|e| format!("cannot open its file: {e}"))?;
    let data = ReadCache::new(file);
    let elf = object::File::parse(&data).map_err(|e| format!("cannot read its file: {e}"))?;
    let holds_dropin = LoadedObject::own().as_ref() == Some(object);
    string_abi_of_symbols(
        elf.dynamic_symbols()
            .chain(elf.symbols())
            .filter_map(|s| s.name_bytes().ok().map(|name| (name, s.is_undefined()))),
        holds_dropin,
    )
}

/// The rule of the module's comment over (name, imported) pairs of an object's symbols;
/// `holds_dropin` when the object is the drop-in's own.
fn string_abi_of_symbols<'a>(
    symbols: impl Iterator<Item = (&'a [u8], bool)>,
    holds_dropin: bool,
) -> Result<StringAbi, String> {
    let mut leveldb = Named::default();
    let mut imports = Named::default();
    for (name, imported) in symbols {
        if let Some(abi) = leveldb_signature(name) {
            leveldb.add(abi);
        } else if imported
            && !(holds_dropin && OWN_STRING_IMPORTS.contains(&name))
            && let Some(&(_, abi)) = STRING_MEMBERS.iter().find(|(p, _)| name.starts_with(p))
        {
            imports.add(abi);
        }
    }
    if let Some(abi) = leveldb.only() {
        return Ok(abi);
    }
    if leveldb.cxx11 {
        return Err("its LevelDB functions name both std::string layouts".to_owned());
    }
    imports.only().ok_or_else(|| {
        if imports.cxx11 {
            "it imports both std::string layouts and names no LevelDB function".to_owned()
        } else {
            "it names no LevelDB function and imports no std::string".to_owned()
        }
    })
}

/// The `NewBloomFilterPolicy` that `object` (if known) would have called without the
/// drop-in: the first definition in its own lookup scope (a module's own LevelDB, loaded
/// beside it), else the next one after the drop-in in the process's (the program's LevelDB).
/// `None` when the drop-in's is the only one.
pub(crate) fn program_policy_constructor(object: Option<&LoadedObject>) -> Option<NewPolicyFn> {
    let own = LoadedObject::own();
    let not_ours = |symbol: *mut c_void| {
        (!symbol.is_null() && LoadedObject::holding(symbol) != own).then_some(symbol)
    };
    let in_scope = object.and_then(|o| o.name.as_ref()).and_then(|name| {
        // SAFETY: `name` is a C string; RTLD_NOLOAD only finds an object already loaded (the
        // caller's, which stays loaded while it runs), and the reference taken is dropped
        // below.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            return None;
        }
        // SAFETY: `handle` is a live handle; the name is a C string.
        let symbol = unsafe { libc::dlsym(handle, NEW_BLOOM_FILTER_POLICY.as_ptr()) };
        // SAFETY: `handle` came from dlopen above and is closed once; the object stays
        // loaded (its code is on the stack that called the drop-in).
        unsafe { libc::dlclose(handle) };
        not_ours(symbol)
    });
    // SAFETY: RTLD_NEXT from code in the drop-in's object; the name is a C string.
    let symbol = in_scope.or_else(|| {
        not_ours(unsafe { libc::dlsym(libc::RTLD_NEXT, NEW_BLOOM_FILTER_POLICY.as_ptr()) })
    })?;
    // SAFETY: the symbol is a definition of `leveldb::NewBloomFilterPolicy(int)`, whose
    // machine-level signature is an int in and a pointer out.
    Some(unsafe { std::mem::transmute::<*mut c_void, NewPolicyFn>(symbol) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn abi_of(symbols: &[(&str, bool)]) -> Result<StringAbi, String> {
        string_abi_of_symbols(symbols.iter().map(|&(n, i)| (n.as_bytes(), i)), false)
    }

    // Names as Debian's libleveldb.so.1d (C++11 strings) and a manylinux wheel's bundled
    // LevelDB (old strings) define and import them.
    const CXX11_OPEN: &str = "_ZN7leveldb2DB4OpenERKNS_7OptionsERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPPS0_";
    const OLD_OPEN: &str = "_ZN7leveldb2DB4OpenERKNS_7OptionsERKSsPPS0_";
    const CXX11_APPEND: &str =
        "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_appendEPKcm";
    const OLD_ASSIGN: &str = "_ZNSs6assignERKSs";

    #[test]
    fn leveldb_s_own_functions_tell_first() {
        assert_eq!(abi_of(&[(CXX11_OPEN, false)]), Ok(StringAbi::Cxx11));
        assert_eq!(abi_of(&[(OLD_OPEN, true)]), Ok(StringAbi::Old));
        // A program of mixed objects: LevelDB's word wins over its string imports.
        assert_eq!(
            abi_of(&[(OLD_OPEN, true), (CXX11_APPEND, true), (OLD_ASSIGN, true)]),
            Ok(StringAbi::Old)
        );
        assert!(abi_of(&[(OLD_OPEN, true), (CXX11_OPEN, false)]).is_err());
    }

    #[test]
    fn any_leveldb_function_with_a_string_in_its_signature_tells() {
        // LevelDB's test helpers, linked into its own test programs.
        let cxx11 = "_ZN7leveldb4test12RandomStringEPNS_6RandomEiPNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE";
        assert_eq!(abi_of(&[(cxx11, false)]), Ok(StringAbi::Cxx11));
        assert_eq!(
            abi_of(&[("_ZN7leveldb4test9RandomKeyB5cxx11EPNS_6RandomEi", false)]),
            Ok(StringAbi::Cxx11)
        );
        assert_eq!(
            abi_of(&[("_ZN7leveldb4test12RandomStringEPNS_6RandomEiPSs", false)]),
            Ok(StringAbi::Old)
        );
        assert_eq!(
            abi_of(&[("_ZN7leveldb11PutVarint32EPSsj", true)]),
            Ok(StringAbi::Old)
        );
        // Outside LevelDB's namespace, or without a string: no word.
        assert!(abi_of(&[("_ZN5other3FooEPSs", false)]).is_err());
        assert!(abi_of(&[("_ZN7leveldb4HashEPKcmj", false)]).is_err());
    }

    #[test]
    fn the_drop_in_s_own_imports_are_not_the_program_s() {
        // One import of each of the drop-in's two policy objects.
        let own = |prefix: &[u8]| {
            let name = OWN_STRING_IMPORTS.iter().find(|n| n.starts_with(prefix));
            std::str::from_utf8(name.expect("each copy imports string functions")).unwrap()
        };
        let (own_old, own_cxx11) = (own(b"_ZNSs"), own(b"_ZNSt7__cxx11"));
        // The program's own import: a C++11 string function the drop-in's objects do not
        // import (which ones they do depends on the optimization level).
        let create = "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm";
        let programs_own = [CXX11_APPEND, create]
            .into_iter()
            .find(|name| !OWN_STRING_IMPORTS.contains(&name.as_bytes()))
            .expect("a string function the drop-in does not import");
        let program = [(own_old, true), (own_cxx11, true), (programs_own, true)];
        let symbols = || program.iter().map(|&(n, i)| (n.as_bytes(), i));
        // In the drop-in's own object, only the program's own import tells.
        assert_eq!(string_abi_of_symbols(symbols(), true), Ok(StringAbi::Cxx11));
        // Elsewhere every import counts.
        assert!(string_abi_of_symbols(symbols(), false).is_err());
    }

    #[test]
    fn otherwise_the_string_imports_tell() {
        assert_eq!(abi_of(&[(CXX11_APPEND, true)]), Ok(StringAbi::Cxx11));
        assert_eq!(abi_of(&[(OLD_ASSIGN, true)]), Ok(StringAbi::Old));
        // Defined, not imported: a libstdc++ linked in statically defines both.
        assert!(abi_of(&[(CXX11_APPEND, false), (OLD_ASSIGN, false)]).is_err());
        assert!(abi_of(&[(CXX11_APPEND, true), (OLD_ASSIGN, true)]).is_err());
        assert!(abi_of(&[("_ZNSt6vectorIiSaIiEE9push_backEOi", true)]).is_err());
        assert!(abi_of(&[]).is_err());
    }

    #[test]
    fn the_drop_in_s_own_object_is_found() {
        let own = LoadedObject::own().expect("the test binary holds this code");
        // A test binary is the program itself.
        assert_eq!(own.name, None);
        assert!(LoadedObject::holding(std::ptr::null()).is_none());
        // libc is a shared object of its own.
        let libc_object = LoadedObject::holding(libc::malloc as *const c_void).expect("libc");
        assert!(libc_object.name.is_some());
        assert_ne!(libc_object, own);
    }
}
