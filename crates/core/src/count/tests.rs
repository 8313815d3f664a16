//! Counting's tests: keys, tables, merging, spilling, the binary form.

use super::table::{mid_key, mid_key_bytes, short_key, MID_KEY, SHORT_KEY};
use super::*;
use crate::memory::budget::{CountBudget, CountHistogram, Dropped};
use crate::error::Result;
use crate::input::{Chunk, Layout};
use crate::pretok::{PreTokenizer, SpecialSplitter};
use crate::memory::spill::SpillDir;
use std::collections::HashMap;

fn snapshot(c: &WordCounts) -> HashMap<Vec<u8>, u64> {
    let mut m = HashMap::new();
    c.for_each(|k, v| {
        assert!(m.insert(k.to_vec(), v).is_none(), "type listed twice: {k:?}");
    });
    m
}

/// `short_key` equals the plain layout (the bytes, zeros, the length in
/// byte 15) for every length: spilled runs and packed tables sort by it.
/// A counter with no languages and no normalizer.
fn plain_counter<'a>(
    pretokenizer: &'a PreTokenizer,
    specials: &'a SpecialSplitter,
    allow_invalid_utf8: bool,
    superword: Option<&'a PreTokenizer>,
) -> Counter<'a> {
    Counter { pretokenizer, specials, allow_invalid_utf8, superword, lang_weights: None, tag_languages: false, normalizer: None }
}

/// Feeds `chunks` as chunks of lines (the same ones on every call).
fn feed_lines(chunks: &[Vec<u8>], sink: &mut dyn FnMut(Chunk) -> Result<()>) -> Result<()> {
    for c in chunks {
        sink(Chunk { data: c.clone(), layout: Layout::Lines, source: "t".into(), first_line: 1, langs: Vec::new() })?;
    }
    Ok(())
}

