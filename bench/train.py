#!/usr/bin/env python3
"""Side-by-side BPE *training* benchmark: bpeforge against its peers.

What it measures
----------------
For every (tool, thread count) pair and every repeat, one fresh Python
subprocess trains a BPE vocabulary of ``--vocab-size`` tokens (default
32,000) on the same plain-text corpus (one text per line), then -- on the
first repeat only -- encodes the whole corpus with the trained model to
count tokens. Reported per row:

* **wall s** -- median over the repeats of the wall time of the training
  call alone, measured inside the child (interpreter start-up, imports and
  encoding are excluded);
* **CPU s** -- median user+sys CPU time of the training call (all threads
  of the child; ``getrusage(RUSAGE_SELF)`` before and after the call);
* **peak RSS GB** -- the child's peak resident set size (``ru_maxrss``,
  10^9 bytes) taken right after training, before any encoding, so it is
  exactly the ``wait4`` figure the job would have had if it stopped there
  (the largest over the repeats). The parent also records the whole job's
  figures from ``os.wait4`` in the JSON output (``job_*``);
* **bytes/token** -- UTF-8 bytes of the corpus lines (line terminators
  excluded) divided by the number of tokens the trained model produces
  when it encodes every line with the tool's batch API (not timed);
* **× bpeforge** -- a row's wall time divided by bpeforge's at the same
  thread count (above 1 means that tool is slower than bpeforge). When
  ``bpeforge-chars`` is run too, a second ratio column uses it.

Jobs are run round-robin (repeat 1 of every job, then repeat 2, ...) so that
slow drifts in the load of a shared machine spread over all tools. A
compressed corpus (.xz, .gz) is decompressed once to a temporary file first;
that is not timed. A tool that is missing, fails or times out gets a row that
says so; the benchmark itself carries on.

Tools and settings (vocabulary size V for all)
----------------------------------------------
* ``bpeforge``: ``bpeforge.train([path], vocab_size=V, scheme="bytes",
  pretokenizer="gpt2", min_frequency=2, threads=N, progress=False)``;
  encoding with ``encode_batch(lines, threads=N)``.
* ``bpeforge-chars``: the same with ``scheme="chars",
  pretokenizer="whitespace"`` -- the like-for-like match for SentencePiece.
* ``sentencepiece``: ``SentencePieceTrainer.train(model_type="bpe",
  character_coverage=1.0, input_sentence_size=0, max_sentence_length=2**20,
  num_threads=N, byte_fallback=False, normalization_rule_name="identity")``
  (the length limit is raised because SentencePiece silently drops longer
  lines); encoding with ``encode(lines, out_type=int, num_threads=N)``.
* ``hf``: HF tokenizers ``BpeTrainer(min_frequency=2,
  initial_alphabet=ByteLevel.alphabet())`` with the ``ByteLevel(
  add_prefix_space=False)`` pre-tokenizer (GPT-2's regex) and decoder,
  trained with ``Tokenizer.train([path])``; threads through
  ``RAYON_NUM_THREADS``; encoding with ``encode_batch_fast``.
* ``rustbpe``: ``Tokenizer.train_from_iterator(lines, vocab_size=V,
  pattern=GPT-2 regex)`` fed the file's lines without terminators (reading
  the file is part of its training time, as it is for the tools that take a
  path); threads through ``RAYON_NUM_THREADS``; encoding with
  ``batch_encode``. rustbpe has no min-frequency setting.
* ``yttm``: YouTokenToMe ``BPE.train(data=path, vocab_size=V,
  n_threads=N)``; encoding with ``BPE(model, n_threads=N).encode(lines)``.

``RAYON_NUM_THREADS=N`` is set in every child's environment.

Reproduce
---------
::

    pip install sentencepiece tokenizers tiktoken rustbpe psutil numpy
    pip install Cython setuptools wheel && \\
        pip install --no-build-isolation youtokentome      # optional
    pip install -e .        # or maturin develop --release: bpeforge itself

    python bench/train.py --corpus /work/shared/corpora/multi-200k.txt.xz \\
        --repeats 3 --threads 1,2 --markdown --json bench-train-200k.json

    # the training targets (printed with pass/miss after the table):
    # YouTokenToMe at 2 threads and SentencePiece at 1 thread, each >= 4x
    # bpeforge's training time at the same thread count, on multi-1m
    python bench/train.py --corpus /work/shared/corpora/multi-1m.txt.xz \\
        --tools bpeforge,yttm,sentencepiece --repeats 3 --threads 1,2 --markdown

Quote ratios from one run rather than absolute seconds on a shared machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import os
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

import _harness as H

#: GPT-2's published pre-tokenization regex (also HF ByteLevel's and
#: bpeforge's ``gpt2`` preset); passed to rustbpe so all byte-level tools
#: split text the same way.
GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+"
                r"| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")

#: Lines handed to a batch encoder per call (bounds the memory of results).
ENCODE_CHUNK = 20_000

#: Exit code of a worker that wrote a result file (ok or a handled error).
WORKER_OK = 0


# ==========================================================================
# Tool adapters (run inside the worker child)
# ==========================================================================

Encoder = Callable[[list], int]  # a chunk of lines -> number of tokens


@dataclasses.dataclass
class Job:
    """Everything a worker needs to train one model."""

    corpus: Path
    vocab_size: int
    threads: int
    workdir: Path


def _bpeforge_trainer(scheme: str, pretokenizer: str):
    """Build the train function of a bpeforge row."""
    def train(bpeforge, job: Job):
        return bpeforge.train([str(job.corpus)], vocab_size=job.vocab_size,
                              scheme=scheme, pretokenizer=pretokenizer,
                              min_frequency=2, threads=job.threads,
                              progress=False)
    return train


def _bpeforge_encoder(bpeforge, tok, job: Job) -> Encoder:
    """Count tokens with ``Tokenizer.encode_batch``."""
    return lambda chunk: sum(map(len, tok.encode_batch(chunk, threads=job.threads)))


def _spm_train(spm, job: Job) -> Path:
    """Train a SentencePiece BPE model; return the ``.model`` path."""
    prefix = job.workdir / "spm"
    spm.SentencePieceTrainer.train(
        input=str(job.corpus), model_prefix=str(prefix),
        vocab_size=job.vocab_size, model_type="bpe", character_coverage=1.0,
        input_sentence_size=0, max_sentence_length=1 << 20,
        num_threads=job.threads, byte_fallback=False,
        normalization_rule_name="identity", minloglevel=2,
    )
    return prefix.with_suffix(".model")


def _spm_encoder(spm, model_path: Path, job: Job) -> Encoder:
    """Count tokens with the processor's batch ``encode``."""
    sp = spm.SentencePieceProcessor(model_file=str(model_path))
    return lambda chunk: sum(map(len, sp.encode(chunk, out_type=int,
                                                 num_threads=job.threads)))


