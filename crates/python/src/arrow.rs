//! Arrow string columns (Parquet, Arrow files, Hugging Face datasets) handed
//! to the engine without a Python object per row: Python passes each
//! column chunk's `pyarrow.Buffer`s (offsets and UTF-8 data), the bindings
//! read them in place and copy the rows' bytes once, into a chunk for the
//! counting workers or a batch for the encoder.

use crate::{finish, specials_rule, check_threads, to_pyerr, NativeTokenizer, PyObserver, TrainSettings};
use bpeforge_core::api::{LangSource, LanguageTable};
use bpeforge_core::api::Error;
use bpeforge_core::api::{encode_chunks, IdFormat};
use bpeforge_core::api::{Chunk, Layout};
use bpeforge_core::api::{CountProgress, FileProgress, Observer};
use bpeforge_core::api::{self, CountPacer, CountScope};
use bpeforge_core::api::{TrainConfig, ValidConfig};
use pyo3::exceptions::PyTypeError;
use std::time::Instant;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// The language table of an Arrow run: `languages` (names in id order and
/// their row counts, read by Python in a first pass over the language
/// column) for `lang_field`, else none.
fn arrow_languages(config: &TrainConfig, languages: Option<(Vec<String>, Vec<u64>)>) -> PyResult<Option<LanguageTable>> {
    match (&config.balance, languages) {
        (Some(b), Some((names, lines))) if matches!(b.source, LangSource::Field(_)) => {
            Ok(Some(LanguageTable::from_lines(names, lines, b.temperature).map_err(to_pyerr)?))
        }
        (None, None) => Ok(None),
        _ => Err(to_pyerr(Error::parameter("Arrow input balances languages by a column only (lang_field)"))),
    }
}

/// The files an Arrow run reads, for its progress line: each file's path and
/// the text bytes Python expects in it (from the Parquet metadata, or the
/// Arrow file's size), so the line names the file being read and has a total
/// and an ETA. A batch's source ("PATH, row group N") says which file it is.
struct ArrowFiles {
    files: Vec<(Arc<str>, u64)>,
    done: Vec<u64>,
    opened: Vec<Option<Instant>>,
    current: usize,
}

impl ArrowFiles {
    fn new(files: Vec<(String, u64)>) -> Self {
        let n = files.len();
        ArrowFiles { files: files.into_iter().map(|(p, b)| (Arc::from(p), b)).collect(), done: vec![0; n],
                     opened: vec![None; n], current: 0 }
    }

    fn add(&mut self, source: &str, bytes: u64) {
        let here = |(p, _): &(Arc<str>, u64)| source.len() > p.len() && source.starts_with(&**p)
            && source[p.len()..].starts_with(", ");
        if !self.files.get(self.current).is_some_and(here) {
            if let Some(i) = self.files.iter().position(here) {
                self.current = i;
            }
        }
        if let Some(done) = self.done.get_mut(self.current) {
            *done += bytes;
            self.opened[self.current].get_or_insert_with(Instant::now);
        }
    }

    /// `read` bytes so far at `elapsed` seconds, with the file being read.
    fn progress(&self, read: u64, elapsed: f64) -> CountProgress {
        if self.files.is_empty() {
            return CountProgress { raw_bytes_done: read, raw_bytes_total: None, elapsed, file: None };
        }
        // An estimate below what was read would show more done than total.
        let total: u64 = self.files.iter().zip(&self.done).map(|((_, t), d)| (*t).max(*d)).sum();
        let i = self.current;
        let file = FileProgress {
            path: self.files[i].0.clone(),
            index: i,
            files: self.files.len(),
            bytes_done: self.done[i],
            bytes_total: self.files[i].1.max(self.done[i]),
            elapsed: self.opened[i].map_or(0.0, |t| t.elapsed().as_secs_f64()),
        };
        CountProgress { raw_bytes_done: read, raw_bytes_total: Some(total), elapsed, file: Some(file) }
    }
}

