//! Which LevelDB owns the string `CreateFilter` is asked to append to, and whether the drop-in
//! may write it.
//!
//! LevelDB hands `CreateFilter` a `std::string*` of its own (its filter block builder's), so
//! the drop-in's policy asks at the first call from each place, the return address naming
//! the object (a libleveldb, a module or program with LevelDB compiled in) whose LevelDB
//! called it, however the policy reached that LevelDB (through wrappers, shims or tail
//! calls). It writes that string only with code proven to be the string code that LevelDB's
//! own strings use, from the object as it is loaded in memory (`image.rs`):
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
//!    empty representation belong to one copy of libstdc++. The object must import its string
//!    functions (a libstdc++ linked in statically and hidden imports none), and each must
//!    resolve in its own lookup scope to the very definition it resolves to in the process's
//!    global scope and in the drop-in's. Where the drop-in is part of the object (linked
//!    statically into the program), it is one link and one copy.
//!
//! Proven, the drop-in grows that LevelDB's strings with its layout's code (string_ops.cc)
//! and writes its filters. Otherwise that LevelDB's own `NewBloomFilterPolicy` (the object's
//! own definition) writes its filters, LevelDB's Bloom bytes either way, and the drop-in says
//! so once on standard error and in the statistics; queries never touch a string and stay the
//! drop-in's. Each decision is made once per calling place and kept for the process.

use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::Mutex;

use crate::image::{LoadedObject, Scope, Symbol};

/// The two layouts of libstdc++'s `std::string` the drop-in writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringAbi {
    /// `std::__cxx11::basic_string<char>`.
    Cxx11,
    /// The copy-on-write `std::basic_string<char>` (`_GLIBCXX_USE_CXX11_ABI=0`).
    Old,
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

/// `leveldb::NewBloomFilterPolicy(int)`, under its Itanium C++ ABI name.
pub(crate) const NEW_BLOOM_FILTER_POLICY: &[u8] = b"_ZN7leveldb20NewBloomFilterPolicyEi";

/// A LevelDB's own `NewBloomFilterPolicy`.
pub(crate) type NewPolicyFn = unsafe extern "C" fn(c_int) -> *const c_void;

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

/// Rule 2 of the module's comment: the object's string functions of layout `abi` are the
/// drop-in's.
fn same_string_code(
    object: &LoadedObject,
    symbols: &[Symbol],
    abi: StringAbi,
) -> Result<(), String> {
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
    let scope = object.scope().ok_or("its lookup scope cannot be opened")?;
    let own = LoadedObject::own()
        .and_then(|own| own.scope())
        .ok_or("the drop-in's lookup scope cannot be opened")?;
    let global = Scope::global();
    for name in imports {
        let here = scope.resolve(name);
        if here.is_none() || here != own.resolve(name) || here != global.resolve(name) {
            return Err(format!(
                "its {} is not the drop-in's (another copy of libstdc++)",
                String::from_utf8_lossy(name)
            ));
        }
    }
    Ok(())
}

/// The string layout the drop-in may write for `object`, proven (both rules), or why not.
pub(crate) fn provable_string_abi(object: &LoadedObject) -> Result<StringAbi, String> {
    let symbols = object
        .dynamic_symbols()
        .map_err(|e| format!("its symbols cannot be read: {e}"))?;
    let holds_dropin = LoadedObject::own().as_ref() == Some(object);
    let abi = string_abi_of(&symbols, holds_dropin)?;
    if !holds_dropin {
        same_string_code(object, &symbols, abi)?;
    }
    Ok(abi)
}

