#!/usr/bin/env python3
"""Pre-tokenization alone: the hand-written scanners against the regex path.

What it measures
----------------
MB/s (10^6 bytes of UTF-8 per second) on one core, for each preset:

* **scanner**: the engine's pre-tokenizer as counting and encoding use it
  (``_native._pretokenize_count``: every piece is cut, none is copied, the
  GIL is released), over the corpus lines one call per chunk of lines;
* **regex path**: the same with the regex engine the scanners replaced
  (``reference=True``; the published pattern on regex-automata's DFA with
  the look-ahead emulated), kept as the reference;
* **pretokenize()**: the public ``bpeforge.pretokenize(text, preset)``, which
  also builds a Python list of ``str`` (what a user sees per call).

Texts: the corpus lines joined with "\\n" into chunks of about 1 MB (the
pieces then cross newlines as in a whole file); with ``--lang en`` only the
lines the corpus's ``.langs`` file marks ``en`` (English text, where most
windows are ASCII; the default, every line, is multilingual). Bytes counted: the chunks'
UTF-8 bytes, newlines included. Each cell is the median of ``--repeats``
passes over all chunks; one call per job first is an untimed warm-up.
Clock: the calling thread's CPU time by default (``--clock cpu``; all the
work runs on that thread), since on a shared machine wall time mostly
measures the other jobs; ``--clock wall`` for wall time.

    python bench/pretok.py --corpus ../shared/corpora/multi-200k.txt.xz --markdown
    python bench/pretok.py --corpus ../shared/corpora/multi-1m.txt.xz --lang en --markdown
"""

from __future__ import annotations

import argparse
import statistics
from contextlib import nullcontext
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

PRESETS = ("gpt2", "cl100k", "o200k", "superword")
DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "multi-200k.txt.xz"


def read_chunks(path: Path, lang: str | None = None, chunk_bytes: int = 1 << 20) -> list[str]:
    chunks, buf, size = [], [], 0
    with H.open_text(path) as f, (H.open_text(H.default_langs(path)) if lang else nullcontext()) as langs:
        for line in f:
            if langs is not None and next(langs).strip() != lang:
                continue
            buf.append(line)
            size += len(line)
            if size >= chunk_bytes:
                chunks.append("".join(buf))
                buf, size = [], 0
    if buf:
        chunks.append("".join(buf))
    return chunks


def timed(fn, chunks: list[str], clock) -> float:
    t = clock()
    for c in chunks:
        fn(c)
    return clock() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus (.xz or plain), one text per line")
    p.add_argument("--lang", help="only the lines of this language (from the corpus's .langs file), e.g. en")
    p.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="thread CPU time (default) or wall time")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args(argv)

    import bpeforge
    from bpeforge import _native

    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    chunks = read_chunks(args.corpus, args.lang)
    mb = sum(len(c.encode("utf-8")) for c in chunks) / 1e6
    rows = []
    for preset in args.presets:
        jobs = {
            "scanner": lambda c, p=preset: _native._pretokenize_count(c, p),
            "regex path": lambda c, p=preset: _native._pretokenize_count(c, p, reference=True),
            "pretokenize()": lambda c, p=preset: bpeforge.pretokenize(c, p),
        }
        pieces = sum(_native._pretokenize_count(c, preset) for c in chunks)
        assert pieces == sum(_native._pretokenize_count(c, preset, reference=True) for c in chunks)
        speed = {}
        for name, fn in jobs.items():
            fn(chunks[0])  # warm-up: compiles and caches the pre-tokenizer
            speed[name] = mb / statistics.median(timed(fn, chunks, clock) for _ in range(args.repeats))
        rows.append([
            preset, f"{speed['scanner']:.1f}", f"{speed['regex path']:.1f}",
            f"{speed['scanner'] / speed['regex path']:.2f}x", f"{speed['pretokenize()']:.1f}", f"{pieces:,}",
        ])
    headers = ["preset", "scanner MB/s", "regex path MB/s", "speed-up", "pretokenize() MB/s", "pieces"]
    m = H.machine_info()
    text = f"{args.corpus.name}, {args.lang} lines" if args.lang else args.corpus.name
    print(f"corpus {text}: {mb:.1f} MB in {len(chunks)} chunks; 1 thread; {args.clock} time, median of {args.repeats}; "
          f"bpeforge {bpeforge.__version__}; {m['cpu_model']}, load {m['loadavg'][0]:.1f}")
    print(H.format_table(headers, rows, markdown=args.markdown, right=[False] + [True] * 5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