#[test]
fn short_keys_are_the_bytes_and_the_length() {
    let bytes: Vec<u8> = (1..=15u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
    for n in 1..=SHORT_KEY {
        let mut plain = [0u8; 16];
        plain[..n].copy_from_slice(&bytes[..n]);
        plain[15] = n as u8;
        assert_eq!(short_key(&bytes[..n]), u128::from_le_bytes(plain), "length {n}");
        assert_eq!(short_key_bytes(&short_key(&bytes[..n])).1, n);
    }
}

/// `mid_key` equals the plain layout (the bytes, zeros, the length in
/// byte 31) for every length, and `mid_key_bytes` gives the piece back.
#[test]
fn mid_keys_are_the_bytes_and_the_length() {
    let bytes: Vec<u8> = (1..=MID_KEY as u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
    for n in SHORT_KEY + 1..=MID_KEY {
        let mut plain = [0u8; 32];
        plain[..n].copy_from_slice(&bytes[..n]);
        plain[31] = n as u8;
        assert_eq!(mid_key(&bytes[..n]), plain, "length {n}");
        assert_eq!(mid_key_bytes(&mid_key(&bytes[..n])), &bytes[..n]);
    }
}

/// Pseudo-random pieces of 1..=40 bytes (short, mid and long keys, with
/// repeats), through the pipelined adder, the plain `add`, `merge`,
/// `prune` and the byte form, checked against a std HashMap.
#[test]
fn tables_agree_with_a_plain_map() {
    let mut rng = crate::util::Lcg(7);
    let mut next = || rng.step() >> 33;
    let pieces: Vec<Vec<u8>> = (0..30_000)
        .map(|_| {
            let len = 1 + (next() % 40) as usize;
            (0..len).map(|_| (next() % 3) as u8 * 100).collect()
        })
        .collect();
    let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut parts = vec![WordCounts::new(), WordCounts::new()];
    for (i, p) in pieces.iter().cycle().take(100_000).enumerate() {
        let n = 1 + (i % 3) as u64;
        *expected.entry(p.clone()).or_insert(0) += n;
        let part = &mut parts[i % 2];
        if i % 5 == 0 {
            part.add(p, n);
        } else {
            part.adder().add(p, n);
        }
    }
    let mut total = parts.pop().unwrap();
    total.merge(parts.pop().unwrap());
    assert_eq!(total.len(), expected.len());
    assert_eq!(snapshot(&total), expected);
    let again = WordCounts::from_bytes(&total.to_bytes()).unwrap();
    assert_eq!(snapshot(&again), expected);
    let dropped = total.prune(3);
    expected.retain(|_, v| *v >= 3);
    assert_eq!(dropped, again.len() - expected.len());
    assert_eq!(snapshot(&total), expected);
}

/// Counting with a budget so small that every few chunks spill (with
/// and without SuperBPE's second table, 1 and 3 threads) equals the
/// in-memory count exactly; and the merged runs can leave out the rarest
/// types as `choose_min` decides.
///
/// Why this function is long: one corpus counted four ways (in memory,
/// spilled, pruned, and SuperBPE's units pruned beside the words), each
/// compared with the first; the cases share that corpus and its count.
#[test]
fn spilled_counts_equal_the_in_memory_count() {
    use crate::pretok::PreTokenizerSpec;
    let mut rng = crate::util::Lcg(11);
    let mut next = || rng.step() >> 33;
    let words: Vec<String> =
        (0..20_000).map(|i| format!("w{}{}", i, "xyzzyplughfoo".repeat((i % 3) as usize))).collect();
    let chunks: Vec<Vec<u8>> = (0..40)
        .map(|_| {
            let mut text = String::new();
            for _ in 0..2_000 {
                let w = &words[(next() % 20_000) as usize % (1 + (next() % 20_000) as usize)];
                text.push_str(w);
                text.push(if next() % 9 == 0 { '\n' } else { ' ' });
            }
            text.push('\n');
            text.into_bytes()
        })
        .collect();
    let pre = PreTokenizer::new(PreTokenizerSpec::GPT2).unwrap();
    let stage2 = PreTokenizer::new(PreTokenizerSpec::SUPERWORD).unwrap();
    let specials = SpecialSplitter::new(&[]).unwrap();
    for superword in [false, true] {
        let counter = plain_counter(&pre, &specials, true, superword.then_some(&stage2));
        let feed = |sink: &mut dyn FnMut(Chunk) -> Result<()>| feed_lines(&chunks, sink);
        let plain = count_parallel(&counter, 2, None, feed).unwrap();
        for threads in [1, 3] {
            let limits = CountLimits { budget: CountBudget { total: 1 << 20, worker_table: 64 << 10, process: u64::MAX }, choose_min: None };
            let spilled = count_parallel(&counter, threads, Some(&limits), feed).unwrap();
            assert!(spilled.memory.spill_runs >= 10, "{} runs", spilled.memory.spill_runs);
            assert_eq!(snapshot(&spilled), snapshot(&plain));
            assert_eq!(spilled.stats, plain.stats);
            match (&spilled.superword, &plain.superword) {
                (Some(a), Some(b)) => {
                    assert_eq!(snapshot(a), snapshot(b));
                    assert_eq!(a.stats, b.stats);
                }
                (None, None) => assert!(!superword),
                _ => panic!("superword table lost"),
            }
        }
        // The units come second, beside the word types' table: they
        // get a higher minimum here, to tell the two apart.
        let choose = |h: &CountHistogram, held: u64| -> Result<(u64, Option<Dropped>)> {
            let min = if held > 0 { 30 } else { 3 };
            let (types, _, pieces) = h.kept(1);
            let (kept, _, kept_pieces) = h.kept(min);
            Ok((min, Some(Dropped { min_word_count: min, types: types - kept, pretokens: pieces - kept_pieces })))
        };
        let limits = CountLimits { budget: CountBudget { total: 1 << 20, worker_table: 64 << 10, process: u64::MAX }, choose_min: Some(&choose) };
        let pruned = count_parallel(&counter, 2, Some(&limits), feed).unwrap();
        let mut expected = snapshot(&plain);
        let before = expected.len();
        expected.retain(|_, v| *v >= 3);
        assert_eq!(snapshot(&pruned), expected);
        assert_eq!(pruned.memory.types_left_out as usize, before - expected.len());
        assert_eq!(pruned.memory.dropped.unwrap().types as usize, before - expected.len());
        // SuperBPE's units are pruned by the same rule, with their own record.
        if let (Some(units), Some(all)) = (&pruned.superword, &plain.superword) {
            let mut expected = snapshot(all);
            let before = expected.len();
            expected.retain(|_, v| *v >= 30);
            assert!(expected.len() < before, "{} of {before} units kept", expected.len());
            assert_eq!(snapshot(units), expected);
            assert_eq!(units.memory.types_left_out as usize, before - expected.len());
            assert_eq!(units.memory.dropped.unwrap().types as usize, before - expected.len());
        }
    }
}

/// A chunk of lines, checked as UTF-8 once (`count_chunk_with`), counts
/// as its lines do one by one; a chunk with invalid bytes is checked line
/// by line: its bad bytes are kept (bytes scheme) or reported with their
/// line (chars scheme).
#[test]
fn a_chunk_counts_as_its_lines_do() {
    let pre = PreTokenizer::new(crate::pretok::PreTokenizerSpec::GPT2).unwrap();
    let specials = SpecialSplitter::new(&["<s>".to_string()]).unwrap();
    let valid = "héllo wörld<s>日本語 text\r\n\nπ = 3.14 <s>\nend".as_bytes().to_vec();
    let mut invalid = valid.clone();
    invalid.splice(3..3, [0xFF, 0xC3]);
    for allow_invalid_utf8 in [true, false] {
        let counter = plain_counter(&pre, &specials, allow_invalid_utf8, None);
        for data in [&valid, &invalid] {
            let chunk = Chunk { data: data.clone(), layout: Layout::Lines, source: "t".into(), first_line: 7, langs: Vec::new() };
            let mut whole = WordCounts::new();
            let result = counter.count_chunk_with(&chunk, &mut whole, None, &mut counter.scratch());
            let mut by_line = WordCounts::new();
            let mut failed = None;
            chunk
                .for_each_text(&mut |line, _| {
                    counter.count_text(line, &mut by_line).map_err(|(at, _)| *failed.get_or_insert(at))
                })
                .ok();
            match (data == &invalid && !allow_invalid_utf8, result) {
                (true, Err(e)) => {
                    assert_eq!(failed, Some(3));
                    assert!(e.to_string().contains("t, line 7: invalid UTF-8 (byte 0xff at byte 4"), "{e}");
                }
                (false, Ok(())) => {
                    assert_eq!(snapshot(&whole), snapshot(&by_line));
                    assert_eq!(whole.stats, by_line.stats);
                    assert!(whole.stats.specials == 2 && whole.len() > 8);
                }
                (_, other) => panic!("allow_invalid_utf8={allow_invalid_utf8}: {other:?}"),
            }
        }
    }
}

/// Thread tables flushed into the shared partitions, several at once and
/// several times each, and the partitions' concatenation (a packed
/// table), spilled or not, see exactly the entries of the tables.
///
/// Why this function is long: one scenario (random tables, interleaved
/// flushes, with and without spilling) checked end to end at three thread
/// counts; its parts only mean something together.
#[test]
fn partitions_keep_every_entry() {
    use super::partitioned::Partitions;
    for threads in [1u64, 2, 3] {
        let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
        let parts = Partitions::new(2);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let parts = &parts;
                    scope.spawn(move || {
                        let mut local = WordCounts::new();
                        let mut seen: HashMap<Vec<u8>, u64> = HashMap::new();
                        for i in (t..300_000).step_by(threads as usize) {
                            let key = format!("k{}{}", i % 170_001, if i % 5 == 0 { "-a-long-suffix-here" } else if i % 11 == 0 { "-and-a-suffix-longer-than-31-bytes" } else { "" });
                            local.add(key.as_bytes(), i % 4 + 1);
                            *seen.entry(key.into_bytes()).or_insert(0) += i % 4 + 1;
                            if i % 40_000 == t {
                                parts.flush(&mut local);
                                assert!(local.is_empty());
                            }
                        }
                        parts.flush(&mut local);
                        seen
                    })
                })
                .collect();
            for h in handles {
                for (k, v) in h.join().unwrap() {
                    *expected.entry(k).or_insert(0) += v;
                }
            }
        });
        assert!(parts.held() > 0);
        let total = parts.into_counts(CountStats::default());
        assert!(total.short.packed && total.mid.packed);
        assert_eq!(snapshot(&total), expected);
    }
    let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut table = WordCounts::new();
    for i in 0..200_000u64 {
        let key = format!("k{}{}", i % 70_001, if i % 5 == 0 { "-a-long-suffix-here" } else { "" });
        table.add(key.as_bytes(), i % 4 + 1);
        *expected.entry(key.into_bytes()).or_insert(0) += i % 4 + 1;
    }
    let parts = Partitions::new(2);
    parts.flush(&mut table);
    let total = parts.into_counts(CountStats::default());
    // A packed table still takes additions, short and mid keys alike (its
    // tables become hash tables again).
    let parts = Partitions::new(2);
    parts.flush(&mut WordCounts::from_bytes(&total.to_bytes()).unwrap());
    let mut grown = parts.into_counts(CountStats::default());
    assert!(grown.short.packed && grown.mid.packed);
    let mut more = expected.clone();
    for key in [&b"k1"[..], b"k1-a-long-suffix-here", b"k3-a-new-mid-key"] {
        grown.add(key, 5);
        *more.entry(key.to_vec()).or_insert(0) += 5;
    }
    grown.adder().add(b"fresh", 2);
    more.insert(b"fresh".to_vec(), 2);
    let mut other = WordCounts::new();
    other.add(b"k2", 1);
    other.add(b"k2-a-long-suffix-here", 1);
    *more.entry(b"k2".to_vec()).or_insert(0) += 1;
    *more.entry(b"k2-a-long-suffix-here".to_vec()).or_insert(0) += 1;
    grown.merge(other);
    assert_eq!(snapshot(&grown), more);
    let mut drained = HashMap::new();
    total.drain_each(|k, v| {
        assert!(drained.insert(k.to_vec(), v).is_none());
    });
    assert_eq!(drained, expected);
    // Spilled partitions: one sorted run that merges back to the same counts.
    let parts = Partitions::new(2);
    let mut again = WordCounts::from_bytes(&total_bytes(&expected)).unwrap();
    parts.flush(&mut again);
    let dirs = SpillDirs { main: SpillDir::new().unwrap(), superword: None };
    parts.spill_to(&dirs.main).unwrap();
    assert_eq!(parts.held(), Partitions::new(2).held());
    let merged = WordCounts::from_runs(&dirs, CountStats::default(), None, None).unwrap();
    assert_eq!(snapshot(&merged), expected);
}

