//! Arrow string columns (Parquet, Arrow files, Hugging Face datasets) handed
//! to the engine without a Python object per row: Python passes each
//! column chunk's `pyarrow.Buffer`s (offsets and UTF-8 data), the bindings
//! read them in place and copy the rows' bytes once, into a chunk of the
//! core's pipelines (`Source`) or a batch for the encoder.

use crate::args::{check_threads, specials_rule};
use crate::errors::to_pyerr;
use crate::progress::{finish, PyObserver};
use crate::settings::TrainSettings;
use crate::shards::wire_bytes;
use crate::tokenizer::NativeTokenizer;
use bpeforge_core::api::feed::{Chunk, Layout, Source};
use bpeforge_core::api::progress::Observer;
use bpeforge_core::api::{CountOf, EncodeFrom, Error, Fed, IdFormat, TrainOn};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator, PyString};
use std::path::PathBuf;
use std::sync::Arc;

/// The bytes of a `pyarrow.Buffer` in CPU memory, borrowed for as long as
/// the buffer object is (it owns the memory; Python keeps it alive).
fn buffer_bytes<'b>(buf: &'b Bound<'_, PyAny>) -> PyResult<&'b [u8]> {
    let ty = buf.get_type();
    let module: String = ty.module()?.extract()?;
    if ty.name()?.to_string() != "Buffer" || !module.starts_with("pyarrow") || !buf.getattr("is_cpu")?.extract::<bool>()? {
        return Err(PyTypeError::new_err("expected a pyarrow.Buffer in CPU memory"));
    }
    let size: usize = buf.getattr("size")?.extract()?;
    if size == 0 {
        return Ok(&[]);
    }
    let address: usize = buf.getattr("address")?.extract()?;
    // SAFETY: a CPU pyarrow.Buffer owns `size` readable bytes at `address`
    // for its lifetime, which outlives the returned borrow of `buf`; Arrow
    // buffers are immutable once built.
    Ok(unsafe { std::slice::from_raw_parts(address as *const u8, size) })
}

/// One chunk of an Arrow string column: rows `start..start+len` of the
/// offsets (i32, or i64 for large_string) into the data buffer.
struct StringRows<'b> {
    offsets: &'b [u8],
    data: &'b [u8],
    start: usize,
    len: usize,
    wide: bool,
}

impl<'b> StringRows<'b> {
    fn offset(&self, i: usize) -> Option<usize> {
        let w = if self.wide { 8 } else { 4 };
        let b = self.offsets.get((self.start + i) * w..(self.start + i + 1) * w)?;
        let v = if self.wide { i64::from_le_bytes(b.try_into().ok()?) } else { i32::from_le_bytes(b.try_into().ok()?) as i64 };
        usize::try_from(v).ok()
    }

    /// The rows' bytes and the end of each row in them.
    fn bytes_and_ends(&self) -> PyResult<(&'b [u8], Vec<usize>)> {
        let bad = || to_pyerr(Error::input("Arrow string column: offsets out of range (corrupt data)"));
        let first = self.offset(0).ok_or_else(bad)?;
        let mut ends = Vec::with_capacity(self.len);
        let mut last = first;
        for i in 1..=self.len {
            let o = self.offset(i).ok_or_else(bad)?;
            if o < last || o > self.data.len() {
                return Err(bad());
            }
            ends.push(o - first);
            last = o;
        }
        Ok((&self.data[first..last], ends))
    }
}

fn string_rows<'b>(offsets: &'b Bound<'_, PyAny>, data: &'b Bound<'_, PyAny>, start: usize, len: usize, wide: bool) -> PyResult<StringRows<'b>> {
    Ok(StringRows { offsets: buffer_bytes(offsets)?, data: buffer_bytes(data)?, start, len, wide })
}

/// One batch from Python: where it comes from (for errors), the number of
/// its first row, the string rows, their language ids (u16 buffer and
/// start) and the rows Python skipped as bad records.
type Batch<'py> = (String, u64, Bound<'py, PyAny>, Bound<'py, PyAny>, usize, usize, bool, Option<(Bound<'py, PyAny>, usize)>, u64);

