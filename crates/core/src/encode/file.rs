//! Streaming a corpus of any size into ids: text lines, `.npy` or raw binary.
//!
//! Lines are read in chunks of a few MiB (plain or compressed input), each
//! chunk is encoded on all threads, and the ids are written in input order,
//! so memory stays bounded by the chunk size whatever the corpus size.
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

use super::{Encoder, Specials};
use crate::atomic::{persist, temp_beside};
use crate::error::{Error, Result};
use crate::fields::{FieldSpec, Fields};
use crate::input::{read_chunks, total_size, Chunk, TextMode};
use std::borrow::Cow;
use crate::observe::{CountProgress, EncodeStats, Observer};
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

/// Encodes every line of `src` into `dst` (with `fields`, the text of each
/// line is its JSON field or its one column; a blank line is an empty text).
#[allow(clippy::too_many_arguments)]
pub fn encode_file(
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
    let feed = move |sink: &mut dyn FnMut(Chunk) -> Result<()>| read_chunks(src, &mode, read, sink);
    encode_chunks(enc, dst, format, specials, threads, fields, observer, (raw, Some(total)), Box::new(feed))
}

/// Hands `encode_chunks` the chunks to encode, in output order.
pub type ChunkFeed<'f> = dyn FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()> + 'f;

/// Encodes the texts of the chunks `feed` gives (files, or Arrow rows from
/// the bindings) into `dst`; `progress` is the input bytes read so far (the
/// feed adds to it) and their total if known.
///
/// Longer than the usual 80 lines on purpose: one read -> encode -> write
/// loop whose state (the temporary outputs, the running offsets, counters
/// and progress) lives across every chunk; cut into parts it would be
/// passed around as a struct of exactly these locals.
#[allow(clippy::too_many_arguments)]
pub fn encode_chunks(
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
    let (raw, total) = progress;
    let werr = |e: std::io::Error| Error::output(format!("cannot write {}: {e}", dst.display()));
    if dst.is_dir() {
        return Err(Error::output(format!("cannot write {}: it is a directory", dst.display())));
    }
    let wide = enc.vocab_size() > 1 << 16;
    let id_bytes = if wide { 4 } else { 2 };
    let start = Instant::now();
    let mut stats = EncodeStats { id_bytes, ..Default::default() };

    enum Sink {
        Text(BufWriter<tempfile::NamedTempFile>),
        Npy(NpyStream, NpyStream),
        Bin(BufWriter<tempfile::NamedTempFile>, NpyStream),
    }
    let mut sink = match format {
        IdFormat::Ids => Sink::Text(BufWriter::with_capacity(1 << 20, temp_beside(dst)?)),
        IdFormat::Npy => Sink::Npy(
            NpyStream::new(temp_beside(dst)?, if wide { "<u4" } else { "<u2" }).map_err(werr)?,
            NpyStream::new(temp_beside(&offsets_path(dst))?, "<i8").map_err(werr)?,
        ),
        IdFormat::Bin => Sink::Bin(
            BufWriter::with_capacity(1 << 20, temp_beside(dst)?),
            NpyStream::new(temp_beside(&offsets_path(dst))?, "<i8").map_err(werr)?,
        ),
    };
    if let Sink::Npy(_, off) | Sink::Bin(_, off) = &mut sink {
        off.file.write_all(&0i64.to_le_bytes()).map_err(werr)?;
        off.count = 1;
    }
    let mut last_poll = 0.0f64;
    let mut line_buf: Vec<u8> = Vec::new();
    feed(&mut |chunk| {
        let mut texts: Vec<&[u8]> = Vec::new();
        chunk.for_each_text::<()>(&mut |t, _| {
            texts.push(t);
            Ok(())
        })
        .ok();
        let fielded = match fields {
            Some(f) => field_texts(f, &texts, &chunk.source, chunk.first_line)?,
            None => Vec::new(),
        };
        if fields.is_some() {
            texts = fielded.iter().map(|t| &t[..]).collect();
        }
        let (ids, offsets) = enc
            .encode_batch_flat(&texts, specials, threads)
            .map_err(|e| name_the_line(&enc, &texts, specials, &chunk.source, chunk.first_line, e))?;
        stats.lines += texts.len() as u64;
        stats.bytes += texts.iter().map(|t| t.len() as u64).sum::<u64>();
        let base = stats.tokens;
        stats.tokens += ids.len() as u64;
        match &mut sink {
            Sink::Text(w) => {
                for k in 0..texts.len() {
                    line_buf.clear();
                    let line = &ids[offsets[k] as usize..offsets[k + 1] as usize];
                    for (n, id) in line.iter().enumerate() {
                        if n > 0 {
                            line_buf.push(b' ');
                        }
                        line_buf.extend_from_slice(id.to_string().as_bytes());
                    }
                    line_buf.push(b'\n');
                    w.write_all(&line_buf).map_err(werr)?;
                }
            }
            Sink::Npy(NpyStream { file, count, .. }, off) => {
                write_ids(file, &ids, wide).map_err(werr)?;
                *count += ids.len() as u64;
                write_offsets(off, &offsets[1..], base).map_err(werr)?;
            }
            Sink::Bin(file, off) => {
                write_ids(file, &ids, wide).map_err(werr)?;
                write_offsets(off, &offsets[1..], base).map_err(werr)?;
            }
        }
        let t = start.elapsed().as_secs_f64();
        if t - last_poll >= 0.05 {
            last_poll = t;
            if observer.should_stop() {
                return Err(Error::interrupted());
            }
            observer.encoding(&CountProgress { raw_bytes_done: raw.load(Ordering::Relaxed), raw_bytes_total: total, elapsed: t, file: None });
        }
        Ok(())
    })?;
    match sink {
        Sink::Text(w) => {
            let tmp = w.into_inner().map_err(|e| werr(e.into_error()))?;
            tmp.as_file().sync_all().map_err(werr)?;
            persist(tmp, dst)?;
        }
        Sink::Npy(ids, off) => {
            let ids = ids.finish().map_err(werr)?;
            let off = off.finish().map_err(werr)?;
            persist(off, &offsets_path(dst))?;
            persist(ids, dst)?;
        }
        Sink::Bin(w, off) => {
            let tmp = w.into_inner().map_err(|e| werr(e.into_error()))?;
            tmp.as_file().sync_all().map_err(werr)?;
            let off = off.finish().map_err(werr)?;
            persist(off, &offsets_path(dst))?;
            persist(tmp, dst)?;
        }
    }
    stats.seconds = start.elapsed().as_secs_f64();
    observer.encoded(&stats);
    Ok(stats)
}

