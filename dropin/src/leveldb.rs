//! The LevelDB a policy is for, and its own code the drop-in builds on: the
//! `NewBloomFilterPolicy` the drop-in's definition displaced (whose policy writes Bloom filters
//! with that LevelDB's own string code) and that LevelDB's C API, `leveldb_filterpolicy_create`
//! (whose wrapper appends the filters a callback returns, with the same code).
//!
//! Which definition the asking code would have called without the drop-in is the lookup the
//! loader made for it: the first definition in the process's global scope after the
//! drop-in's (found once, while the drop-in is loaded); else, for code loaded later in a
//! scope of its own (a Python module, a Node.js addon, a plugin), its own object's definition,
//! or that of the object its LevelDB calls are bound into (a wheel's bundled libleveldb). The
//! C API is that same object's; where the drop-in is linked into the program (the static
//! route) it is the program's, resolved when the program linked. Nothing here takes a lock at
//! run time (`image.rs`).

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
    /// The object that holds it, for the one case where the drop-in writes its strings
    /// (`owner.rs`), and for messages.
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

unsafe extern "C" {
    // policy.cc: the C API the program was linked with (a weak reference: NULL where the
    // link brought none; on Windows a strong one).
    fn leveldb_bloom_dropin_linked_c_api() -> *mut c_void;
}

/// The LevelDB in the global scope that the drop-in displaced, found at load.
#[cfg(unix)]
static DISPLACED: OnceLock<Option<LevelDb>> = OnceLock::new();

/// Finds, once, while the drop-in is loaded, what only the loader can tell: the definition the
/// drop-in displaced in the global scope.
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
    })
}

/// The LevelDB whose own code serves a policy asked for by the code at `caller`, or why none
/// can be found.
#[cfg(unix)]
pub(crate) fn asked_by(caller: *const c_void) -> Result<LevelDb, String> {
    if let Some(Some(displaced)) = DISPLACED.get() {
        return Ok(displaced.clone());
    }
    let loader = Loader::get().ok_or("the drop-in was not initialized")?;
    if loader.own_is_program {
        // The static route: the drop-in's definition is the program's only one.
        return Ok(LevelDb {
            new_policy: None,
            c_api: linked_c_api(),
            object: loader.holding(caller),
        });
    }
    let asker = loader
        .holding(caller)
        .ok_or("the code that asked for a policy is in no object the loader names")?;
    if let Some(own) = own_code(&asker) {
        return Ok(own);
    }
    // Its LevelDB calls, bound into the object that holds them (a bundled libleveldb).
    let symbols = asker.dynamic_symbols()?;
    let bindings = asker.bindings(&symbols)?;
    bindings
        .iter()
        .filter(|b| is_leveldb_symbol(b.name))
        .filter_map(|b| loader.holding(b.target as *const c_void))
        .find_map(|object| own_code(&object))
        .ok_or_else(|| {
            format!(
                "{} calls no LevelDB the loader names, and defines no NewBloomFilterPolicy of its own",
                asker.describe()
            )
        })
}

/// The C API the program was linked with, if any.
fn linked_c_api() -> Option<CreateFn> {
    // SAFETY: policy.cc's function returns NULL or `leveldb_filterpolicy_create`.
    let f = unsafe { leveldb_bloom_dropin_linked_c_api() };
    // SAFETY: such a definition, of the type `CreateFn` states (c.h's prototype).
    (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, CreateFn>(f) })
}

/// A name of LevelDB's: its C++ namespace's, or its C API's.
#[cfg(unix)]
fn is_leveldb_symbol(name: &[u8]) -> bool {
    name.starts_with(b"_ZN7leveldb")
        || name.starts_with(b"_ZNK7leveldb")
        || name.starts_with(b"leveldb_")
}

/// `object`'s own definitions, if it holds a LevelDB's (and is no copy of the drop-in).
#[cfg(unix)]
fn own_code(object: &LoadedObject) -> Option<LevelDb> {
    if object.definition(DROPIN_ENTRY.to_bytes()).is_some() {
        return None;
    }
    let new_policy = object.definition(NEW_POLICY.to_bytes());
    let c_api = object.definition(C_CREATE.to_bytes());
    if new_policy.is_none() && c_api.is_none() {
        return None;
    }
    Some(LevelDb {
        // SAFETY: the object's own definitions of these functions, of these types.
        new_policy: new_policy.map(|f| unsafe { std::mem::transmute::<usize, NewPolicyFn>(f) }),
        // SAFETY: as above.
        c_api: c_api.map(|f| unsafe { std::mem::transmute::<usize, CreateFn>(f) }),
        object: Some(object.clone()),
    })
}

/// The definition of `NewBloomFilterPolicy` the drop-in displaced: the next one after it in
/// lookup order, or, where the drop-in was loaded after it (by `dlopen`), the first one;
/// never another copy of the drop-in's (each would take the other's for stock's, and call it
/// forever). Where those two lookups find only copies of the drop-in, the first loaded object
/// that holds one. With it, its object's C API.
#[cfg(unix)]
fn displaced(loader: &Loader) -> Option<LevelDb> {
    let own = crate::new_bloom_filter_policy as *const () as usize;
    let stock = |object: &LoadedObject| {
        object
            .definition(NEW_POLICY.to_bytes())
            .is_some_and(|f| f != own)
            && object.definition(DROPIN_ENTRY.to_bytes()).is_none()
    };
    [libc::RTLD_NEXT, libc::RTLD_DEFAULT]
        .into_iter()
        // SAFETY: a pseudo-handle and a C string; the result is NULL or a definition.
        .map(|scope| unsafe { libc::dlsym(scope, NEW_POLICY.as_ptr()) })
        .filter(|f| !f.is_null())
        .filter_map(|f| loader.holding(f))
        .find(stock)
        .or_else(|| crate::image::each_object(stock))
        .and_then(|object| own_code(&object))
}