/// Batches of Arrow string rows from Python (`bpeforge._arrow` makes
/// them) as a source of the core's pipelines; what Python raised while
/// pulling them is kept in `error`, to be raised as it is.
struct ArrowBatches<'py> {
    iter: Bound<'py, PyIterator>,
    /// Each input's path and the text bytes expected in it (`Source::files`).
    files: Vec<(String, u64)>,
    skipped: u64,
    error: Option<PyErr>,
}

impl<'py> ArrowBatches<'py> {
    fn new(batches: &Bound<'py, PyAny>, files: Vec<(String, u64)>) -> PyResult<Self> {
        Ok(ArrowBatches { iter: batches.try_iter()?, files, skipped: 0, error: None })
    }

    /// The call's result: what Python raised while pulling wins.
    fn result<T>(&mut self, result: Result<T, Error>) -> PyResult<Result<T, Error>> {
        match (result, self.error.take()) {
            (Err(_), Some(e)) => Err(e),
            (result, _) => Ok(result),
        }
    }
}

impl Source for ArrowBatches<'_> {
    fn next_chunk(&mut self, _: &mut dyn Observer) -> Result<Option<Chunk>, Error> {
        let Some(item) = self.iter.next() else { return Ok(None) };
        match item.and_then(|b| b.extract::<Batch>()).and_then(chunk_of) {
            Ok((chunk, skipped)) => {
                self.skipped += skipped;
                Ok(Some(chunk))
            }
            Err(e) => {
                self.error = Some(e);
                Err(Error::input("reading the Arrow data failed"))
            }
        }
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn files(&self) -> Vec<(String, u64)> {
        self.files.clone()
    }
}

/// Trains on batches of Arrow string rows (`ArrowBatches`): counting
/// pulls batches under the GIL while the workers count earlier ones, the
/// merge loop runs without it. `languages`: each language's name in id
/// order and its row count, read by Python in a first pass over the
/// language column (`lang_field`). `files`: each input's path and
/// expected text bytes, for the progress line.
#[pyfunction]
#[pyo3(signature = (batches, settings, progress, inputs, languages=None, files=None))]
pub fn train_arrow(
    py: Python<'_>,
    batches: &Bound<'_, PyAny>,
    settings: &TrainSettings,
    progress: &Bound<'_, PyAny>,
    inputs: Vec<String>,
    languages: Option<(Vec<String>, Vec<u64>)>,
    files: Option<Vec<(String, u64)>>,
) -> PyResult<NativeTokenizer> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let mut source = ArrowBatches::new(batches, files.unwrap_or_default())?;
    let counted = Fed::count(&mut source, languages, config, observer.engine());
    let counted = match source.result(counted)? {
        Ok(c) => c,
        Err(e) => return finish(Err(e), observer),
    };
    let result = py.detach(|| TrainOn::Fed { fed: counted, inputs: &inputs }.train(config, observer.engine()));
    NativeTokenizer::from_model(finish(result, observer)?)
}

/// Counts batches of Arrow string rows as one shard of a distributed run
/// (`bpeforge.distributed`): the table serialized, and the UTF-8 bytes of
/// each language's texts (with `languages`, as in `train_arrow`).
#[pyfunction]
#[pyo3(signature = (batches, settings, progress, languages=None))]
pub fn count_arrow_shard<'py>(
    py: Python<'py>,
    batches: &Bound<'_, PyAny>,
    settings: &TrainSettings,
    progress: &Bound<'_, PyAny>,
    languages: Option<(Vec<String>, Vec<u64>)>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<u64>)> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let mut source = ArrowBatches::new(batches, Vec::new())?;
    let counted = CountOf::Source { source: &mut source, languages }.count(config, observer.engine());
    let counted = source.result(counted)?;
    // Counts that spilled are written from their runs (see `shards::wire_bytes`).
    let mut counts = finish(counted, observer)?;
    let lang_bytes = std::mem::take(&mut counts.lang_bytes);
    let len = py.detach(|| counts.wire_len(config)).map_err(to_pyerr)?;
    Ok((wire_bytes(py, counts, len)?, lang_bytes))
}

