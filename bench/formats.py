"""Training time by input format: the same texts as plain lines, as zstd JSON
lines (``{"text": ..., "lang": ...}``, read with ``text_field="text"``), as a
zstd Parquet file (``text``/``lang`` columns, written by pyarrow), as an
in-memory ``datasets.Dataset`` (``train_from_dataset``), and through
``train_from_iterator``; at 1 and 2 threads, runs interleaved, each in its
own forked process, medians.

    python bench/formats.py [--corpus /work/shared/corpora/multi-1m.txt.xz] [--lines N] [--repeats 3]

Measure a release build (``maturin develop --release``). The converted files
are written once to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import tempfile
import time
from pathlib import Path

import bpeforge

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parents[1] / "shared" / "corpora" / "multi-1m.txt.xz"


def read_lines(corpus: Path, limit: int | None) -> tuple[list[str], list[str]]:
    """The corpus's texts (split at b"\\n", as files are read) and their language tags."""
    with lzma.open(corpus, "rb") as f:
        texts = f.read().split(b"\n")
    if texts and texts[-1] == b"":
        texts.pop()
    langs_path = Path(str(corpus).replace(".txt.xz", ".langs.txt.xz"))
    langs = lzma.open(langs_path, "rt").read().split("\n") if langs_path.exists() else []
    texts = texts[:limit] if limit else texts
    decoded = [t.decode("utf-8", "surrogateescape") for t in texts]
    return decoded, (langs + ["und"] * len(decoded))[: len(decoded)]


def jsonl_texts(path: Path):
    """The ``text`` of each JSON line, read as a Python user would."""
    import io

    import zstandard

    with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as z:
        for line in io.TextIOWrapper(z, encoding="utf-8", errors="surrogateescape"):
            yield json.loads(line)["text"]


def parquet_texts(path: Path):
    """The ``text`` column, batch by batch, as Python strings."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(columns=["text"]):
        yield from batch.column(0).to_pylist()


def dataset_texts(ds):
    """The ``text`` column in batches of 1,000 rows, the loop the HF
    tokenizers docs give for training from a dataset."""
    for batch in ds.iter(batch_size=1000):
        yield from batch["text"]


def in_child(measure):
    """``measure()`` run in a forked child process; its result."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child() -> None:
        send.send(measure())

    proc = ctx.Process(target=child)
    proc.start()
    result = receive.recv()
    proc.join()
    return result