def _hf_train(tokenizers, job: Job):
    """Train an HF ``models.BPE`` with the ByteLevel pre-tokenizer."""
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=job.vocab_size, min_frequency=2, show_progress=False,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train([str(job.corpus)], trainer)
    return tok


def _hf_encoder(tokenizers, tok, job: Job) -> Encoder:
    """Count tokens with ``encode_batch_fast`` (no offsets)."""
    batch = getattr(tok, "encode_batch_fast", tok.encode_batch)
    return lambda chunk: sum(len(e.ids) for e in batch(chunk))


def _iter_lines(path: Path):
    """Yield the lines of a UTF-8 file without their terminators."""
    with open(path, encoding="utf-8", newline="") as f:
        for line in f:
            yield line.rstrip("\r\n")


def _rustbpe_train(rustbpe, job: Job):
    """Train rustbpe from the corpus lines, with GPT-2's regex."""
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(_iter_lines(job.corpus), vocab_size=job.vocab_size,
                            pattern=GPT2_PATTERN)
    return tok


def _rustbpe_encoder(rustbpe, tok, job: Job) -> Encoder:
    """Count tokens with ``batch_encode``."""
    return lambda chunk: sum(map(len, tok.batch_encode(chunk)))


def _yttm_train(yttm, job: Job) -> Path:
    """Train a YouTokenToMe model; return its path."""
    model_path = job.workdir / "yttm.model"
    yttm.BPE.train(data=str(job.corpus), model=str(model_path),
                   vocab_size=job.vocab_size, n_threads=job.threads)
    return model_path


def _yttm_encoder(yttm, model_path: Path, job: Job) -> Encoder:
    """Count tokens with ``BPE.encode`` on a list of lines."""
    bpe = yttm.BPE(model=str(model_path), n_threads=job.threads)
    return lambda chunk: sum(map(len, bpe.encode(chunk, output_type=yttm.OutputType.ID)))


