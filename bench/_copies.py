"""Copies of a corpus made into new "languages", built in parallel as shards.

Copy ``c`` of a text is the same bijective, length-preserving letter
substitution that the shared ``scale_corpus.py`` applies to its ``c``-th
copy (ASCII letters permuted by a seeded shuffle; every other letter, mark
or sign rotated among the code points of its Unicode category inside its
128-code-point block; copy 0 is the text itself). ``sK`` is copies
``0 .. K-1``: one shard per copy, ``copy-NNNN.txt`` or, where the disk is
short, ``copy-NNNN.txt.zst`` (zstd frames, which bpeforge reads natively).
So ``s10``, ``s50`` and ``s500`` share their first shards, and a corpus is
built once.

``scale_corpus.py`` maps characters with ``str.translate`` (about 15 MB/s
here). This module maps bytes: the substitution keeps each character's
UTF-8 length (a 128-code-point block never straddles a length boundary), so
ASCII goes through ``bytes.translate`` and the other characters are
rewritten in place with numpy from their code points. ``check_against``
runs the shared tool on a sample and compares, so the two never drift.
"""

from __future__ import annotations

import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
import unicodedata
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

#: zstd level for compressed shards: 2x on this multilingual text at about
#: 80 MB/s per core; reading it back costs about 1 s of CPU per GB.
ZSTD_LEVEL = 3


def substitution(chars: list[str], copy: int) -> dict[int, int]:
    """Code point -> code point of copy ``copy`` for the characters ``chars``
    (``scale_corpus.py``'s table, with ints for values)."""
    rnd = random.Random(copy)
    lower = list(string.ascii_lowercase)
    rnd.shuffle(lower)
    table: dict[int, int] = {}
    peers_of: dict[tuple[int, str], list[int]] = {}
    for ch in chars:
        o = ord(ch)
        if "a" <= ch <= "z":
            table[o] = ord(lower[o - 97])
        elif "A" <= ch <= "Z":
            table[o] = ord(lower[o - 65].upper())
        elif o >= 0x80:
            cat = unicodedata.category(ch)
            base = o & ~0x7F
            peers = peers_of.get((base, cat))
            if peers is None:
                peers = [p for p in range(base, base + 128) if unicodedata.category(chr(p)) == cat]
                peers_of[(base, cat)] = peers
            table[o] = peers[(peers.index(o) + 7 * copy) % len(peers)]
    return table


class Source:
    """A UTF-8 text and the positions of its multi-byte characters."""

    def __init__(self, data: bytes):
        self.data = data
        b = np.frombuffer(data, dtype=np.uint8)
        starts = np.flatnonzero(b >= 0xC0)
        lead = b[starts].astype(np.uint32)
        self.by_length = []
        for n, lo, hi in ((2, 0xC0, 0xE0), (3, 0xE0, 0xF0), (4, 0xF0, 0x100)):
            at = starts[(lead >= lo) & (lead < hi)]
            cp = b[at].astype(np.uint32) & (0xFF >> (n + 1))
            for k in range(1, n):
                cp = (cp << 6) | (b[at + k].astype(np.uint32) & 0x3F)
            self.by_length.append((n, at, cp))
        self.chars = sorted({chr(c) for _, _, cp in self.by_length for c in np.unique(cp).tolist()}
                            | {chr(c) for c in range(128) if bytes([c]) in data})

    def copy(self, copy: int) -> bytes:
        """The bytes of copy ``copy``."""
        if copy == 0:
            return self.data
        table = substitution(self.chars, copy)
        ascii_map = bytes(table.get(c, c) for c in range(128)) + bytes(range(128, 256))
        out = np.frombuffer(self.data.translate(ascii_map), dtype=np.uint8).copy()
        keys = np.fromiter(table.keys(), dtype=np.uint32, count=len(table))
        values = np.fromiter(table.values(), dtype=np.uint32, count=len(table))
        order = np.argsort(keys)
        keys, values = keys[order], values[order]
        for n, at, cp in self.by_length:
            if not len(at):
                continue
            i = np.searchsorted(keys, cp)
            new = values[i]
            out[at] = (((0xF00 >> n) & 0xFF) | (new >> (6 * (n - 1)))).astype(np.uint8)
            for k in range(1, n):
                out[at + k] = (0x80 | ((new >> (6 * (n - 1 - k))) & 0x3F)).astype(np.uint8)
        return out.tobytes()


def shard_name(copy: int, compress: bool) -> str:
    return f"copy-{copy:04d}.txt" + (".zst" if compress else "")


_SOURCE: Source | None = None


def _load(path: str) -> None:
    global _SOURCE
    _SOURCE = Source(Path(path).read_bytes())


def _write_copy(copy: int, folder: str, compress: bool) -> tuple[int, int]:
    assert _SOURCE is not None
    data = _SOURCE.copy(copy)
    final = Path(folder) / shard_name(copy, compress)
    tmp = final.with_name(final.name + ".tmp")
    if compress:
        import zstandard

        blob = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data)
    else:
        blob = data
    tmp.write_bytes(blob)
    os.replace(tmp, final)
    return copy, len(data)


def check_against(tool: Path, source: Path, lines: int = 3000, copies: int = 4) -> None:
    """Run the shared ``scale_corpus.py`` on the first ``lines`` lines and
    compare its ``copies`` copies with this module's, byte for byte."""
    with open(source, "rb") as f:
        sample = b"".join(f.readline() for _ in range(lines))
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "sample.txt", Path(tmp) / "scaled.txt"
        src.write_bytes(sample)
        subprocess.run([sys.executable, str(tool), str(src), str(copies), str(out)], check=True)
        theirs = out.read_bytes()
    s = Source(sample)
    ours = b"".join(s.copy(c) for c in range(copies))
    if ours != theirs:
        raise SystemExit(f"the copies differ from {tool.name}'s on a {lines}-line sample: update bench/_copies.py")


def build(source: Path, copies: int, folder: Path, compress: bool, processes: int) -> list[Path]:
    """Shards ``copy-0000 .. copy-{copies-1}`` in ``folder`` (missing ones
    built in ``processes`` processes, with progress on stderr)."""
    folder.mkdir(parents=True, exist_ok=True)
    shards = [folder / shard_name(c, compress) for c in range(copies)]
    todo = [c for c, p in enumerate(shards) if not p.exists()]
    if not todo:
        return shards
    size = source.stat().st_size
    print(f"building {len(todo)} of {copies} copies of {source.name} ({len(todo) * size / 1e9:.1f} GB of text"
          f"{', zstd' if compress else ''}) in {processes} processes into {folder}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    done_bytes = 0
    with ProcessPoolExecutor(processes, initializer=_load, initargs=(str(source),)) as pool:
        jobs = [pool.submit(_write_copy, c, str(folder), compress) for c in todo]
        for k, job in enumerate(as_completed(jobs), 1):
            _, n = job.result()
            done_bytes += n
            elapsed = time.perf_counter() - start
            rate = done_bytes / elapsed
            left = (len(todo) - k) * size / rate
            print(f"  copies {k}/{len(todo)}: {done_bytes / 1e9:.1f} GB in {elapsed:.0f} s, {rate / 1e6:.0f} MB/s, "
                  f"about {left / 60:.0f} min left", file=sys.stderr, flush=True)
    return shards


def free_bytes(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(folder).free