/// `object`'s own `NewBloomFilterPolicy`: its own definition, not the drop-in's.
fn own_policy_of(object: &LoadedObject) -> Option<NewPolicyFn> {
    let own = LoadedObject::own();
    let symbols = object.dynamic_symbols().ok()?;
    let definition = symbols
        .iter()
        .find(|s| !s.imported && s.name == NEW_BLOOM_FILTER_POLICY && s.address != 0)?;
    let holder = LoadedObject::holding(definition.address as *const c_void);
    if holder.as_ref() != Some(object) || holder == own {
        return None;
    }
    // SAFETY: the object's own definition of `leveldb::NewBloomFilterPolicy(int)`, whose
    // machine-level signature is an int in and a pointer out.
    Some(unsafe { std::mem::transmute::<usize, NewPolicyFn>(definition.address) })
}

/// One layout's string code (string_ops.cc); opaque here.
#[repr(C)]
pub(crate) struct StringOps {
    _private: [u8; 0],
}

unsafe extern "C" {
    static leveldb_bloom_dropin_string_ops_cxx11: StringOps;
    static leveldb_bloom_dropin_string_ops_old: StringOps;
}

/// What was decided for the LevelDB whose code holds `caller` (string_ops.h's
/// `leveldb_bloom_dropin_decision`).
#[repr(C)]
pub(crate) struct Decision {
    caller: *const c_void,
    /// The layout's string code, or NULL: declined.
    string_ops: *const StringOps,
    /// The declined LevelDB's own `NewBloomFilterPolicy`, if found.
    own_policy: Option<NewPolicyFn>,
    /// Why it was declined, as a C string; NULL when served.
    reason: *const c_char,
}

// SAFETY: a decision is immutable once made and lives as long as the process; its pointers
// are to static data (the string code, a leaked reason) and code.
unsafe impl Send for Decision {}
// SAFETY: as above.
unsafe impl Sync for Decision {}

/// The decisions made so far (one per calling place; a process has a few).
static DECISIONS: Mutex<Vec<&'static Decision>> = Mutex::new(Vec::new());

/// The decision for the LevelDB whose code holds `caller`: made at its first call and kept.
/// Called by the policy's `CreateFilter` (policy.cc); never NULL, never unwinds.
pub(crate) extern "C" fn decide_for(caller: *const c_void) -> *const Decision {
    let mut decisions = DECISIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(decision) = decisions.iter().find(|d| d.caller == caller) {
        return *decision;
    }
    let decision =
        std::panic::catch_unwind(|| decide(caller, LoadedObject::holding(caller).as_ref()))
            .unwrap_or_else(|_| {
                decline(
                    caller,
                    None,
                    "the drop-in failed reading its symbols".to_owned(),
                )
            });
    let decision: &'static Decision = Box::leak(Box::new(decision));
    decisions.push(decision);
    decision
}

fn decide(caller: *const c_void, object: Option<&LoadedObject>) -> Decision {
    let Some(object) = object else {
        return decline(caller, None, "no loaded object holds its code".to_owned());
    };
    match provable_string_abi(object) {
        Ok(abi) => {
            crate::stats::count_served(abi == StringAbi::Cxx11);
            Decision {
                caller,
                string_ops: match abi {
                    StringAbi::Cxx11 => &raw const leveldb_bloom_dropin_string_ops_cxx11,
                    StringAbi::Old => &raw const leveldb_bloom_dropin_string_ops_old,
                },
                own_policy: None,
                reason: std::ptr::null(),
            }
        }
        Err(why) => decline(caller, Some(object), why),
    }
}

/// A declined LevelDB: said once, counted, and left to its own policy.
#[cold]
fn decline(caller: *const c_void, object: Option<&LoadedObject>, why: String) -> Decision {
    let own_policy = object.and_then(own_policy_of);
    let who = object.map_or_else(|| "the caller".to_owned(), LoadedObject::describe);
    let outcome = if own_policy.is_some() {
        "its own Bloom policy writes its filters"
    } else {
        "it has no Bloom policy of its own the drop-in can find"
    };
    let reason = format!("the LevelDB in {who} ({why}); {outcome}");
    crate::stats::count_declined(&reason);
    let reason = CString::new(reason).unwrap_or_default().into_raw();
    Decision {
        caller,
        string_ops: std::ptr::null(),
        own_policy,
        reason,
    }
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
