//! Batches: many texts encoded on threads in blocks, each block's ids
//! handed over in input order while later blocks are still being encoded
//! (`crate::ordered`), so results never depend on the thread count.

use super::pool::Pooled;
use super::{Cache, Encoder, Specials};
use crate::error::Result;
use crate::ordered::{run_ordered, Deliver, Host};
use std::sync::Mutex;

/// Text per block: small enough that the last blocks' results (handed over
/// after all encoding ends) take little time, large enough that handing
/// blocks over costs nothing measurable.
pub(super) const BLOCK_BYTES: usize = 64 << 10;
/// Texts per block at most (for very short texts).
pub(super) const BLOCK_TEXTS: usize = 2048;

/// A text of a batch: a `str`, whose UTF-8 is known (`Encoder::encode_str`
/// skips checking it again), or raw bytes (any bytes).
pub trait Text: Send + Sync {
    fn bytes(&self) -> &[u8];
    /// Appends the text's ids to `out`.
    fn encode_into(&self, enc: &Encoder, specials: &Specials, out: &mut Vec<u32>, cache: &mut Cache) -> Result<()>;
}

impl Text for &str {
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn encode_into(&self, enc: &Encoder, specials: &Specials, out: &mut Vec<u32>, cache: &mut Cache) -> Result<()> {
        enc.encode_str_into(self, specials, out, Some(cache))
    }
}

impl Text for &[u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn encode_into(&self, enc: &Encoder, specials: &Specials, out: &mut Vec<u32>, cache: &mut Cache) -> Result<()> {
        enc.encode_into(self, specials, out, Some(cache))
    }
}

/// Consecutive texts of a batch handed over as one piece of work; the
/// first is text number `first` of the batch.
pub struct Block<T> {
    pub first: usize,
    pub texts: Vec<T>,
}

impl<T: Text> Block<T> {
    /// The block of texts from `*next` on (of `count`), `text(i)` giving
    /// text `i`; `None` when none are left.
    pub fn cut(count: usize, next: &mut usize, mut text: impl FnMut(usize) -> Result<T>) -> Result<Option<Self>> {
        let first = *next;
        let (mut texts, mut bytes) = (Vec::new(), 0usize);
        while *next < count && bytes < BLOCK_BYTES && texts.len() < BLOCK_TEXTS {
            let t = text(*next)?;
            bytes += t.bytes().len();
            texts.push(t);
            *next += 1;
        }
        Ok((!texts.is_empty()).then_some(Block { first, texts }))
    }

    /// The block's size in bytes of text.
    pub fn bytes(&self) -> usize {
        self.texts.iter().map(|t| t.bytes().len()).sum()
    }
}

/// A block's ids, flat: text `k`'s are `ids[ends[k - 1]..ends[k]]` (from 0).
/// One buffer per block rather than a vector per text.
pub struct BlockIds {
    pub ids: Vec<u32>,
    pub ends: Vec<usize>,
}

impl BlockIds {
    /// Each text's ids, in order.
    pub fn texts(&self) -> impl Iterator<Item = &[u32]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(start, &end)| &self.ids[start..end])
    }
}

/// Blocks' id buffers once delivered, for later blocks to fill again, so
/// a batch allocates about as many as it has blocks in flight. Each block
/// had its own: one encoded on a helper thread is freed on the calling
/// thread, and mimalloc gives memory freed that way back to its thread only
/// later, so the helper kept taking memory new to the process. perf put
/// the page faults under those allocations at 14-20 ms of a 2-thread batch
/// of 50,000 lines on this project's VM. With this and full-size batch
/// caches (seeded, as they then were), that batch at 2 threads, each run
/// in a new process (`bench/encode_ab.py --processes`, medians of 12-16):
/// trained 32k 0.112 -> 0.105 s and 0.143 -> 0.137 s, o200k_base 0.138 ->
/// 0.132 s and 0.197 -> 0.185 s; 1 thread within noise.
#[derive(Default)]
struct Spares(Mutex<Vec<BlockIds>>);

impl Spares {
    /// An emptied buffer, or a new one with room for `ids` ids.
    fn take(&self, ids: usize, texts: usize) -> BlockIds {
        let spare = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut block = spare.unwrap_or_else(|| BlockIds { ids: Vec::new(), ends: Vec::new() });
        block.ids.clear();
        block.ends.clear();
        block.ids.reserve(ids);
        block.ends.reserve(texts);
        block
    }

    /// Keeps `block`'s buffers for a later block, unless a long text made
    /// them larger than blocks need (that memory goes back at once).
    fn give(&self, block: BlockIds) {
        if block.ids.capacity() <= SPARE_IDS_MAX && block.ends.capacity() <= BLOCK_TEXTS {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(block);
        }
    }
}

