//! Extending a model (`resume_from`, and SuperBPE's stage 2): the resumed
//! model's merges are replayed on every word type, which puts the word table
//! exactly where the original run left it (SEMANTICS §8); an imported model
//! keeps its own (external) ids and new tokens get fresh ids after them.

use super::merge::WordTable;
use super::TrainConfig;
use crate::count::WordCounts;
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::util::join_all;

/// What training continues from: nothing, or a model's merges, tokens and ids.
pub(crate) struct Resume<'m> {
    pub model: Option<&'m Model>,
    /// The resumed model's external ids, if it has them (imports).
    pub old_ids: Option<Vec<u32>>,
    /// The id the first new token gets (external ids only).
    pub first_new_id: u32,
    /// Re-encodes word types with the resumed merges.
    pub replay: Option<Encoder>,
}

impl<'m> Resume<'m> {
    /// Checks that `config` keeps the resumed model's settings and that its
    /// id range has room for the new tokens.
    pub fn new(config: &'m TrainConfig, specials: &[String]) -> Result<Self> {
        let Some(m) = config.resume_from.as_ref() else {
            return Ok(Resume { model: None, old_ids: None, first_new_id: 0, replay: None });
        };
        if m.special_tokens != specials || m.scheme != config.scheme || m.pretokenizer != config.pretokenizer {
            return Err(Error::parameter(
                "resume_from: the model's scheme, pre-tokenizer and special tokens must be kept when resuming",
            ));
        }
        let (old_ids, first_new_id) = match m.ids.as_ref() {
            Some(ids) => (Some(ids.clone()), external_id_range(m, ids, config.vocab_size)?),
            None => (None, 0),
        };
        Ok(Resume { model: Some(m), old_ids, first_new_id, replay: Some(Encoder::new(m.clone())?) })
    }

    /// The resumed merges with their counts (0 where the model has none).
    pub fn old_merges(&self) -> Vec<(u32, u32, u64)> {
        let Some(m) = self.model else { return Vec::new() };
        let counts = if m.merge_counts.len() == m.merges.len() { m.merge_counts.clone() } else { vec![0; m.merges.len()] };
        m.merges.iter().zip(counts).map(|(&(a, b), c)| (a, b, c)).collect()
    }
}

/// The first new id of an imported model, checked against the largest id a
/// model may have for `vocab_size`.
fn external_id_range(m: &Model, ids: &[u32], vocab_size: usize) -> Result<u32> {
    let first = next_external_id(m, ids)?;
    let room = crate::model::MAX_EXTERNAL_ID as u64 - first as u64;
    let id_count = ids.iter().map(|&e| e as u64 + 1).max().unwrap_or(0);
    let grow = (vocab_size as u64).saturating_sub(id_count);
    if grow > room {
        return Err(Error::parameter(format!(
            "resume_from: new ids start at {first} for this imported model; {grow} new ids would pass the largest id a model may have ({}); lower vocab_size to at most {}",
            crate::model::MAX_EXTERNAL_ID - 1,
            id_count + room
        )));
    }
    Ok(first)
}

/// The first id for new tokens when extending a model with external ids:
/// one past the largest id it uses, and past every id of the source it was
/// imported from (`metadata.import.source_id_end`, written by the importers:
/// source tokens that bpeforge could not represent keep their ids reserved).
fn next_external_id(m: &Model, ids: &[u32]) -> Result<u32> {
    let mut next = ids.iter().map(|&e| e as u64 + 1).max().unwrap_or(0);
    let end = &m.metadata["import"]["source_id_end"];
    if !end.is_null() {
        match end.as_u64() {
            Some(e) if e <= crate::model::MAX_EXTERNAL_ID as u64 => next = next.max(e),
            _ => {
                return Err(Error::parameter(format!(
                    "resume_from: the model's metadata.import.source_id_end must be an integer from 0 to {}, got {end}",
                    crate::model::MAX_EXTERNAL_ID
                )))
            }
        }
    }
    Ok(next as u32)
}

