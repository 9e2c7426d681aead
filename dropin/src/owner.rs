//! Whether the drop-in may write a LevelDB's `std::string` itself: the one case where no code
//! of that LevelDB's can (compact filters, or a program's only LevelDB, where the LevelDB has
//! no C API, `leveldb.rs`). Proven from the object as it is loaded in memory (`image.rs`),
//! without a lock or a call into the dynamic linker:
//!
//! 1. **The layout.** libstdc++ has two layouts of `std::string`: the C++11 one
//!    (`std::__cxx11::basic_string`, the default since GCC 5) and the old copy-on-write one
//!    (`_GLIBCXX_USE_CXX11_ABI=0`, still used by binaries built to run on many distributions,
//!    Python's manylinux wheels among them); LLVM's libc++ has a third (`std::__1`). The
//!    object's dynamic symbols tell it: first the functions of LevelDB's namespace that take
//!    a `std::string` (`DB::Open`, `DestroyDB`, a test helper), defined there or imported,
//!    whose mangled names differ between the layouts; otherwise its imports of
//!    `std::string`'s members, less, where the drop-in is linked into that object itself, the
//!    drop-in's own (`OWN_STRING_IMPORTS`, listed by build.rs). Exactly one libstdc++ layout
//!    named tells; none, both, or libc++'s, does not.
//! 2. **The library instance.** The string's memory and, for the old layout, its shared
//!    empty representation belong to one copy of libstdc++. The object's imports of that
//!    layout's string code must have been bound by the loader (a libstdc++ linked in
//!    statically and hidden imports none), each to the very definition the drop-in's own
//!    string code was bound to when the drop-in was loaded, or into the same object. Where
//!    the drop-in is part of the object (linked statically into the program), it is one link
//!    and one copy.
//!
//! Proven, the drop-in grows that LevelDB's strings with its layout's code (string_ops.cc).

use std::ffi::c_void;
use std::sync::OnceLock;

use crate::image::{LoadedObject, Loader, Symbol};

/// The two layouts of libstdc++'s `std::string` the drop-in writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringAbi {
    /// `std::__cxx11::basic_string<char>`.
    Cxx11,
    /// The copy-on-write `std::basic_string<char>` (`_GLIBCXX_USE_CXX11_ABI=0`).
    Old,
}

impl StringAbi {
    pub(crate) const ALL: [StringAbi; 2] = [StringAbi::Cxx11, StringAbi::Old];
}

/// What the symbols name: a libstdc++ layout, or libc++'s string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Libstdcxx(StringAbi),
    Libcxx,
}

/// Marks of a `std::string` in a mangled signature: the C++11 type (or its ABI tag on a
/// function returning it), the old type's abbreviation `Ss` as a parameter (by reference,
/// pointer or value), libc++'s namespace.
const STRING_IN_SIGNATURE: [(&[u8], Named); 8] = [
    (
        b"NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
        Named::Libstdcxx(StringAbi::Cxx11),
    ),
    (b"B5cxx11", Named::Libstdcxx(StringAbi::Cxx11)),
    (b"RKSs", Named::Libstdcxx(StringAbi::Old)),
    (b"PKSs", Named::Libstdcxx(StringAbi::Old)),
    (b"PSs", Named::Libstdcxx(StringAbi::Old)),
    (b"RSs", Named::Libstdcxx(StringAbi::Old)),
    (b"ESs", Named::Libstdcxx(StringAbi::Old)),
    (b"NSt3__112basic_string", Named::Libcxx),
];

/// Prefixes of the mangled names of `std::string`'s member functions and data.
const STRING_MEMBERS: [(&[u8], Named); 6] = [
    (
        b"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
        Named::Libstdcxx(StringAbi::Cxx11),
    ),
    (
        b"_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
        Named::Libstdcxx(StringAbi::Cxx11),
    ),
    (b"_ZNSs", Named::Libstdcxx(StringAbi::Old)),
    (b"_ZNKSs", Named::Libstdcxx(StringAbi::Old)),
    (b"_ZNSt3__112basic_string", Named::Libcxx),
    (b"_ZNKSt3__112basic_string", Named::Libcxx),
];

include!(concat!(env!("OUT_DIR"), "/own_string_imports.rs"));

/// The layout a LevelDB function's mangled name shows, if it is one and shows one.
fn leveldb_signature(name: &[u8]) -> Option<Named> {
    if !(name.starts_with(b"_ZN7leveldb") || name.starts_with(b"_ZNK7leveldb")) {
        return None;
    }
    STRING_IN_SIGNATURE
        .iter()
        .find(|(mark, _)| name.windows(mark.len()).any(|w| w == *mark))
        .map(|&(_, named)| named)
}

/// The string a member function's mangled name belongs to, if it is one.
fn string_member(name: &[u8]) -> Option<Named> {
    STRING_MEMBERS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|&(_, named)| named)
}

