//! The LevelDB a policy is for, and its own code the drop-in builds on: the
//! `NewBloomFilterPolicy` the drop-in's definition displaced (whose policy writes Bloom filters
//! with that LevelDB's own string code) and that LevelDB's C API, `leveldb_filterpolicy_create`
//! (whose wrapper appends the filters a callback returns, with the same code).
//!
//! Which LevelDB the asking code would have called without the drop-in is the lookup the
//! loader made for that code, read per caller, never carried from one to another:
//!
//! 1. code in the object that holds the drop-in's own code (linked in statically, into the
//!    program or into a library): the LevelDB linked into that object, by its C API or its
//!    string code found there (never a definition the loader found in another object); where
//!    none is, the object its LevelDB calls are bound into, as in 3;
//! 2. code of a LevelDB (its C API's `leveldb_filterpolicy_create_bloom`, or its own code):
//!    that LevelDB's own definitions;
//! 3. other code (a program, a Python module, a Node.js addon, a plugin): the object its
//!    LevelDB calls are bound into (a system libleveldb, a wheel's bundled one, or a program
//!    with the drop-in linked in, as in 1);
//! 4. code that makes no other LevelDB call, or none bound yet (lazy binding): the LevelDB
//!    that a call bound through the process's global scope reaches, the drop-in aside (found
//!    once, while the drop-in is loaded).
//!
//! A drop-in loaded into a scope of its own (as a plugin's dependency) knows no global
//! definition it displaced: the plugins' LevelDBs are each their own. Nothing here takes a
//! lock at run time (`image.rs`).

#[cfg(unix)]
use std::ffi::CStr;
use std::ffi::{c_char, c_int, c_void};
#[cfg(unix)]
use std::sync::OnceLock;

#[cfg(unix)]
use crate::image::{LoadedObject, Loader};

/// `leveldb::NewBloomFilterPolicy(int)`: an int in, a `const leveldb::FilterPolicy*` out.
pub(crate) type NewPolicyFn = unsafe extern "C-unwind" fn(c_int) -> *const c_void;

/// `leveldb_filterpolicy_create` (include/leveldb/c.h): a C wrapper policy over a state and
/// four callbacks, whose pointer is the `leveldb::FilterPolicy*` LevelDB uses.
pub(crate) type CreateFn = unsafe extern "C-unwind" fn(
    state: *mut c_void,
    destructor: unsafe extern "C" fn(*mut c_void),
    create_filter: unsafe extern "C" fn(
        *mut c_void,
        *const *const c_char,
        *const usize,
        c_int,
        *mut usize,
    ) -> *mut c_char,
    key_may_match: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        usize,
        *const c_char,
        usize,
    ) -> u8,
    name: extern "C" fn(*mut c_void) -> *const c_char,
) -> *const c_void;

/// The symbols, under their Itanium C++ ABI and C names.
#[cfg(unix)]
const NEW_POLICY: &CStr = c"_ZN7leveldb20NewBloomFilterPolicyEi";
#[cfg(unix)]
const C_CREATE: &CStr = c"leveldb_filterpolicy_create";
/// What every copy of the drop-in, and nothing else, exports.
#[cfg(unix)]
const DROPIN_ENTRY: &CStr = c"leveldb_bloom_dropin_filter_policy_create";

/// One LevelDB's own code, as found for a policy.
#[derive(Clone)]
pub(crate) struct LevelDb {
    /// Its `NewBloomFilterPolicy`, which the drop-in's displaced.
    pub(crate) new_policy: Option<NewPolicyFn>,
    /// Its `leveldb_filterpolicy_create`.
    pub(crate) c_api: Option<CreateFn>,
    /// On the static route, the string layout of a LevelDB linked in without its C API (the
    /// one case the drop-in writes a string itself).
    pub(crate) linked_strings: Option<StringLayout>,
    /// The object that holds it, for messages and to tell another copy's policy.
    #[cfg(unix)]
    pub(crate) object: Option<LoadedObject>,
}

impl LevelDb {
    /// Whether a policy its `NewBloomFilterPolicy` made, named with the string at `name`, is
    /// another copy's of the drop-in (a shim between two copies passes one's policy on): the
    /// name is kept outside this LevelDB, in an object that is a drop-in. Without a lock.
    #[cfg(unix)]
    pub(crate) fn policy_of_another_copy(&self, name: *const c_char) -> bool {
        if self.object.as_ref().is_some_and(|o| o.spans(name as usize)) {
            return false;
        }
        Loader::get()
            .and_then(|loader| loader.holding(name.cast()))
            .is_some_and(|object| object.definition(DROPIN_ENTRY.to_bytes()).is_some())
    }

    /// How messages name it.
    pub(crate) fn describe(&self) -> String {
        #[cfg(unix)]
        if let Some(object) = &self.object {
            return format!("the LevelDB in {}", object.describe());
        }
        "the LevelDB in the program".to_owned()
    }
}

