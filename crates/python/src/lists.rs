//! `encode_batch` into Python lists (or one flat id buffer, for numpy),
//! made while later texts are encoded.
//!
//! Encoding runs without the GIL, but the texts' UTF-8 and the result's
//! lists and ints can only be had with it, on one thread. Done before and
//! after all the encoding, that serial work held two threads to 1.4x one
//! thread's speed; here the calling thread does it block by block
//! (`bpeforge_core::ordered`), so it overlaps the other threads' encoding,
//! and it encodes blocks itself when it has nothing else to do.

use crate::ints::{item_array, new_list, IdInts};
use crate::errors::to_pyerr;
use crate::progress::PyObserver;
use crate::texts::Texts;
use bpeforge_core::api::delivery::{Block, BlockIds, Deliver, Host, PackedIds};
use bpeforge_core::api::progress::BatchPacer;
use bpeforge_core::api::{Encoder, Error, Specials};
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use std::collections::VecDeque;

/// Where a batch's ids go, block by block (with the GIL held).
pub(crate) trait Sink<'py> {
    fn take(&mut self, py: Python<'py>, ids: &BlockIds) -> PyResult<()>;
}

/// The list of a list of ids per text, the ints shared through `IdInts`:
/// made with every slot empty and filled in place as blocks are delivered
/// (not gathered in a vector and copied into a list at the end). Until it is
/// full the collector does not track it, so no Python code (a progress
/// callback, a collection's callback) can reach its empty slots.
pub(crate) struct Lists<'a, 'py> {
    ints: &'a IdInts,
    vocab_size: usize,
    list: Bound<'py, PyList>,
    items: Option<*mut *mut ffi::PyObject>,
    len: usize,
    filled: usize,
}

impl<'a, 'py> Lists<'a, 'py> {
    pub(crate) fn new(py: Python<'py>, enc: &Encoder, ints: &'a IdInts, texts: usize) -> PyResult<Self> {
        // SAFETY: the GIL is held; the list is untracked until every slot is
        // set (`into_list`), and dropped unseen if that never happens (a
        // list's deallocation skips empty slots).
        let list = unsafe {
            let list = new_list(py, texts)?;
            ffi::PyObject_GC_UnTrack(list.as_ptr().cast());
            list
        };
        let items = item_array(py, &list);
        Ok(Lists { ints, vocab_size: enc.vocab_size(), list, items, len: texts, filled: 0 })
    }

    /// The full list, tracked by the collector again.
    pub(crate) fn into_list(self) -> PyResult<Bound<'py, PyList>> {
        if self.filled != self.len {
            return Err(PyRuntimeError::new_err(format!("encode_batch: {} of {} results made", self.filled, self.len)));
        }
        // SAFETY: every slot is set; the list was untracked in `new`.
        unsafe { ffi::PyObject_GC_Track(self.list.as_ptr().cast()) };
        Ok(self.list)
    }
}

impl<'py> Sink<'py> for Lists<'_, 'py> {
    fn take(&mut self, py: Python<'py>, ids: &BlockIds) -> PyResult<()> {
        let mut table = self.ints.lock(self.vocab_size);
        for one in ids.texts() {
            if self.filled == self.len {
                return Err(PyRuntimeError::new_err("encode_batch: more results than texts"));
            }
            let item = table.list(py, one)?.into_ptr();
            // SAFETY: slot `filled` is in range and still empty; the list
            // takes the reference `into_ptr` gave up.
            unsafe {
                match self.items {
                    Some(items) => *items.add(self.filled) = item,
                    None => _ = ffi::PyList_SetItem(self.list.as_ptr(), self.filled as ffi::Py_ssize_t, item),
                }
            }
            self.filled += 1;
        }
        Ok(())
    }
}

/// All ids in numpy's layout.
impl Sink<'_> for PackedIds {
    fn take(&mut self, _: Python<'_>, ids: &BlockIds) -> PyResult<()> {
        self.append(ids);
        Ok(())
    }
}

