//! Streaming a corpus of any size into ids: text lines, `.npy` or raw binary.
//!
//! Lines are read in chunks of a few MiB (plain or compressed input) on a
//! reader thread, the chunks' lines are encoded in blocks by one set of
//! threads for the whole input, and the ids are written in input order, so
//! memory stays bounded by a few chunks whatever the corpus size.
//! The same loop encodes chunks from elsewhere (`encode_chunks`: Arrow
//! rows from the Python bindings).
//! Outputs go to temporary files beside the destination and are renamed into
//! place only when everything succeeded: a failed run leaves earlier outputs
//! intact and no partial file behind.
//!
//! Formats:
//! * `ids`: one line of space-separated ids per input line.
//! * `npy`: a 1-D `.npy` array of all ids (uint16 when the vocabulary fits,
//!   else uint32), plus `<dst>.offsets.npy`: int64 offsets, one per line + 1,
//!   so line `i` is `ids[offsets[i]:offsets[i+1]]`.
//! * `bin`: the same ids as raw little-endian uint16/uint32 (nanoGPT style),
//!   with the same `.offsets.npy` beside it.

use super::batch::{BLOCK_BYTES, BLOCK_TEXTS};
use super::pool::Pooled;
use super::{Cache, Encoder, Specials};
use crate::atomic::{persist, temp_beside};
use crate::error::{Error, Result};
use crate::input::fields::{FieldSpec, Fields, OnBadRecord};
use crate::input::{read_chunks, total_size, Chunk, TextMode};
use crate::model::Scheme;
use crate::observe::{CountProgress, EncodeStats, Observer, Silent};
use crate::source::Source;
use crate::ordered::Deliver;
use std::borrow::Cow;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdFormat {
    Ids,
    Npy,
    Bin,
}

impl IdFormat {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "ids" | "text" | "txt" => Ok(Self::Ids),
            "npy" => Ok(Self::Npy),
            "bin" => Ok(Self::Bin),
            other => Err(Error::parameter(format!("format must be \"ids\", \"npy\" or \"bin\", got {other:?}"))),
        }
    }
}

/// The `.offsets.npy` file that goes with a `npy`/`bin` output.
pub fn offsets_path(dst: &Path) -> PathBuf {
    let mut s = dst.as_os_str().to_owned();
    s.push(".offsets.npy");
    PathBuf::from(s)
}

/// A `.npy` file written as a stream: a fixed-size header whose shape is
/// filled in when the length is known.
struct NpyStream {
    file: BufWriter<tempfile::NamedTempFile>,
    descr: &'static str,
    count: u64,
}

const NPY_HEADER: usize = 128;

