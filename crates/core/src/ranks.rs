//! Merge lists from rank tables (tiktoken's vocabularies are ranks only:
//! `{token bytes: rank}`), and the check that a merge list reproduces its
//! own tokens. Both run tiktoken's algorithm (repeatedly join the adjacent
//! pair of lowest rank) over every token of the vocabulary: written here
//! because in Python they took most of the 10-30 s an o200k import took.

use std::collections::HashMap;

/// For each token (its bytes and rank, any order), where tiktoken's algorithm
/// splits it using only lower ranks: `Some(k)` when it ends in exactly two
/// parts, `token[..k]` and `token[k..]` (the merge that makes the token),
/// `None` when it does not (a single byte, or more than two parts).
pub fn merge_splits(tokens: &[Vec<u8>], ranks: &[u32]) -> Vec<Option<usize>> {
    let by_bytes: HashMap<&[u8], u32> = tokens.iter().map(|t| t.as_slice()).zip(ranks.iter().copied()).collect();
    let rank_below = |bytes: &[u8], limit: u32| by_bytes.get(bytes).copied().filter(|&r| r < limit);
    let mut bounds: Vec<usize> = Vec::new();
    tokens
        .iter()
        .zip(ranks)
        .map(|(token, &limit)| {
            if token.len() < 2 {
                return None;
            }
            // Part i is token[bounds[i]..bounds[i + 1]].
            bounds.clear();
            bounds.extend(0..=token.len());
            while bounds.len() > 2 {
                let best = (0..bounds.len() - 2)
                    .filter_map(|i| rank_below(&token[bounds[i]..bounds[i + 2]], limit).map(|r| (r, i)))
                    .min();
                match best {
                    Some((_, i)) => {
                        bounds.remove(i + 1);
                    }
                    None => break,
                }
            }
            (bounds.len() == 3).then(|| bounds[1])
        })
        .collect()
}

/// How many of the merged tokens (`merges[k]` makes token `base + k` from
/// two earlier tokens) merge-list BPE does not produce from their own base
/// symbols: a library that looks whole pieces up first gives them, one that
/// only merges does not.
pub fn unreachable_merges(base: usize, merges: &[(u32, u32)]) -> usize {
    let rank: HashMap<(u32, u32), u32> = merges.iter().enumerate().map(|(k, &pair)| (pair, k as u32)).collect();
    // Each token's base symbols, as spans of one flat buffer.
    let mut symbols: Vec<u32> = (0..base as u32).collect();
    let mut spans: Vec<(usize, usize)> = (0..base).map(|i| (i, i + 1)).collect();
    let mut bad = 0;
    let mut work: Vec<u32> = Vec::new();
    for (k, &(a, c)) in merges.iter().enumerate() {
        let (Some(&(a0, a1)), Some(&(c0, c1))) = (spans.get(a as usize), spans.get(c as usize)) else {
            bad += 1; // a part that is not an earlier token: not reachable either
            spans.push((symbols.len(), symbols.len()));
            continue;
        };
        let start = symbols.len();
        symbols.extend_from_within(a0..a1);
        symbols.extend_from_within(c0..c1);
        spans.push((start, symbols.len()));
        work.clear();
        work.extend_from_slice(&symbols[start..]);
        while work.len() > 1 {
            let best = (0..work.len() - 1).filter_map(|i| rank.get(&(work[i], work[i + 1])).map(|&r| (r, i))).min();
            let Some((r, i)) = best else { break };
            work[i] = base as u32 + r;
            work.remove(i + 1);
        }
        if work != [base as u32 + k as u32] {
            bad += 1;
        }
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_follow_the_lower_ranks() {
        let tokens: Vec<Vec<u8>> = ["a", "b", "c", "ab", "bc", "abc", "ca", "cab"].iter().map(|t| t.as_bytes().to_vec()).collect();
        let ranks = [0, 1, 2, 3, 4, 5, 6, 7];
        let splits = merge_splits(&tokens, &ranks);
        // "abc": ab (3) is joined before bc (4), then ab + c.
        assert_eq!(splits, vec![None, None, None, Some(1), Some(1), Some(2), Some(1), Some(1)]);
        // A token ranked before its possible parts is not two parts.
        let tokens: Vec<Vec<u8>> = ["a", "b", "c", "abc", "ab", "bc"].iter().map(|t| t.as_bytes().to_vec()).collect();
        assert_eq!(merge_splits(&tokens, &[0, 1, 2, 3, 4, 5]), vec![None, None, None, None, Some(1), Some(1)]);
    }

    #[test]
    fn unreachable_tokens_are_counted() {
        // base a=0 b=1 c=2; merges: ab=3, bc=4, then a+bc=5 (BPE makes ab+c instead).
        assert_eq!(unreachable_merges(3, &[(0, 1), (1, 2), (3, 2)]), 0);
        assert_eq!(unreachable_merges(3, &[(0, 1), (1, 2), (0, 4)]), 1);
        assert_eq!(unreachable_merges(3, &[(0, 9)]), 1);
    }
}
