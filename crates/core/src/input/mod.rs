//! Reading corpora: plain or compressed files, cut into chunks of whole texts.
//!
//! A chunk is a few MiB of input that ends at a text boundary (a newline in
//! lines mode, a separator in records mode), so workers can process chunks
//! independently. Memory is bounded by the chunk size times the number of
//! chunks in flight, except that a single text longer than a chunk is kept
//! whole (a 50 MB line becomes a 50 MB chunk).

pub mod fields;

use crate::error::{Error, Result};
use crate::input::fields::Fields;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Target chunk size. 4 MiB keeps two workers busy while bounding memory;
/// smaller chunks cost more channel traffic and map merges, larger ones only
/// raise the peak memory.
pub const CHUNK_SIZE: usize = 4 << 20;

/// How a stream of bytes is cut into texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextMode {
    /// One text per line, without `\n` / `\r\n`.
    Lines,
    /// Each file is one text.
    WholeFile,
    /// Texts are the records between occurrences of a separator.
    Records(Vec<u8>),
    /// Each line holds texts in fields: JSON lines or tab-separated columns.
    Fields(Fields),
}

impl TextMode {
    /// How chunks of this mode lay out their texts.
    fn layout(&self) -> Layout {
        match self {
            TextMode::Lines => Layout::Lines,
            TextMode::WholeFile => Layout::Whole,
            TextMode::Records(s) => Layout::Records(Arc::from(&s[..])),
            TextMode::Fields(f) => Layout::Fields(Arc::new(f.clone())),
        }
    }
}

/// How the texts inside a chunk are laid out.
#[derive(Debug, Clone)]
pub enum Layout {
    Lines,
    Whole,
    Records(Arc<[u8]>),
    /// Explicit end offsets of each text (texts handed over from Python).
    Ends(Vec<usize>),
    /// Lines whose texts are fields (`for_each_text` yields the whole lines;
    /// the counter extracts the texts).
    Fields(Arc<Fields>),
}

/// A run of whole texts from one source.
#[derive(Debug)]
pub struct Chunk {
    pub data: Vec<u8>,
    pub layout: Layout,
    /// File name (or "<iterator>") for error messages.
    pub source: Arc<str>,
    /// 1-based line number (or item index) of the chunk's first text.
    pub first_line: u64,
    /// Language id of each text (language-balanced training), or empty.
    pub langs: Vec<u16>,
}

impl Chunk {
    /// Calls `f(text, byte_offset_in_chunk)` for every text of the chunk.
    pub fn for_each_text<'s, E>(&'s self, f: &mut impl FnMut(&'s [u8], usize) -> std::result::Result<(), E>) -> std::result::Result<(), E> {
        let data = &self.data[..];
        match &self.layout {
            Layout::Lines | Layout::Fields(_) => {
                let mut start = 0;
                for nl in memchr::memchr_iter(b'\n', data) {
                    let mut end = nl;
                    if end > start && data[end - 1] == b'\r' {
                        end -= 1;
                    }
                    f(&data[start..end], start)?;
                    start = nl + 1;
                }
                if start < data.len() {
                    let mut end = data.len();
                    if data[end - 1] == b'\r' {
                        end -= 1;
                    }
                    f(&data[start..end], start)?;
                }
            }
            Layout::Whole => f(data, 0)?,
            Layout::Records(sep) => {
                let mut start = 0;
                for pos in memchr::memmem::find_iter(data, &sep[..]) {
                    if pos >= start {
                        f(&data[start..pos], start)?;
                        start = pos + sep.len();
                    }
                }
                if start < data.len() {
                    f(&data[start..], start)?;
                }
            }
            Layout::Ends(ends) => {
                let mut start = 0;
                for &end in ends {
                    f(&data[start..end], start)?;
                    start = end;
                }
            }
        }
        Ok(())
    }