/// A batch as a chunk (its bytes copied once, with its rows' language ids),
/// and the rows Python skipped.
fn chunk_of(batch: Batch<'_>) -> PyResult<(Chunk, u64)> {
    let (source, first_row, offsets, data, start, len, wide, langs, skipped) = batch;
    let rows = string_rows(&offsets, &data, start, len, wide)?;
    let (bytes, ends) = rows.bytes_and_ends()?;
    let mut tags = Vec::new();
    if let Some((buf, at)) = langs {
        let raw = buffer_bytes(&buf)?;
        let raw = raw.get(at * 2..(at + len) * 2).ok_or_else(|| to_pyerr(Error::input("language ids out of range")))?;
        tags = raw.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
    }
    let chunk = Chunk { data: bytes.to_vec(), layout: Layout::Ends(ends), source: Arc::from(source), first_line: first_row, langs: tags };
    Ok((chunk, skipped))
}

/// Encodes Arrow string rows; returns the ids (little-endian u32) and the
/// row offsets into them (little-endian i64, one per row + 1), ready to
/// become an Arrow list column without a Python object per row.
#[pyfunction]
#[pyo3(signature = (tok, offsets, data, start, length, wide, threads=None, allowed=None, disallowed=None))]
#[allow(clippy::too_many_arguments)]
pub fn encode_arrow<'py>(
    py: Python<'py>,
    tok: &NativeTokenizer,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    start: usize,
    length: usize,
    wide: bool,
    threads: Option<usize>,
    allowed: Option<Vec<usize>>,
    disallowed: Option<Vec<usize>>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let rule = specials_rule(&tok.enc, allowed, disallowed)?;
    let threads = check_threads(threads)?;
    let rows = string_rows(offsets, data, start, length, wide)?;
    let (bytes, ends) = rows.bytes_and_ends()?;
    let mut texts = Vec::with_capacity(ends.len());
    let mut begin = 0;
    for &end in &ends {
        texts.push(&bytes[begin..end]);
        begin = end;
    }
    let (ids, offs) = py.detach(|| tok.enc.encode_batch_flat(&texts, &rule, threads)).map_err(to_pyerr)?;
    let id_bytes: Vec<u8> = ids.iter().flat_map(|x| x.to_le_bytes()).collect();
    let off_bytes: Vec<u8> = offs.iter().flat_map(|&x| (x as i64).to_le_bytes()).collect();
    Ok((PyBytes::new(py, &id_bytes), PyBytes::new(py, &off_bytes)))
}

/// Encodes batches of Arrow string rows (`bpeforge._arrow` makes them from
/// Parquet/Arrow files) into `dst` as `encode_file` does for text files:
/// row `i` of the output is row `i` of the input. Returns (rows, tokens,
/// bytes, seconds, id_bytes).
#[pyfunction]
#[pyo3(signature = (tok, batches, dst, format, threads=None, allowed=None, disallowed=None, progress=None, total=None))]
#[allow(clippy::too_many_arguments)]
pub fn encode_arrow_file(
    py: Python<'_>,
    tok: &NativeTokenizer,
    batches: &Bound<'_, PyAny>,
    dst: PathBuf,
    format: &str,
    threads: Option<usize>,
    allowed: Option<Vec<usize>>,
    disallowed: Option<Vec<usize>>,
    progress: Option<&Bound<'_, PyAny>>,
    total: Option<u64>,
) -> PyResult<(u64, u64, u64, f64, usize)> {
    let rule = specials_rule(&tok.enc, allowed, disallowed)?;
    let format = IdFormat::parse(format).map_err(to_pyerr)?;
    let threads = check_threads(threads)?;
    let mut observer = PyObserver::new(&progress.cloned().unwrap_or_else(|| PyString::new(py, "off").into_any()))?;
    // Batches are pulled under the GIL, as for training from Arrow data;
    // bad rows were refused in Python (a null text is an error here).
    let mut source = ArrowBatches::new(batches, Vec::new())?;
    let result = EncodeFrom::Source { source: &mut source, total }.encode(&tok.enc, &dst, format, &rule, threads, observer.engine());
    let result = source.result(result)?;
    let s = finish(result, observer)?;
    Ok((s.lines, s.tokens, s.bytes, s.seconds, s.id_bytes))
}
