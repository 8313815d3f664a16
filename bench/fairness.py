#!/usr/bin/env python3
"""Fairness on parallel text: how many more tokens each language pays than
English for the same messages, for 32k vocabularies trained on multi-1m.

Rows: bpeforge with its default pre-tokenizer, bpeforge balanced (the
library's language balancing, ``--balanced`` options), bpeforge with the
``gpt2`` and ``o200k`` pre-tokenizers, SentencePiece BPE (byte fallback,
character coverage 0.9995) and HF tokenizers (ByteLevel).

What it measures
----------------
The parallel set (``../shared/corpora/parallel-dev.tsv.xz``: ``key<TAB>lang<TAB>text``)
is the evaluation; every line of multi-1m whose text occurs in it is left out
of training, so no tool has seen the messages it is measured on. Each tool
trains on the rest (with its aligned language file) and encodes every text of
the parallel set once. A language's *premium* = its tokens on the messages it
shares with English / English's tokens on those messages
(:mod:`bpeforge.report.parallel`). *Seen* languages have at least 1,000
training lines; the worst decile is the mean of the highest tenth (rounded
up) of their premiums; the median is over the seen languages too. English
tokens are English's tokens on all its messages (the change against the
bpeforge default row in brackets). Training time is one run's wall time.
Per source (LibreOffice help keys vs GNOME ``gnome:`` keys), the worst decile
is printed again, so a gain that holds on one source only shows.

Peers' results are cached (``--cache``, keyed by tool, vocabulary size and the
training corpus), so tuning bpeforge reruns only bpeforge rows.

Reproduce:
    python bench/fairness.py --markdown
    python bench/fairness.py --rows default,balanced --balanced '{"max_premium": 1.2}'
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

from bpeforge.report.parallel import count_parallel, premiums_from_counts, read_parallel

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "corpora"
SEEN_LINES = 1000
ALL_ROWS = ("default", "balanced", "gpt2", "o200k", "sentencepiece", "hf")
#: The balanced row's options (bpeforge.train keywords besides langs), unless --balanced says otherwise.
BALANCED = {"max_premium": 1.7, "balance_min_lines": 1000}


def training_corpus(corpus: Path, langs: Path, parallel_texts: set[str], cache: Path) -> tuple[Path, Path, Counter]:
    """multi-1m without the parallel set's texts (written once to the cache)."""
    from bpeforge._io import open_text

    stamp = hashlib.sha1(f"{corpus.resolve()}|{corpus.stat().st_size}|{len(parallel_texts)}".encode()).hexdigest()[:12]
    out, out_langs = cache / f"train-{stamp}.txt", cache / f"train-{stamp}.langs"
    counts: Counter = Counter()
    if out.exists() and out_langs.exists():
        with open(out_langs, encoding="utf-8") as f:
            counts.update(line.rstrip("\n") for line in f)
        return out, out_langs, counts
    cache.mkdir(parents=True, exist_ok=True)
    kept = dropped = 0
    with open_text(corpus) as fc, open_text(langs) as fl, \
            open(str(out) + ".tmp", "w", encoding="utf-8", newline="\n") as oc, \
            open(str(out_langs) + ".tmp", "w", encoding="utf-8", newline="\n") as ol:
        for line, tag in zip(fc, fl):
            text = line.rstrip("\n")
            if text in parallel_texts:
                dropped += 1
                continue
            kept += 1
            tag = tag.rstrip("\n")
            counts[tag] += 1
            oc.write(text + "\n")
            ol.write(tag + "\n")
    os.replace(str(out) + ".tmp", out)
    os.replace(str(out_langs) + ".tmp", out_langs)
    print(f"training corpus: {kept} lines kept, {dropped} left out (their text is in the parallel set)", file=sys.stderr)
    return out, out_langs, counts


def bpeforge_row(corpus: Path, vocab: int, **kw):
    import bpeforge

    t = time.perf_counter()
    tok = bpeforge.train(corpus, vocab_size=vocab, progress=False, **kw)
    seconds = time.perf_counter() - t
    return (lambda texts: [len(x) for x in tok.encode_batch(texts)]), seconds, tok