@dataclasses.dataclass(frozen=True)
class Tool:
    """One row kind of the table: how to import, train and encode."""

    label: str  # shown in the table, after the name and version
    name: str  # human name
    module: str  # import name
    dist: str  # distribution name, for the version
    train: Callable  # (module, Job) -> model
    encoder: Callable  # (module, model, Job) -> Encoder
    missing_hint: str = ""


TOOLS: dict[str, Tool] = {
    "bpeforge": Tool("bytes, gpt2", "bpeforge", "bpeforge", "bpeforge",
                     _bpeforge_trainer("bytes", "gpt2"), _bpeforge_encoder,
                     "bpeforge is not importable yet (build it with maturin)"),
    "bpeforge-chars": Tool("chars, whitespace", "bpeforge", "bpeforge", "bpeforge",
                           _bpeforge_trainer("chars", "whitespace"), _bpeforge_encoder,
                           "bpeforge is not importable yet (build it with maturin)"),
    "sentencepiece": Tool("BPE", "SentencePiece", "sentencepiece", "sentencepiece",
                          _spm_train, _spm_encoder, "pip install sentencepiece"),
    "hf": Tool("ByteLevel", "HF tokenizers", "tokenizers", "tokenizers",
               _hf_train, _hf_encoder, "pip install tokenizers"),
    "rustbpe": Tool("GPT-2 regex", "rustbpe", "rustbpe", "rustbpe",
                    _rustbpe_train, _rustbpe_encoder, "pip install rustbpe"),
    "yttm": Tool("", "YouTokenToMe", "youtokentome", "youtokentome",
                 _yttm_train, _yttm_encoder,
                 "YouTokenToMe is not installed (its source build may have failed)"),
}

DEFAULT_TOOLS = "bpeforge,sentencepiece,hf,rustbpe,yttm"


# ==========================================================================
# Worker (child process)
# ==========================================================================


def _cpu_seconds(usage) -> float:
    """User + system time of a ``getrusage`` result."""
    return usage.ru_utime + usage.ru_stime


def _count_tokens(encoder: Encoder, lines: list) -> int:
    """Encode ``lines`` in chunks and return the total number of tokens."""
    return sum(encoder(lines[i:i + ENCODE_CHUNK])
               for i in range(0, len(lines), ENCODE_CHUNK))


def _train_and_measure(tool: Tool, module, job: Job, result: dict):
    """Run the training call alone under the clocks; return the model."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    model = tool.train(module, job)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    result.update(train_wall_s=wall,
                  train_cpu_s=_cpu_seconds(after) - _cpu_seconds(before),
                  train_maxrss_bytes=after.ru_maxrss * 1024)
    return model


def _encode_and_measure(tool: Tool, module, model, job: Job, result: dict) -> None:
    """Encode the whole corpus with the trained model; record the count."""
    lines = H.read_lines(job.corpus)
    start = time.perf_counter()
    tokens = _count_tokens(tool.encoder(module, model, job), lines)
    result.update(tokens=tokens, encode_wall_s=time.perf_counter() - start)


def _try_encode(tool: Tool, module, model, job: Job, result: dict) -> None:
    """Encode, recording a failure without losing the training figures."""
    try:
        _encode_and_measure(tool, module, model, job, result)
    except Exception as exc:
        traceback.print_exc()
        result["encode_error"] = f"{type(exc).__name__}: {exc}"


def worker_main(args: argparse.Namespace) -> int:
    """Train (and maybe encode) once; write a JSON result file."""
    tool = TOOLS[args.worker]
    job = Job(Path(args.corpus), args.vocab_size, int(args.threads), Path(args.workdir))
    result: dict = {"status": "ok"}
    try:
        module = importlib.import_module(tool.module)
    except Exception as exc:  # ImportError, or a broken native extension
        result.update(status="missing", error=f"{type(exc).__name__}: {exc}")
    else:
        try:
            model = _train_and_measure(tool, module, job, result)
        except Exception as exc:
            traceback.print_exc()
            result.update(status="error", error=f"{type(exc).__name__}: {exc}")
        else:
            if args.worker_encode:
                _try_encode(tool, module, model, job, result)
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")
    return WORKER_OK


# ==========================================================================
# Parent: scheduling jobs
# ==========================================================================


@dataclasses.dataclass
class Row:
    """The accumulated runs of one (tool, threads) pair."""

    tool: str
    threads: int
    runs: list = dataclasses.field(default_factory=list)
    note: str = ""  # why the row has no (more) numbers
    tokens: int | None = None
    encode_error: str = ""

    @property
    def ok_runs(self) -> list:
        return [r for r in self.runs if r.get("status") == "ok"]

    @property
    def needs_encoding(self) -> bool:
        """True until one run has encoded the corpus (or failed to)."""
        return self.tokens is None and not self.encode_error

    @property
    def stopped(self) -> bool:
        """True once the row has failed: no further repeats are run."""
        return bool(self.note)


def _worker_argv(tool: str, threads: int, corpus: Path, vocab: int,
                 workdir: Path, result: Path, encode: bool) -> list[str]:
    """Command line of one worker child."""
    argv = [sys.executable, "-u", str(Path(__file__).resolve()),
            "--worker", tool, "--corpus", str(corpus), "--vocab-size", str(vocab),
            "--threads", str(threads), "--workdir", str(workdir),
            "--result", str(result)]
    return argv + (["--encode"] if encode else [])


def _child_env(threads: int) -> dict:
    """The parent's environment with the thread count for rayon pools."""
    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = str(threads)
    return env


