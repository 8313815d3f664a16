//! Python lists of token ids, from one int object per id.
//!
//! Making a Python int for every id of a result (an allocation each, and
//! later a free) cost more than any other step of turning ids into lists.
//! A tokenizer instead keeps the int of each id it has returned and puts
//! that same object in every list: one reference-count increment per id.
//! Ints are immutable, so sharing them changes nothing a caller can rely on.
//! Each list is filled in place, without a C API call per item (`incref`,
//! `item_array`). Profiled over four cold passes of `encode` on 50,000
//! held-apart lines with o200k_base, building the lists took 0.136 s of
//! CPU against 0.226 s before (a twentieth of the calls' time).
//!
//! Most of what is left is waiting on memory: the table slot of each id,
//! then its int (to count the reference). So the slots and ints of the ids
//! a little ahead are fetched early (`prefetch_ahead`), and each int is made
//! when its id is first met, so that the ints of a text's frequent ids lie
//! side by side (the collector, which reads every item of every list it
//! walks, waits on them too). Making them in blocks of 1,024 ids in id order
//! instead spread the 85,000 distinct ids of 50,000 multilingual lines over
//! every block of o200k_base. Per `encode` call on those lines (in one
//! process, fresh tokenizers alternating, medians of 12-16 passes), the two
//! changes took 5-7% less time on o200k_base, 3% on cl100k_base and 2% on a
//! trained 32k vocabulary.

use bpeforge_core::api::delivery::{prefetch, prefetch_ptr};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The ints of the ids seen so far, by id (grown on demand).
#[derive(Default)]
pub(crate) struct IdInts {
    table: Mutex<Vec<Option<Py<PyInt>>>>,
}

/// The table while one thread uses it; `None` if another thread holds it.
pub(crate) struct Ints<'a>(Option<MutexGuard<'a, Vec<Option<Py<PyInt>>>>>);

impl IdInts {
    /// The table for a run of conversions of ids below `vocab_size`. Never
    /// waits: the holder may be a thread that let the GIL go (a finalizer
    /// run by a collection) while this one holds it; then this one makes
    /// its ints afresh.
    pub(crate) fn lock(&self, vocab_size: usize) -> Ints<'_> {
        let mut table = self.table.try_lock().ok();
        if let Some(t) = table.as_mut() {
            if t.len() < vocab_size {
                t.resize_with(vocab_size, || None);
            }
        }
        Ints(table)
    }
}

impl Ints<'_> {
    /// The list of `ids`.
    pub(crate) fn list<'py>(&mut self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        let Some(table) = self.0.as_mut() else {
            return PyList::new(py, ids);
        };
        // SAFETY: each slot of the fresh list is written once, with an owned
        // reference: a new int, or a shared one with its count raised. The
        // table owns a reference to each shared int, so it stays alive; the
        // GIL is held.
        unsafe {
            let list = new_list(py, ids.len())?;
            let array = item_array(py, &list);
            for (k, &id) in ids.iter().enumerate() {
                prefetch_ahead(table, ids, k);
                let known = table.get(id as usize).map(|slot| slot.as_ref().map(|int| int.as_ptr()));
                let int = match known {
                    Some(Some(int)) => shared(int),
                    Some(None) => shared(make_int(py, table, id as usize)),
                    None => PyInt::new(py, id).into_ptr(),
                };
                match array {
                    Some(array) => *array.add(k) = int,
                    // Steals the reference; cannot fail for an index in range.
                    None => _ = ffi::PyList_SetItem(list.as_ptr(), k as ffi::Py_ssize_t, int),
                }
            }
            Ok(list)
        }
    }
}

/// How many ids ahead of the one being converted its int is fetched (and
/// twice as many, its table slot, so that the slot is there to name the int).
/// A variant fetching 32 ids' slots, then their ints, before converting
/// them took 2% more time.
const AHEAD: usize = 8;