def timed(run) -> tuple[float, float]:
    """Wall seconds of a training run, and its counting phase's (reading,
    parsing and counting: where input formats differ; merging is the same)."""
    t0 = time.perf_counter()
    tok = run()
    return time.perf_counter() - t0, tok.metadata["timings"]["count_seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--lines", type=int, default=None, help="use only the first N lines")
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-iterator", action="store_true", help="skip the (slow) train_from_iterator row")
    ap.add_argument("--balanced", action="store_true",
                    help="instead: language-balanced training (temperature 3), a langs side file vs lang_field")
    a = ap.parse_args()
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    datasets.disable_progress_bars()
    texts, langs = read_lines(a.corpus, a.lines)
    print(f"corpus {a.corpus.name}: {len(texts)} lines; bpeforge {bpeforge.__version__}; "
          f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "texts.txt"
        plain.write_bytes("".join(t + "\n" for t in texts).encode("utf-8", "surrogateescape"))
        jsonl = Path(tmp) / "texts.jsonl.zst"
        records = "".join(json.dumps({"text": t, "lang": l}, ensure_ascii=False) + "\n" for t, l in zip(texts, langs))
        jsonl.write_bytes(zstandard.ZstdCompressor(level=3).compress(records.encode("utf-8", "surrogateescape")))
        del records
        # Parquet as FineWeb ships it: zstd pages, row groups of ~100k rows.
        parquet = Path(tmp) / "texts.parquet"
        pq.write_table(pa.table({"text": texts, "lang": langs}), parquet, compression="zstd", row_group_size=100_000)
        ds = datasets.Dataset.from_dict({"text": texts, "lang": langs})  # Arrow-backed, in memory
        opts = {"vocab_size": a.vocab_size, "progress": False}
        rows = {
            "plain lines": lambda th: bpeforge.train(plain, threads=th, **opts),
            "JSONL.zst": lambda th: bpeforge.train(jsonl, text_field="text", threads=th, **opts),
            "Parquet (zstd)": lambda th: bpeforge.train(parquet, text_column="text", threads=th, **opts),
            "train_from_dataset": lambda th: bpeforge.train_from_dataset(ds, threads=th, **opts),
        }
        if a.balanced:
            side = Path(tmp) / "texts.langs.txt"
            side.write_text("".join(l + "\n" for l in langs), encoding="utf-8")
            bal = dict(opts, temperature=3.0)
            rows = {
                "plain lines": lambda th: bpeforge.train(plain, langs=[side], threads=th, **bal),
                "JSONL.zst": lambda th: bpeforge.train(jsonl, text_field="text", lang_field="lang", threads=th, **bal),
                "Parquet (zstd)": lambda th: bpeforge.train(parquet, text_column="text", lang_column="lang", threads=th,
                                                            **bal),
                "train_from_dataset": lambda th: bpeforge.train_from_dataset(ds, lang_column="lang", threads=th,
                                                                             **bal),
            }
        elif not a.no_iterator:
            # What users do without native readers: the rows read in Python
            # and fed to train_from_iterator (and, as a floor, a list of str
            # already in memory).
            rows["iterator: list of str"] = lambda th: bpeforge.train_from_iterator(iter(texts), threads=th, **opts)
            rows["iterator: JSONL.zst + json"] = lambda th: bpeforge.train_from_iterator(
                jsonl_texts(jsonl), threads=th, **opts)
            rows["iterator: Parquet batches"] = lambda th: bpeforge.train_from_iterator(
                parquet_texts(parquet), threads=th, **opts)
            rows["iterator: Dataset batches"] = lambda th: bpeforge.train_from_iterator(
                dataset_texts(ds), threads=th, **opts)
        # Interleaved (every row once per repeat), so load changes hit all
        # rows alike; each run in a forked child, so no run inherits the
        # memory an earlier one freed (fresh pages fault in slowly on some
        # VMs, and one long process made the merge phase vary by a second).
        times: dict = {name: {1: [], 2: []} for name in rows}
        for _ in range(a.repeats):
            for name, run in rows.items():
                for th in (1, 2):
                    times[name][th].append(in_child(lambda: timed(lambda: run(th))))
                    wall, count = times[name][th][-1]
                    print(f"  {name}, {th} thread(s): {wall:.2f}s (counting {count:.2f}s)", flush=True)
    for k, phase in enumerate(("whole run", "counting phase")):
        results = {name: {th: statistics.median(x[k] for x in t[th]) for th in (1, 2)} for name, t in times.items()}
        base = results["plain lines"]
        print(f"{phase}: medians of {a.repeats}, vocab {a.vocab_size}; ratio = time / plain lines' at the same threads")
        print(f"{'input':<28} {'1 thread':>16} {'2 threads':>16}")
        for name, r in results.items():
            cells = [f"{r[th]:7.2f}s {r[th] / base[th]:5.2f}x" for th in (1, 2)]
            print(f"{name:<28} {cells[0]:>16} {cells[1]:>16}")
        # Each native reader against feeding the same rows through Python.
        pairs = [("JSONL.zst", "iterator: JSONL.zst + json"), ("Parquet (zstd)", "iterator: Parquet batches"),
                 ("train_from_dataset", "iterator: Dataset batches")]
        pairs = [(n, i) for n, i in pairs if n in results and i in results]
        if pairs:
            print(f"  speed-up of the native reader over train_from_iterator on the same rows ({phase}):")
            for native, via in pairs:
                ups = [f"{results[via][th] / results[native][th]:5.2f}x" for th in (1, 2)]
                print(f"  {native:<26} {ups[0]:>16} {ups[1]:>16}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