    /// The 1-based line number (lines mode) or item number of the text that
    /// contains byte `offset`.
    pub fn line_of(&self, offset: usize) -> u64 {
        match &self.layout {
            Layout::Ends(ends) => self.first_line + ends.partition_point(|&e| e <= offset) as u64,
            _ => self.first_line + memchr::memchr_iter(b'\n', &self.data[..offset.min(self.data.len())]).count() as u64,
        }
    }
}

/// Counts the bytes read from the underlying file (before decompression),
/// for progress and ETA.
struct CountingReader<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The compression suffixes every reader decompresses on the fly: the one
/// list (the Python package reads it as `_native.COMPRESSIONS` for its own
/// readers, its format detection and its help texts).
pub const COMPRESSIONS: [&str; 5] = [".gz", ".xz", ".bz2", ".zst", ".zstd"];

/// The compression suffix `path` ends in (any case), if any.
pub fn compression(path: &Path) -> Option<&'static str> {
    let name = path.to_string_lossy().to_ascii_lowercase();
    COMPRESSIONS.into_iter().find(|c| name.ends_with(c))
}

/// Opens `path`, decompressing by its suffix (`COMPRESSIONS`).
pub fn open(path: &Path, raw_counter: Arc<AtomicU64>) -> Result<Box<dyn Read + Send>> {
    if path.is_dir() {
        return Err(Error::input(format!("cannot read {}: it is a directory, not a file", path.display())));
    }
    let file = File::open(path).map_err(|e| Error::io_read(path, &e))?;
    let raw = BufReader::with_capacity(1 << 20, CountingReader { inner: file, counter: raw_counter });
    let reader: Box<dyn Read + Send> = match compression(path) {
        Some(".gz") => Box::new(flate2::read::MultiGzDecoder::new(raw)),
        Some(".xz") => Box::new(xz2::read::XzDecoder::new_multi_decoder(raw)),
        Some(".bz2") => Box::new(bzip2::read::MultiBzDecoder::new(raw)),
        Some(".zst" | ".zstd") => {
            Box::new(zstd::stream::read::Decoder::with_buffer(raw).map_err(|e| Error::io_read(path, &e))?)
        }
        Some(other) => return Err(Error::input(format!("cannot read {}: no decoder for {other}", path.display()))),
        None => Box::new(raw),
    };
    Ok(reader)
}

/// The most memory a decompressor of one of `paths` holds (they are read
/// one at a time), from each file's own header where it says (an `.xz`
/// block's dictionary, a `.zst` frame's window, a `.bz2` block size), for
/// the memory budget: it is outside the count tables' estimates.
pub fn decoder_bytes(paths: &[PathBuf]) -> u64 {
    paths.iter().map(|p| decoder_bytes_of(p)).max().unwrap_or(0)
}

fn decoder_bytes_of(path: &Path) -> u64 {
    let Some(kind) = compression(path) else { return 0 };
    let mut head = [0u8; 64];
    let n = File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let head = &head[..n];
    const MIB: u64 = 1 << 20;
    match kind {
        ".gz" => MIB,
        // 'BZh' and the block size in hundreds of kB; decoding holds about four bytes per byte of a block.
        ".bz2" => head.get(3).filter(|d| d.is_ascii_digit()).map_or(9, |d| u64::from(d - b'0')) * 400_000 + MIB,
        ".xz" => xz_dictionary(head).unwrap_or(64 * MIB) + 2 * MIB,
        _ => zstd_window(head).unwrap_or(128 * MIB) + 2 * MIB,
    }
}

/// The LZMA2 dictionary of an `.xz` file's first block (the 12-byte stream
/// header, then the block header: size, flags, optional sizes, filters).
fn xz_dictionary(head: &[u8]) -> Option<u64> {
    let block = head.get(12..)?;
    let flags = *block.get(1)?;
    let mut at = 2;
    let varint = |at: &mut usize| -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..63).step_by(7) {
            let b = *block.get(*at)?;
            *at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    };
    for present in [0x40, 0x80] {
        if flags & present != 0 {
            varint(&mut at)?;
        }
    }
    for _ in 0..=(flags & 3) {
        let (id, size) = (varint(&mut at)?, varint(&mut at)? as usize);
        if id == 0x21 && size == 1 {
            let bits = u32::from(*block.get(at)? & 0x3f);
            return Some(if bits >= 40 { u32::MAX as u64 } else { (2 | u64::from(bits & 1)) << (bits / 2 + 11) });
        }
        at += size;
    }
    None
}

