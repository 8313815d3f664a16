//! `encode_batch` into Python lists, built while later texts are encoded.
//!
//! Encoding runs without the GIL, but the texts' UTF-8 and the result's
//! lists and ints can only be had with it, on one thread. Done before and
//! after all the encoding, that serial work held two threads to 1.4x one
//! thread's speed (#14); here the calling thread does it block by block
//! (`bpeforge_core::ordered`), so it overlaps the other threads' encoding,
//! and it encodes blocks itself when it has nothing else to do.

use crate::ints::IdInts;
use crate::progress::{BatchPacer, PyObserver};
use bpeforge_core::encode::{Block, Encoder, Specials};
use bpeforge_core::error::{Error, Result};
use bpeforge_core::ordered::Host;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

/// Text per block: small enough that the last blocks' lists (built after
/// all encoding ends) take little time, large enough that handing blocks
/// over costs nothing measurable.
const BLOCK_BYTES: usize = 64 << 10;
/// Texts per block at most (for very short texts).
const BLOCK_TEXTS: usize = 2048;

/// The calling thread's side: borrows texts block by block, makes lists.
struct Lists<'a, 'py> {
    py: Python<'py>,
    texts: &'a [Bound<'py, PyString>],
    next: usize,
    lists: Vec<Bound<'py, PyAny>>,
    ints: &'a IdInts,
    vocab_size: usize,
    pacer: Option<(BatchPacer, &'a mut PyObserver)>,
    /// What Python raised (a text that is not UTF-8, no memory for a list).
    raised: Option<PyErr>,
}

impl<'a> Host<Block<'a>, Vec<Vec<u32>>> for Lists<'a, '_> {
    fn prepare(&mut self) -> Result<Option<Block<'a>>> {
        let first = self.next;
        let (mut texts, mut bytes) = (Vec::new(), 0usize);
        while self.next < self.texts.len() && bytes < BLOCK_BYTES && texts.len() < BLOCK_TEXTS {
            let text = self.texts[self.next].to_str().map_err(|e| self.raise(e))?;
            bytes += text.len();
            texts.push(text);
            self.next += 1;
        }
        Ok((!texts.is_empty()).then_some(Block { first, texts }))
    }

    fn deliver(&mut self, block: Block<'a>, ids: Vec<Vec<u32>>) -> Result<()> {
        let mut tokens = 0u64;
        let table: &IdInts = self.ints;
        let mut ints = table.lock(self.vocab_size);
        for one in ids {
            tokens += one.len() as u64;
            let list = ints.list(self.py, &one).map_err(|e| self.raise(e))?;
            self.lists.push(list.into_any());
        }
        if let Some((pacer, observer)) = &mut self.pacer {
            let bytes = block.texts.iter().map(|t| t.len() as u64).sum();
            pacer.advance(bytes, tokens, observer)?;
        }
        Ok(())
    }

    fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T {
        self.py.detach(f)
    }
}

impl Lists<'_, '_> {
    /// Keeps what Python raised; the engine sees only that it must stop.
    fn raise(&mut self, err: PyErr) -> Error {
        self.raised.get_or_insert(err);
        Error::input("Python raised an exception")
    }
}

/// Encodes `texts` into a list of lists of ids on `threads` threads
/// (`dropout`: `(p, seed)`), reporting to `observer` if there is one.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_to_lists<'py>(
    py: Python<'py>,
    enc: &Encoder,
    ints: &IdInts,
    texts: &[Bound<'py, PyString>],
    rule: &Specials,
    threads: usize,
    dropout: Option<(f64, u64)>,
    observer: Option<&mut PyObserver>,
) -> PyResult<Bound<'py, PyList>> {
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
    let vocab_size = enc.vocab_size();
    let mut host = Lists { py, texts, next: 0, lists: Vec::with_capacity(texts.len()), ints, vocab_size, pacer, raised: None };
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
    PyList::new(py, host.lists)
}
