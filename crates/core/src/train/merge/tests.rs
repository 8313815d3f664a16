use super::table::Starts;
use super::*;

fn setup(words: &[(&str, u64)]) -> (WordTable, Vec<Vec<u8>>, Map<Vec<u8>, u32>) {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut ids = new_map();
    for (i, t) in tokens.iter().enumerate() {
        ids.insert(t.clone(), i as u32);
    }
    let mut table = WordTable::new();
    for (w, c) in words {
        table.push(w.bytes().map(u32::from), *c).unwrap();
    }
    tokens.truncate(256);
    (table, tokens, ids)
}

/// The merges (as symbol ids) the loop learns on `words`.
fn learn_ids(words: &[(&str, u64)], max_merges: usize, min_frequency: u64, threads: usize) -> Vec<(u32, u32, u64)> {
    let (table, mut tokens, mut ids) = setup(words);
    let params = MergeParams { max_merges, min_frequency, max_token_length: None, unk: None, limits: Default::default(), threads };
    learn_merges(table, &mut tokens, &mut ids, &params, &mut |_, _| Ok(Flow::Continue)).unwrap().merges
}

fn run(words: &[(&str, u64)], max_merges: usize) -> Vec<(String, String, u64)> {
    let (table, mut tokens, mut ids) = setup(words);
    let params = MergeParams { max_merges, min_frequency: 1, max_token_length: None, unk: None, limits: Default::default(), threads: 2 };
    let learned = learn_merges(table, &mut tokens, &mut ids, &params, &mut |_, _| Ok(Flow::Continue)).unwrap();
    learned
        .merges
        .into_iter()
        .map(|(a, b, c)| {
            (
                String::from_utf8(tokens[a as usize].clone()).unwrap(),
                String::from_utf8(tokens[b as usize].clone()).unwrap(),
                c,
            )
        })
        .collect()
}

/// Words made by `word` from successive states of a linear congruential
/// generator seeded with `seed`, until they hold `symbols` bytes in all.
fn random_words(seed: u64, symbols: usize, word: impl Fn(u64) -> (String, u64)) -> Vec<(String, u64)> {
    let (mut rng, mut total, mut words) = (crate::util::Lcg(seed), 0, Vec::new());
    while total < symbols {
        let (w, count) = word(rng.step());
        total += w.len();
        words.push((w, count));
    }
    words
}

#[test]
fn parallel_pair_index_gives_the_same_merges() {
    // > 1M symbols so the threaded index is used; random words over a
    // small alphabet, with overlapping runs ("aaa...") mixed in.
    let words = random_words(12345, 1_300_000, |state| {
        let len = 2 + (state >> 60) as usize;
        let w = (0..len).map(|k| (b'a' + ((state >> (k * 3 % 58)) & 3) as u8) as char).collect();
        (w, 1 + (state >> 62))
    });
    let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
    let run_with = |threads: usize| learn_ids(&words, 300, 1, threads);
    assert_eq!(run_with(1), run_with(2));
    assert_eq!(run_with(1), run_with(3));
}

#[test]
fn pruning_below_min_frequency_changes_nothing() {
    // With min_frequency=1 the loop keeps every pair; its merges with
    // count >= k must be exactly what min_frequency=k learns (which drops
    // rarer pairs from the index and the heap), on 1 and 2 threads.
    let words = random_words(99, 1_200_000, |state| {
        let len = 2 + (state >> 59) as usize;
        let w = (0..len).map(|k| (b'a' + ((state >> (k * 5 % 57)) % 7) as u8) as char).collect();
        (w, 1 + (state >> 62) * (state >> 40 & 1))
    });
    let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
    let run_with = |min_frequency: u64, threads: usize| learn_ids(&words, usize::MAX, min_frequency, threads);
    let all = run_with(1, 1);
    for k in [2u64, 3, 5] {
        let expect: Vec<_> = all.iter().copied().take_while(|m| m.2 >= k).collect();
        assert!(expect.len() < all.len(), "k={k}: the test needs merges below k");
        assert_eq!(run_with(k, 1), expect, "k={k}");
        assert_eq!(run_with(k, 2), expect, "k={k}, 2 threads");
    }
}

#[test]
fn overlapping_runs_merge_left_to_right() {
    // "aaa" has the pair (a,a) twice but only one merge fits: "aa a".
    let m = run(&[("aaa", 1)], 2);
    assert_eq!(m[0], ("a".into(), "a".into(), 2));
    assert_eq!(m[1], ("aa".into(), "a".into(), 1));
}