/// The window of a `.zst` file's first frame (its header's window
/// descriptor, or its content size for a single-segment frame).
fn zstd_window(head: &[u8]) -> Option<u64> {
    if head.get(..4)? != [0x28, 0xb5, 0x2f, 0xfd] {
        return None;
    }
    let descriptor = *head.get(4)?;
    if descriptor & 0x20 == 0 {
        let w = *head.get(5)?;
        let base = 1u64 << (10 + (w >> 3));
        return Some(base + base / 8 * u64::from(w & 7));
    }
    // Single segment: the window is the content, whose size follows (1, 2, 4 or 8 bytes; 2 are offset by 256).
    let dict = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let at = 5 + dict;
    let size = match descriptor >> 6 {
        0 => u64::from(*head.get(at)?),
        1 => u64::from(u16::from_le_bytes(head.get(at..at + 2)?.try_into().ok()?)) + 256,
        2 => u64::from(u32::from_le_bytes(head.get(at..at + 4)?.try_into().ok()?)),
        _ => u64::from_le_bytes(head.get(at..at + 8)?.try_into().ok()?),
    };
    Some(size)
}

/// About how many bytes of text the inputs hold once decompressed: a
/// `.zst` file's size from its frame header when one frame holds it all,
/// otherwise four times a compressed file's size (text compresses about
/// 2-4x), a plain file's size as it is.
pub fn text_bytes_estimate(paths: &[PathBuf]) -> u64 {
    paths.iter().map(|p| text_bytes_of(p)).sum()
}

fn text_bytes_of(path: &Path) -> u64 {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let Some(kind) = compression(path) else { return size };
    let mut head = [0u8; 64];
    let n = File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    match kind {
        ".zst" | ".zstd" => zstd_content_size(&head[..n]).filter(|&c| c >= size).unwrap_or(size.saturating_mul(4)),
        _ => size.saturating_mul(4),
    }
}

/// A zstd frame's content size, where its header gives one.
fn zstd_content_size(head: &[u8]) -> Option<u64> {
    if head.get(..4)? != [0x28, 0xb5, 0x2f, 0xfd] {
        return None;
    }
    let descriptor = *head.get(4)?;
    let single = descriptor & 0x20 != 0;
    let dict = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let at = 5 + usize::from(!single) + dict;
    match descriptor >> 6 {
        0 if single => Some(u64::from(*head.get(at)?)),
        0 => None,
        1 => Some(u64::from(u16::from_le_bytes(head.get(at..at + 2)?.try_into().ok()?)) + 256),
        2 => Some(u64::from(u32::from_le_bytes(head.get(at..at + 4)?.try_into().ok()?))),
        _ => Some(u64::from_le_bytes(head.get(at..at + 8)?.try_into().ok()?)),
    }
}

/// Total on-disk size of the inputs (for ETA); missing files are an error
/// here, before any work starts.
pub fn total_size(paths: &[PathBuf]) -> Result<u64> {
    let mut total = 0;
    for p in paths {
        let md = std::fs::metadata(p).map_err(|e| Error::io_read(p, &e))?;
        if md.is_dir() {
            return Err(Error::input(format!("cannot read {}: it is a directory, not a file", p.display())));
        }
        total += md.len();
    }
    Ok(total)
}