/// The text of each structured line (one per line; blank lines are empty
/// texts), or the error naming the first line without one.
fn field_texts<'a>(fields: &Fields, lines: &[&'a [u8]], source: &str, first_line: u64) -> Result<Vec<Cow<'a, [u8]>>> {
    let mut found = Vec::with_capacity(1);
    let mut out = Vec::with_capacity(lines.len());
    for (k, line) in lines.iter().enumerate() {
        found.clear();
        fields.texts(line, &mut found).map_err(|why| {
            Error::input(format!("{source}, line {}: {why} (every line needs its text: one row of ids per line)", first_line + k as u64))
        })?;
        out.push(found.pop().unwrap_or(Cow::Borrowed(&b""[..])));
    }
    Ok(out)
}

/// The error of a batch, naming the line it comes from: the batch is
/// encoded again one text at a time (only on this error path) to find it.
fn name_the_line(enc: &Encoder, texts: &[&[u8]], specials: &Specials, source: &str, first_line: u64, e: Error) -> Error {
    let mut ids = Vec::new();
    for (k, t) in texts.iter().enumerate() {
        ids.clear();
        if let Err(e) = enc.encode_into(t, specials, &mut ids, None) {
            return e.with_context(format_args!("{source}, line {}", first_line + k as u64));
        }
    }
    e.with_context(format_args!("{source}, lines {first_line}.."))
}

fn write_ids(w: &mut impl Write, ids: &[u32], wide: bool) -> std::io::Result<()> {
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
    w.write_all(&buf)
}

fn write_offsets(off: &mut NpyStream, ends: &[u64], base: u64) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(ends.len() * 8);
    for &e in ends {
        buf.extend_from_slice(&((e + base) as i64).to_le_bytes());
    }
    off.count += ends.len() as u64;
    off.file.write_all(&buf)
}
