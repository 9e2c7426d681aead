//! The drop-in's one decision on Windows, where it is linked into the program with LevelDB:
//! write the strings, in the layout the program was proven, when it linked, to share with the
//! drop-in (linked_windows.cc). Nothing is read at run time.

use std::ffi::{c_int, c_void};
use std::sync::Once;

/// linked_windows.cc's decision (string_ops.h's `leveldb_bloom_dropin_decision`); opaque here.
#[repr(C)]
pub(crate) struct Decision {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn leveldb_bloom_dropin_linked_decision(caller: *const c_void) -> *const Decision;
    static leveldb_bloom_dropin_linked_cxx11_string: c_int;
}

/// The decision for every caller: the program's one LevelDB, served. Never NULL, never
/// unwinds.
pub(crate) extern "C" fn decide_for(caller: *const c_void) -> *const Decision {
    static SERVED: Once = Once::new();
    SERVED.call_once(|| {
        // SAFETY: a constant int defined in linked_windows.cc.
        let cxx11 = unsafe { leveldb_bloom_dropin_linked_cxx11_string } != 0;
        crate::stats::count_served(cxx11);
    });
    // SAFETY: returns a pointer to a static decision; `caller` is not read.
    unsafe { leveldb_bloom_dropin_linked_decision(caller) }
}
