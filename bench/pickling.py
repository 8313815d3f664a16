#!/usr/bin/env python3
"""How fast a tokenizer goes to another process: pickle round trips.

What it measures
----------------
``pickle.loads(pickle.dumps(tok))`` (protocol 5) for the same vocabulary in
each library, the median of ``--repeats`` round trips (after one warm-up),
with the pickle's size. That round trip is what ``multiprocessing``,
``DataLoader`` workers, ``datasets.map(num_proc=N)`` and Ray tasks pay per
worker.

The vocabularies are the real ``o200k_base`` and ``cl100k_base`` rank files
(shipped inside the ``bpe-openai`` wheel on PyPI, under
``bpe_openai/data/``), each loaded as:

* bpeforge: ``bpeforge.from_tiktoken(ranks, pattern=NAME)``;
* tiktoken: ``tiktoken.Encoding`` over the same ranks and pattern;
* HF tokenizers: ``tokenizers.Tokenizer.from_str`` of bpeforge's
  ``tokenizer.json`` export (the same ids).

The target: a 200k vocabulary round-trips in well under 100 ms.

Usage::

    python bench/pickling.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import gzip
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import format_table, machine_info, package_version  # noqa: E402

TARGET_MS = 100.0


def rank_file(name: str, workdir: Path) -> Path:
    import bpe_openai

    src = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    out = workdir / f"{name}.tiktoken"
    out.write_bytes(gzip.decompress(src.read_bytes()))
    return out


def load_all(name: str, workdir: Path) -> dict[str, Any]:
    import tiktoken
    import tokenizers
    from tiktoken.load import load_tiktoken_bpe

    import bpeforge
    from bpeforge.interop._common import _PRESET_PATTERNS

    preset = name.split("_")[0]
    ranks = rank_file(name, workdir)
    ours = bpeforge.from_tiktoken(ranks, pattern=preset)
    theirs = tiktoken.Encoding(name, pat_str=_PRESET_PATTERNS[preset],
                               mergeable_ranks=load_tiktoken_bpe(str(ranks)), special_tokens={})
    hf = tokenizers.Tokenizer.from_file(ours.to_huggingface(workdir / f"{name}-hf"))
    return {"bpeforge": ours, "tiktoken": theirs, "HF tokenizers": hf}


def round_trips(obj: Any, repeats: int) -> tuple[float, int]:
    data = pickle.dumps(obj, protocol=5)
    pickle.loads(data)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        pickle.loads(pickle.dumps(obj, protocol=5))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocabs", default="o200k_base,cl100k_base")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.vocabs.split(","):
            print(f"loading {name} ...", file=sys.stderr, flush=True)
            tools = load_all(name, Path(tmp))
            timed = {tool: round_trips(obj, args.repeats) for tool, obj in tools.items()}
            ours_s = timed["bpeforge"][0]
            for tool, (secs, size) in timed.items():
                verdict = ("ok" if secs * 1e3 < TARGET_MS else "MISSED") if tool == "bpeforge" else ""
                rows.append([name, tool, f"{secs * 1e3:.1f}", f"{secs / ours_s:.2f}x", f"{size / 1e6:.1f}",
                             verdict])
    print(format_table(["vocabulary", "library", "round trip ms (median)", "x bpeforge", "pickle MB",
                        f"target < {TARGET_MS:.0f} ms"], rows))
    info = machine_info()
    print(f"\n{info['cpu_model']}, {info['nproc']} cores, load average {info['loadavg'][0]:.1f}; bpeforge {package_version('bpeforge')}, tiktoken {package_version('tiktoken')}, "
          f"tokenizers {package_version('tokenizers')}; {args.repeats} round trips each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
