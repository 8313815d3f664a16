//! `NativeTokenizer`: a trained model, ready to encode and decode; the
//! Python `Tokenizer` wraps one.

use crate::args::{check_dropout, check_threads, specials_rule};
use crate::errors::to_pyerr;
use crate::progress::{finish, PyObserver};
use crate::texts::Texts;
use crate::{ints, lists};
use bpeforge_core::api::delivery::PackedIds;
use bpeforge_core::api::{Cache, EncodeFrom, Encoder, Error, IdFormat, Model, Specials, LISTS};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A trained model, ready to encode and decode.
#[pyclass(frozen, module = "bpeforge._native")]
pub(crate) struct NativeTokenizer {
    pub(crate) enc: Arc<Encoder>,
    /// `encode`'s piece cache, made at its first call.
    cache: Mutex<Option<Cache>>,
    /// The bound of that cache's memory in bytes (`DEFAULT_CACHE_BOUND`:
    /// the encoder's default; 0: no cache).
    cache_bound: std::sync::atomic::AtomicUsize,
    /// The Python ints of the ids returned so far (see `ints`).
    ints: ints::IdInts,
}

/// Texts above this size are encoded with the GIL released.
const DETACH_BYTES: usize = 8192;

#[pymethods]
impl NativeTokenizer {
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let model = py.detach(|| Model::load(&path)).map_err(to_pyerr)?;
        Self::from_model(model)
    }

    #[staticmethod]
    fn from_json(py: Python<'_>, json: &[u8]) -> PyResult<Self> {
        let enc = py.detach(|| Encoder::from_model_json(json)).map_err(to_pyerr)?;
        Ok(Self::from_encoder(enc))
    }

    /// The encoder as a snapshot (what a pickle carries): loads many times
    /// faster than the model JSON, which it contains.
    fn to_snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let data = py.detach(|| self.enc.to_snapshot()).map_err(to_pyerr)?;
        Ok(PyBytes::new(py, &data))
    }

    #[staticmethod]
    fn from_snapshot(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let enc = py.detach(|| Encoder::from_snapshot(data)).map_err(to_pyerr)?;
        Ok(Self::from_encoder(enc))
    }

    /// The most memory `encode`'s piece cache may hold, in bytes (0: none).
    #[getter]
    fn encode_cache_bytes(&self) -> usize {
        match self.cache_bound.load(std::sync::atomic::Ordering::Relaxed) {
            DEFAULT_CACHE_BOUND => self.enc.default_cache_bytes(),
            0 => 0,
            bytes => self.enc.new_cache_bounded(bytes).max_bytes(),
        }
    }

    /// Bounds `encode`'s piece cache to `max_bytes` (None: the default;
    /// 0: no cache); what it held is dropped.
    #[pyo3(signature = (max_bytes))]
    fn set_encode_cache_bytes(&self, max_bytes: Option<usize>) -> PyResult<()> {
        let bound = match max_bytes {
            None => DEFAULT_CACHE_BOUND,
            Some(0) => 0,
            Some(b) if b < LISTS.min_cache_bytes => {
                return Err(to_pyerr(Error::parameter(format!(
                    "encode_cache_bytes must be 0 (no cache), None (the default) or at least {} bytes, got {b}",
                    LISTS.min_cache_bytes
                ))))
            }
            Some(b) => b.min(DEFAULT_CACHE_BOUND - 1),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        self.cache_bound.store(bound, std::sync::atomic::Ordering::Relaxed);
        *cache = None;
        Ok(())
    }

    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.enc.model().to_json().map_err(to_pyerr)?;
        Ok(PyBytes::new(py, &data))
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.enc.model().save(&path)).map_err(to_pyerr)
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.enc.vocab_size()
    }

    #[getter]
    fn scheme(&self) -> &'static str {
        self.enc.model().scheme.name()
    }

    #[getter]
    fn pretokenizer(&self) -> String {
        self.enc.model().pretokenizer.name().to_string()
    }

    #[getter]
    fn special_tokens(&self) -> Vec<String> {
        self.enc.special_tokens().to_vec()
    }

    /// The merges as (left bytes, right bytes), in order.
    fn merges<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        self.enc.merge_bytes().into_iter().map(|(a, b)| (PyBytes::new(py, a), PyBytes::new(py, b))).collect()
    }

    #[getter]
    fn merge_counts(&self) -> Vec<u64> {
        self.enc.model().merge_counts.clone()
    }

    #[getter]
    fn metadata_json(&self) -> String {
        self.enc.model().metadata.to_string()
    }

    #[getter]
    fn scheme_json(&self) -> String {
        serde_json::to_string(&self.enc.model().scheme).unwrap_or_default()
    }

    #[getter]
    fn alphabet(&self) -> Option<Vec<String>> {
        self.enc.model().alphabet.clone()
    }

    fn id_to_token<'py>(&self, py: Python<'py>, id: i64) -> Option<Bound<'py, PyBytes>> {
        if id < 0 || id > u32::MAX as i64 {
            return None;
        }
        self.enc.id_to_token(id as u32).map(|b| PyBytes::new(py, b))
    }

    fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        self.enc.token_to_id(token)
    }

    /// All tokens' bytes, by id.
    fn tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items: Vec<Bound<'py, PyBytes>> =
            (0..self.enc.vocab_size() as u32).map(|i| PyBytes::new(py, self.enc.id_to_token(i).unwrap_or(b""))).collect();
        PyList::new(py, items)
    }

    #[pyo3(signature = (text, allowed=None, disallowed=None, dropout=None, seed=0))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed: Option<Vec<usize>>,
        disallowed: Option<Vec<usize>>,
        dropout: Option<f64>,
        seed: u64,
    ) -> PyResult<Bound<'py, PyList>> {
        let rule = specials_rule(&self.enc, allowed, disallowed)?;
        if let Some(p) = check_dropout(dropout)? {
            let ids = py.detach(|| self.enc.encode_dropout(text.as_bytes(), &rule, p, seed)).map_err(to_pyerr)?;
            return self.ints.lock(self.enc.vocab_size()).list(py, &ids);
        }
        self.encode_exact(py, text, &rule)
    }

    #[pyo3(signature = (texts, threads=None, allowed=None, disallowed=None, dropout=None, seed=0, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threads: Option<usize>,
        allowed: Option<Vec<usize>>,
        disallowed: Option<Vec<usize>>,
        dropout: Option<f64>,
        seed: u64,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let rule = specials_rule(&self.enc, allowed, disallowed)?;
        let texts = Texts::new(texts)?;
        let threads = check_threads(threads)?;
        let dropout = check_dropout(dropout)?.map(|p| (p, seed));
        let mut observer = progress.map(PyObserver::new).transpose()?;
        let sink = lists::Lists::new(py, &self.enc, &self.ints, texts.len())?;
        lists::encode_texts(py, &self.enc, &texts, sink, &rule, threads, dropout, observer.as_mut())?.into_list()
    }

    /// Streams text files into ids; returns (lines, tokens, bytes, seconds, id_bytes).
    /// `text_field`: JSON lines, each line's text is this field.
    #[pyo3(signature = (src, dst, format, threads=None, allowed=None, disallowed=None, progress=None, text_field=None))]
    #[allow(clippy::too_many_arguments)]
    fn encode_file(
        &self,
        py: Python<'_>,
        src: Vec<PathBuf>,
        dst: PathBuf,
        format: &str,
        threads: Option<usize>,
        allowed: Option<Vec<usize>>,
        disallowed: Option<Vec<usize>>,
        progress: Option<&Bound<'_, PyAny>>,
        text_field: Option<&str>,
    ) -> PyResult<(u64, u64, u64, f64, usize)> {
        let rule = specials_rule(&self.enc, allowed, disallowed)?;
        let format = IdFormat::parse(format).map_err(to_pyerr)?;
        let threads = check_threads(threads)?;
        let mut observer = PyObserver::new(&progress.cloned().unwrap_or_else(|| PyString::new(py, "off").into_any()))?;
        let result = py.detach(|| EncodeFrom::Files { paths: &src, text_field }.encode(&self.enc, &dst, format, &rule, threads, observer.engine()));
        let s = finish(result, observer)?;
        Ok((s.lines, s.tokens, s.bytes, s.seconds, s.id_bytes))
    }

    /// The ids as one flat little-endian buffer of `id_bytes` (2 or 4) per
    /// id and `len(texts) + 1` int64 offsets, for numpy; bytearrays, so the
    /// arrays made on them are writable without a copy.
    #[pyo3(signature = (texts, threads=None, allowed=None, disallowed=None, progress=None))]
    fn encode_batch_flat<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threads: Option<usize>,
        allowed: Option<Vec<usize>>,
        disallowed: Option<Vec<usize>>,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyByteArray>, Bound<'py, PyByteArray>, usize)> {
        let rule = specials_rule(&self.enc, allowed, disallowed)?;
        let texts = Texts::new(texts)?;
        let threads = check_threads(threads)?;
        let mut observer = progress.map(PyObserver::new).transpose()?;
        let sink = PackedIds::new(&self.enc, texts.len());
        let PackedIds { ids, offsets, id_bytes, .. } = lists::encode_texts(py, &self.enc, &texts, sink, &rule, threads, None, observer.as_mut())?;
        Ok((PyByteArray::new(py, &ids), PyByteArray::new(py, &offsets), id_bytes))
    }

    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let ids = checked_ids(&ids)?;
        let out = self.enc.decode_bytes(&ids).map_err(to_pyerr)?;
        Ok(PyBytes::new(py, &out))
    }

    /// Decodes a little-endian u32 id buffer (e.g. a numpy array's bytes).
    fn decode_raw<'py>(&self, py: Python<'py>, ids: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        if ids.len() % 4 != 0 {
            return Err(to_pyerr(Error::parameter("raw ids must be a buffer of 4-byte integers")));
        }
        // Zero-copy when the buffer is aligned (the usual case for bytes).
        // SAFETY: u32 has no invalid bit patterns; align_to only yields a
        // middle slice of properly aligned, in-bounds u32 values.
        let (head, aligned, tail) = unsafe { ids.align_to::<u32>() };
        let owned;
        let ids: &[u32] = if head.is_empty() && tail.is_empty() && cfg!(target_endian = "little") {
            aligned
        } else {
            owned = raw_u32(ids)?;
            &owned
        };
        let out = py.detach(|| self.enc.decode_bytes(ids)).map_err(to_pyerr)?;
        Ok(PyBytes::new(py, &out))
    }

    #[pyo3(signature = (batch, threads=None))]
    fn decode_batch_bytes<'py>(&self, py: Python<'py>, batch: Vec<Vec<i64>>, threads: Option<usize>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let batch: Vec<Vec<u32>> = batch.iter().map(|ids| checked_ids(ids)).collect::<PyResult<_>>()?;
        let threads = check_threads(threads)?;
        let outs = py.detach(|| self.enc.decode_batch(&batch, threads)).map_err(to_pyerr)?;
        Ok(outs.iter().map(|o| PyBytes::new(py, o)).collect())
    }

    /// Decodes a flat little-endian u32 id buffer cut by i64 offsets.
    #[pyo3(signature = (ids, offsets, threads=None))]
    fn decode_batch_raw<'py>(&self, py: Python<'py>, ids: &[u8], offsets: &[u8], threads: Option<usize>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let ids = raw_u32(ids)?;
        if offsets.len() % 8 != 0 {
            return Err(to_pyerr(Error::parameter("offsets must be int64")));
        }
        let offs: Vec<i64> = offsets.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
        let mut batch = Vec::with_capacity(offs.len().saturating_sub(1));
        for w in offs.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a < 0 || b < a || b as usize > ids.len() {
                return Err(to_pyerr(Error::parameter(format!(
                    "offsets must be non-decreasing and within the {} ids (got {a}..{b})",
                    ids.len()
                ))));
            }
            batch.push(ids[a as usize..b as usize].to_vec());
        }
        let threads = check_threads(threads)?;
        let outs = py.detach(|| self.enc.decode_batch(&batch, threads)).map_err(to_pyerr)?;
        Ok(outs.iter().map(|o| PyBytes::new(py, o)).collect())
    }
}