fn npy_header(descr: &str, count: u64) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({count},), }}");
    let mut h = Vec::with_capacity(NPY_HEADER);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    let len = NPY_HEADER - 10;
    h.extend_from_slice(&(len as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    while h.len() < NPY_HEADER - 1 {
        h.push(b' ');
    }
    h.push(b'\n');
    h
}

impl NpyStream {
    fn new(tmp: tempfile::NamedTempFile, descr: &'static str) -> std::io::Result<Self> {
        let mut file = BufWriter::with_capacity(1 << 20, tmp);
        file.write_all(&npy_header(descr, 0))?;
        Ok(NpyStream { file, descr, count: 0 })
    }
    fn finish(self) -> std::io::Result<tempfile::NamedTempFile> {
        let mut tmp = self.file.into_inner().map_err(|e| e.into_error())?;
        tmp.seek(SeekFrom::Start(0))?;
        tmp.write_all(&npy_header(self.descr, self.count))?;
        tmp.as_file().sync_all()?;
        Ok(tmp)
    }
}

/// Encodes every line of `src` into `dst` (with `text_field`, the text of
/// each line is that field of its JSON object; a blank line is an empty
/// text). A reader thread reads (and decompresses) the input a few chunks
/// ahead of the encoding threads.
#[allow(clippy::too_many_arguments)]
pub fn encode_file(
    enc: &Encoder,
    src: &[PathBuf],
    dst: &Path,
    format: IdFormat,
    specials: &Specials,
    threads: usize,
    text_field: Option<&str>,
    observer: &mut dyn Observer,
) -> Result<EncodeStats> {
    let fields = match text_field {
        Some(f) => Some(Fields { spec: FieldSpec::Json(Fields::json_path("text_field", f)?), on_bad_record: OnBadRecord::Error, lang: None }),
        None => None,
    };
    encode_lines(enc, src, dst, format, specials, threads, fields.as_ref(), observer)
}

/// `encode_file` with the fields (JSON or one column) of each line.
#[allow(clippy::too_many_arguments)]
fn encode_lines(
    enc: &Encoder,
    src: &[PathBuf],
    dst: &Path,
    format: IdFormat,
    specials: &Specials,
    threads: usize,
    fields: Option<&Fields>,
    observer: &mut dyn Observer,
) -> Result<EncodeStats> {
    if let Some(FieldSpec::Columns(c)) = fields.map(|f| &f.spec) {
        if c.len() != 1 {
            return Err(Error::parameter("encoding reads one text per line: give one column"));
        }
    }
    let mode = fields.map_or(TextMode::Lines, |f| TextMode::Fields(f.clone()));
    let total = total_size(src)?;
    let raw = Arc::new(AtomicU64::new(0));
    let read = raw.clone();
    std::thread::scope(|s| {
        let (chunks, received) = std::sync::mpsc::sync_channel::<Result<Chunk>>(CHUNKS_AHEAD);
        s.spawn(move || {
            // A failed send means the encoding stopped (its error wins); a
            // panic while reading becomes an error, as on the workers.
            let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                read_chunks(src, &mode, read, &mut |chunk| chunks.send(Ok(chunk)).map_err(|_| Error::interrupted()))
            }));
            if let Err(e) = sent.unwrap_or_else(|_| Err(crate::util::worker_crashed())) {
                let _ = chunks.send(Err(e));
            }
        });
        let feed = move |sink: &mut dyn FnMut(Chunk) -> Result<()>| received.into_iter().try_for_each(|chunk| sink(chunk?));
        encode_chunks(enc, dst, format, specials, threads, fields, observer, (raw, Some(total)), Box::new(feed))
    })
}

/// Chunks read ahead of the encoding (each `input::CHUNK_SIZE`): enough
/// that decompressing the next one never leaves the threads without text.
const CHUNKS_AHEAD: usize = 2;

/// Hands `encode_chunks` the chunks to encode, in output order.
type ChunkFeed<'f> = dyn FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()> + 'f;

/// Encodes the texts of the chunks `feed` gives (files, or a `Source`'s)
/// into `dst`; `progress` is the input bytes read so far (the feed adds to
/// it) and their total if known.
///
/// Each chunk is cut into blocks of lines, and one set of `threads` threads
/// encodes the blocks of all chunks as one ordered stream
/// (`crate::ordered::stream`): the threads are never restarted between
/// chunks, the feed reads the next chunk while they work, and the calling
/// thread writes each block's ids, rendered by the thread that encoded it,
/// in input order.
#[allow(clippy::too_many_arguments)]
fn encode_chunks(
    enc: &Encoder,
    dst: &Path,
    format: IdFormat,
    specials: &Specials,
    threads: usize,
    fields: Option<&Fields>,
    observer: &mut dyn Observer,
    progress: (Arc<AtomicU64>, Option<u64>),
    feed: Box<ChunkFeed<'_>>,
) -> Result<EncodeStats> {
    let wide = enc.vocab_size() > 1 << 16;
    let out = Output::create(dst, format, wide)?;
    let mut writer = Writer { out, observer, raw: progress.0, total: progress.1, start: Instant::now(), last_poll: 0.0 };
    let work = |slice: &Slice, cache: &mut Pooled<'_>| encode_slice(enc, slice, specials, fields, format, wide, cache);
    crate::ordered::stream(threads, &|| enc.batch_cache(), &work, |s| {
        feed(&mut |chunk| cut(chunk, &mut |slice| s.push(slice, &mut writer)))?;
        s.finish(&mut writer)
    })?;
    let Writer { out, observer, start, .. } = writer;
    let mut stats = out.persist(dst)?;
    stats.seconds = start.elapsed().as_secs_f64();
    observer.encoded(&stats);
    Ok(stats)
}

