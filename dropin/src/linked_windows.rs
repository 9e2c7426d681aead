//! The drop-in's one decision on Windows, where it is linked into the program with LevelDB:
//! write the strings, in the layout the program was proven, when it linked, to share with the
//! drop-in (linked_windows.cc). Nothing is read at run time.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// The two layouts of libstdc++'s `std::string` the drop-in writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringAbi {
    /// `std::__cxx11::basic_string<char>`.
    Cxx11,
    /// The copy-on-write `std::basic_string<char>` (`_GLIBCXX_USE_CXX11_ABI=0`).
    Old,
}

/// A LevelDB's own `NewBloomFilterPolicy` (never found on Windows: nothing is read at run
/// time).
pub(crate) type NewPolicyFn = unsafe extern "C-unwind" fn(c_int) -> *const c_void;

/// Who writes a LevelDB's filters.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Writer {
    Dropin(StringAbi),
    #[allow(dead_code)]
    Stock(Option<NewPolicyFn>),
}

unsafe extern "C" {
    fn leveldb_bloom_dropin_linked_cxx11_string() -> c_int;
}

/// The layout the program was proven, when it linked, to share with the drop-in.
fn linked() -> StringAbi {
    // SAFETY: returns a constant of linked_windows.cc, whose reference to LevelDB's
    // `DestroyDB` in that layout is the link-time proof.
    if unsafe { leveldb_bloom_dropin_linked_cxx11_string() } != 0 {
        StringAbi::Cxx11
    } else {
        StringAbi::Old
    }
}

/// The writer for every caller: the program's one LevelDB, served (counted once).
pub(crate) fn writer_for(_caller: *const c_void) -> Writer {
    static SERVED: AtomicBool = AtomicBool::new(false);
    let abi = linked();
    if !SERVED.swap(true, Ordering::Relaxed) {
        crate::stats::count_served(abi == StringAbi::Cxx11);
    }
    Writer::Dropin(abi)
}

/// The asking code is the program, whose layout was proven at link time.
#[allow(clippy::type_complexity, clippy::unnecessary_wraps)]
pub(crate) fn asker_stock_or_proof(
    _caller: *const c_void,
) -> Result<(Option<NewPolicyFn>, Option<StringAbi>), String> {
    Ok((None, Some(linked())))
}
