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
use std::ffi::{CStr, CString};
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
    let stock = |f: *mut c_void| !f.is_null() && f as usize != own && !defines_the_drop_in(f);
    let found = [libc::RTLD_NEXT, libc::RTLD_DEFAULT]
        .into_iter()
        // SAFETY: a pseudo-handle and a C string; the result is NULL or a definition.
        .map(|scope| unsafe { libc::dlsym(scope, NEW_POLICY.as_ptr()) })
        .find(|&f| stock(f))
        .or_else(|| {
            loaded_objects()
                .into_iter()
                .find_map(|name| defined_in(&name, NEW_POLICY).filter(|&f| stock(f)))
        })?;
    let object = loader.holding(found);
    let c_api = object
        .as_ref()
        .and_then(|o| o.definition(C_CREATE.to_bytes()));
    Some(LevelDb {
        // SAFETY: a definition of `leveldb::NewBloomFilterPolicy(int)`.
        new_policy: Some(unsafe { std::mem::transmute::<*mut c_void, NewPolicyFn>(found) }),
        // SAFETY: that object's own `leveldb_filterpolicy_create`.
        c_api: c_api.map(|f| unsafe { std::mem::transmute::<usize, CreateFn>(f) }),
        object,
    })
}

/// The names of the loaded shared objects, in the order they were loaded (the program's
/// own, which has no name, left out). Asked of the loader at load only.
#[cfg(unix)]
fn loaded_objects() -> Vec<CString> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        names: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid `info`, and `names` is the vector below.
        let (info, names) = unsafe { (&*info, &mut *names.cast::<Vec<CString>>()) };
        if !info.dlpi_name.is_null() {
            // SAFETY: a loaded object's name, NUL-terminated.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) };
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        0
    }
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: the callback only reads `info` and pushes to `names`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut names).cast()) };
    names
}

/// The definition of `symbol` the loaded object `name` itself holds, if any. At load only.
#[cfg(unix)]
fn defined_in(name: &CStr, symbol: &CStr) -> Option<*mut c_void> {
    // SAFETY: RTLD_NOLOAD loads nothing; the handle only adds a reference, dropped below.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: a handle from `dlopen` and a C string.
    let f = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
    // SAFETY: the handle `dlopen` returned, closed once.
    unsafe { libc::dlclose(handle) };
    // A handle's lookup also searches the object's dependencies: only its own counts.
    (!f.is_null()
        && object_of(f).is_some_and(|info| {
            // SAFETY: `dladdr` names the object with a NUL-terminated string it keeps.
            !info.dli_fname.is_null() && unsafe { CStr::from_ptr(info.dli_fname) } == name
        }))
    .then_some(f)
}

/// What `dladdr` says of the object holding `address`. At load only.
#[cfg(unix)]
fn object_of(address: *const c_void) -> Option<libc::Dl_info> {
    // SAFETY: `Dl_info` is plain data, filled by `dladdr` when it returns non-zero.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: any address may be asked about; `info` is writable.
    (unsafe { libc::dladdr(address, &mut info) } != 0).then_some(info)
}

/// Whether the object defining `f` is a drop-in: it defines the drop-in's own entry point
/// too. At load only. An object the loader cannot name is not one.
#[cfg(unix)]
fn defines_the_drop_in(f: *mut c_void) -> bool {
    let Some(info) = object_of(f) else {
        return false;
    };
    if info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: `dladdr`'s name of a loaded object.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    defined_in(name, DROPIN_ENTRY)
        .is_some_and(|entry| object_of(entry).is_some_and(|e| e.dli_fbase == info.dli_fbase))
}
