#!/usr/bin/env python3
"""SuperBPE against plain BPE: compression on held-apart lines, time, memory.

What it measures
----------------
Plain BPE (``scheme="bytes", pretokenizer="gpt2"``) and SuperBPE (the same,
plus ``superbpe_transition=T``: plain BPE up to vocabulary size T, then
merges that may join up to ``--max-words`` words) are trained to the same
``--vocab-size`` on ``--corpus``. Every training run is one fresh Python
subprocess; jobs run round-robin over ``--repeats`` (repeat 1 of every
configuration, then repeat 2, ...), each started only once the 1-minute load
average is below ``--max-load`` (or ``--load-wait`` seconds have passed; the
load at the start of every job is recorded in the JSON). Per configuration:

* **train s** -- median wall time of the ``bpeforge.train`` call alone,
  measured in the child (interpreter start-up and saving are excluded);
  **CPU s** its user + system time (all threads), less sensitive to the
  load of a shared machine;
  **count s** / **merge s** are the engine's own split from
  ``metadata["timings"]`` (medians; for SuperBPE, merge s is stage 1 +
  stage 2, also given separately in the JSON);
* **peak RSS MB** -- the child's own peak RSS (``VmHWM`` in
  ``/proc/self/status``) right after training (the largest over the
  repeats; 10^6 bytes). Not ``ru_maxrss``: Linux carries it across
  ``exec``, so a child started by a parent that holds the held-out corpus
  would report the parent's peak when its own is lower;
* **× plain** -- the ratio of the above to plain BPE's. The targets of the
  project are time ≤ 3× and peak RSS ≤ 2× plain; the table says PASS or FAIL.

Every training imports a private copy of the bpeforge package taken at the
start (``--no-pin-build`` to skip), so a rebuild of a shared work tree during
the run cannot mix two builds.

Optional rows: ``--ablation`` trains SuperBPE at the first transition with
at most one word per token, i.e. stage 2's wider units without any
multi-word token (how much of the gain is superwords, and how much is merges
that GPT-2's regex forbids inside words, e.g. a letter with its vowel sign);
``--o200k-reference`` trains plain BPE with the ``o200k`` pre-tokenizer.

Evaluation lines are held apart from training: ``--heldout`` is a corpus
whose first lines are the training corpus (checked line by line), e.g.
multi-1m for multi-200k; the evaluation set is ``--heldout-lines`` lines
sampled deterministically (``random.Random(--seed)``) from the lines after
the training corpus, with their language tags from the ``.langs`` file.
Reported on that set:

* **bytes/token** -- UTF-8 bytes of the lines (no terminators) / tokens of
  ``encode_batch``, overall and per language (the ``--top-langs`` languages
  with the most held-out lines plus ``--always-langs``);
* **% fewer tokens** -- ``1 - tokens(SuperBPE) / tokens(plain)``;
* **superword tokens** -- tokens learned in stage 2 whose bytes contain a
  space between two non-space bytes (a multi-word token); the share of
  held-out tokens that are such tokens, and per language the most frequent
  ones in that language's held-out encoding.

Reproduce (2 cores: about 10 minutes with 3 repeats on a calm machine)::

    pip install -e .
    python bench/superbpe.py --corpus ../shared/corpora/multi-200k.txt.xz \\
        --heldout ../shared/corpora/multi-1m.txt.xz \\
        --vocab-size 32000 --transitions 24000,28000 --repeats 3 \\
        --ablation --o200k-reference --markdown --json superbpe-200k.json

``--langs`` / ``--heldout-langs`` default to the ``.langs.txt.xz`` file next
to each corpus. Quote ratios from one run rather than absolute seconds on a
shared machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

import _harness as H

#: A token is a superword token when a space separates two non-space bytes.
MULTIWORD = re.compile(rb"[^\s] [^\s]")

#: Languages always shown in the per-language table (when held-out lines exist).
ALWAYS_LANGS = "en,de,zh,ar,hi"


# ==========================================================================
# Child: one training run
# ==========================================================================


def peak_rss_bytes() -> int | None:
    """This process's own peak RSS (VmHWM), or None where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def child_main(spec: dict) -> int:
    """Train once; write the measurements (and maybe the model) as JSON."""
    result: dict = {"status": "ok"}
    try:
        import bpeforge

        kwargs = dict(vocab_size=spec["vocab_size"], scheme="bytes", pretokenizer=spec["pretokenizer"],
                      min_frequency=2, threads=spec["threads"], progress=False)
        if spec["transition"]:
            kwargs.update(superbpe_transition=spec["transition"],
                          superbpe_max_words=spec["max_words"])
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        tok = bpeforge.train([spec["corpus"]], **kwargs)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        meta = tok.metadata
        result.update(
            train_wall_s=wall,
            train_cpu_s=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            train_peak_rss_bytes=peak_rss_bytes() or after.ru_maxrss * 1024,
            ru_maxrss_bytes=after.ru_maxrss * 1024,
            count_s=meta["timings"]["count_seconds"],
            merge_s=meta["timings"]["merge_seconds"],
            vocab_size=tok.vocab_size,
            stopped_early=meta.get("stopped_early"),
            word_types=meta.get("word_types"),
            superbpe=meta.get("superbpe"),
            version=meta.get("library"),
            native=bpeforge._native.__file__,
            native_mtime=os.stat(bpeforge._native.__file__).st_mtime,
        )
        if spec.get("save"):
            tok.save(spec["save"])
    except Exception as exc:  # recorded, the benchmark carries on
        traceback.print_exc()
        result.update(status="error", error=f"{type(exc).__name__}: {exc}")
    Path(spec["result"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


# ==========================================================================
# Parent: data
# ==========================================================================




def heldout_sample(train_plain: Path, heldout: Path, heldout_langs: Path,
                   k: int, seed: int) -> tuple[list[str], list[str], int]:
    """Lines of ``heldout`` after the training corpus, sampled; with langs.

    The first lines of ``heldout`` must equal the training corpus line for
    line (so nothing held out was trained on)."""
    with open(train_plain, encoding="utf-8", newline="") as tr, \
            H.open_text(heldout) as ho, H.open_text(heldout_langs) as hl:
        start = 0
        for a in tr:
            b = ho.readline()
            hl.readline()
            if a.rstrip("\r\n") != b.rstrip("\r\n"):
                raise SystemExit(f"{heldout} line {start + 1} differs from the training corpus: "
                                 "the held-out corpus must start with the training lines")
            start += 1
        rest = [line.rstrip("\r\n") for line in ho]
        langs = [line.strip() for line in hl]
    if len(rest) != len(langs):
        raise SystemExit(f"{heldout_langs} has {len(langs) + start} lines, {heldout} {len(rest) + start}")
    idx = sorted(random.Random(seed).sample(range(len(rest)), min(k, len(rest))))
    return [rest[i] for i in idx], [langs[i] for i in idx], start


def count_langs(path: Path) -> collections.Counter:
    with H.open_text(path) as f:
        return collections.Counter(line.strip() for line in f)


# ==========================================================================
# Parent: training jobs
# ==========================================================================


def pin_build(tmp: Path) -> tuple[dict, dict]:
    """Copy the importable bpeforge package into ``tmp/pin`` and use that copy
    (here and in every child), so a rebuild of a shared work tree during the
    benchmark cannot mix two builds. Returns the child environment and a
    description of the build."""
    import hashlib
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("bpeforge")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bpeforge is not importable")
    src = Path(list(spec.submodule_search_locations)[0])
    dst = tmp / "pin" / "bpeforge"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(dst.parent))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(dst.parent)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    native = sorted(dst.glob("_native*.so")) + sorted(dst.glob("_native*.pyd"))
    digest = hashlib.sha256(native[0].read_bytes()).hexdigest()[:16] if native else None
    return env, {"pinned_from": str(src), "native_sha256_16": digest}


def wait_for_calm(max_load: float, max_wait: float) -> float:
    """Sleep until the 1-minute load is below ``max_load`` (at most ``max_wait`` s)."""
    deadline = time.monotonic() + max_wait
    load = os.getloadavg()[0]
    while load > max_load and time.monotonic() < deadline:
        print(f"  load {load:.2f} > {max_load}: waiting", file=sys.stderr, flush=True)
        time.sleep(20)
        load = os.getloadavg()[0]
    return load


def run_configs(configs: list[dict], corpus: Path, args, tmp: Path, env: dict) -> None:
    for repeat in range(1, args.repeats + 1):
        for cfg in configs:
            if cfg.get("failed"):
                continue
            job_dir = tmp / f"{cfg['name']}-r{repeat}"
            job_dir.mkdir(parents=True, exist_ok=True)
            (job_dir / "result.json").unlink(missing_ok=True)
            spec = {
                "corpus": str(corpus), "vocab_size": args.vocab_size, "threads": args.threads,
                "transition": cfg["transition"], "max_words": cfg["max_words"],
                "pretokenizer": cfg["pretokenizer"],
                "result": str(job_dir / "result.json"),
                "save": str(tmp / f"{cfg['name']}.json") if repeat == 1 else None,
            }
            load = wait_for_calm(args.max_load, args.load_wait)
            argv = [sys.executable, "-u", str(Path(__file__).resolve()), "--_child", json.dumps(spec)]
            child = H.run_child(argv, env, args.timeout, job_dir)
            run = {"repeat": repeat, "loadavg_1min_before": round(load, 2),
                   "job_wall_s": child.wall_s, "job_maxrss_bytes": child.maxrss_bytes}
            if child.timed_out:
                run.update(status="timeout", error=f"timeout after {args.timeout:g} s")
            else:
                try:
                    run.update(json.loads(Path(spec["result"]).read_text(encoding="utf-8")))
                except (OSError, ValueError):
                    run.update(status="crash", error=f"exit {child.returncode}: {child.stderr_tail}")
            cfg["runs"].append(run)
            if run["status"] != "ok":
                cfg["failed"] = run.get("error", run["status"])
                msg = cfg["failed"]
            else:
                msg = (f"train {run['train_wall_s']:.1f} s (count {run['count_s']:.1f}, "
                       f"merge {run['merge_s']:.1f}), rss {run['train_peak_rss_bytes'] / 1e6:.0f} MB")
            print(f"[{cfg['name']} repeat {repeat}] load {load:.2f}: {msg}", file=sys.stderr, flush=True)


def summarize_runs(cfg: dict) -> None:
    ok = [r for r in cfg["runs"] if r["status"] == "ok"]
    if not ok:
        return
    cfg["train_s"] = H.median([r["train_wall_s"] for r in ok])
    cfg["count_s"] = H.median([r["count_s"] for r in ok])
    cfg["merge_s"] = H.median([r["merge_s"] for r in ok])
    cfg["rss_bytes"] = max(r["train_peak_rss_bytes"] for r in ok)
    cfg["cpu_s"] = H.median([r["train_cpu_s"] for r in ok])
    sb = ok[0].get("superbpe")
    if sb:
        cfg["stage1_merge_s"] = H.median([r["superbpe"]["stage1_merge_seconds"] for r in ok])
        cfg["stage2_merge_s"] = H.median([r["superbpe"]["stage2_merge_seconds"] for r in ok])
        cfg["stage2_units"] = sb.get("stage2_units")
    cfg["word_types"] = ok[0].get("word_types")
    cfg["version"] = ok[0].get("version")
    cfg["native_builds"] = sorted({r.get("native_mtime") for r in ok})


# ==========================================================================
# Parent: evaluation
# ==========================================================================


def show(token: bytes) -> str:
    """A token for a table: spaces as ␣, Markdown-safe."""
    text = token.decode("utf-8", errors="replace")
    return text.replace(" ", "␣").replace("|", "\\|").replace("`", "'").replace("\n", "\\n")


def evaluate(cfg: dict, lines: list[str], langs: list[str], threads: int | None) -> None:
    """Encode the held-out lines; per-language tokens and superword counts."""
    import bpeforge

    tok = bpeforge.load(cfg["model"])
    transition = cfg["transition"]
    superword = set()
    if transition:
        for i in range(transition, tok.vocab_size):
            if MULTIWORD.search(tok.id_to_token(i)):
                superword.add(i)
    per_lang_tokens: collections.Counter = collections.Counter()
    per_lang_super: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    total_super = 0
    for start in range(0, len(lines), 20_000):
        chunk = lines[start:start + 20_000]
        for lang, ids in zip(langs[start:start + 20_000], tok.encode_batch(chunk, threads=threads)):
            per_lang_tokens[lang] += len(ids)
            if superword:
                hits = [i for i in ids if i in superword]
                if hits:
                    per_lang_super[lang].update(hits)
                    total_super += len(hits)
    cfg["tokens"] = sum(per_lang_tokens.values())
    cfg["lang_tokens"] = dict(per_lang_tokens)
    cfg["superword_vocab"] = len(superword)
    cfg["superword_token_share"] = total_super / cfg["tokens"] if cfg["tokens"] else 0.0
    cfg["examples"] = {
        lang: [[show(tok.id_to_token(i)), n] for i, n in c.most_common(8)]
        for lang, c in per_lang_super.items()
    }


# ==========================================================================
# Report
# ==========================================================================


def pct_fewer(sb_tokens: int, plain_tokens: int) -> float:
    return 100.0 * (1.0 - sb_tokens / plain_tokens)


def report(configs: list[dict], lines: list[str], langs: list[str], train_langs, args, info: dict) -> str:
    md = args.markdown
    plain = configs[0]
    out = []
    nbytes = sum(len(s.encode("utf-8")) for s in lines)
    lang_bytes: collections.Counter = collections.Counter()
    for s, lang in zip(lines, langs):
        lang_bytes[lang] += len(s.encode("utf-8"))
    info["heldout_bytes"] = nbytes

    # --- main table
    heads = ["model", "train s", "CPU s", "count s", "merge s", "peak RSS MB", "time × plain", "CPU × plain",
             "RSS × plain",
             "bytes/token", "% fewer tokens", "superword tokens in vocab", "superword share of held-out tokens"]
    rows = []
    for cfg in configs:
        if "train_s" not in cfg:
            rows.append([cfg["label"], f"failed: {cfg.get('failed', '?')}"] + [""] * (len(heads) - 2))
            continue
        merge = f"{cfg['merge_s']:.1f}"
        if cfg["transition"]:
            merge += f" ({cfg['stage1_merge_s']:.1f} + {cfg['stage2_merge_s']:.1f})"
        row = [cfg["label"], f"{cfg['train_s']:.1f}", f"{cfg['cpu_s']:.1f}", f"{cfg['count_s']:.1f}", merge,
               f"{cfg['rss_bytes'] / 1e6:.0f}"]
        if cfg is plain or "train_s" not in plain:
            row += ["1.00", "1.00", "1.00"] if cfg is plain else ["", "", ""]
        else:
            tr = cfg["train_s"] / plain["train_s"]
            cr = cfg["cpu_s"] / plain["cpu_s"]
            rr = cfg["rss_bytes"] / plain["rss_bytes"]
            cfg["time_ratio"], cfg["cpu_ratio"], cfg["rss_ratio"] = tr, cr, rr
            if cfg["kind"] == "superbpe":  # the targets apply to SuperBPE as offered
                cfg["time_pass"], cfg["rss_pass"] = tr <= 3.0, rr <= 2.0
                row += [f"{tr:.2f} {'PASS' if tr <= 3.0 else 'FAIL'}", f"{cr:.2f}",
                        f"{rr:.2f} {'PASS' if rr <= 2.0 else 'FAIL'}"]
            else:
                row += [f"{tr:.2f}", f"{cr:.2f}", f"{rr:.2f}"]
        if "tokens" in cfg:
            row.append(f"{nbytes / cfg['tokens']:.3f}")
            row.append("" if cfg is plain else f"{pct_fewer(cfg['tokens'], plain['tokens']):.1f}")
            if cfg["transition"]:
                row += [str(cfg["superword_vocab"]), f"{100 * cfg['superword_token_share']:.1f}%"]
            else:
                row += ["", ""]
        else:
            row += [""] * 4
        rows.append(row)
    out.append(f"Training ({info['corpus_lines']:,} lines, {info['corpus_bytes'] / 1e6:.1f} MB), "
               f"vocab {args.vocab_size:,}, held-out evaluation {len(lines):,} lines "
               f"({nbytes / 1e6:.1f} MB); {args.repeats} repeat(s), medians:")
    out.append("")
    out.append(H.format_table(heads, rows, md, [False] + [True] * (len(heads) - 1)))

    evaluated = [c for c in configs if "tokens" in c]
    if not evaluated or plain not in evaluated:
        return "\n".join(out)

    # --- per-language bytes/token
    held = collections.Counter(langs)
    shown = [lang for lang, _ in held.most_common(args.top_langs)]
    for lang in args.always_langs.split(","):
        if lang and lang in held and lang not in shown:
            shown.append(lang)
    info["languages_shown"] = shown
    heads = ["lang", "train lines", "held-out lines", "plain B/tok"]
    for cfg in evaluated[1:]:
        heads += [f"{cfg['label']} B/tok", "% fewer"]
    rows = []
    for lang in shown:
        row = [lang, f"{train_langs.get(lang, 0):,}", f"{held[lang]:,}",
               f"{lang_bytes[lang] / plain['lang_tokens'][lang]:.2f}"]
        for cfg in evaluated[1:]:
            row += [f"{lang_bytes[lang] / cfg['lang_tokens'][lang]:.2f}",
                    f"{pct_fewer(cfg['lang_tokens'][lang], plain['lang_tokens'][lang]):.1f}"]
        rows.append(row)
    out += ["", "Bytes per token on the held-out lines, by language:", ""]
    out.append(H.format_table(heads, rows, md, [False] + [True] * (len(heads) - 1)))

    # --- superword examples, from the SuperBPE model that compresses best
    sbs = [c for c in evaluated if c["kind"] == "superbpe"]
    if sbs:
        best = min(sbs, key=lambda c: c["tokens"])
        rows = []
        for lang in shown:
            ex = best["examples"].get(lang, [])[: args.examples]
            rows.append([lang, ", ".join(f"`{t}` {n}" for t, n in ex) if md else
                         ", ".join(f"{t} ({n})" for t, n in ex)])
        out += ["", f"Most frequent superword tokens in each language's held-out encoding "
                f"({best['label']}; ␣ is a space, then the count):", ""]
        out.append(H.format_table(["lang", "superword tokens"], rows, md))
    return "\n".join(out)


# ==========================================================================
# Main
# ==========================================================================


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, help="training corpus (.xz or plain)")
    p.add_argument("--langs", type=Path, help="its language file (default: the .langs file next to it)")
    p.add_argument("--heldout", type=Path, help="a corpus that starts with the training lines (e.g. multi-1m)")
    p.add_argument("--heldout-langs", type=Path, help="its language file (default: next to it)")
    p.add_argument("--heldout-lines", type=int, default=50_000, help="evaluation lines sampled after the training lines")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab-size", type=int, default=32_000)
    p.add_argument("--transitions", default="24000,28000", help="SuperBPE transition sizes, comma-separated")
    p.add_argument("--max-words", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--ablation", action="store_true",
                   help="also train SuperBPE at the first transition with at most 1 word per token: "
                        "stage 2's gain without any multi-word token")
    p.add_argument("--o200k-reference", action="store_true",
                   help="also train plain BPE with the o200k pre-tokenizer (letters keep their marks)")
    p.add_argument("--threads", type=int, default=None, help="training/encoding threads (default: all cores)")
    p.add_argument("--top-langs", type=int, default=15)
    p.add_argument("--always-langs", default=ALWAYS_LANGS)
    p.add_argument("--examples", type=int, default=5, help="superword tokens shown per language")
    p.add_argument("--max-load", type=float, default=2.5, help="wait before each job until the 1-min load is below this")
    p.add_argument("--load-wait", type=float, default=600, help="longest wait for a calm machine per job (s)")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--no-pin-build", dest="pin_build", action="store_false",
                   help="import bpeforge from where it is instead of a private copy")
    p.add_argument("--workdir", type=Path, help="keep models and logs here (default: a temporary directory)")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", type=Path)
    p.add_argument("--_child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args._child and not (args.corpus and args.heldout):
        p.error("--corpus and --heldout are required")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args._child:
        return child_main(json.loads(args._child))
    langs_path = args.langs or H.default_langs(args.corpus)
    heldout_langs = args.heldout_langs or H.default_langs(args.heldout)
    transitions = [int(t) for t in args.transitions.split(",") if t.strip()]
    for t in transitions:
        if not 256 < t < args.vocab_size:
            raise SystemExit(f"transition {t} must be between 256 and --vocab-size")

    with tempfile.TemporaryDirectory(prefix="bench-superbpe-") as tmpname:
        tmp = args.workdir or Path(tmpname)
        tmp.mkdir(parents=True, exist_ok=True)
        corpus = H.materialize_corpus(args.corpus, tmp)
        stats = H.corpus_stats(corpus)
        train_langs = count_langs(langs_path)
        if sum(train_langs.values()) != stats["lines"]:
            raise SystemExit(f"{langs_path} has {sum(train_langs.values())} lines, the corpus {stats['lines']}")
        lines, langs, start = heldout_sample(corpus, args.heldout, heldout_langs, args.heldout_lines, args.seed)
        print(f"held-out: {len(lines):,} lines sampled from {args.heldout} after line {start:,}",
              file=sys.stderr, flush=True)

        def config(name, label, kind, transition=None, max_words=args.max_words, pretokenizer="gpt2"):
            return {"name": name, "label": label, "kind": kind, "transition": transition,
                    "max_words": max_words, "pretokenizer": pretokenizer, "runs": []}

        configs = [config("plain", "plain BPE", "plain")]
        configs += [config(f"superbpe-{t}", f"SuperBPE t={t:,}", "superbpe", t) for t in transitions]
        if args.ablation:
            t = transitions[0]
            configs.append(config(f"superbpe-{t}-1word", f"SuperBPE t={t:,}, 1 word max (ablation)",
                                  "ablation", t, max_words=1))
        if args.o200k_reference:
            configs.append(config("plain-o200k", "plain BPE, o200k regex (reference)", "reference",
                                  pretokenizer="o200k"))
        info = {"corpus": str(args.corpus), "corpus_lines": stats["lines"], "corpus_bytes": stats["text_bytes"],
                "heldout": str(args.heldout), "heldout_start_line": start, "heldout_lines": len(lines),
                "seed": args.seed, "vocab_size": args.vocab_size, "max_words": args.max_words,
                "repeats": args.repeats, "threads": args.threads, "machine": H.machine_info()}
        env = dict(os.environ)
        if args.pin_build:
            env, info["build"] = pin_build(tmp)
        run_configs(configs, corpus, args, tmp, env)
        for cfg in configs:
            summarize_runs(cfg)
            cfg["model"] = str(tmp / f"{cfg['name']}.json")
            if "train_s" in cfg and Path(cfg["model"]).exists():
                evaluate(cfg, lines, langs, args.threads)
        text = report(configs, lines, langs, train_langs, args, info)
        print(text)
        if args.json:
            for cfg in configs:
                if not args.workdir:
                    cfg.pop("model", None)
            args.json.write_text(json.dumps({"info": info, "configs": configs}, indent=1, ensure_ascii=False),
                                 encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
