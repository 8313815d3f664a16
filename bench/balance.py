#!/usr/bin/env python3
"""Language balance of 32k byte-level vocabularies: how many more tokens each
language pays than English, for bpeforge unbalanced, bpeforge with temperature
balancing (``--temperatures``), bpeforge with parity balancing
(``--max-premiums``, ``max_premium=P``), SentencePiece and HF tokenizers
(ByteLevel), trained on the same lines.

The parity rows balance the languages the table measures: those with at least
950 training lines (1,000 lines in the corpus minus the held-apart 5%),
``balance_min_lines=950``; everything else is the library's default
(``balance_rounds=3``, ``balance_max_lift=16``, reference: English, the
largest language).

What it measures
----------------
multi-1m is split deterministically: every 20th line is held apart (5%), the
rest is the training corpus (with its aligned language file). Every tool
trains a 32,000-token vocabulary on the training lines. On the held-apart
lines, for every language with at least 1,000 lines in multi-1m, it computes
bytes per token; the *premium* of a language is English bytes/token divided by
that language's bytes/token (1.0 = as cheap as English, 2.0 = twice the tokens
per byte). Reported per tool: the mean premium of the worst decile of
languages, the maximum premium (and which language), and English bytes/token
relative to unbalanced bpeforge. Targets: worst-decile mean <= 1.25,
max <= 1.5, English bytes/token at most 3% below unbalanced.

Reproduce:
    python bench/balance.py --corpus ../shared/corpora/multi-1m.txt.xz \\
        --langs ../shared/corpora/multi-1m.langs.txt.xz --temperatures 3 --max-premiums 1.2,1.25 --markdown
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HOLD_EVERY = 20
MIN_LINES = 1000
#: bpeforge models trained in this run, by (temperature, max_premium).
MODELS: dict = {}
#: The held-apart (language, line) pairs.
HELD: list = []


def read_lines(path: Path) -> list[str]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def split(lines: list[str], langs: list[str], workdir: Path) -> tuple[Path, Path, list[tuple[str, str]]]:
    """Write the training corpus and its language file; return held-apart (lang, line)."""
    train, train_langs, held = [], [], []
    for i, (line, lang) in enumerate(zip(lines, langs)):
        if i % HOLD_EVERY == HOLD_EVERY - 1:
            held.append((lang, line))
        else:
            train.append(line)
            train_langs.append(lang)
    corpus = workdir / "train.txt"
    langs_file = workdir / "train.langs"
    corpus.write_text("\n".join(train) + "\n", encoding="utf-8")
    langs_file.write_text("\n".join(train_langs) + "\n", encoding="utf-8")
    return corpus, langs_file, held


def bpeforge_encoder(corpus: Path, langs: Path, vocab: int, temperature: float | None,
                     max_premium: float | None = None, min_lines: int = 0):
    import bpeforge

    # Temperature 1 is the unbalanced model (tags alone are refused).
    kw: dict = {"langs": langs, "temperature": temperature} if temperature and temperature != 1 else {}
    if max_premium:
        kw.update(langs=langs, max_premium=max_premium, balance_min_lines=min_lines)
    t = time.perf_counter()
    tok = bpeforge.train(corpus, vocab_size=vocab, progress=False, **kw)
    seconds = time.perf_counter() - t
    MODELS[(temperature, max_premium)] = tok
    return (lambda lines: [len(x) for x in tok.encode_batch(lines)]), seconds


def sentencepiece_encoder(corpus: Path, vocab: int, workdir: Path, *, coverage: float = 1.0, name: str = "sp"):
    """SentencePiece BPE with byte fallback trained on ``corpus`` (written to
    ``workdir/NAME.model``): a token counter and the training seconds."""
    import sentencepiece as spm

    t = time.perf_counter()
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(workdir / name), vocab_size=vocab, model_type="bpe",
        character_coverage=coverage, byte_fallback=True, input_sentence_size=0, max_sentence_length=1 << 20,
        normalization_rule_name="identity", num_threads=os.cpu_count() or 1, minloglevel=2,
    )
    seconds = time.perf_counter() - t
    sp = spm.SentencePieceProcessor(model_file=str(workdir / f"{name}.model"))
    return (lambda lines: [len(x) for x in sp.encode(lines)]), seconds


def hf_encoder(corpus: Path, vocab: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t = time.perf_counter()
    tk.train([str(corpus)], trainer)
    seconds = time.perf_counter() - t
    return (lambda lines: [len(e.ids) for e in tk.encode_batch(lines)]), seconds


def premiums(encode, held: list[tuple[str, str]], keep: set[str]) -> dict[str, float]:
    """Bytes per token of each kept language on the held-apart lines."""
    by_lang: dict[str, list[str]] = defaultdict(list)
    for lang, line in held:
        if lang in keep:
            by_lang[lang].append(line)
    bpt = {}
    for lang, lines in by_lang.items():
        n = sum(encode(lines))
        bpt[lang] = sum(len(x.encode("utf-8")) for x in lines) / max(n, 1)
    return bpt


def summarize(name: str, bpt: dict[str, float], en_ref: float | None, seconds: float) -> dict:
    en = bpt["en"]
    prem = {lang: en / v for lang, v in bpt.items()}
    worst = sorted(prem.values(), reverse=True)
    k = max(1, math.ceil(len(worst) / 10))
    top = max(prem, key=prem.get)
    return {
        "tool": name, "train_s": round(seconds, 1), "en_bytes_per_token": round(en, 3),
        "en_vs_unbalanced": None if en_ref is None else round(en / en_ref - 1, 4),
        "worst_decile_mean": round(sum(worst[:k]) / k, 3), "max": round(prem[top], 3), "max_lang": top,
        "languages": len(prem), "premiums": {lang: round(v, 3) for lang, v in sorted(prem.items())},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--langs", type=Path, required=True)
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--temperatures", default="3,5,10")
    ap.add_argument("--max-premiums", default="1.2", help="parity balancing targets (comma-separated; empty: none)")
    ap.add_argument("--balance-min-lines", type=int, default=MIN_LINES - MIN_LINES // HOLD_EVERY,
                    help="parity rows balance languages with at least this many training lines (default: "
                         "the languages the table measures, >= 1000 lines in the corpus = 950 training lines)")
    ap.add_argument("--tools", default="bpeforge,sentencepiece,hf")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--report", type=Path, metavar="DIR",
                    help="also write `bpeforge report` of the first parity model vs unbalanced on the held-apart lines")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tools = set(args.tools.split(","))
    lines, langs = read_lines(args.corpus), read_lines(args.langs)
    if len(lines) != len(langs):
        sys.exit(f"{args.corpus} has {len(lines)} lines but {args.langs} has {len(langs)}")
    counts = Counter(langs)
    keep = {lang for lang, n in counts.items() if n >= MIN_LINES}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bpeforge-balance-") as tmp:
        work = Path(tmp)
        corpus, langs_file, held = split(lines, langs, work)
        HELD[:] = held
        print(f"train lines {len(lines) - len(held)}, held-apart lines {len(held)}, languages with >= {MIN_LINES} lines: {len(keep)}",
              file=sys.stderr)
        enc, s = bpeforge_encoder(corpus, langs_file, args.vocab_size, None)
        base = summarize("bpeforge unbalanced", premiums(enc, held, keep), None, s)
        rows.append(base)
        en_ref = base["en_bytes_per_token"]
        for t in [float(x) for x in args.temperatures.split(",") if x]:
            enc, s = bpeforge_encoder(corpus, langs_file, args.vocab_size, t)
            rows.append(summarize(f"bpeforge balanced T={t:g}", premiums(enc, held, keep), en_ref, s))
            print(rows[-1]["tool"], rows[-1]["worst_decile_mean"], rows[-1]["max"], file=sys.stderr)
        for p in [float(x) for x in args.max_premiums.split(",") if x]:
            enc, s = bpeforge_encoder(corpus, langs_file, args.vocab_size, None, p, args.balance_min_lines)
            rows.append(summarize(f"bpeforge parity max_premium={p:g}", premiums(enc, held, keep), en_ref, s))
            print(rows[-1]["tool"], rows[-1]["worst_decile_mean"], rows[-1]["max"], file=sys.stderr)
        if "sentencepiece" in tools:
            enc, s = sentencepiece_encoder(corpus, args.vocab_size, work)
            rows.append(summarize("SentencePiece BPE (byte_fallback)", premiums(enc, held, keep), en_ref, s))
        if "hf" in tools:
            enc, s = hf_encoder(corpus, args.vocab_size)
            rows.append(summarize("HF tokenizers ByteLevel BPE", premiums(enc, held, keep), en_ref, s))
    head = "| tool | train s | en bytes/token | en vs unbalanced | worst-decile mean premium | max premium (lang) | targets met |"
    print(head)
    print("|" + "---|" * 7)
    for r in rows:
        en_ok = r["en_vs_unbalanced"] is None or r["en_vs_unbalanced"] >= -0.03
        ok = r["worst_decile_mean"] <= 1.25 and r["max"] <= 1.5 and en_ok
        env = "-" if r["en_vs_unbalanced"] is None else f"{r['en_vs_unbalanced'] * 100:+.1f}%"
        print(f"| {r['tool']} | {r['train_s']} | {r['en_bytes_per_token']} | {env} | {r['worst_decile_mean']} | "
              f"{r['max']} ({r['max_lang']}) | {'yes' if ok else 'no'} |")
    if args.report and len(MODELS) > 1:
        from bpeforge.report import write_report

        parity = next((k for k in MODELS if k[1]), None) or next(k for k in MODELS if k != (None, None))
        label = f"parity {parity[1]:g}" if parity[1] else f"T={parity[0]:g}"
        held_lines = [line for lang, line in HELD]
        write_report(args.report, MODELS[parity], held_lines, langs=[lang for lang, _ in HELD],
                     compare=MODELS[(None, None)], labels=[label, "unbalanced"], sample=0, top_langs=30)
        print(f"report: {args.report / 'index.html'}", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