/// Counts batches of Arrow string rows (`bpeforge._arrow` makes them): the
/// calling thread pulls batches under the GIL and copies each batch's bytes
/// once, while the workers count earlier batches. An error the batches
/// raised in Python is returned as it is.
fn count_arrow(
    batches: &Bound<'_, PyAny>,
    config: &ValidConfig,
    table: Option<&LanguageTable>,
    observer: &mut PyObserver,
    scope: CountScope,
    files: Vec<(String, u64)>,
) -> PyResult<Result<api::Counted, Error>> {
    let iter = batches.try_iter()?;
    let mut files = ArrowFiles::new(files);
    let watch = bpeforge_core::api::Stopwatch::start(bpeforge_core::api::threads_or_default(config.threads));
    let start = watch.instant();
    let mut py_error: Option<PyErr> = None;
    let feed = |sink: &mut dyn FnMut(Chunk) -> bpeforge_core::api::Result<()>, observer: &mut dyn Observer, lang_bytes: &mut [u64]| {
        let mut skipped = 0u64;
        let mut read = 0u64;
        let mut pacer = CountPacer::new(start);
        for item in iter {
            let pulled = item.and_then(|b| b.extract::<Batch>()).and_then(|b| chunk_of(b, lang_bytes));
            let (chunk, skip) = match pulled {
                Ok(c) => c,
                Err(e) => {
                    py_error = Some(e);
                    return Err(Error::input("reading the Arrow data failed"));
                }
            };
            skipped += skip;
            read += chunk.data.len() as u64;
            files.add(&chunk.source, chunk.data.len() as u64);
            if matches!(&chunk.layout, Layout::Ends(ends) if !ends.is_empty()) {
                sink(chunk)?;
            }
            pacer.poll(observer, |t| files.progress(read, t))?;
        }
        Ok(skipped)
    };
    let counted = api::count_fed(config, table, Vec::new(), watch, observer, scope, Box::new(feed));
    match (counted, py_error) {
        (Err(_), Some(e)) => Err(e),
        (counted, _) => Ok(counted),
    }
}

/// Trains on batches of Arrow string rows (see `count_arrow`); counting
/// pulls batches under the GIL, the merge loop runs without it.
/// `languages`: see `arrow_languages`. `files`: each input's path and
/// expected text bytes, for the progress line (`ArrowFiles`).
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
    let table = arrow_languages(config, languages)?;
    let counted = match count_arrow(batches, config, table.as_ref(), &mut observer, CountScope::Run, files.unwrap_or_default())? {
        Ok(c) => c,
        Err(e) => return finish(Err(e), observer),
    };
    let inputs = serde_json::json!(inputs);
    let result = py.detach(|| api::train_counted(counted, config, table.as_ref(), inputs, &mut observer));
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
    let table = arrow_languages(config, languages)?;
    let counted = count_arrow(batches, config, table.as_ref(), &mut observer, CountScope::Part, Vec::new())?;
    // Counts that spilled are written from their runs (see `shards::wire_bytes`).
    let (counts, lang_bytes) = finish(counted, observer)?.into_parts();
    let len = py.detach(|| counts.wire_len_within(config.memory_budget(), crate::shards::RETURNED_COPIES)).map_err(to_pyerr)?;
    Ok((crate::shards::wire_bytes(py, counts, len)?, lang_bytes))
}

/// A batch as a chunk (its bytes copied once), adding its texts' bytes to
/// their languages; and the rows Python skipped.
fn chunk_of(batch: Batch<'_>, lang_bytes: &mut [u64]) -> PyResult<(Chunk, u64)> {
    let (source, first_row, offsets, data, start, len, wide, langs, skipped) = batch;
    let rows = string_rows(&offsets, &data, start, len, wide)?;
    let (bytes, ends) = rows.bytes_and_ends()?;
    let mut tags = Vec::new();
    if let Some((buf, at)) = langs {
        let raw = buffer_bytes(&buf)?;
        let raw = raw.get(at * 2..(at + len) * 2).ok_or_else(|| to_pyerr(Error::input("language ids out of range")))?;
        tags = raw.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
        let mut begin = 0;
        for (&end, &tag) in ends.iter().zip(&tags) {
            let slot = lang_bytes.get_mut(tag as usize).ok_or_else(|| to_pyerr(Error::input(format!("language id {tag} out of range"))))?;
            *slot += (end - begin) as u64;
            begin = end;
        }
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
    let iter = batches.try_iter()?;
    let read = Arc::new(AtomicU64::new(0));
    let mut py_error: Option<PyErr> = None;
    let feed = |sink: &mut dyn FnMut(Chunk) -> bpeforge_core::api::Result<()>| {
        for item in iter {
            // Bad rows were refused in Python (a null text is an error here).
            match item.and_then(|b| b.extract::<Batch>()).and_then(|b| chunk_of(b, &mut [])) {
                Ok((chunk, _)) => {
                    read.fetch_add(chunk.data.len() as u64, Ordering::Relaxed);
                    sink(chunk)?;
                }
                Err(e) => {
                    py_error = Some(e);
                    return Err(Error::input("reading the Arrow data failed"));
                }
            }
        }
        Ok(())
    };
    // Batches are pulled under the GIL, as for training from Arrow data.
    let result = encode_chunks(&tok.enc, &dst, format, &rule, threads, None, &mut observer, (read.clone(), total), Box::new(feed));
    if let (Err(_), Some(e)) = (&result, py_error) {
        return Err(e);
    }
    let s = finish(result, observer)?;
    Ok((s.lines, s.tokens, s.bytes, s.seconds, s.id_bytes))
}