/// Which strings a set of symbols named.
#[derive(Default)]
struct Seen {
    cxx11: bool,
    old: bool,
    libcxx: bool,
}

impl Seen {
    fn add(&mut self, named: Named) {
        match named {
            Named::Libstdcxx(StringAbi::Cxx11) => self.cxx11 = true,
            Named::Libstdcxx(StringAbi::Old) => self.old = true,
            Named::Libcxx => self.libcxx = true,
        }
    }

    fn any(&self) -> bool {
        self.cxx11 || self.old || self.libcxx
    }

    /// The layout, if exactly one of libstdc++'s and nothing else was named.
    fn only(&self, whose: &str) -> Result<StringAbi, String> {
        match (self.cxx11, self.old, self.libcxx) {
            (true, false, false) => Ok(StringAbi::Cxx11),
            (false, true, false) => Ok(StringAbi::Old),
            (_, _, true) => Err(format!(
                "{whose} name libc++'s std::string, which the drop-in does not write"
            )),
            _ => Err(format!(
                "{whose} name both of libstdc++'s std::string layouts"
            )),
        }
    }
}

/// The string layout `symbols` name (rule 1 of the module's comment), or why they name
/// none; `holds_dropin` when they are the drop-in's own object's.
pub(crate) fn string_abi_of(symbols: &[Symbol], holds_dropin: bool) -> Result<StringAbi, String> {
    let mut leveldb = Seen::default();
    let mut imports = Seen::default();
    for symbol in symbols {
        if let Some(named) = leveldb_signature(symbol.name) {
            leveldb.add(named);
        } else if symbol.imported
            && !(holds_dropin && OWN_STRING_IMPORTS.contains(&symbol.name))
            && let Some(named) = string_member(symbol.name)
        {
            imports.add(named);
        }
    }
    if leveldb.any() {
        return leveldb.only("its LevelDB functions");
    }
    if imports.any() {
        return imports.only("its imports");
    }
    Err("it names no LevelDB function that takes a string and imports no std::string".to_owned())
}

/// The strings' static data members, which a program may hold a copy of (a copy
/// relocation): every object's references, libstdc++'s own included, then bind to the
/// program's copy, so they are compared by address, not by the object that holds them.
const STRING_DATA: [&[u8]; 5] = [
    b"_ZNSs4_Rep20_S_empty_rep_storageE",
    b"_ZNSs4_Rep11_S_max_sizeE",
    b"_ZNSs4_Rep11_S_terminalE",
    b"_ZNSs4nposE",
    b"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4nposE",
];

/// Where the drop-in's own string code was bound when it was loaded: each of its imports'
/// address, and the one object that holds them all (`None` if they are split or unbound).
struct OwnStrings {
    addresses: Vec<(&'static [u8], usize)>,
    home: Option<LoadedObject>,
}

static OWN_STRINGS: OnceLock<OwnStrings> = OnceLock::new();

/// Records where the drop-in's own string code is bound; called once, while it is loaded.
pub(crate) fn bind_own_strings_at_load(loader: &Loader) {
    OWN_STRINGS.get_or_init(|| {
        let addresses: Vec<(&'static [u8], usize)> = OWN_STRING_IMPORTS
            .iter()
            .chain(STRING_DATA.iter())
            .filter_map(|&name| {
                let name_c = std::ffi::CString::new(name).ok()?;
                // SAFETY: RTLD_DEFAULT (the global scope, where the drop-in's own imports
                // bind) and a C string.
                let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name_c.as_ptr()) };
                (!address.is_null()).then_some((name, address as usize))
            })
            .collect();
        let mut homes = addresses
            .iter()
            .filter(|(name, _)| !STRING_DATA.contains(name))
            .map(|&(_, address)| loader.holding(address as *const c_void));
        let first = homes.next().flatten();
        let home = first.filter(|first| homes.all(|h| h.is_some_and(|h| h.is(first))));
        OwnStrings { addresses, home }
    });
}