/// The calling thread's side: borrows texts block by block, takes the ids.
struct Batch<'a, 'py, S> {
    py: Python<'py>,
    texts: &'a Texts<'py>,
    next: usize,
    /// The texts of the blocks prepared and not yet delivered, oldest
    /// first: the references that keep alive the UTF-8 those blocks borrow
    /// (another Python thread may drop a list's item while the GIL is
    /// released).
    held: VecDeque<Bound<'py, PyString>>,
    sink: S,
    pacer: Option<(BatchPacer, &'a mut PyObserver)>,
    /// What Python raised (a text that is not UTF-8, no memory for a list).
    raised: Option<PyErr>,
}

impl<'a, 'py, S: Sink<'py>> Host<Block<&'a str>, &BlockIds> for Batch<'a, 'py, S> {
    fn prepare(&mut self) -> Result<Option<Block<&'a str>>, Error> {
        // Once a block: no Python code runs while a block is cut, so the
        // list cannot change during it.
        if let Err(e) = self.texts.check_len() {
            self.raised.get_or_insert(e);
            return Err(Error::input("Python raised an exception"));
        }
        let (texts, held) = (self.texts, &mut self.held);
        let mut raised = None;
        let block = Block::cut(texts.len(), &mut self.next, |i| {
            let utf8 = texts.get(i).and_then(|text| {
                let utf8: *const str = text.to_str()?;
                held.push_back(text);
                Ok(utf8)
            });
            match utf8 {
                // SAFETY: a `str`'s UTF-8 lives as long as the object, which
                // `held` keeps until the block is delivered or the batch
                // ends, after `encode_blocks` has joined every thread that
                // read it.
                Ok(utf8) => Ok(unsafe { &*utf8 }),
                Err(e) => {
                    raised = Some(e);
                    Err(Error::input("Python raised an exception"))
                }
            }
        });
        if let Some(e) = raised {
            self.raised.get_or_insert(e);
        }
        block
    }
}

impl<'a, 'py, S: Sink<'py>> Deliver<Block<&'a str>, &BlockIds> for Batch<'a, 'py, S> {
    fn deliver(&mut self, block: Block<&'a str>, ids: &BlockIds) -> Result<(), Error> {
        if let Err(e) = self.sink.take(self.py, ids) {
            self.raised.get_or_insert(e);
            return Err(Error::input("Python raised an exception"));
        }
        if let Some((pacer, observer)) = &mut self.pacer {
            pacer.advance(block.bytes() as u64, ids.ids.len() as u64, observer.engine())?;
        }
        self.held.drain(..block.texts.len());
        Ok(())
    }

    fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T {
        self.py.detach(f)
    }
}

/// Encodes `texts` into `sink` on `threads` threads (`dropout`: `(p, seed)`),
/// reporting to `observer` if there is one; returns the filled `sink`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_texts<'a, 'py, S: Sink<'py>>(
    py: Python<'py>,
    enc: &Encoder,
    texts: &'a Texts<'py>,
    sink: S,
    rule: &Specials,
    threads: usize,
    dropout: Option<(f64, u64)>,
    observer: Option<&'a mut PyObserver>,
) -> PyResult<S> {
    let pacer = match observer {
        // The total is reported from the start: every text's UTF-8 first.
        Some(observer) => {
            let mut total = 0u64;
            for i in 0..texts.len() {
                total += texts.get(i)?.to_str()?.len() as u64;
            }
            Some((BatchPacer::new(total), observer))
        }
        None => None,
    };
    let mut host = Batch { py, texts, next: 0, held: VecDeque::new(), sink, pacer, raised: None };
    let result = enc.encode_blocks(&mut host, rule, threads, dropout);
    // What Python raised (here or in a progress callback) wins over the
    // engine's error, which only stopped the run.
    let failure = host.pacer.as_mut().and_then(|(_, observer)| observer.take_failure());
    if let Some(err) = host.raised.take().or(failure) {
        return Err(err);
    }
    result.map_err(to_pyerr)?;
    // A list that grew has texts no block held.
    texts.check_len()?;
    if let Some((pacer, observer)) = host.pacer.take() {
        pacer.finish(texts.len() as u64, observer.engine());
        if let Some(err) = observer.take_failure() {
            return Err(err);
        }
    }
    Ok(host.sink)
}
