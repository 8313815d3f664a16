"""Shared helpers for the bpeforge benchmark scripts in ``bench/``.

Nothing in here knows about any particular tokenizer. It provides:

* :func:`materialize_corpus` -- turn a ``.xz``/``.gz``/plain corpus into one
  plain UTF-8 file that every tool reads (decompression is not timed);
* :func:`corpus_stats` -- line count and UTF-8 byte count of that file;
* :func:`run_child` -- run one job in a fresh subprocess with a timeout and
  collect its resource usage with ``os.wait4`` (peak RSS, user+sys CPU);
* :func:`machine_info` / :func:`package_version` -- what the run was made on;
* :func:`format_table` -- a plain-text or Markdown table.
"""

from __future__ import annotations

import dataclasses
import gzip
import lzma
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Mapping, Sequence

#: How often the parent polls a running child (seconds).
POLL_INTERVAL = 0.02

_OPENERS = {".xz": lzma.open, ".gz": gzip.open}


# --------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------


def materialize_corpus(path: Path, workdir: Path) -> Path:
    """Return a plain-text copy of ``path`` (or ``path`` itself if plain).

    Compressed corpora (``.xz``, ``.gz``) are decompressed once into
    ``workdir`` so that every tool reads the very same plain file.
    """
    opener = _OPENERS.get(path.suffix)
    if opener is None:
        return path
    target = workdir / path.with_suffix("").name
    with opener(path, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, length=1 << 22)
    return target


def corpus_stats(path: Path) -> dict:
    """Count lines and UTF-8 text bytes (line terminators excluded)."""
    size = 0
    lines = 0
    with open(path, "rb") as f:
        for line in f:
            lines += 1
            size += len(line.rstrip(b"\r\n"))
    return {"lines": lines, "text_bytes": size, "file_bytes": path.stat().st_size}


def read_lines(path: Path) -> list[str]:
    """Read the corpus as a list of lines without their terminators."""
    with open(path, encoding="utf-8", newline="") as f:
        return [line.rstrip("\r\n") for line in f]


def open_text(path: Path):
    """A text file, plain or ``.xz``, opened for reading with line ends kept as they are."""
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def default_langs(path: Path) -> Path:
    """``x.txt.xz`` -> ``x.langs.txt.xz`` (the language file next to a corpus)."""
    name = path.name
    for suffix in (".txt.xz", ".txt"):
        if name.endswith(suffix):
            return path.with_name(name[: -len(suffix)] + ".langs" + suffix)
    raise SystemExit(f"cannot derive the language file of {path}; give it explicitly")


# --------------------------------------------------------------------------
# Subprocess jobs
# --------------------------------------------------------------------------


@dataclasses.dataclass
class ChildResult:
    """Outcome of one child process as seen by the parent."""

    returncode: int | None  # None when the child was killed on timeout
    timed_out: bool
    wall_s: float  # whole job, process start to exit
    cpu_s: float  # user + sys of the child (all its threads)
    maxrss_bytes: int  # ru_maxrss of the child
    stderr_tail: str
    stopped_at_cap: bool = False  # killed by us because its RSS passed ``rss_cap_bytes``


def run_child(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout_s: float,
    log_dir: Path,
    rss_cap_bytes: float | None = None,
) -> ChildResult:
    """Run ``argv`` in a new session; reap it with ``os.wait4``.

    The child's stdout and stderr go to files in ``log_dir`` (so a chatty
    child can never block on a full pipe). On timeout the child's whole
    process group is killed; so is a child whose RSS passes ``rss_cap_bytes``
    (a tool with no memory budget of its own is stopped before the OOM killer
    picks some other process).
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(argv), env=dict(env), stdout=out, stderr=err,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        status, usage, timed_out, capped = _wait_with_timeout(proc, timeout_s, rss_cap_bytes)
        wall = time.perf_counter() - start
    proc.returncode = _exit_code(status)  # reaped by us; keep Popen consistent
    return ChildResult(
        returncode=None if timed_out else _exit_code(status),
        timed_out=timed_out,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        maxrss_bytes=usage.ru_maxrss * 1024,  # Linux reports KiB
        stderr_tail=_tail(err_path),
        stopped_at_cap=capped,
    )


def _wait_with_timeout(proc: subprocess.Popen, timeout_s: float, rss_cap_bytes: float | None = None):
    """Poll ``wait4`` until the child exits, ``timeout_s`` elapses or its RSS
    passes ``rss_cap_bytes``; returns (status, usage, timed_out, capped)."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return status, usage, False, False
        timed_out = time.monotonic() > deadline
        capped = rss_cap_bytes is not None and _rss_bytes(proc.pid) > rss_cap_bytes
        if timed_out or capped:
            _kill_group(proc.pid)
            _, status, usage = os.wait4(proc.pid, 0)
            return status, usage, timed_out and not capped, capped
        time.sleep(POLL_INTERVAL)


def _rss_bytes(pid: int) -> int:
    """Current resident set size of ``pid`` (0 if it cannot be read)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _kill_group(pid: int) -> None:
    """Kill the process group that ``pid`` leads (started by us)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _exit_code(status: int) -> int:
    """Convert a wait status to a Popen-style return code."""
    return os.waitstatus_to_exitcode(status)


def _tail(path: Path, max_lines: int = 8) -> str:
    """Last few non-empty lines of a log file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-max_lines:])


# --------------------------------------------------------------------------
# Environment description
# --------------------------------------------------------------------------


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (or the platform's best guess)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def total_memory_gib() -> float | None:
    """Physical memory in GiB, if /proc/meminfo is readable."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / (1 << 20)
    except OSError:
        pass
    return None


def machine_info() -> dict:
    """A short description of the machine and interpreter."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    mem = total_memory_gib()
    return {
        "nproc": usable or os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "memory_gib": round(mem, 1) if mem else None,
        "loadavg": list(os.getloadavg()),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


FRESH_MEMORY_CHILD = """
import mmap, sys, time
n = int(sys.argv[1])
m = mmap.mmap(-1, n)  # anonymous pages, never touched before
t = time.perf_counter()
for i in range(0, n, 4096):
    m[i] = 1
print(n / (time.perf_counter() - t) / 1e9)
"""


def fresh_memory_rate(gib: float = 2.0) -> float | None:
    """GB/s at which a new process faults in fresh anonymous pages (writing
    one byte per 4 KiB page): the kernel's zeroing, and in a virtual machine
    whose host backs guest memory lazily, the host's work too. A phase that
    allocates G GB of new memory spends at least G / rate seconds on it."""
    try:
        out = subprocess.run([sys.executable, "-c", FRESH_MEMORY_CHILD, str(int(gib * 2**30))],
                             capture_output=True, text=True, timeout=600, check=True)
        return float(out.stdout.strip())
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def package_version(dist_name: str) -> str | None:
    """Installed version of a distribution, or None if it is not installed."""
    try:
        return metadata.version(dist_name)
    except metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------
# Numbers and tables
# --------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence (mean of the middle two if even)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
                 markdown: bool = False, right: Sequence[bool] | None = None) -> str:
    """Render rows of strings as an aligned text table or a Markdown table.

    ``right`` marks the columns to right-align (numbers).
    """
    right = list(right) if right is not None else [False] * len(headers)
    if markdown:
        rule = ["---:" if r else "---" for r in right]
        lines = [headers, rule, *rows]
        return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w)
                         for c, w, r in zip(cells, widths, right)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(headers), sep, *(fmt(r) for r in rows)])
