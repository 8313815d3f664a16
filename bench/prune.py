#!/usr/bin/env python3
"""What pruning rare word types (``min_word_count``) does to a vocabulary.

Trains 32k byte-level vocabularies on a corpus with min_word_count 1 (no
pruning), 2, 3 and 5, each in a fresh subprocess, and reports: word types
kept, merge time, peak RSS, how many of the unpruned merges the pruned model
also has (as a set, and as an identical prefix), and bytes/token on 20,000
lines held apart (taken from the end of multi-1m by default).

Reproduce:
    python bench/prune.py --corpus ../shared/corpora/multi-200k.txt.xz \\
        --heldout ../shared/corpora/multi-1m.txt.xz --markdown
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time, bpeforge
corpus, k, vocab, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t = time.perf_counter()
tok = bpeforge.train(corpus, vocab_size=vocab, min_word_count=k, progress=False)
wall = time.perf_counter() - t
tok.save(out)
print(json.dumps({"wall": wall, "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
                  "meta": tok.metadata}))
"""


def read(path: Path) -> list[str]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--heldout", type=Path, required=True, help="held-apart lines are taken from its end")
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--counts", default="1,2,3,5")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    import bpeforge

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        # Stream the corpus to disk: the parent stays small, because a child
        # started with vfork+exec reports the parent's peak RSS as its own.
        opener = lzma.open if args.corpus.suffix == ".xz" else open
        with opener(args.corpus, "rb") as src, open(corpus, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        results = {}
        counts = [int(x) for x in args.counts.split(",")]
        for k in counts:
            out = Path(tmp) / f"m{k}.json"
            proc = subprocess.run([sys.executable, "-c", CHILD, str(corpus), str(k), str(args.vocab_size), str(out)],
                                  capture_output=True, text=True, check=True)
            results[k] = json.loads(proc.stdout.strip().splitlines()[-1])
        held = read(args.heldout)[-20000:]
        nbytes = sum(len(x.encode("utf-8")) for x in held)
        base = None
        for k in counts:
            res = results[k]
            tok = bpeforge.load(Path(tmp) / f"m{k}.json")
            if base is None:
                base = tok
            merges = tok.merges
            prefix = next((i for i, (a, b) in enumerate(zip(merges, base.merges)) if a != b), min(len(merges), len(base.merges)))
            common = len(set(merges) & set(base.merges)) / max(len(base.merges), 1)
            bpt = nbytes / sum(map(len, tok.encode_batch(held)))
            meta = res["meta"]
            rows.append({
                "min_word_count": k,
                "types_kept": meta["word_types"] - meta.get("word_types_pruned", 0),
                "types_pruned": meta.get("word_types_pruned", 0),
                "merge_s": meta["timings"]["merge_seconds"], "wall_s": round(res["wall"], 2),
                "rss_gb": round(res["rss_gb"], 2), "same_prefix": prefix, "common_merges": round(common, 4),
                "bytes_per_token": round(bpt, 4),
            })
    print("| min_word_count | word types kept | pruned | merge s | wall s | peak RSS GB | identical merge prefix | merges shared with unpruned | held-apart bytes/token |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['min_word_count']} | {r['types_kept']:,} | {r['types_pruned']:,} | {r['merge_s']:.2f} | {r['wall_s']:.2f} | "
              f"{r['rss_gb']:.2f} | {r['same_prefix']:,} | {r['common_merges'] * 100:.1f}% | {r['bytes_per_token']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