/// Reads the lines of a plain (uncompressed) file that *start* in the byte
/// range `[start, end)`: a shard of a larger file. Shards that tile a file
/// see every line exactly once.
pub fn read_range_chunks(
    path: &Path,
    mode: &TextMode,
    start: u64,
    end: u64,
    raw_counter: Arc<AtomicU64>,
    sink: &mut dyn FnMut(Chunk) -> Result<()>,
) -> Result<()> {
    use std::io::{BufRead, Seek, SeekFrom};
    if compression(path).is_some() {
        return Err(Error::parameter(format!(
            "{}: a compressed file cannot be split by byte range; give it as a whole shard",
            path.display()
        )));
    }
    if !matches!(mode, TextMode::Lines | TextMode::Fields(_)) {
        return Err(Error::parameter(format!(
            "{}: only line-based text modes can be split by byte range; give it as a whole shard",
            path.display()
        )));
    }
    let layout = mode.layout();
    let err = |e: std::io::Error| Error::io_read(path, &e);
    let mut file = BufReader::with_capacity(1 << 20, File::open(path).map_err(err)?);
    let mut pos = start;
    let mut line_no: u64 = 1;
    if start > 0 {
        // The line containing byte start-1 belongs to the previous shard.
        file.seek(SeekFrom::Start(start - 1)).map_err(err)?;
        let mut skip = Vec::new();
        let n = file.read_until(b'\n', &mut skip).map_err(err)?;
        pos = start - 1 + n as u64;
        line_no = 0; // unknown: numbers below count from the shard start
    }
    let source: Arc<str> = Arc::from(format!("{} (bytes {start}..{end})", path.display()));
    let mut first_line = line_no.max(1);
    while pos < end {
        let mut data = Vec::with_capacity(CHUNK_SIZE + 4096);
        while pos < end && data.len() < CHUNK_SIZE {
            let n = file.read_until(b'\n', &mut data).map_err(err)?;
            if n == 0 {
                pos = end;
                break;
            }
            pos += n as u64;
        }
        raw_counter.fetch_add(data.len() as u64, Ordering::Relaxed);
        if data.is_empty() {
            break;
        }
        let lines = memchr::memchr_iter(b'\n', &data).count() as u64;
        sink(Chunk { data, layout: layout.clone(), source: source.clone(), first_line, langs: Vec::new() })?;
        first_line += lines;
    }
    Ok(())
}