/// The most ids a kept buffer has room for: a block of about `BLOCK_BYTES`
/// gives at most one id per byte, in a buffer that may have doubled past it.
const SPARE_IDS_MAX: usize = 2 * BLOCK_BYTES;

/// The host `encode_blocks` hands to `run_ordered`: `host`'s, giving each
/// block's buffers to `spares` once `host` has taken the ids.
struct Recycling<'h, H> {
    host: &'h mut H,
    spares: &'h Spares,
}

impl<T, H> Host<Block<T>, BlockIds> for Recycling<'_, H>
where
    H: for<'b> Host<Block<T>, &'b BlockIds>,
{
    fn prepare(&mut self) -> Result<Option<Block<T>>> {
        self.host.prepare()
    }
}

impl<T, H> Deliver<Block<T>, BlockIds> for Recycling<'_, H>
where
    H: for<'b> Deliver<Block<T>, &'b BlockIds>,
{
    fn deliver(&mut self, block: Block<T>, ids: BlockIds) -> Result<()> {
        let delivered = self.host.deliver(block, &ids);
        self.spares.give(ids);
        delivered
    }
    fn unlocked<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R {
        self.host.unlocked(f)
    }
}

/// A batch's ids in one vector with `texts + 1` offsets: text `i`'s are
/// `ids[offsets[i]..offsets[i + 1]]`.
pub struct FlatIds {
    pub ids: Vec<u32>,
    pub offsets: Vec<u64>,
}

impl FlatIds {
    /// Empty, with room for the offsets of `texts` texts.
    pub fn with_texts(texts: usize) -> Self {
        let mut offsets = Vec::with_capacity(texts + 1);
        offsets.push(0);
        FlatIds { ids: Vec::new(), offsets }
    }

    /// Appends the next block's ids.
    pub fn append(&mut self, block: &BlockIds) {
        let base = self.ids.len() as u64;
        self.ids.extend_from_slice(&block.ids);
        self.offsets.extend(block.ends.iter().map(|&e| base + e as u64));
    }
}

/// A batch's ids in numpy's layout, packed block by block as they are
/// delivered (while later blocks are encoded): little-endian uint16 when
/// every id fits (`Encoder::vocab_size` up to 65,536, the rule of
/// `file::encode_file`'s outputs), else uint32; and `texts + 1` int64
/// offsets. The arrays are made from these bytes without another pass.
pub struct PackedIds {
    pub id_bytes: usize,
    pub ids: Vec<u8>,
    pub offsets: Vec<u8>,
    tokens: u64,
}

impl PackedIds {
    /// Empty, with room for the offsets of `texts` texts.
    pub fn new(enc: &Encoder, texts: usize) -> Self {
        let id_bytes = if enc.vocab_size() > 1 << 16 { 4 } else { 2 };
        let mut offsets = Vec::with_capacity((texts + 1) * 8);
        offsets.extend_from_slice(&0i64.to_le_bytes());
        PackedIds { id_bytes, ids: Vec::new(), offsets, tokens: 0 }
    }

    /// Appends the next block's ids.
    pub fn append(&mut self, block: &BlockIds) {
        // The low `id_bytes` of an id's little-endian bytes (ids of a
        // uint16 model are below 65,536).
        let (at, width) = (self.ids.len(), self.id_bytes);
        self.ids.resize(at + block.ids.len() * width, 0);
        for (slot, id) in self.ids[at..].chunks_exact_mut(width).zip(&block.ids) {
            slot.copy_from_slice(&id.to_le_bytes()[..width]);
        }
        let base = self.tokens;
        self.offsets.extend(block.ends.iter().flat_map(|&e| ((base + e as u64) as i64).to_le_bytes()));
        self.tokens += block.ids.len() as u64;
    }
}

/// The host of `encode_batch_flat`: blocks of a slice, into `FlatIds`.
struct Flat<'a, T> {
    texts: &'a [T],
    next: usize,
    out: FlatIds,
}

impl<T: Text + Copy> Host<Block<T>, &BlockIds> for Flat<'_, T> {
    fn prepare(&mut self) -> Result<Option<Block<T>>> {
        Block::cut(self.texts.len(), &mut self.next, |i| Ok(self.texts[i]))
    }
}

impl<T: Text + Copy> Deliver<Block<T>, &BlockIds> for Flat<'_, T> {
    fn deliver(&mut self, _: Block<T>, block: &BlockIds) -> Result<()> {
        self.out.append(block);
        Ok(())
    }
    fn unlocked<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R {
        f()
    }
}