def _interpret(child: H.ChildResult, result_path: Path, timeout: float) -> dict:
    """Merge the child's own JSON result with what the parent saw."""
    run = {"job_wall_s": child.wall_s, "job_cpu_s": child.cpu_s,
           "job_maxrss_bytes": child.maxrss_bytes, "returncode": child.returncode}
    if child.timed_out:
        return {**run, "status": "timeout", "error": f"timeout after {timeout:g} s"}
    try:
        reported = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        last = child.stderr_tail.splitlines()[-1:]
        error = f"exit code {child.returncode}" + (f"; {last[0]}" if last else "")
        return {**run, "status": "crash", "error": error, "stderr": child.stderr_tail}
    return {**run, **reported}


def run_job(row: Row, repeat: int, corpus: Path, args, tmp: Path) -> dict:
    """Run one repeat of one row in a fresh child and record it."""
    workdir = tmp / f"{row.tool}-t{row.threads}-r{repeat}"
    workdir.mkdir(parents=True)
    result_path = workdir / "result.json"
    encode = args.encode and row.needs_encoding
    argv = _worker_argv(row.tool, row.threads, corpus, args.vocab_size,
                        workdir, result_path, encode)
    load_before = os.getloadavg()[0]
    child = H.run_child(argv, _child_env(row.threads), args.timeout, workdir)
    run = _interpret(child, result_path, args.timeout)
    run.update(repeat=repeat, loadavg_1min_before=load_before)
    row.runs.append(run)
    if run["status"] != "ok":
        row.note = _failure_note(row.tool, run)
    else:
        row.tokens = run.get("tokens", row.tokens)
        row.encode_error = run.get("encode_error", row.encode_error)
    return run


def _failure_note(tool: str, run: dict) -> str:
    """Short text for a row whose job did not succeed."""
    if run["status"] == "missing":
        return f"skipped: import failed: {run.get('error', '')}"
    return f"{run['status']}: {run.get('error', '')}"


def _log_run(row: Row, run: dict, done: int, total: int) -> None:
    """One progress line on stderr."""
    head = f"[{done}/{total}] {row.tool} threads={row.threads} repeat={run['repeat']}"
    if run["status"] == "ok":
        text = (f"train {run['train_wall_s']:.2f} s, cpu {run['train_cpu_s']:.2f} s, "
                f"rss {run['train_maxrss_bytes'] / 1e9:.2f} GB")
    else:
        text = row.note
    print(f"{head}: {text}", file=sys.stderr, flush=True)


def run_all(rows: list[Row], corpus: Path, args, tmp: Path) -> None:
    """Run every repeat of every row, round-robin, skipping failed rows."""
    total = args.repeats * len(rows)
    done = 0
    for repeat in range(1, args.repeats + 1):
        for row in rows:
            done += 1
            if row.stopped:
                continue
            run = run_job(row, repeat, corpus, args, tmp)
            _log_run(row, run, done, total)


def precheck(rows: list[Row]) -> None:
    """Mark rows whose module cannot even be found, without a child."""
    for row in rows:
        tool = TOOLS[row.tool]
        if importlib.util.find_spec(tool.module) is None:
            row.note = f"skipped: {tool.missing_hint}"