/// Reads every file in order and hands whole-text chunks to `sink`.
pub fn read_chunks(
    paths: &[PathBuf],
    mode: &TextMode,
    raw_counter: Arc<AtomicU64>,
    sink: &mut dyn FnMut(Chunk) -> Result<()>,
) -> Result<()> {
    for path in paths {
        let source: Arc<str> = Arc::from(path.display().to_string());
        let mut reader = open(path, raw_counter.clone())?;
        let read_err = |e: std::io::Error| Error::io_read(path, &e);
        match mode {
            TextMode::WholeFile => {
                let mut data = Vec::new();
                reader.read_to_end(&mut data).map_err(read_err)?;
                sink(Chunk { data, layout: Layout::Whole, source: source.clone(), first_line: 1, langs: Vec::new() })?;
            }
            TextMode::Lines | TextMode::Records(_) | TextMode::Fields(_) => {
                let layout = mode.layout();
                let sep: &[u8] = match mode {
                    TextMode::Records(s) => &s[..],
                    _ => b"\n",
                };
                let mut line: u64 = 1;
                let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_SIZE + (CHUNK_SIZE >> 2));
                let mut eof = false;
                while !eof {
                    // Fill up to CHUNK_SIZE (or more, while no separator is found).
                    let want = CHUNK_SIZE.max(buf.len() + (CHUNK_SIZE >> 2));
                    while buf.len() < want {
                        let old = buf.len();
                        buf.resize(want, 0);
                        let n = loop {
                            match reader.read(&mut buf[old..]) {
                                Ok(n) => break n,
                                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                                Err(e) => return Err(read_err(e)),
                            }
                        };
                        buf.truncate(old + n);
                        if n == 0 {
                            eof = true;
                            break;
                        }
                    }
                    let cut = if eof {
                        buf.len()
                    } else {
                        match memchr::memmem::rfind(&buf, sep) {
                            Some(p) => p + sep.len(),
                            None => continue, // one text longer than the buffer: keep reading
                        }
                    };
                    if cut == 0 {
                        continue;
                    }
                    let rest = buf.split_off(cut);
                    let chunk_data = std::mem::replace(&mut buf, rest);
                    let lines_here = memchr::memchr_iter(b'\n', &chunk_data).count() as u64;
                    let first_line = line;
                    line += lines_here;
                    sink(Chunk { data: chunk_data, layout: layout.clone(), source: source.clone(), first_line, langs: Vec::new() })?;
                    buf.reserve(CHUNK_SIZE + (CHUNK_SIZE >> 2));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_text_estimate_reads_a_zstd_frame_s_size_and_guesses_for_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let text = "a line of text, said again and again\n".repeat(50_000).into_bytes();
        let zst = dir.path().join("t.txt.zst");
        std::fs::write(&zst, zstd::bulk::compress(&text, 3).unwrap()).unwrap();
        assert_eq!(text_bytes_estimate(std::slice::from_ref(&zst)), text.len() as u64);
        // Streamed, the frame does not say its size.
        let streamed = zstd::encode_all(&text[..], 3).unwrap();
        std::fs::write(&zst, &streamed).unwrap();
        assert_eq!(text_bytes_estimate(std::slice::from_ref(&zst)), 4 * streamed.len() as u64);
        let plain = dir.path().join("t.txt");
        std::fs::write(&plain, &text).unwrap();
        let gz = dir.path().join("t.txt.gz");
        std::fs::write(&gz, b"\x1f\x8b not really").unwrap();
        assert_eq!(text_bytes_estimate(&[plain, gz]), text.len() as u64 + 4 * 13);
    }

    fn texts(chunk: &Chunk) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        chunk
            .for_each_text::<()>(&mut |t, _| {
                out.push(t.to_vec());
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn lines_strip_crlf() {
        let c = Chunk { data: b"a\r\nb\n\nc".to_vec(), layout: Layout::Lines, source: Arc::from("x"), first_line: 1, langs: Vec::new() };
        assert_eq!(texts(&c), vec![b"a".to_vec(), b"b".to_vec(), b"".to_vec(), b"c".to_vec()]);
        assert_eq!(c.line_of(3), 2);
    }

    #[test]
    fn byte_ranges_tile_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        let mut f = File::create(&p).unwrap();
        let mut expected = Vec::new();
        for i in 0..5000 {
            let line = format!("line {i} {}", "x".repeat(i % 37));
            writeln!(f, "{line}").unwrap();
            expected.push(line.into_bytes());
        }
        drop(f);
        let size = std::fs::metadata(&p).unwrap().len();
        for shards in [1u64, 2, 3, 7, 50] {
            let mut all = Vec::new();
            for k in 0..shards {
                let (s, e) = (size * k / shards, size * (k + 1) / shards);
                read_range_chunks(&p, &TextMode::Lines, s, e, Arc::new(AtomicU64::new(0)), &mut |c| {
                    all.extend(texts(&c));
                    Ok(())
                })
                .unwrap();
            }
            assert_eq!(all, expected, "{shards} shards");
        }
    }

    #[test]
    fn gzip_roundtrip_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt.gz");
        let mut enc = flate2::write::GzEncoder::new(File::create(&p).unwrap(), flate2::Compression::fast());
        for i in 0..1000 {
            writeln!(enc, "line {i}").unwrap();
        }
        enc.finish().unwrap();
        let mut all = Vec::new();
        read_chunks(&[p], &TextMode::Lines, Arc::new(AtomicU64::new(0)), &mut |c| {
            all.extend(texts(&c));
            Ok(())
        })
        .unwrap();
        assert_eq!(all.len(), 1000);
        assert_eq!(all[999], b"line 999");
        let err = total_size(&[dir.path().join("missing.txt")]).unwrap_err();
        assert!(err.message().contains("missing.txt") && err.message().contains("no such file"));
    }
}