/// A libstdc++ `std::string` layout.
#[derive(Clone, Copy)]
#[cfg_attr(windows, allow(dead_code))] // Windows programs link LevelDB's C API (policy.cc)
pub(crate) enum StringLayout {
    /// `_GLIBCXX_USE_CXX11_ABI=1`, the default since GCC 5.
    Cxx11,
    /// `_GLIBCXX_USE_CXX11_ABI=0`.
    Old,
}

unsafe extern "C" {
    // policy.cc: the C API the program was linked with (a weak reference: NULL where the
    // link brought none; on Windows a strong one).
    fn leveldb_bloom_dropin_linked_c_api() -> *mut c_void;
    // policy.cc: LevelDB's `PutVarint32` of the C++11 layout (`cxx11` nonzero) or the old one
    // as the program was linked (a weak reference: NULL where the link brought none).
    #[cfg(unix)]
    fn leveldb_bloom_dropin_linked_put_varint32(cxx11: c_int) -> *mut c_void;
}

/// The LevelDB in the global scope that the drop-in displaced there, found at load (rule 4).
#[cfg(unix)]
static DISPLACED: OnceLock<Option<LevelDb>> = OnceLock::new();

/// Finds, once, while the drop-in is loaded, what only the loader can tell: the definition the
/// drop-in displaced in the global scope, if it displaced one there.
#[cfg(unix)]
pub(crate) fn at_load(loader: &'static Loader) {
    DISPLACED.get_or_init(|| displaced(loader));
}

/// On Windows the drop-in is linked into the program with LevelDB's library, whose C API it
/// references (policy.cc).
#[cfg(windows)]
pub(crate) fn asked_by(_caller: *const c_void) -> Result<LevelDb, String> {
    Ok(LevelDb {
        new_policy: None,
        c_api: linked_c_api(),
        linked_strings: None,
    })
}

/// The LevelDB whose own code serves a policy asked for by the code at `caller` (the module's
/// rules, in order), or why none can be found.
#[cfg(unix)]
pub(crate) fn asked_by(caller: *const c_void) -> Result<LevelDb, String> {
    let loader = Loader::get().ok_or("the drop-in was not initialized")?;
    let asker = loader.holding(caller);
    let bound = match &asker {
        Some(asker) if loader.is_own(asker) => match linked_in(asker) {
            Some(linked) => return Ok(linked),
            None => bound_leveldb(loader, asker)?,
        },
        Some(asker) => match own_code(asker) {
            Some(own) => return Ok(own),
            None => bound_leveldb(loader, asker)?,
        },
        None => None,
    };
    bound
        .or_else(|| DISPLACED.get().cloned().flatten())
        .ok_or_else(|| match &asker {
            Some(asker) => format!(
                "{} calls no LevelDB the loader names, and holds no LevelDB's \
                 NewBloomFilterPolicy or C API (a copy of the drop-in's aside)",
                asker.describe()
            ),
            None => "the code that asked for a policy is in no object the loader names".to_owned(),
        })
}

/// The LevelDB that `asker`'s LevelDB calls are bound into, if any.
#[cfg(unix)]
fn bound_leveldb(loader: &Loader, asker: &LoadedObject) -> Result<Option<LevelDb>, String> {
    let symbols = asker.dynamic_symbols()?;
    let bindings = asker.bindings(&symbols)?;
    Ok(bindings
        .iter()
        .filter(|b| is_leveldb_symbol(b.name))
        .filter_map(|b| loader.holding(b.target as *const c_void))
        .find_map(|object| {
            if loader.is_own(&object) {
                linked_in(&object)
            } else {
                own_code(&object)
            }
        }))
}

/// The LevelDB linked into `own`, the drop-in's object (the static route), if its C API or
/// its string code is there. Weak references resolve to any object's definitions; only those
/// inside `own` are that LevelDB's.
#[cfg(unix)]
fn linked_in(own: &LoadedObject) -> Option<LevelDb> {
    let c_api = linked_c_api().filter(|&f| own.spans(f as usize));
    let linked_strings = linked_strings(own);
    (c_api.is_some() || linked_strings.is_some()).then(|| LevelDb {
        new_policy: None,
        c_api,
        linked_strings,
        object: Some(own.clone()),
    })
}

/// The C API the program was linked with, if any.
fn linked_c_api() -> Option<CreateFn> {
    // SAFETY: policy.cc's function returns NULL or `leveldb_filterpolicy_create`.
    let f = unsafe { leveldb_bloom_dropin_linked_c_api() };
    // SAFETY: such a definition, of the type `CreateFn` states (c.h's prototype).
    (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, CreateFn>(f) })
}