# ==========================================================================
# Parent: summary and report
# ==========================================================================


def summarize(row: Row, text_bytes: int) -> dict:
    """Median/peak figures of a row's successful runs."""
    ok = row.ok_runs
    note = row.note or (f"encoding failed: {row.encode_error}" if row.encode_error else "")
    out = {"tool": row.tool, "threads": row.threads, "note": note,
           "repeats_ok": len(ok), "tokens": row.tokens}
    if row.tokens:
        out["bytes_per_token"] = text_bytes / row.tokens
    if ok:
        out.update(
            wall_s=H.median([r["train_wall_s"] for r in ok]),
            cpu_s=H.median([r["train_cpu_s"] for r in ok]),
            peak_rss_gb=max(r["train_maxrss_bytes"] for r in ok) / 1e9,
            job_wall_s=H.median([r["job_wall_s"] for r in ok]),
            job_peak_rss_gb=max(r["job_maxrss_bytes"] for r in ok) / 1e9,
        )
    return out


def _ratio(summary: dict, reference: dict | None) -> str:
    """``summary``'s wall time over the reference's, as text."""
    if not reference or "wall_s" not in reference or "wall_s" not in summary:
        return "–"
    return f"{summary['wall_s'] / reference['wall_s']:.2f}×"


def _tool_title(tool_key: str, versions: dict) -> str:
    """Table name of a tool: name, version and setting."""
    tool = TOOLS[tool_key]
    version = versions.get(tool.dist) or ""
    title = f"{tool.name} {version}".strip()
    return f"{title} ({tool.label})" if tool.label else title


def _shorten(text: str, limit: int = 100) -> str:
    """One line of at most ``limit`` characters (full text is in the JSON)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _fmt(value: float | None, spec: str) -> str:
    """Format a number, or a dash when it is missing."""
    return "–" if value is None else format(value, spec)


def build_table(summaries: list[dict], versions: dict, markdown: bool) -> str:
    """The side-by-side table (plain text or Markdown)."""
    refs = [k for k in ("bpeforge", "bpeforge-chars")
            if any(s["tool"] == k for s in summaries)]
    by_key = {(s["tool"], s["threads"]): s for s in summaries}
    headers = ["tool", "threads", "wall s", "CPU s", "peak RSS GB", "bytes/token"]
    headers += [f"× {ref}" for ref in refs]
    with_notes = any(s["note"] for s in summaries)
    headers += ["note"] if with_notes else []
    rows = []
    for s in summaries:
        cells = [_tool_title(s["tool"], versions), str(s["threads"]),
                 _fmt(s.get("wall_s"), ".2f"), _fmt(s.get("cpu_s"), ".2f"),
                 _fmt(s.get("peak_rss_gb"), ".2f"), _fmt(s.get("bytes_per_token"), ".3f")]
        cells += [_ratio(s, by_key.get((ref, s["threads"]))) for ref in refs]
        cells += [_shorten(s["note"])] if with_notes else []
        rows.append(cells)
    right = [False, True, True, True, True, True] + [True] * len(refs)
    right += [False] if with_notes else []
    return H.format_table(headers, rows, markdown=markdown, right=right)


#: The training targets: (peer, threads, required peer time / bpeforge time).
TRAIN_TARGETS = (("yttm", 2, 4.0), ("sentencepiece", 1, 4.0))


def build_targets(summaries: list[dict], markdown: bool) -> str:
    """The targets table: each peer's training time over bpeforge's at the
    same thread count (the corpus of the issue is multi-1m), pass or miss."""
    by_key = {(s["tool"], s["threads"]): s for s in summaries}
    rows = []
    for peer, threads, need in TRAIN_TARGETS:
        ours, theirs = by_key.get(("bpeforge", threads), {}), by_key.get((peer, threads), {})
        value = theirs["wall_s"] / ours["wall_s"] if "wall_s" in ours and "wall_s" in theirs else None
        rows.append([f"{TOOLS[peer].name} time / bpeforge time, {threads} thread{'s' * (threads > 1)}",
                     "–" if value is None else f"{value:.2f}×", f">= {need:.2f}×",
                     "– (not run)" if value is None else ("pass" if value >= need else "MISS")])
    return H.format_table(["target (training)", "measured", "required", "result"], rows,
                          markdown=markdown, right=[False, True, True, False])


def describe_setup(machine: dict, versions: dict, corpus: dict, args) -> str:
    """Text block: machine, tool versions, corpus and settings."""
    mem = f", {machine['memory_gib']} GiB" if machine["memory_gib"] else ""
    load = ", ".join(f"{x:.2f}" for x in machine["loadavg"])
    tools = ", ".join(f"{name} {v or 'not installed'}" for name, v in versions.items())
    return "\n".join([
        f"machine: {machine['nproc']} usable cores ({machine['cpu_count']} online), "
        f"{machine['cpu_model']}{mem}; load average {load}",
        f"python {machine['python']} on {machine['platform']}",
        f"versions: {tools}",
        f"corpus: {corpus['path']}: {corpus['lines']:,} lines, "
        f"{corpus['text_bytes']:,} UTF-8 bytes (without line ends)",
        f"settings: vocab_size={args.vocab_size}, repeats={args.repeats}, "
        f"threads={args.threads}, timeout={args.timeout:g} s",
    ])


# ==========================================================================
# Command line
# ==========================================================================


def _int_list(text: str) -> list[int]:
    """Parse ``"1,2"`` into ``[1, 2]``."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("thread counts must be >= 1")
    return values