/// Rule 2 of the module's comment: the object's bound string code of layout `abi` is the
/// drop-in's.
fn same_string_code(
    loader: &Loader,
    object: &LoadedObject,
    symbols: &[Symbol],
    abi: StringAbi,
) -> Result<(), String> {
    let own = OWN_STRINGS
        .get()
        .ok_or("the drop-in's own string code was not bound at load")?;
    let home = own
        .home
        .as_ref()
        .ok_or("the drop-in's own string code is not in one object")?;
    let imports: Vec<&[u8]> = symbols
        .iter()
        .filter(|s| s.imported && string_member(s.name) == Some(Named::Libstdcxx(abi)))
        .map(|s| s.name)
        .collect();
    if imports.is_empty() {
        return Err(
            "it imports no std::string code: its own copy of libstdc++ (linked in \
                    statically, say) makes its strings"
                .to_owned(),
        );
    }
    let bindings = object
        .bindings(symbols)
        .map_err(|e| format!("its bindings cannot be read: {e}"))?;
    let mut bound = 0;
    for binding in bindings
        .iter()
        .filter(|b| string_member(b.name) == Some(Named::Libstdcxx(abi)))
    {
        let same = match own.addresses.iter().find(|(name, _)| *name == binding.name) {
            Some(&(_, address)) => address == binding.target,
            None => loader
                .holding(binding.target as *const c_void)
                .is_some_and(|object| object.is(home)),
        };
        if !same {
            return Err(format!(
                "its {} is not the drop-in's (another copy of libstdc++)",
                String::from_utf8_lossy(binding.name)
            ));
        }
        bound += 1;
    }
    // None bound yet (lazy binding, before its first string call). The program's imports
    // bind through the process's global scope, where the drop-in's own bound at load, and
    // nothing can come before it there since: the same definitions.
    let program_binds_as_dropin = object.is_program()
        && imports
            .iter()
            .any(|name| own.addresses.iter().any(|(own_name, _)| own_name == name));
    if bound == 0 && !program_binds_as_dropin {
        return Err(
            "none of its std::string imports is bound yet (lazy binding), so which \
                    libstdc++ they will bind to cannot be read"
                .to_owned(),
        );
    }
    Ok(())
}

/// The string layout the drop-in may write for `object`, proven (both rules), or why not.
pub(crate) fn provable_string_abi(
    loader: &Loader,
    object: &LoadedObject,
) -> Result<StringAbi, String> {
    let symbols = object
        .dynamic_symbols()
        .map_err(|e| format!("its symbols cannot be read: {e}"))?;
    let holds_dropin = loader.is_own(object);
    let abi = string_abi_of(&symbols, holds_dropin)?;
    if !holds_dropin {
        same_string_code(loader, object, &symbols, abi)?;
    }
    Ok(abi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn abi_of(symbols: &[(&str, bool)]) -> Result<StringAbi, String> {
        let symbols: Vec<Symbol> = symbols
            .iter()
            .map(|&(n, imported)| Symbol {
                name: n.as_bytes(),
                imported,
                address: 0,
            })
            .collect();
        string_abi_of(&symbols, false)
    }

    // Names as Debian's libleveldb.so.1d (C++11 strings), a manylinux wheel's bundled
    // LevelDB (old strings) and a LevelDB built with libc++ define and import them.
    const CXX11_OPEN: &str = "_ZN7leveldb2DB4OpenERKNS_7OptionsERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPPS0_";
    const OLD_OPEN: &str = "_ZN7leveldb2DB4OpenERKNS_7OptionsERKSsPPS0_";
    const LIBCXX_OPEN: &str = "_ZN7leveldb2DB4OpenERKNS_7OptionsERKNSt3__112basic_stringIcNS3_11char_traitsIcEENS3_9allocatorIcEEEEPPS0_";
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
    fn libcxx_is_named_and_declined() {
        let why = abi_of(&[(LIBCXX_OPEN, false)]).unwrap_err();
        assert!(why.contains("libc++"), "{why}");
        // Status::ToString() returns a string, which neither the old layout's name nor
        // libc++'s shows: it tells nothing.
        assert!(abi_of(&[("_ZNK7leveldb6Status8ToStringEv", false)]).is_err());
        let imports = abi_of(&[(
            "_ZNSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEE6appendEPKcm",
            true,
        )]);
        assert!(imports.unwrap_err().contains("libc++"));
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
        // One import of each of the drop-in's two string codes.
        let own = |prefix: &[u8]| {
            let name = OWN_STRING_IMPORTS.iter().find(|n| n.starts_with(prefix));
            std::str::from_utf8(name.expect("each layout's code imports string functions")).unwrap()
        };
        let (own_old, own_cxx11) = (own(b"_ZNSs"), own(b"_ZNSt7__cxx11"));
        // The program's own import: a C++11 string function the drop-in's code does not
        // import (which ones it does depends on the optimization level).
        let create = "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm";
        let programs_own = [CXX11_APPEND, create]
            .into_iter()
            .find(|name| !OWN_STRING_IMPORTS.contains(&name.as_bytes()))
            .expect("a string function the drop-in does not import");
        let program: Vec<Symbol> = [own_old, own_cxx11, programs_own]
            .iter()
            .map(|n| Symbol {
                name: n.as_bytes(),
                imported: true,
                address: 0,
            })
            .collect();
        // In the drop-in's own object, only the program's own import tells.
        assert_eq!(string_abi_of(&program, true), Ok(StringAbi::Cxx11));
        // Elsewhere every import counts.
        assert!(string_abi_of(&program, false).is_err());
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
}