/// The string layout of the LevelDB linked into `own` (the drop-in's object): the one layout
/// whose `PutVarint32` the link resolved in that object; `None` where neither or both.
#[cfg(unix)]
fn linked_strings(own: &LoadedObject) -> Option<StringLayout> {
    // SAFETY: policy.cc's function returns NULL or a definition's address.
    let linked = |cxx11| unsafe { leveldb_bloom_dropin_linked_put_varint32(cxx11) } as usize;
    let in_own = |address: usize| address != 0 && own.spans(address);
    match (in_own(linked(1)), in_own(linked(0))) {
        (true, false) => Some(StringLayout::Cxx11),
        (false, true) => Some(StringLayout::Old),
        _ => None,
    }
}

/// A name of LevelDB's: its C++ namespace's, or its C API's.
#[cfg(unix)]
fn is_leveldb_symbol(name: &[u8]) -> bool {
    name.starts_with(b"_ZN7leveldb")
        || name.starts_with(b"_ZNK7leveldb")
        || name.starts_with(b"leveldb_")
}

/// `object`'s own definitions, if it holds a LevelDB's. The `NewBloomFilterPolicy` of an
/// object that carries a copy of the drop-in is that copy's (each copy would take the other's
/// for stock's, and call it forever), and this copy's own is never stock's; its C API, where
/// its LevelDB's is linked in with the copy, is that LevelDB's own.
#[cfg(unix)]
fn own_code(object: &LoadedObject) -> Option<LevelDb> {
    let copy = object.definition(DROPIN_ENTRY.to_bytes()).is_some();
    let own = crate::new_bloom_filter_policy as *const () as usize;
    let new_policy = object
        .definition(NEW_POLICY.to_bytes())
        .filter(|&f| !copy && f != own);
    let c_api = object.definition(C_CREATE.to_bytes());
    if new_policy.is_none() && c_api.is_none() {
        return None;
    }
    Some(LevelDb {
        // SAFETY: the object's own definitions of these functions, of these types.
        new_policy: new_policy.map(|f| unsafe { std::mem::transmute::<usize, NewPolicyFn>(f) }),
        // SAFETY: as above.
        c_api: c_api.map(|f| unsafe { std::mem::transmute::<usize, CreateFn>(f) }),
        linked_strings: None,
        object: Some(object.clone()),
    })
}

/// The LevelDB whose `NewBloomFilterPolicy` a call bound through the process's global scope
/// would reach without the drop-in: the global scope's first definition (the main program's
/// handle searches that scope), or, where that is the drop-in's own, the first after it in
/// load order that is not another copy's (the objects loaded with the drop-in follow it; at
/// startup, load order is the global scope's order). Never another copy of the drop-in's (each
/// would take the other's for stock's, and call it forever). `None` where another copy of the
/// drop-in comes first, or there is none: then nothing bound through the global scope calls
/// this copy.
#[cfg(unix)]
fn displaced(loader: &Loader) -> Option<LevelDb> {
    let own = crate::new_bloom_filter_policy as *const () as usize;
    let is_copy = |object: &LoadedObject| object.definition(DROPIN_ENTRY.to_bytes()).is_some();
    let first = global_first_definition()?;
    let holder = loader.holding(first as *const c_void)?;
    if loader.is_own(&holder)
        && let Some(linked) = linked_in(&holder)
    {
        return Some(linked);
    }
    if !is_copy(&holder) {
        return own_code(&holder);
    }
    if first != own {
        return None;
    }
    crate::image::first_after(&holder, |object| {
        object.definition(NEW_POLICY.to_bytes()).is_some() && !is_copy(object)
    })
    .and_then(|object| own_code(&object))
}

/// The first definition of `NewBloomFilterPolicy` in the process's global scope, which the
/// main program's handle searches. `dlopen` is looked up rather than linked, so that a static
/// link of the drop-in (with no loader to ask) draws no warning and finds none.
#[cfg(unix)]
fn global_first_definition() -> Option<usize> {
    type OpenFn = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;
    type CloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;
    // SAFETY: RTLD_DEFAULT and C strings; each result is NULL or the C library's function
    // of that name, whose prototype the types state.
    let (open, close) = unsafe {
        let open = libc::dlsym(libc::RTLD_DEFAULT, c"dlopen".as_ptr());
        let close = libc::dlsym(libc::RTLD_DEFAULT, c"dlclose".as_ptr());
        if open.is_null() || close.is_null() {
            return None;
        }
        (
            std::mem::transmute::<*mut c_void, OpenFn>(open),
            std::mem::transmute::<*mut c_void, CloseFn>(close),
        )
    };
    // SAFETY: NULL names the main program; the handle is closed again below.
    let program = unsafe { open(std::ptr::null(), libc::RTLD_LAZY) };
    if program.is_null() {
        return None;
    }
    // SAFETY: a live handle and a C string; the result is NULL or a definition.
    let first = unsafe { libc::dlsym(program, NEW_POLICY.as_ptr()) } as usize;
    // SAFETY: the handle opened above, closed once.
    unsafe { close(program) };
    (first != 0).then_some(first)
}
