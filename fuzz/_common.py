"""Shared pieces of the atheris fuzz targets in this directory.

Every target is a plain script: ``python fuzz/fuzz_X.py [libFuzzer flags] [CORPUS_DIR]``
(``fuzz/run.py`` runs them all with sane flags). Each target:

* limits its own address space (``FUZZ_MEM_MB``, default 3072) so that an
  unbounded allocation in the engine aborts the target (a crash libFuzzer
  records) instead of starving a shared machine;
* accepts exactly the exceptions the API documents for the call it makes;
  anything else, a Rust panic, an abort or a hang past ``-timeout`` is a
  finding, saved by libFuzzer as ``crash-*`` / ``timeout-*`` / ``oom-*``;
* skips inputs that hit a *known, reported* bug (see ``KNOWN``) unless
  ``FUZZ_STRICT=1``, so a CI fuzz pass looks for new problems; run with
  ``FUZZ_STRICT=1`` to re-check the known ones.

The native engine is not instrumented, so coverage feedback comes only from
the Python layers (the importers in ``bpeforge.interop`` and the facade);
inputs for the engine are therefore generated structure-aware (models,
texts and ids built from the fuzzer's bytes) rather than left to blind byte
mutation alone.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections import Counter
from typing import Callable

STRICT = os.environ.get("FUZZ_STRICT") == "1"

# Known, still open bugs (ids as in tests/test_reliability.py).
# The guards below skip inputs that would only re-find them. BUG-1..8 of the
# engine are fixed, so their inputs are fuzzed like any other.
KNOWN: dict[str, str] = {}

known_hits: Counter[str] = Counter()


def limit_memory() -> None:
    mb = int(os.environ.get("FUZZ_MEM_MB", "3072"))
    resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))


def known(bug: str) -> bool:
    """True (skip this input) when ``bug`` is a known one and not strict mode."""
    if STRICT or bug not in KNOWN:
        return False
    known_hits[bug] += 1
    if known_hits[bug] == 1:  # libFuzzer ends with exit(): no atexit report, so say it now
        print(f"known-bug input skipped: {bug} ({KNOWN[bug]})", file=sys.stderr, flush=True)
    return True


COLLECT = os.environ.get("FUZZ_COLLECT")  # a directory: record findings there and go on


def collect(e: BaseException, data: bytes) -> bool:
    """With FUZZ_COLLECT=DIR, save the first input of each distinct finding
    (exception class + innermost bpeforge frame) to DIR and return True so
    the run goes on; otherwise return False (the caller re-raises)."""
    if not COLLECT:
        return False
    import hashlib
    import traceback

    frames = [f for f in traceback.extract_tb(e.__traceback__) if "bpeforge" in f.filename] or \
        traceback.extract_tb(e.__traceback__)[-1:]
    where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"
    sig = f"{type(e).__name__}@{where}"
    os.makedirs(COLLECT, exist_ok=True)
    name = os.path.join(COLLECT, hashlib.sha1(sig.encode()).hexdigest()[:12])
    if not os.path.exists(name + ".txt"):
        with open(name + ".bin", "wb") as f:
            f.write(data)
        with open(name + ".txt", "w") as f:
            f.write(f"{sig}\n{type(e).__name__}: {str(e)[:500]}\n\n{''.join(traceback.format_exception(e))}")
        print(f"NEW FINDING {sig}: {str(e)[:200]}", file=sys.stderr)
    return True


def token_lengths(n_specials: int, base_lengths: list[int], merges: list) -> list[int] | None:
    """Byte length of every merge's token (None when a merge is malformed,
    which the loader refuses cheaply anyway)."""
    lens = [0] * n_specials + list(base_lengths)
    for m in merges:
        if not (isinstance(m, (list, tuple)) and len(m) == 2 and all(isinstance(x, int) for x in m)):
            return None
        a, b = m
        if not (0 <= a < len(lens) and 0 <= b < len(lens)):
            return None
        lens.append(lens[a] + lens[b])
    return lens


def hostile_model(doc: object) -> str | None:
    """The known bug a parsed model document would trigger, if any."""
    if not isinstance(doc, dict):
        return None
    specials = doc.get("special_tokens")
    n_specials = len(specials) if isinstance(specials, list) else 0
    if isinstance(specials, list) and any(isinstance(s, str) and len(s) > 2000 for s in specials):
        return "BUG-4"
    alphabet = doc.get("alphabet")
    base = [len(s.encode("utf-8", "surrogatepass")) if isinstance(s, str) else 1 for s in alphabet] \
        if isinstance(alphabet, list) else [1] * 256
    merges = doc.get("merges")
    if isinstance(merges, list):
        lens = token_lengths(n_specials, base, merges)
        if lens is not None and (max(lens, default=0) > 1 << 16 or sum(lens) > 1 << 24):
            return "BUG-1" if max(lens) > 1 << 24 else "BUG-2"
    ids = doc.get("ids")
    if isinstance(ids, list) and any(isinstance(e, int) and e > 1 << 22 for e in ids):
        return "BUG-3"
    return None


_FEATURES: dict[str, int] = {}
_N_FEATURES = 512


def _make_branches() -> Callable[[int], None]:
    lines = ["def _branch(k):"] + [f"    if k == {i}:\n        return" for i in range(_N_FEATURES)]
    ns: dict = {}
    exec("\n".join(lines), ns)  # noqa: S102 - generated if-chain, one branch per feature
    import atheris

    return atheris.instrument_func(ns["_branch"])


_branch: Callable[[int], None] | None = None


def feature(label: str) -> None:
    """Pseudo-coverage for the uninstrumented engine: each distinct outcome
    label (e.g. an error message with digits removed) takes its own
    instrumented branch, so libFuzzer keeps inputs that reach new outcomes."""
    global _branch
    if _branch is None:
        _branch = _make_branches()
    k = _FEATURES.setdefault(label, len(_FEATURES) % _N_FEATURES)
    _branch(k)


def error_label(e: BaseException) -> str:
    """An error's kind: its class and message without names, numbers and positions."""
    import re

    msg = str(e).split(" at line ")[0]
    msg = re.sub(r"`[^`]*`|\"[^\"]*\"|'[^']*'", "S", msg)
    return type(e).__name__ + ":" + re.sub(r"\d+(\.\d+)?", "N", msg)[:100]


def timed(label: str, f: Callable[[], object], limit: float) -> object:
    """Runs f; a call slower than ``limit`` seconds is reported as a finding."""
    t = time.perf_counter()
    out = f()
    dt = time.perf_counter() - t
    if dt > limit:
        raise AssertionError(f"{label} took {dt:.2f}s (limit {limit}s)")
    return out


def run(test_one_input: Callable[[bytes], None], write_seeds: Callable[[str], None],
        prepare: Callable[[], None] | None = None) -> None:
    """Every target's entry point: ``--seeds DIR`` writes its seed corpus;
    otherwise the memory limit, ``prepare()`` (set-up and warm-ups, outside
    libFuzzer's per-input timeout), then the fuzzing loop."""
    import atheris

    if len(sys.argv) == 3 and sys.argv[1] == "--seeds":
        write_seeds(sys.argv[2])
        return
    limit_memory()
    if prepare is not None:
        prepare()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
