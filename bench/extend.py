#!/usr/bin/env python3
"""Extending a vocabulary: learn N more merges for a new language, old ids kept.

What it does
------------
1. Splits ``--corpus`` by the language file: a *base* corpus without the
   ``--new-langs`` languages, and one corpus per new language (its lines of
   ``--corpus``).
2. Trains a base model (``scheme="bytes"``, ``--pretokenizer``, default
   ``gpt2``; ``--vocab-size``) on the base corpus -- or takes ``--base-model``: a
   bpeforge model file, or a Hugging Face ``tokenizer.json`` imported with
   ``bpeforge.interop.from_huggingface``.
3. For each new language, extends the base with
   ``bpeforge.train(lang_lines, vocab_size=base + --extra-merges,
   resume_from=base)``; with ``--import-check``, also extends the base after
   a round trip through a Hugging Face ``tokenizer.json`` export/import and
   checks that both extensions are the same.
4. Checks that every old id decodes to the same bytes in the extended model
   (``id_to_token``) and that the old merge list is a prefix of the new one.
5. Encodes held-apart lines (``--heldout``: a corpus that starts with the
   training corpus, e.g. multi-1m for multi-200k; only the lines after it
   are used) and reports **tokens per word** (tokens / whitespace-separated
   words, ``str.split()``) for each new language and for the other
   languages, before and after, plus how many of the other languages'
   held-out lines encode to exactly the same ids after the extension.
   With ``--reference`` (default), a model trained from scratch on the
   whole corpus (new languages included) at ``--vocab-size`` is shown too.

Reproduce (2 cores: about 1 minute per run)::

    python bench/extend.py --corpus ../shared/corpora/multi-200k.txt.xz \\
        --heldout ../shared/corpora/multi-1m.txt.xz --new-langs gu,chr \\
        --vocab-size 32000 --extra-merges 2000 --import-check --markdown --json extend.json
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path

import _harness as H

ALWAYS_LANGS = "en,de,zh,ar,hi"




def read_pairs(text: Path, langs: Path) -> tuple[list[str], list[str]]:
    with H.open_text(text) as f:
        lines = [line.rstrip("\r\n") for line in f]
    with H.open_text(langs) as f:
        tags = [line.strip() for line in f]
    if len(lines) != len(tags):
        raise SystemExit(f"{text} has {len(lines)} lines but {langs} has {len(tags)}")
    return lines, tags


def write_lines(path: Path, lines: list[str]) -> Path:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")
    return path


def load_base(path: Path):
    """A bpeforge model file, or a Hugging Face tokenizer.json (imported)."""
    import bpeforge

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("model"), dict) and "vocab" in data["model"]:
        from bpeforge import interop

        return interop.from_huggingface(str(path)), "imported from Hugging Face"
    return bpeforge.load(path), "bpeforge model"


def words_and_tokens(tok, lines: list[str], threads: int | None) -> tuple[int, int, list[list[int]]]:
    ids = tok.encode_batch(lines, threads=threads)
    return sum(len(s.split()) for s in lines), sum(map(len, ids)), ids


def check_ids(base, ext) -> dict:
    """Every old id -> same bytes; old merges are a prefix of the new list."""
    n = base.vocab_size
    same = sum(1 for i in range(n) if base.id_to_token(i) == ext.id_to_token(i))
    bm, em = base.merges, ext.merges
    return {"old_ids": n, "old_ids_same": same, "merges_prefix": em[: len(bm)] == bm,
            "new_ids": ext.vocab_size - n, "stopped_early": ext.metadata.get("stopped_early")}


def _changed(c: dict) -> str:
    n = c["shorter"] + c["same_length"] + c["longer"]
    if not n:
        return ""
    langs = ", ".join(f"{k} {v}" for k, v in sorted(c["langs"].items(), key=lambda kv: -kv[1]))
    return f" ({c['shorter']} fewer tokens, {c['same_length']} as many, {c['longer']} more; {langs})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--langs", type=Path)
    p.add_argument("--heldout", type=Path, required=True, help="starts with the training lines (e.g. multi-1m)")
    p.add_argument("--heldout-langs", type=Path)
    p.add_argument("--new-langs", default="gu,chr", help="languages left out of the base, then added")
    p.add_argument("--vocab-size", type=int, default=32_000)
    p.add_argument("--extra-merges", type=int, default=2_000)
    p.add_argument("--pretokenizer", default="gpt2", help="base model's pre-tokenizer (kept by the extension)")
    p.add_argument("--base-model", type=Path, help="extend this model instead of training a base")
    p.add_argument("--import-check", action="store_true",
                   help="also extend the base after a Hugging Face export/import round trip")
    p.add_argument("--no-reference", dest="reference", action="store_false",
                   help="skip the from-scratch model trained on every language")
    p.add_argument("--heldout-lines", type=int, default=20_000, help="held-out lines of the other languages")
    p.add_argument("--new-heldout-lines", type=int, default=2_000, help="held-out lines per new language")
    p.add_argument("--top-langs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--workdir", type=Path)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)

    import bpeforge

    new_langs = [x for x in args.new_langs.split(",") if x]
    lines, tags = read_pairs(args.corpus, args.langs or H.default_langs(args.corpus))
    all_lines, all_tags = read_pairs(args.heldout, args.heldout_langs or H.default_langs(args.heldout))
    if all_lines[: len(lines)] != lines:
        raise SystemExit(f"{args.heldout} does not start with the lines of {args.corpus}")
    ho_lines, ho_tags = all_lines[len(lines):], all_tags[len(lines):]
    del all_lines, all_tags
    train_counts = collections.Counter(tags)
    for lang in new_langs:
        if train_counts[lang] < 100:
            raise SystemExit(f"{lang} has only {train_counts[lang]} lines in {args.corpus}")

    rng = random.Random(args.seed)
    held: dict[str, list[str]] = {}
    for lang in new_langs:
        mine = [s for s, t in zip(ho_lines, ho_tags) if t == lang]
        held[lang] = [mine[i] for i in sorted(rng.sample(range(len(mine)), min(args.new_heldout_lines, len(mine))))]
    others = [i for i, t in enumerate(ho_tags) if t not in new_langs]
    pick = sorted(rng.sample(others, min(args.heldout_lines, len(others))))
    other_lines = [ho_lines[i] for i in pick]
    other_tags = [ho_tags[i] for i in pick]
    other_counts = collections.Counter(other_tags)
    shown = [lang for lang, _ in other_counts.most_common(args.top_langs)]
    shown += [x for x in ALWAYS_LANGS.split(",") if x in other_counts and x not in shown]

    info: dict = {"corpus": str(args.corpus), "heldout": str(args.heldout), "new_langs": new_langs,
                  "vocab_size": args.vocab_size, "extra_merges": args.extra_merges, "seed": args.seed,
                  "train_lines": {lang: train_counts[lang] for lang in new_langs},
                  "heldout_lines": {lang: len(held[lang]) for lang in new_langs},
                  "other_heldout_lines": len(other_lines), "machine": H.machine_info()}

    with tempfile.TemporaryDirectory(prefix="bench-extend-") as tmpname:
        tmp = args.workdir or Path(tmpname)
        tmp.mkdir(parents=True, exist_ok=True)
        base_lines = [s for s, t in zip(lines, tags) if t not in new_langs]
        base_file = write_lines(tmp / "base.txt", base_lines)
        info["base_train_lines"] = len(base_lines)
        kw = dict(scheme="bytes", pretokenizer=args.pretokenizer, min_frequency=2, threads=args.threads, progress=False)

        if args.base_model:
            base, kind = load_base(args.base_model)
            info["base"] = f"{args.base_model} ({kind})"
        else:
            t0 = time.perf_counter()
            base = bpeforge.train([str(base_file)], vocab_size=args.vocab_size, **kw)
            info["base_train_s"] = time.perf_counter() - t0
            info["base"] = f"trained on {len(base_lines):,} lines of {args.corpus.name} without {', '.join(new_langs)}"
        base.save(tmp / "base.json")
        print(f"base: {info['base']}, vocab {base.vocab_size}", file=sys.stderr, flush=True)

        models = {"base": base}
        checks: dict = {}
        for lang in new_langs:
            lang_file = write_lines(tmp / f"new-{lang}.txt", [s for s, t in zip(lines, tags) if t == lang])
            t0 = time.perf_counter()
            ext = bpeforge.train([str(lang_file)], vocab_size=base.vocab_size + args.extra_merges,
                                 resume_from=base, **kw)
            secs = time.perf_counter() - t0
            models[f"+{lang}"] = ext
            checks[lang] = {**check_ids(base, ext), "train_s": secs}
            if args.import_check:
                hf = tmp / "base-tokenizer.json"
                base.to_huggingface(hf)
                from bpeforge import interop

                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    imported = interop.from_huggingface(str(hf))
                ic = {"warnings": [str(w.message) for w in caught],
                      "imported_ids_same": sum(1 for i in range(base.vocab_size)
                                               if imported.id_to_token(i) == base.id_to_token(i))}
                try:
                    ext2 = bpeforge.train([str(lang_file)], vocab_size=imported.vocab_size + args.extra_merges,
                                          resume_from=imported, **kw)
                except bpeforge.BpeforgeError as exc:  # reported, not hidden
                    ic["error"] = f"{type(exc).__name__}: {exc}"
                else:
                    ic["extension_merges_equal"] = ext2.merges == ext.merges
                    ic["extension_ids_equal"] = all(ext2.id_to_token(i) == ext.id_to_token(i)
                                                    for i in range(ext.vocab_size))
                ic["renumbered"] = renumbered_check(hf, tmp / "renumbered-tokenizer.json", lang_file, ext,
                                                    held[lang] + other_lines[:1000], args.extra_merges, kw)
                checks[lang]["import_check"] = ic
            print(f"+{lang}: {checks[lang]}", file=sys.stderr, flush=True)
        if args.reference and not args.base_model:
            t0 = time.perf_counter()
            models["scratch"] = bpeforge.train([str(args.corpus)], vocab_size=args.vocab_size, **kw)
            info["scratch_train_s"] = time.perf_counter() - t0

        # ---- evaluation
        results: dict = {}
        base_other_ids = None
        for name, tok in models.items():
            r: dict = {"new": {}, "other": {}}
            for lang in new_langs:
                w, n, _ = words_and_tokens(tok, held[lang], args.threads)
                r["new"][lang] = {"words": w, "tokens": n}
            ids = tok.encode_batch(other_lines, threads=args.threads)
            per = collections.defaultdict(lambda: [0, 0])
            for s, t, x in zip(other_lines, other_tags, ids):
                per[t][0] += len(s.split())
                per[t][1] += len(x)
            r["other"] = {t: {"words": a, "tokens": b} for t, (a, b) in per.items()}
            r["other_total"] = {"words": sum(a for a, _ in per.values()), "tokens": sum(b for _, b in per.values())}
            if name == "base":
                base_other_ids = ids
            elif name.startswith("+"):
                changed = [(t, len(b) - len(a)) for a, b, t in zip(base_other_ids, ids, other_tags) if a != b]
                r["other_lines_identical"] = len(other_lines) - len(changed)
                r["other_lines_changed"] = {
                    "shorter": sum(1 for _, d in changed if d < 0), "same_length": sum(1 for _, d in changed if d == 0),
                    "longer": sum(1 for _, d in changed if d > 0), "langs": dict(collections.Counter(t for t, _ in changed))}
            results[name] = r

    # ---- report
    md = args.markdown
    names = list(models)
    label = {"base": "base", "scratch": f"from scratch, all langs ({args.vocab_size:,})"}
    for lang in new_langs:
        label[f"+{lang}"] = f"base +{args.extra_merges:,} on {lang}"
    heads = ["held-out text", "lines", "words"] + [f"{label[n]} tok/word" for n in names]
    rows = []

    def tpw(d: dict) -> str:
        return f"{d['tokens'] / d['words']:.2f}" if d["words"] else "-"

    for lang in new_langs:
        rows.append([f"**{lang}** (new)" if md else f"{lang} (new)", f"{len(held[lang]):,}",
                     f"{results['base']['new'][lang]['words']:,}"]
                    + [tpw(results[n]["new"][lang]) for n in names])
    for lang in shown:
        rows.append([lang, f"{other_counts[lang]:,}", f"{results['base']['other'][lang]['words']:,}"]
                    + [tpw(results[n]["other"][lang]) for n in names])
    rows.append([f"all {len(other_counts)} other languages", f"{len(other_lines):,}",
                 f"{results['base']['other_total']['words']:,}"]
                + [tpw(results[n]["other_total"]) for n in names])
    out = [f"Base: {info['base']} (bytes, {base.pretokenizer} pre-tokenizer, vocab {base.vocab_size:,}); each extension: +{args.extra_merges:,} merges "
           f"learned on that language's {', '.join(f'{train_counts[x]:,} {x}' for x in new_langs)} lines of "
           f"{args.corpus.name}; held-out lines from {args.heldout.name} after line {len(lines):,}.", ""]
    out.append(H.format_table(heads, rows, md, [False] + [True] * (len(heads) - 1)))
    heads = ["extension", "old ids unchanged", "old merges kept (prefix)", "new ids",
             "other-language held-out lines encoded identically", "train s"]
    rows = []
    for lang in new_langs:
        c = checks[lang]
        same = results[f"+{lang}"]["other_lines_identical"]
        rows.append([label[f"+{lang}"], f"{c['old_ids_same']:,} / {c['old_ids']:,}",
                     "yes" if c["merges_prefix"] else "NO",
                     f"{c['new_ids']:,}" + (" (stopped early)" if c["stopped_early"] else ""),
                     f"{same:,} / {len(other_lines):,}" + _changed(results[f"+{lang}"]["other_lines_changed"]),
                     f"{c['train_s']:.1f}"])
    out += ["", H.format_table(heads, rows, md, [False, True, False, True, True, True])]
    if args.import_check:
        out.append("")
        for lang in new_langs:
            ic = checks[lang]["import_check"]
            head = (f"Import check (+{lang}): base exported to tokenizer.json and imported back: "
                    f"{ic['imported_ids_same']:,} / {base.vocab_size:,} ids unchanged; ")
            if "error" in ic:
                tail = f"extending the imported model FAILED: {ic['error']}"
            else:
                tail = (f"extension of the imported model equals the direct one: merges "
                        f"{ic['extension_merges_equal']}, ids {ic['extension_ids_equal']}")
            out.append(head + tail + (f"; warnings: {ic['warnings']}" if ic["warnings"] else ""))
            rn = ic["renumbered"]
            if "error" in rn:
                out.append(f"Import check (+{lang}), Hugging Face numbering: extending FAILED: {rn['error']}")
            else:
                out.append(
                    f"Import check (+{lang}), Hugging Face numbering (the same tokenizer.json with its ids renumbered "
                    f"as a `tokenizers` trainer numbers them: byte symbols sorted by their text, then merges): "
                    f"{rn['old_ids_kept']:,} / {rn['old_ids']:,} old ids kept; merges equal the direct extension: "
                    f"{rn['merges_equal']}; {rn['new_ids']:,} new ids, {rn['first_new_id']:,}.."
                    f"{rn['first_new_id'] + rn['new_ids'] - 1:,}, contiguous after the old largest id: {rn['contiguous']}; "
                    f"re-exported tokenizer.json loaded in `tokenizers`: {rn['hf_same']:,} / {rn['hf_lines']:,} "
                    f"held-out lines encode identically")
    text = "\n".join(out)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"info": info, "checks": checks, "results": results}, indent=1,
                                        ensure_ascii=False), encoding="utf-8")
    return 0


def renumber_hf(src: Path, dst: Path) -> None:
    """Rewrite a tokenizer.json with the ids a Hugging Face trainer would give:
    special tokens, then the single-character (byte) symbols sorted by their
    text, then the other tokens in their old order."""
    doc = json.loads(src.read_text(encoding="utf-8"))
    vocab = doc["model"]["vocab"]
    specials = [t["content"] for t in doc["added_tokens"]]
    singles = sorted(k for k in vocab if len(k) == 1 and k not in specials)
    rest = [k for k, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if k not in specials and len(k) != 1]
    new = {k: i for i, k in enumerate(specials + singles + rest)}
    doc["model"]["vocab"] = new
    for t in doc["added_tokens"]:
        t["id"] = new[t["content"]]
    dst.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def renumbered_check(hf: Path, dst: Path, lang_file: Path, direct, lines: list[str], extra: int, kw: dict) -> dict:
    """Extend the base imported with foreign ids; compare with the direct extension."""
    import bpeforge
    from bpeforge import interop

    renumber_hf(hf, dst)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        imported = interop.from_huggingface(str(dst))
    try:
        ext = bpeforge.train([str(lang_file)], vocab_size=imported.vocab_size + extra, resume_from=imported, **kw)
    except bpeforge.BpeforgeError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    new = ext.merges[len(imported.merges):]
    first = imported.vocab_size
    rn = {"old_ids": imported.vocab_size,
          "old_ids_kept": sum(1 for i in range(imported.vocab_size) if ext.id_to_token(i) == imported.id_to_token(i)),
          "merges_equal": ext.merges == direct.merges, "new_ids": len(new), "first_new_id": first,
          "contiguous": [ext.token_to_id(a + b) for a, b in new] == list(range(first, first + len(new)))}
    try:
        import tokenizers
    except ImportError:
        rn.update(hf_same=0, hf_lines=0)
        return rn
    out = ext.to_huggingface(dst.with_name("renumbered-extended-tokenizer.json"))
    theirs = [e.ids for e in tokenizers.Tokenizer.from_file(out).encode_batch(lines, add_special_tokens=False)]
    rn.update(hf_same=sum(a == b for a, b in zip(theirs, ext.encode_batch(lines))), hf_lines=len(lines))
    return rn


if __name__ == "__main__":
    sys.exit(main())