/// Ids from Python ints, with a clear error for negative or huge values.
fn checked_ids(ids: &[i64]) -> PyResult<Vec<u32>> {
    ids.iter()
        .map(|&i| {
            u32::try_from(i).map_err(|_| to_pyerr(Error::parameter(format!("token id {i} is outside the vocabulary"))))
        })
        .collect()
}

fn raw_u32(ids: &[u8]) -> PyResult<Vec<u32>> {
    if ids.len() % 4 != 0 {
        return Err(to_pyerr(Error::parameter("raw ids must be a buffer of 4-byte integers")));
    }
    Ok(ids.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// `NativeTokenizer::cache_bound`'s value for the encoder's default bound.
const DEFAULT_CACHE_BOUND: usize = usize::MAX;

impl NativeTokenizer {
    pub(crate) fn from_model(model: Model) -> PyResult<Self> {
        Ok(Self::from_encoder(Encoder::new(model).map_err(to_pyerr)?))
    }

    fn from_encoder(enc: Encoder) -> Self {
        NativeTokenizer {
            enc: Arc::new(enc),
            cache: Mutex::new(None),
            cache_bound: std::sync::atomic::AtomicUsize::new(DEFAULT_CACHE_BOUND),
            ints: ints::IdInts::default(),
        }
    }

    /// `encode` without dropout: through the piece cache, as a list of ids.
    pub(crate) fn encode_exact<'py>(&self, py: Python<'py>, text: &str, rule: &Specials) -> PyResult<Bound<'py, PyList>> {
        // The cache is made (seeded: see `Encoder::new_cache`) at the first
        // call, so a tokenizer that never encodes holds none.
        let bound = self.cache_bound.load(std::sync::atomic::Ordering::Relaxed);
        let run = || match self.cache.try_lock() {
            Ok(_) if bound == 0 => self.enc.encode_str(text, rule, None),
            Ok(mut c) => {
                let cache = c.get_or_insert_with(|| match bound {
                    DEFAULT_CACHE_BOUND => self.enc.new_cache(),
                    bytes => self.enc.new_cache_bounded(bytes),
                });
                self.enc.encode_str(text, rule, Some(cache))
            }
            Err(_) => self.enc.encode_str(text, rule, None),
        };
        let result = if text.len() > DETACH_BYTES { py.detach(run) } else { run() };
        let ids = result.map_err(to_pyerr)?;
        self.ints.lock(self.enc.vocab_size()).list(py, &ids)
    }
}