def sentencepiece_row(corpus: Path, vocab: int, workdir: Path):
    from balance import sentencepiece_encoder

    count, seconds = sentencepiece_encoder(corpus, vocab, workdir, coverage=0.9995, name="sp-fair")
    return count, seconds, None


def hf_row(corpus: Path, vocab: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t = time.perf_counter()
    tk.train([str(corpus)], trainer)
    seconds = time.perf_counter() - t
    return (lambda texts: [len(e.ids) for e in tk.encode_batch(texts)]), seconds, None


def row_label(name: str, balanced: dict, candidates: dict) -> str:
    import bpeforge

    if name in candidates:
        return f"bpeforge, candidate `{name}` pre-tokenizer"
    default = bpeforge.TrainOptions().pretokenizer
    return {
        "default": f"bpeforge, default (`{default}`)",
        "balanced": f"bpeforge, default, balanced {json.dumps(balanced, sort_keys=True)}",
        "gpt2": "bpeforge, `gpt2` pre-tokenizer",
        "o200k": "bpeforge, `o200k` pre-tokenizer",
        "sentencepiece": "SentencePiece BPE, byte fallback, coverage 0.9995",
        "hf": "HF tokenizers ByteLevel",
    }[name]


def run_row(name: str, corpus: Path, langs: Path, args, pset, cache: Path, stamp: str) -> dict:
    peer = name in ("sentencepiece", "hf")
    if name in args.candidates:
        import bpeforge

        enc, s, _ = bpeforge_row(corpus, args.vocab_size, pretokenizer=bpeforge.Regex(args.candidates[name]))
        return {"train_s": s, "counts": count_parallel(enc, pset)}
    cached = cache / f"counts-{name}-{args.vocab_size}-{stamp}.json"
    if peer and cached.exists() and not args.no_cache:
        return json.loads(cached.read_text())
    if name == "default":
        enc, s, _ = bpeforge_row(corpus, args.vocab_size)
    elif name == "balanced":
        enc, s, tok = bpeforge_row(corpus, args.vocab_size, langs=langs, **args.balanced)
        balance = tok.metadata.get("language_balance", {})
    elif name in ("gpt2", "o200k"):
        enc, s, _ = bpeforge_row(corpus, args.vocab_size, pretokenizer=name)
    elif name == "sentencepiece":
        enc, s, _ = sentencepiece_row(corpus, args.vocab_size, cache)
    else:
        enc, s, _ = hf_row(corpus, args.vocab_size)
    result = {"train_s": s, "counts": count_parallel(enc, pset)}
    if name == "balanced":
        result["language_balance"] = balance
    if peer:
        cached.write_text(json.dumps(result))
    return result


def summarize(label: str, result: dict, seen: set[str], en_ref: int | None) -> dict:
    counts = result["counts"]
    table = premiums_from_counts(counts)
    summ = table.summary(seen)
    by_source = {src: premiums_from_counts(counts, keys=pred).summary(seen)["worst_decile"]
                 for src, pred in (("libreoffice", lambda k: not k.startswith("gnome:")),
                                   ("gnome", lambda k: k.startswith("gnome:")))}
    en = sum(counts["en"].values())
    return {"row": label, "median": summ["median"], "worst_decile": summ["worst_decile"],
            "highest": summ["highest"], "en_tokens": en,
            "en_change": None if en_ref is None else en / en_ref - 1, "train_s": result["train_s"],
            "by_source": by_source, "premiums": {k: round(v, 4) for k, v in table.premiums().items()},
            **({"language_balance": result["language_balance"]} if "language_balance" in result else {})}


def markdown(rows: list[dict], n_seen: int) -> str:
    out = [f"| model | median (seen) | worst decile, seen ({n_seen}) | highest, seen | English tokens | "
           "worst decile: LibreOffice / GNOME | training s |",
           "|---|---:|---:|---|---:|---|---:|"]
    for r in rows:
        en = f"{r['en_tokens']:,}" + ("" if r["en_change"] is None else f" ({r['en_change'] * 100:+.1f}%)")
        hi = ", ".join(f"{lang} {p:.2f}" for lang, p in r["highest"])
        src = " / ".join(f"{v:.2f}x" for v in r["by_source"].values())
        out.append(f"| {r['row']} | {r['median']:.2f}x | {r['worst_decile']:.2f}x | {hi} | {en} | {src} | "
                   f"{r['train_s']:.1f} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parallel", type=Path, default=SHARED / "parallel-dev.tsv.xz")
    ap.add_argument("--corpus", type=Path, default=SHARED / "multi-1m.txt.xz")
    ap.add_argument("--langs", type=Path, default=SHARED / "multi-1m.langs.txt.xz")
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--rows", default=",".join(ALL_ROWS), help=f"comma-separated, from {', '.join(ALL_ROWS)}")
    ap.add_argument("--balanced", type=json.loads, default=BALANCED,
                    help="the balanced row's bpeforge.train options besides langs, as JSON "
                         f"(default {json.dumps(BALANCED)})")
    ap.add_argument("--cache", type=Path, default=HERE / "results" / "fairness-cache",
                    help="the training corpus without the parallel texts, and peers' counts")
    ap.add_argument("--no-cache", action="store_true", help="retrain the peers even when cached")
    ap.add_argument("--candidate", action="append", default=[], metavar="NAME=REGEX",
                    help="also a row trained with this custom pre-tokenizer regex (repeatable)")
    ap.add_argument("--json", type=Path, help="also write every row, with each language's premium")
    ap.add_argument("--markdown", action="store_true", help="print the table (always printed at the end)")
    args = ap.parse_args()
    args.candidates = dict(c.split("=", 1) for c in args.candidate)
    rows = [r for r in args.rows.split(",") if r] + list(args.candidates)
    bad = [r for r in rows if r not in ALL_ROWS and r not in args.candidates]
    if bad:
        sys.exit(f"--rows: unknown {bad}; choose from {', '.join(ALL_ROWS)}")
    for path in (args.parallel, args.corpus, args.langs):
        if not path.exists():
            sys.exit(f"{path}: no such file (the shared corpora; see ../shared/corpora/README.md)")
    pset = read_parallel(args.parallel)
    texts = {t for by_key in pset.texts.values() for t in by_key.values()}
    corpus, langs, lines = training_corpus(args.corpus, args.langs, texts, args.cache)
    stamp = corpus.stem.split("-", 1)[1]
    seen = {lang for lang, n in lines.items() if n >= SEEN_LINES} & set(pset.texts)
    print(f"parallel set: {len(pset)} texts in {len(pset.texts)} languages; seen (>= {SEEN_LINES} training lines): "
          f"{len(seen) - ('en' in seen)}", file=sys.stderr)
    results = {}
    raw: dict = {}
    en_ref = None
    import bpeforge

    default = bpeforge.TrainOptions().pretokenizer
    for name in rows:
        # The row of the default's preset is the default row's model: not trained twice.
        same = "default" if name == default else name if name != "default" else default
        if same in raw:
            raw[name] = raw[same]
        else:
            raw[name] = run_row(name, corpus, langs, args, pset, args.cache, stamp)
        r = summarize(row_label(name, args.balanced, args.candidates), raw[name], seen, en_ref)
        if name == "default":
            en_ref = r["en_tokens"]
        results[name] = r
        print(f"{r['row']}: median {r['median']:.3f} worst decile {r['worst_decile']:.3f} "
              f"en {r['en_tokens']} train {r['train_s']:.1f}s", file=sys.stderr)
    if en_ref is not None:
        for r in results.values():
            r["en_change"] = r["en_tokens"] / en_ref - 1
    print(markdown(list(results.values()), len(seen - {"en"})))
    unseen = sorted(set(pset.texts) - seen - {"en"})
    print(f"\nNot seen (< {SEEN_LINES} training lines, reported, not in the seen columns): {', '.join(unseen)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(list(results.values()), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