#[test]
fn ties_break_by_bytes() {
    // (c,d) and (a,b) both occur 3 times: (a,b) is smaller.
    let m = run(&[("ab", 3), ("cd", 3)], 1);
    assert_eq!(m[0], ("a".into(), "b".into(), 3));
}

#[test]
fn counts_are_weighted_and_updated() {
    let m = run(&[("hug", 10), ("pug", 5), ("pun", 12), ("bun", 4), ("hugs", 5)], 3);
    assert_eq!(m[0], ("u".into(), "g".into(), 20));
    assert_eq!(m[1], ("u".into(), "n".into(), 16));
    assert_eq!(m[2], ("h".into(), "ug".into(), 15));
}

#[test]
fn duplicate_bytes_are_not_merged_twice() {
    // After "ab"+"c" -> "abc", the pair ("a","bc") would give "abc" again.
    let m = run(&[("abc", 5), ("xbc", 3), ("ab", 2)], 10);
    let made: Vec<String> = m.iter().map(|(a, b, _)| format!("{a}{b}")).collect();
    let mut uniq = made.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), made.len(), "{made:?}");
}

/// The naive trainer: recount every pair before each merge, take the
/// largest count (ties: smaller left bytes, then right bytes), merge it
/// left to right in every word; a pair whose bytes already are a token
/// is never taken.
fn reference(words: &[(Vec<u32>, u64)], tokens: &mut Vec<Vec<u8>>, max_merges: usize, min_frequency: u64) -> Vec<(u32, u32, u64)> {
    let mut words: Vec<(Vec<u32>, u64)> = words.to_vec();
    let mut banned = std::collections::HashSet::new();
    let mut merges = Vec::new();
    while merges.len() < max_merges {
        let mut counts: std::collections::HashMap<(u32, u32), u64> = Default::default();
        for (w, c) in &words {
            for p in w.windows(2) {
                *counts.entry((p[0], p[1])).or_insert(0) += c;
            }
        }
        let best = counts
            .into_iter()
            .filter(|(p, _)| !banned.contains(p))
            .max_by(|x, y| {
                x.1.cmp(&y.1)
                    .then_with(|| tokens[y.0 .0 as usize].cmp(&tokens[x.0 .0 as usize]))
                    .then_with(|| tokens[y.0 .1 as usize].cmp(&tokens[x.0 .1 as usize]))
            });
        let Some(((a, b), count)) = best else { break };
        if count < min_frequency.max(1) {
            break;
        }
        let bytes = [tokens[a as usize].clone(), tokens[b as usize].clone()].concat();
        if tokens.contains(&bytes) {
            banned.insert((a, b));
            continue;
        }
        let r = tokens.len() as u32;
        tokens.push(bytes);
        for (w, _) in words.iter_mut() {
            let mut out = Vec::with_capacity(w.len());
            let mut i = 0;
            while i < w.len() {
                if i + 1 < w.len() && w[i] == a && w[i + 1] == b {
                    out.push(r);
                    i += 2;
                } else {
                    out.push(w[i]);
                    i += 1;
                }
            }
            *w = out;
        }
        merges.push((a, b, count));
    }
    merges
}

#[test]
fn the_loop_equals_the_naive_trainer_on_random_tables() {
    let mut rng = crate::util::Lcg(2024);
    let mut next = |m: u64| (rng.step() >> 33) % m;
    for round in 0..40 {
        // Few letters and short words: many ties, repeats ("aaaa") and
        // pairs that come back as existing tokens ("ab"+"c" vs "a"+"bc").
        let letters = 2 + next(4);
        let n = 1 + next(60) as usize;
        let words: Vec<(Vec<u32>, u64)> = (0..n)
            .map(|_| {
                let len = 1 + next(9) as usize;
                ((0..len).map(|_| b'a' as u32 + next(letters) as u32).collect(), 1 + next(5) * next(2))
            })
            .collect();
        let min_frequency = 1 + next(3);
        let mut base: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        if round % 2 == 1 {
            // More ids than `DENSE_IDS`: the index is built in a map.
            base.extend((0..200u32).map(|k| vec![0xfe, (k >> 8) as u8, k as u8]));
        }
        let expect = reference(&words, &mut base.clone(), usize::MAX, min_frequency);
        for (wide, threads, cold) in [(false, 1, None), (true, 1, None), (false, 2, Some(3)), (true, 1, Some(8)), (false, 1, Some(1000))] {
            let mut table = WordTable::new();
            for (w, c) in &words {
                table.push(w.iter().copied(), *c).unwrap();
            }
            let mut tokens = base.clone();
            let mut ids: Map<Vec<u8>, u32> = new_map();
            for (i, t) in tokens.iter().enumerate() {
                ids.insert(t.clone(), i as u32);
            }
            let params = MergeParams { max_merges: usize::MAX, min_frequency, max_token_length: None, unk: None, limits: Default::default(), threads };
            let got = learn(table, &mut tokens, &mut ids, &params, &mut |_, _| Ok(Flow::Continue), wide, cold).unwrap().merges;
            assert_eq!(got, expect, "round {round}, wide {wide}, cold {cold:?}, words {words:?}");
        }
    }
}