/// Replays the resumed merges on collected word types (chars scheme), on
/// all threads: word types are independent. SuperBPE's stage 2 replays tens
/// of thousands of merges on long units, the bulk of its extra cost.
pub(crate) fn replay_words(enc: &Encoder, pending: &mut [(Vec<u32>, u64)], threads: usize) -> Result<()> {
    let per = pending.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = pending
            .chunks_mut(per)
            .map(|part| {
                s.spawn(move || {
                    for (syms, _) in part.iter_mut() {
                        enc.apply_merges(syms);
                    }
                })
            })
            .collect();
        join_all(handles)
    })?;
    Ok(())
}

/// The piece cache of each thread replaying merges on word types: units
/// share most of their words. On 200k lines (SuperBPE's stage 2, 4M parts)
/// 4 MiB kept 60% of the parts from being merged again and 8 MiB 67%, at
/// the same speed; a bound keeps it small beside the budget at any thread
/// count and vocabulary size.
const REPLAY_CACHE_BYTES: usize = 4 << 20;

/// The word table of a resumed run (bytes scheme): every word type of
/// `counts` (at least `min_count` times) re-encoded with the resumed model's
/// merges, which is the state after its last merge (SEMANTICS §8). Word
/// types are shared between `threads` workers by reference (no copy of their
/// bytes); each builds a part of the table, and the parts are joined in
/// order. Returns the table and the number of word types pruned.
pub(crate) fn replay_bytes_table(
    counts: &WordCounts,
    enc: &Encoder,
    whitespace: bool,
    min_count: u64,
    threads: usize,
) -> Result<(WordTable, usize)> {
    let (short, long) = counts.entries();
    let pruned = short.iter().filter(|e| e.1 < min_count).count() + long.iter().filter(|e| e.1 < min_count).count();
    let joinable = enc.joinable_byte_pairs();
    let threads = threads.max(1);
    let work = |short: &[(u128, u64)], long: &[(&[u8], u64)]| -> Result<WordTable> {
        let mut table = WordTable::new();
        let (mut syms, mut scratch, mut buf) = (Vec::new(), Vec::new(), Vec::new());
        let mut cache = enc.new_cache_bounded(REPLAY_CACHE_BYTES);
        let mut one = |piece: &[u8], count: u64, table: &mut WordTable| -> Result<()> {
            if count < min_count {
                return Ok(());
            }
            syms.clear();
            let bytes = if whitespace {
                buf.clear();
                buf.push(b' ');
                buf.extend_from_slice(piece);
                &buf[..]
            } else {
                piece
            };
            enc.encode_bytes_split(bytes, &joinable, &mut syms, &mut scratch, &mut cache);
            table.push(syms.iter().copied(), count)
        };
        for (key, count) in short {
            let (b, n) = crate::count::short_key_bytes(key);
            one(&b[..n], *count, &mut table)?;
        }
        for &(piece, count) in long {
            one(piece, count, &mut table)?;
        }
        Ok(table)
    };
    let parts: Vec<Result<WordTable>> = if threads == 1 {
        vec![work(&short, &long)]
    } else {
        let (ps, pl) = (short.len().div_ceil(threads).max(1), long.len().div_ceil(threads).max(1));
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let sh = &short[(t * ps).min(short.len())..((t + 1) * ps).min(short.len())];
                    let lo = &long[(t * pl).min(long.len())..((t + 1) * pl).min(long.len())];
                    let work = &work;
                    s.spawn(move || work(sh, lo))
                })
                .collect();
            join_all(handles)
        })?
    };
    let mut parts = parts.into_iter();
    let mut table = parts.next().unwrap_or_else(|| Ok(WordTable::new()))?;
    for part in parts {
        table.append(part?)?;
    }
    Ok((table, pruned))
}