/// Encodes the chunks of `source` into `dst` as `encode_file` does for
/// text files: text `i` of the output is text `i` of the input. `total`:
/// the input's bytes, if known, for the progress. The source is pulled on
/// the calling thread between the blocks it writes (the observer is then
/// the writer's: the source gets none to poll).
#[allow(clippy::too_many_arguments)]
pub fn encode_source(
    enc: &Encoder,
    dst: &Path,
    format: IdFormat,
    specials: &Specials,
    threads: usize,
    observer: &mut dyn Observer,
    source: &mut dyn Source,
    total: Option<u64>,
) -> Result<EncodeStats> {
    let read = Arc::new(AtomicU64::new(0));
    let counter = read.clone();
    let feed = move |sink: &mut dyn FnMut(Chunk) -> Result<()>| {
        while let Some(chunk) = source.next_chunk(&mut Silent)? {
            counter.fetch_add(chunk.data.len() as u64, Ordering::Relaxed);
            sink(chunk)?;
        }
        Ok(())
    };
    encode_chunks(enc, dst, format, specials, threads, None, observer, (read, total), Box::new(feed))
}

/// A block of a chunk's texts: their byte ranges in `chunk.data`, the first
/// on line `first_line`.
struct Slice {
    chunk: Arc<Chunk>,
    spans: Vec<(usize, usize)>,
    first_line: u64,
}

/// Cuts `chunk` into blocks of about `batch::BLOCK_BYTES` of text.
fn cut(chunk: Chunk, push: &mut dyn FnMut(Slice) -> Result<()>) -> Result<()> {
    let mut spans = Vec::new();
    chunk
        .for_each_text::<()>(&mut |t, at| {
            spans.push((at, at + t.len()));
            Ok(())
        })
        .ok();
    let (chunk, mut first) = (Arc::new(chunk), 0usize);
    while first < spans.len() {
        let (mut end, mut bytes) = (first, 0usize);
        while end < spans.len() && bytes < BLOCK_BYTES && end - first < BLOCK_TEXTS {
            bytes += spans[end].1 - spans[end].0;
            end += 1;
        }
        let first_line = chunk.first_line + first as u64;
        push(Slice { chunk: Arc::clone(&chunk), spans: spans[first..end].to_vec(), first_line })?;
        first = end;
    }
    Ok(())
}

/// A block's ids rendered in the output's format, and where each text's
/// ids end (counted from the block's first id).
struct Encoded {
    rendered: Vec<u8>,
    ends: Vec<u64>,
    text_bytes: u64,
}