def _tool_list(text: str) -> list[str]:
    """Parse and validate a comma-separated list of tool keys."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [n for n in names if n not in TOOLS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown tool(s) {unknown}; choose from {', '.join(TOOLS)}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (the ``--worker`` ones are internal)."""
    p = argparse.ArgumentParser(
        description="Benchmark BPE training: bpeforge vs SentencePiece, "
                    "HF tokenizers, rustbpe and YouTokenToMe.")
    p.add_argument("--corpus", required=True, help="corpus file (.xz, .gz or plain)")
    p.add_argument("--vocab-size", type=int, default=32_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=_int_list, default=[1, 2],
                   help="comma-separated thread counts (default 1,2)")
    p.add_argument("--tools", type=_tool_list, default=_tool_list(DEFAULT_TOOLS),
                   help=f"comma-separated, from {', '.join(TOOLS)} "
                        f"(default {DEFAULT_TOOLS})")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per job")
    p.add_argument("--json", type=Path, help="write all runs and the summary here")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--no-encode", dest="encode", action="store_false",
                   help="skip encoding (no bytes/token column values)")
    # Internal: one job in a child process.
    p.add_argument("--worker", choices=list(TOOLS), help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--encode", dest="worker_encode", action="store_true",
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is None and args.repeats < 1:
        p.error("--repeats must be >= 1")
    return args


def _versions(tool_keys: list[str]) -> dict:
    """Installed versions of the selected tools' distributions."""
    dists = dict.fromkeys(TOOLS[k].dist for k in tool_keys)
    return {d: H.package_version(d) for d in dists}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the parent (or, with ``--worker``, of a child)."""
    args = parse_args(argv)
    if args.worker:
        args.threads = args.threads[0]
        return worker_main(args)
    started = time.perf_counter()
    machine, versions = H.machine_info(), _versions(args.tools)
    rows = [Row(t, n) for n in args.threads for t in args.tools]
    precheck(rows)
    with tempfile.TemporaryDirectory(prefix="bpeforge-bench-train-") as tmp_name:
        tmp = Path(tmp_name)
        corpus = H.materialize_corpus(Path(args.corpus), tmp)
        stats = {"path": str(args.corpus), **H.corpus_stats(corpus)}
        print(describe_setup(machine, versions, stats, args), flush=True)
        run_all(rows, corpus, args, tmp)
    summaries = [summarize(r, stats["text_bytes"]) for r in rows]
    print()
    print(build_table(summaries, versions, args.markdown))
    print()
    print(build_targets(summaries, args.markdown))
    elapsed = time.perf_counter() - started
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n(wall = median training time of {args.repeats} run(s); total "
          f"benchmark time {elapsed:.0f} s; load average at the end {load})")
    if args.json:
        report = {"machine": machine, "versions": versions, "corpus": stats,
                  "settings": {k: v for k, v in vars(args).items()
                               if k in ("vocab_size", "repeats", "threads", "tools",
                                        "timeout", "encode")},
                  "rows": [{**summarize(r, stats["text_bytes"]), "runs": r.runs}
                           for r in rows]}
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
