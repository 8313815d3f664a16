//! `encode_batch` into Python lists (or one flat id buffer, for numpy),
//! made while later texts are encoded.
//!
//! Encoding runs without the GIL, but the texts' UTF-8 and the result's
//! lists and ints can only be had with it, on one thread. Done before and
//! after all the encoding, that serial work held two threads to 1.4x one
//! thread's speed (#14); here the calling thread does it block by block
//! (`bpeforge_core::ordered`), so it overlaps the other threads' encoding,
//! and it encodes blocks itself when it has nothing else to do.

use crate::ints::IdInts;
use crate::progress::{BatchPacer, PyObserver};
use bpeforge_core::encode::{Block, BlockIds, Encoder, FlatIds, Specials};
use bpeforge_core::error::{Error, Result};
use bpeforge_core::ordered::Host;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Where a batch's ids go, block by block (with the GIL held).
pub(crate) trait Sink<'py> {
    fn take(&mut self, py: Python<'py>, ids: &BlockIds) -> PyResult<()>;
}

/// A list of ids per text, the ints shared through `IdInts`.
pub(crate) struct Lists<'a, 'py> {
    ints: &'a IdInts,
    vocab_size: usize,
    pub(crate) lists: Vec<Bound<'py, PyAny>>,
}

impl<'a> Lists<'a, '_> {
    pub(crate) fn new(enc: &Encoder, ints: &'a IdInts, texts: usize) -> Self {
        Lists { ints, vocab_size: enc.vocab_size(), lists: Vec::with_capacity(texts) }
    }
}

impl<'py> Sink<'py> for Lists<'_, 'py> {
    fn take(&mut self, py: Python<'py>, ids: &BlockIds) -> PyResult<()> {
        let mut table = self.ints.lock(self.vocab_size);
        for one in ids.texts() {
            self.lists.push(table.list(py, one)?.into_any());
        }
        Ok(())
    }
}

/// All ids in one vector (for numpy).
impl Sink<'_> for FlatIds {
    fn take(&mut self, _: Python<'_>, ids: &BlockIds) -> PyResult<()> {
        self.append(ids);
        Ok(())
    }
}

/// The calling thread's side: borrows texts block by block, takes the ids.
struct Batch<'a, 'py, S> {
    py: Python<'py>,
    texts: &'a [Bound<'py, PyString>],
    next: usize,
    sink: S,
    pacer: Option<(BatchPacer, &'a mut PyObserver)>,
    /// What Python raised (a text that is not UTF-8, no memory for a list).
    raised: Option<PyErr>,
}

impl<'a, 'py, S: Sink<'py>> Host<Block<&'a str>, &BlockIds> for Batch<'a, 'py, S> {
    fn prepare(&mut self) -> Result<Option<Block<&'a str>>> {
        let texts = self.texts;
        let mut raised = None;
        let block = Block::cut(texts.len(), &mut self.next, |i| {
            texts[i].to_str().map_err(|e| {
                raised = Some(e);
                Error::input("Python raised an exception")
            })
        });
        if let Some(e) = raised {
            self.raised.get_or_insert(e);
        }
        block
    }

    fn deliver(&mut self, block: Block<&'a str>, ids: &BlockIds) -> Result<()> {
        if let Err(e) = self.sink.take(self.py, ids) {
            self.raised.get_or_insert(e);
            return Err(Error::input("Python raised an exception"));
        }
        if let Some((pacer, observer)) = &mut self.pacer {
            pacer.advance(block.bytes() as u64, ids.ids.len() as u64, observer)?;
        }
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
    texts: &'a [Bound<'py, PyString>],
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
            for t in texts {
                total += t.to_str()?.len() as u64;
            }
            Some((BatchPacer::new(total), observer))
        }
        None => None,
    };
    let mut host = Batch { py, texts, next: 0, sink, pacer, raised: None };
    let result = enc.encode_blocks(&mut host, rule, threads, dropout);
    // What Python raised (here or in a progress callback) wins over the
    // engine's error, which only stopped the run.
    let failure = host.pacer.as_mut().and_then(|(_, observer)| observer.take_failure());
    if let Some(err) = host.raised.take().or(failure) {
        return Err(err);
    }
    result.map_err(crate::to_pyerr)?;
    if let Some((pacer, observer)) = host.pacer.take() {
        pacer.finish(texts.len() as u64, observer);
        if let Some(err) = observer.take_failure() {
            return Err(err);
        }
    }
    Ok(host.sink)
}