/// Encodes one block (on any thread), each line's error naming its line.
fn encode_slice(
    enc: &Encoder,
    slice: &Slice,
    specials: &Specials,
    fields: Option<&Fields>,
    format: IdFormat,
    wide: bool,
    cache: &mut Cache,
) -> Result<Encoded> {
    let data = &slice.chunk.data;
    let text_bytes: usize = slice.spans.iter().map(|(s, e)| e - s).sum();
    let (mut ids, mut ends) = (Vec::with_capacity(text_bytes / 3 + 1), Vec::with_capacity(slice.spans.len()));
    let mut found = Vec::with_capacity(1);
    let mut text_bytes = 0u64;
    let needs_utf8 = matches!(enc.model().scheme, Scheme::Chars { .. });
    for (k, &(s, e)) in slice.spans.iter().enumerate() {
        let line = &data[s..e];
        let at = || format!("{}, line {}", slice.chunk.source, slice.first_line + k as u64);
        let text = match fields {
            None if needs_utf8 => Cow::Borrowed(valid_utf8(line, at)?),
            None => Cow::Borrowed(line),
            Some(f) => {
                found.clear();
                f.texts(line, &mut found)
                    .map_err(|why| Error::input(format!("{}: {why} (every line needs its text: one row of ids per line)", at())))?;
                found.pop().unwrap_or(Cow::Borrowed(&b""[..]))
            }
        };
        enc.encode_into(&text, specials, &mut ids, Some(cache)).map_err(|e| e.with_context(at()))?;
        text_bytes += text.len() as u64;
        ends.push(ids.len() as u64);
    }
    let rendered = match format {
        IdFormat::Ids => render_lines(&ids, &ends),
        IdFormat::Npy | IdFormat::Bin => render_ids(&ids, wide),
    };
    Ok(Encoded { rendered, ends, text_bytes })
}

/// A chars-scheme model's line: its characters are its symbols, so bytes
/// that are not UTF-8 have none and would be encoded as U+FFFD (or the
/// unknown token), losing them. Such a line is refused, as training
/// refuses it (a bytes-scheme model encodes any bytes, exactly). JSON
/// fields are checked by the JSON reader.
fn valid_utf8(line: &[u8], at: impl Fn() -> String) -> Result<&[u8]> {
    match std::str::from_utf8(line) {
        Ok(_) => Ok(line),
        Err(e) => Err(Error::input(format!(
            "{}: invalid UTF-8 (byte 0x{:02x} at byte {} of the line); a chars-scheme model encodes valid UTF-8 only, as it trains on it — fix or drop the line (a bytes-scheme model encodes any bytes exactly)",
            at(),
            line[e.valid_up_to()],
            e.valid_up_to() + 1
        ))),
    }
}

/// The temporary outputs (renamed into place by `persist`) and what went
/// into them so far.
struct Output {
    sink: Sink,
    stats: EncodeStats,
}

enum Sink {
    Text(BufWriter<tempfile::NamedTempFile>),
    Npy(NpyStream, NpyStream),
    Bin(BufWriter<tempfile::NamedTempFile>, NpyStream),
}

fn write_error(dst: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::output(format!("cannot write {}: {e}", dst.display()))
}

impl Output {
    fn create(dst: &Path, format: IdFormat, wide: bool) -> Result<Self> {
        let werr = write_error(dst);
        if dst.is_dir() {
            return Err(Error::output(format!("cannot write {}: it is a directory", dst.display())));
        }
        let mut sink = match format {
            IdFormat::Ids => Sink::Text(BufWriter::with_capacity(1 << 20, temp_beside(dst)?)),
            IdFormat::Npy => Sink::Npy(
                NpyStream::new(temp_beside(dst)?, if wide { "<u4" } else { "<u2" }).map_err(&werr)?,
                NpyStream::new(temp_beside(&offsets_path(dst))?, "<i8").map_err(&werr)?,
            ),
            IdFormat::Bin => Sink::Bin(
                BufWriter::with_capacity(1 << 20, temp_beside(dst)?),
                NpyStream::new(temp_beside(&offsets_path(dst))?, "<i8").map_err(&werr)?,
            ),
        };
        if let Sink::Npy(_, off) | Sink::Bin(_, off) = &mut sink {
            off.file.write_all(&0i64.to_le_bytes()).map_err(&werr)?;
            off.count = 1;
        }
        let id_bytes = if wide { 4 } else { 2 };
        Ok(Output { sink, stats: EncodeStats { id_bytes, ..Default::default() } })
    }