impl Encoder {
    /// Encodes the blocks `host` prepares on `threads` threads (the calling
    /// thread included) and lends each block's ids to `host.deliver`, in
    /// order, while later blocks are still being encoded (`crate::ordered`);
    /// their buffers are then filled again (`Spares`).
    /// `dropout`: `(p, seed)`, text `i` of the batch seeded `seed + i`.
    pub fn encode_blocks<T: Text>(
        &self,
        host: &mut impl for<'b> Host<Block<T>, &'b BlockIds>,
        specials: &Specials,
        threads: usize,
        dropout: Option<(f64, u64)>,
    ) -> Result<()> {
        let spares = Spares::default();
        let work = |block: &Block<T>, cache: &mut Cache| -> Result<BlockIds> {
            let BlockIds { mut ids, mut ends } = spares.take(block.bytes() / 3 + 1, block.texts.len());
            for (k, t) in block.texts.iter().enumerate() {
                match dropout {
                    Some((p, seed)) => {
                        let seed = seed.wrapping_add((block.first + k) as u64);
                        ids.extend(self.encode_dropout(t.bytes(), specials, p, seed)?);
                    }
                    None => t.encode_into(self, specials, &mut ids, cache)?,
                }
                ends.push(ids.len());
            }
            Ok(BlockIds { ids, ends })
        };
        // Each thread's cache comes from (and goes back to) the encoder's
        // pool: a batch starts with what the batches before it learned.
        let mut host = Recycling { host, spares: &spares };
        run_ordered(threads, &mut host, &|| self.batch_cache(), &|block, cache| work(block, cache))
    }

    /// A cache for one thread of a batch (or of `file::encode_file`), from
    /// the encoder's pool and back to it when dropped.
    pub(super) fn batch_cache(&self) -> Pooled<'_> {
        self.batch_caches.take(Cache::for_batch)
    }

    /// Encodes many texts on `threads` threads, as one flat id vector plus
    /// `texts.len() + 1` offsets (text `i` is `ids[offsets[i]..offsets[i + 1]]`).
    pub fn encode_batch_flat<T: Text + Copy>(&self, texts: &[T], specials: &Specials, threads: usize) -> Result<(Vec<u32>, Vec<u64>)> {
        let mut host = Flat { texts, next: 0, out: FlatIds::with_texts(texts.len()) };
        self.encode_blocks(&mut host, specials, threads, None)?;
        Ok((host.out.ids, host.out.offsets))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::pretok::PreTokenizerSpec;

    #[test]
    fn a_delivered_buffer_is_filled_again() {
        let spares = Spares::default();
        let mut block = spares.take(1000, 10);
        block.ids.extend([1, 2, 3]);
        block.ends.push(3);
        let (ids, ends) = (block.ids.as_ptr(), block.ends.as_ptr());
        spares.give(block);
        let again = spares.take(10, 1);
        assert_eq!((again.ids.as_ptr(), again.ends.as_ptr()), (ids, ends));
        assert!(again.ids.is_empty() && again.ends.is_empty() && again.ids.capacity() >= 1000);
        // None left to give: a new one.
        assert_ne!(spares.take(10, 1).ids.as_ptr(), ids);
        // A buffer a long text made larger than a block needs is not kept.
        let mut long = spares.take(SPARE_IDS_MAX + 1, 1);
        long.ids.resize(SPARE_IDS_MAX + 1, 7);
        spares.give(long);
        assert!(spares.0.lock().unwrap().is_empty());
    }

    #[test]
    fn flat_batches_match_single_encodes_on_any_thread_count() {
        let mut m = Model::new(crate::model::Scheme::Bytes, PreTokenizerSpec::GPT2, vec![], None);
        let (a, b, sp) = (b'a' as u32, b'b' as u32, b' ' as u32);
        m.merges = vec![(a, b), (sp, 256), (256, 256)];
        let enc = Encoder::new(m).unwrap();
        // Enough text for many blocks, with empty texts and invalid UTF-8.
        let texts: Vec<Vec<u8>> = (0..9000usize)
            .map(|i| match i % 7 {
                0 => Vec::new(),
                1 => vec![0xff, b'a', b'b'],
                _ => "ab abab x ".repeat(i % 13).into_bytes(),
            })
            .collect();
        let borrowed: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
        let want: Vec<Vec<u32>> = borrowed.iter().map(|t| enc.encode(t, &Specials::Ordinary, None).unwrap()).collect();
        for threads in [1, 2, 3] {
            let (ids, offsets) = enc.encode_batch_flat(&borrowed, &Specials::Ordinary, threads).unwrap();
            assert_eq!(offsets.len(), texts.len() + 1);
            let got: Vec<&[u32]> = offsets.windows(2).map(|w| &ids[w[0] as usize..w[1] as usize]).collect();
            assert!(got.iter().zip(&want).all(|(g, w)| g == w), "threads {threads}");
        }
    }
}