/// Starts loading what converting `ids[k + AHEAD]` and `ids[k + 2 * AHEAD]`
/// will read.
#[inline(always)]
fn prefetch_ahead(table: &[Option<Py<PyInt>>], ids: &[u32], k: usize) {
    if let Some(&id) = ids.get(k + 2 * AHEAD) {
        prefetch(table, id as usize);
    }
    if let Some(&id) = ids.get(k + AHEAD) {
        if let Some(Some(int)) = table.get(id as usize) {
            prefetch_ptr(int.as_ptr());
        }
    }
}

/// Makes the int of `id`, kept in its slot; returns it (borrowed).
fn make_int(py: Python<'_>, table: &mut [Option<Py<PyInt>>], id: usize) -> *mut ffi::PyObject {
    table[id].insert(PyInt::new(py, id as u64).unbind()).as_ptr()
}

/// A new reference to a shared int (see `incref`).
///
/// # Safety
/// As `incref`.
#[inline]
unsafe fn shared(int: *mut ffi::PyObject) -> *mut ffi::PyObject {
    incref(int);
    int
}

/// Adds one reference to `obj`, as the headers of the stable ABI this module
/// targets (3.10) do inline, where PyO3's `Py_INCREF` calls a function
/// under the limited API (`_Py_IncRef`: 0.141 s of the 0.226 above). Only
/// the low 32 bits are touched, and only while they stay below 2^31 - 1:
/// from 3.12 on, a negative low half marks an immortal object, whose count
/// must not change, and the interpreter's own function handles every such
/// case (and every other platform).
///
/// # Safety
/// `obj` must be a live object and the GIL held.
#[inline]
unsafe fn incref(obj: *mut ffi::PyObject) {
    #[cfg(all(target_endian = "little", target_pointer_width = "64"))]
    {
        // The reference count is the object's first field (its low half first).
        let low = obj.cast::<u32>();
        let count = *low;
        if count < i32::MAX as u32 {
            *low = count + 1;
            return;
        }
    }
    ffi::Py_IncRef(obj);
}

/// A new list of `len` empty (NULL) slots, each to be set exactly once.
///
/// # Safety
/// The GIL is held; the caller fills every slot before Python sees the list.
pub(crate) unsafe fn new_list(py: Python<'_>, len: usize) -> PyResult<Bound<'_, PyList>> {
    let list = ffi::PyList_New(len as ffi::Py_ssize_t);
    if list.is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok(Bound::from_owned_ptr(py, list).downcast_into_unchecked())
}

/// Where `list` keeps its items, if this interpreter lays lists out as
/// CPython always has (`PyObject_VAR_HEAD`, then the item pointer): checked
/// once against a real list. Writing there instead of calling
/// `PyList_SetItem` saves a call and its checks per id; the stable ABI
/// leaves the layout out, hence the check (and the call where it fails).
pub(crate) fn item_array(py: Python<'_>, list: &Bound<'_, PyList>) -> Option<*mut *mut ffi::PyObject> {
    static OFFSET: OnceLock<Option<usize>> = OnceLock::new();
    let offset = (*OFFSET.get_or_init(|| items_offset(py)))?;
    // SAFETY: the offset was checked to hold a list's item pointer.
    Some(unsafe { *list.as_ptr().cast::<u8>().add(offset).cast::<*mut *mut ffi::PyObject>() })
}

/// The item pointer's offset in a list object, checked on a real list.
fn items_offset(py: Python<'_>) -> Option<usize> {
    // After the reference count, the type and the length.
    let offset = 3 * std::mem::size_of::<usize>();
    let probe = PyInt::new(py, 123_456_789u64);
    let list = PyList::new(py, [&probe]).ok()?;
    // SAFETY: a list object is larger than its variable-size header plus one
    // pointer on every CPython, so the read stays inside the object.
    let array = unsafe { *list.as_ptr().cast::<u8>().add(offset).cast::<*const *mut ffi::PyObject>() };
    // SAFETY: if the check holds, `array` is the list's item array (one item).
    let found = !array.is_null() && unsafe { *array } == probe.as_ptr();
    found.then_some(offset)
}
