//! Batches: many texts encoded on threads, results in input order and
//! independent of the thread count.

use super::{Cache, Encoder, Specials};
use crate::error::Result;
use crate::ordered::{run_ordered, Host};
use crate::util::join_all;

/// Consecutive texts of a batch handed over as one piece of work; the
/// first is text number `first` of the batch.
pub struct Block<'t> {
    pub first: usize,
    pub texts: Vec<&'t str>,
}

impl Encoder {
    /// Encodes many texts on `threads` threads; results in input order.
    pub fn encode_batch(&self, texts: &[&[u8]], specials: &Specials, threads: usize) -> Result<Vec<Vec<u32>>> {
        let blocks = self.run_blocks(texts, threads, |block, cache| {
            block
                .iter()
                .map(|t| self.encode(t, specials, Some(cache)))
                .collect::<Result<Vec<_>>>()
        })?;
        Ok(blocks.into_iter().flatten().collect())
    }

    /// Encodes the blocks `host` prepares on `threads` threads (the calling
    /// thread included) and hands each block's ids to `host.deliver`, in
    /// order, while later blocks are still being encoded (`crate::ordered`).
    /// `dropout`: `(p, seed)`, text `i` of the batch seeded `seed + i`.
    pub fn encode_blocks<'t>(
        &self,
        host: &mut impl Host<Block<'t>, Vec<Vec<u32>>>,
        specials: &Specials,
        threads: usize,
        dropout: Option<(f64, u64)>,
    ) -> Result<()> {
        let work = |block: &Block<'t>, cache: &mut Cache| -> Result<Vec<Vec<u32>>> {
            let texts = block.texts.iter();
            match dropout {
                Some((p, seed)) => texts
                    .enumerate()
                    .map(|(k, t)| self.encode_dropout(t.as_bytes(), specials, p, seed.wrapping_add((block.first + k) as u64)))
                    .collect(),
                None => texts.map(|t| self.encode_str(t, specials, Some(cache))).collect(),
            }
        };
        run_ordered(threads, host, &work)
    }

    /// Like `encode_batch`, as one flat id vector plus `texts.len() + 1` offsets.
    pub fn encode_batch_flat(&self, texts: &[&[u8]], specials: &Specials, threads: usize) -> Result<(Vec<u32>, Vec<u64>)> {
        let blocks = self.run_blocks(texts, threads, |block, cache| {
            let mut ids = Vec::new();
            let mut ends = Vec::with_capacity(block.len());
            for t in block {
                self.encode_into(t, specials, &mut ids, Some(cache))?;
                ends.push(ids.len() as u64);
            }
            Ok((ids, ends))
        })?;
        let total: usize = blocks.iter().map(|b| b.0.len()).sum();
        let mut ids = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(texts.len() + 1);
        offsets.push(0u64);
        for (b_ids, b_ends) in blocks {
            let base = ids.len() as u64;
            ids.extend_from_slice(&b_ids);
            offsets.extend(b_ends.into_iter().map(|e| e + base));
        }
        Ok((ids, offsets))
    }

    /// Splits `texts` into blocks, runs `f` on each with a per-thread cache,
    /// and returns the block results in order.
    pub(super) fn run_blocks<'t, R: Send>(
        &self,
        texts: &'t [&'t [u8]],
        threads: usize,
        f: impl Fn(&'t [&'t [u8]], &mut Cache) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        let threads = threads.max(1);
        let total_bytes: usize = texts.iter().map(|t| t.len()).sum();
        if threads == 1 || texts.len() < 2 || total_bytes < 64 * 1024 {
            let mut cache = Cache::new();
            return Ok(vec![f(texts, &mut cache)?]);
        }
        let n_blocks = (threads * 16).min(texts.len());
        let per = texts.len().div_ceil(n_blocks);
        let blocks: Vec<&[&[u8]]> = texts.chunks(per).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<std::sync::Mutex<Option<Result<R>>>> = (0..blocks.len()).map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.min(blocks.len()))
                .map(|_| {
                    s.spawn(|| {
                        let mut cache = Cache::new();
                        loop {
                            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            if k >= blocks.len() {
                                break;
                            }
                            let r = f(blocks[k], &mut cache);
                            *results[k].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                        }
                    })
                })
                .collect();
            join_all(handles)
        })?;
        results
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|p| p.into_inner())
                    .unwrap_or_else(|| Err(crate::util::worker_crashed()))
            })
            .collect()
    }
}