    /// Appends one block's ids (and their offsets).
    fn write(&mut self, block: &Encoded) -> std::io::Result<()> {
        let base = self.stats.tokens;
        let tokens = block.ends.last().copied().unwrap_or(0);
        match &mut self.sink {
            Sink::Text(w) => w.write_all(&block.rendered)?,
            Sink::Npy(NpyStream { file, count, .. }, off) => {
                file.write_all(&block.rendered)?;
                *count += tokens;
                write_offsets(off, &block.ends, base)?;
            }
            Sink::Bin(file, off) => {
                file.write_all(&block.rendered)?;
                write_offsets(off, &block.ends, base)?;
            }
        }
        self.stats.lines += block.ends.len() as u64;
        self.stats.bytes += block.text_bytes;
        self.stats.tokens += tokens;
        Ok(())
    }

    /// Renames the outputs into place (the offsets first).
    fn persist(self, dst: &Path) -> Result<EncodeStats> {
        let werr = write_error(dst);
        match self.sink {
            Sink::Text(w) => {
                let tmp = w.into_inner().map_err(|e| werr(e.into_error()))?;
                tmp.as_file().sync_all().map_err(&werr)?;
                persist(tmp, dst)?;
            }
            Sink::Npy(ids, off) => {
                let ids = ids.finish().map_err(&werr)?;
                let off = off.finish().map_err(&werr)?;
                persist(off, &offsets_path(dst))?;
                persist(ids, dst)?;
            }
            Sink::Bin(w, off) => {
                let tmp = w.into_inner().map_err(|e| werr(e.into_error()))?;
                tmp.as_file().sync_all().map_err(&werr)?;
                let off = off.finish().map_err(&werr)?;
                persist(off, &offsets_path(dst))?;
                persist(tmp, dst)?;
            }
        }
        Ok(self.stats)
    }
}

/// The calling thread's side of `encode_chunks`: writes each block, in
/// order, and reports progress (and asks whether to stop) every 50 ms.
struct Writer<'w> {
    out: Output,
    observer: &'w mut dyn Observer,
    raw: Arc<AtomicU64>,
    total: Option<u64>,
    start: Instant,
    last_poll: f64,
}

impl Deliver<Slice, Encoded> for Writer<'_> {
    fn deliver(&mut self, _: Slice, block: Encoded) -> Result<()> {
        self.out.write(&block).map_err(|e| Error::output(format!("cannot write the output: {e}")))?;
        let t = self.start.elapsed().as_secs_f64();
        if t - self.last_poll >= 0.05 {
            self.last_poll = t;
            if self.observer.should_stop() {
                return Err(Error::interrupted());
            }
            let done = self.raw.load(Ordering::Relaxed);
            self.observer.encoding(&CountProgress { raw_bytes_done: done, raw_bytes_total: self.total, elapsed: t, file: None });
        }
        Ok(())
    }
    fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T {
        f()
    }
}

/// Ids as little-endian uint16 (`wide`: uint32), as the `.npy`/`.bin` hold them.
fn render_ids(ids: &[u32], wide: bool) -> Vec<u8> {
    let mut buf = Vec::with_capacity(ids.len() * 4);
    if wide {
        for &id in ids {
            buf.extend_from_slice(&id.to_le_bytes());
        }
    } else {
        for &id in ids {
            buf.extend_from_slice(&(id as u16).to_le_bytes());
        }
    }
    buf
}

/// One line of space-separated ids per text (`ends`: where each text's ids end).
fn render_lines(ids: &[u32], ends: &[u64]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(ids.len() * 7 + ends.len());
    let mut start = 0usize;
    for &end in ends {
        for (n, &id) in ids[start..end as usize].iter().enumerate() {
            if n > 0 {
                buf.push(b' ');
            }
            push_decimal(&mut buf, id);
        }
        buf.push(b'\n');
        start = end as usize;
    }
    buf
}

fn push_decimal(buf: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

fn write_offsets(off: &mut NpyStream, ends: &[u64], base: u64) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(ends.len() * 8);
    for &e in ends {
        buf.extend_from_slice(&((e + base) as i64).to_le_bytes());
    }
    off.count += ends.len() as u64;
    off.file.write_all(&buf)
}