fn total_bytes(m: &HashMap<Vec<u8>, u64>) -> Vec<u8> {
    let mut c = WordCounts::new();
    for (k, &v) in m {
        c.add(k, v);
    }
    c.to_bytes()
}

/// A count that spilled is written in the wire form from its runs (no
/// table built), and reads back as the table a plain count builds; a table
/// is written as `to_bytes` writes it. With SuperBPE's units, on 1 and 3
/// threads.
#[test]
fn spilled_counts_are_written_from_their_runs() {
    let text: String = (0..30_000).map(|i| format!("w{} x{}{}", i % 7_919, i % 13, if i % 11 == 0 { "\n" } else { " " })).collect();
    let chunks: Vec<Vec<u8>> = text.as_bytes().chunks(8_192).map(|c| c.to_vec()).collect();
    let pre = PreTokenizer::new(crate::pretok::PreTokenizerSpec::GPT2).unwrap();
    let stage2 = PreTokenizer::new(crate::pretok::PreTokenizerSpec::SUPERWORD).unwrap();
    let specials = SpecialSplitter::new(&[]).unwrap();
    for superword in [false, true] {
        let counter = plain_counter(&pre, &specials, true, superword.then_some(&stage2));
        // The same chunks for every count below (only equality matters).
        let feed = |sink: &mut dyn FnMut(Chunk) -> Result<()>| feed_lines(&chunks, sink);
        let plain = count_parallel(&counter, 1, None, feed).unwrap();
        let table = CountOutput::Table(count_parallel(&counter, 1, None, feed).unwrap());
        let mut wire = vec![0; table.wire_len().unwrap()];
        table.write_wire(&mut wire).unwrap();
        assert_eq!(wire, plain.to_bytes());
        for threads in [1, 3] {
            let limits = CountLimits { budget: CountBudget { total: 1 << 20, worker_table: 16 << 10, process: u64::MAX }, choose_min: None };
            let out = count_parallel_output(&counter, threads, Some(&limits), feed).unwrap();
            assert!(matches!(out, CountOutput::Runs(_)), "the count did not spill");
            let mut wire = vec![0; out.wire_len().unwrap()];
            out.write_wire(&mut wire).unwrap();
            let back = WordCounts::from_bytes(&wire).unwrap();
            assert_eq!(snapshot(&back), snapshot(&plain));
            assert_eq!(back.stats, plain.stats);
            assert_eq!(back.superword.as_deref().map(snapshot), plain.superword.as_deref().map(snapshot));
            assert_eq!(back.superword.map(|s| s.stats), plain.superword.as_ref().map(|s| s.stats.clone()));
        }
    }
}

/// A counting task refuses, before writing anything, serialized counts
/// whose copies would not fit what its budget leaves free (the Ray task's
/// share), and writes them when they fit.
#[test]
fn serialized_counts_over_the_budget_are_refused_before_they_are_made() {
    let mut counts = WordCounts::new();
    for i in 0..20_000u32 {
        let key = format!("a word type long enough to live in the long keys' map, number {i:>8}");
        counts.add(key.as_bytes(), 1 + u64::from(i % 7));
    }
    let output = CountOutput::Table(counts);
    let len = output.wire_len().expect("wire length") as u64;
    // Nothing free beside what the process holds: four copies cannot fit
    // in what writing the table frees behind the cursor.
    let held = crate::memory::budget::process_rss();
    let err = output.wire_len_within(held, 4).expect_err("four copies over a budget the process already fills");
    assert!(err.message().contains("in their serialized form"), "{}", err.message());
    assert_eq!(output.wire_len_within(held + 8 * len + (64 << 20), 4).expect("room for them") as u64, len);
}