#[test]
fn offsets_hold_past_two_to_the_32_symbols() {
    // A synthetic table: only the word records, with words of 3 billion
    // symbols, so the offsets cross 2^32 twice (the symbols themselves
    // would need 18 GB).
    let mut recs = Vec::new();
    let mut starts = Starts::default();
    starts.push(&mut recs, 0);
    let len = 3_000_000_000usize;
    for w in 1..=5 {
        starts.push(&mut recs, w * len);
    }
    starts.push(&mut recs, 5 * len + 2);
    for w in 0..=5 {
        assert_eq!(starts.offset(&recs, w), w * len, "word {w}");
    }
    assert_eq!(starts.offset(&recs, 6), 5 * len + 2);
    assert_eq!(starts.high.len(), ((5 * len + 2) >> 32) as usize);
}

#[test]
fn tables_built_in_parts_equal_pushed_ones() {
    let words: Vec<(Vec<u32>, u64)> = (0..1000u32)
        .map(|k| ((0..2 + k % 7).map(|i| (k * 31 + i * 7) % 300).collect(), if k % 97 == 5 { (1 << 33) + k as u64 } else { 1 + k as u64 % 13 }))
        .collect();
    let mut pushed = WordTable::new();
    for (w, c) in &words {
        pushed.push(w.iter().copied(), *c).unwrap();
    }
    for cuts in [vec![0, 1000], vec![0, 0, 333, 1000], vec![0, 400, 401, 1000, 1000]] {
        let sizes: Vec<(usize, usize)> = cuts.windows(2).map(|c| (c[1] - c[0], words[c[0]..c[1]].iter().map(|w| w.0.len()).sum())).collect();
        let built = WordTable::build_in_parts(&sizes, &|p, out| {
            words[cuts[p]..cuts[p + 1]].iter().try_for_each(|(w, c)| out.push(w.iter().copied(), *c))
        })
        .unwrap();
        let (Symbols::Narrow(a), Symbols::Narrow(b)) = (&built.syms, &pushed.syms) else { unreachable!() };
        assert_eq!(a, b);
        assert_eq!(built.len(), pushed.len());
        for w in 0..=built.len() {
            assert_eq!(built.starts.offset(&built.recs, w), pushed.starts.offset(&pushed.recs, w));
            if w < built.len() {
                assert_eq!(built.count(w), pushed.count(w), "word {w}");
            }
        }
    }
}

#[test]
fn ids_past_u16_widen_the_table() {
    let mut narrow = WordTable::new();
    narrow.push([1, 2, 3], 7).unwrap();
    let mut wide = WordTable::new();
    wide.push([70_000, 2], 1 << 40).unwrap();
    assert!(matches!(wide.syms, Symbols::Wide(_)));
    narrow.append(wide).unwrap();
    assert!(matches!(narrow.syms, Symbols::Wide(_)));
    narrow.push([5], 1).unwrap(); // one symbol: skipped
    narrow.push([4, 65_535, 4], 3).unwrap();
    assert_eq!((narrow.len(), narrow.symbols()), (3, 8));
    assert_eq!([narrow.count(0), narrow.count(1), narrow.count(2)], [7, 1 << 40, 3]);
    let Symbols::Wide(v) = &narrow.syms else { unreachable!() };
    assert_eq!(v, &[1, 2, 3, 70_000, 2, 4, 65_535, 4]);
}

#[test]
fn word_lists_round_trip() {
    let all: Vec<u32> = vec![0, 1, 2, 130, 20_000, 3_000_000, u32::MAX - 1];
    for cut in 0..=all.len() {
        let (mut a, mut b) = (WordList::new(), WordList::new());
        for &w in &all[..cut] {
            a.add(w);
            a.add(w); // a word with two occurrences is listed once
        }
        for &w in &all[cut..] {
            b.add(w);
        }
        a.append(b);
        let mut out = Vec::new();
        a.decode_into(&mut out);
        assert_eq!(out, all, "cut {cut}");
    }
}
