"""The encoding bench's text choice and whole-file bookkeeping: lines picked
by language after the training lines, warm-up and timed files disjoint, fresh
files and the same file again kept apart, differing ids marked."""

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_encode_files", BENCH / "encode.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("bench_encode_files", None)
        sys.path.remove(str(BENCH))


def test_lines_by_language_start_after_the_training_lines(bench, tmp_path):
    corpus, langs = tmp_path / "c.txt", tmp_path / "c.langs.txt"
    corpus.write_text("".join(f"line {i}\r\n" for i in range(10)), encoding="utf-8")
    langs.write_text("".join(("en" if i % 2 else "de") + "\n" for i in range(10)), encoding="utf-8")
    got = bench.held_out_lines(corpus, langs, "en", start=4)
    assert got == ["line 5", "line 7", "line 9"]
    assert bench.held_out_lines(corpus, None, "all", start=8) == ["line 8", "line 9"]
    assert bench.held_out_lines(corpus, langs, "en", start=0, max_lines=2) == ["line 1", "line 3"]


def test_files_are_disjoint_and_the_warmup_is_other_text(bench, tmp_path):
    lines = [f"text {i:03d}" for i in range(100)]  # 9 bytes a line with its end
    args = argparse.Namespace(warmup_mb=18e-6, file_mb=27e-6, file_rounds=3, lang="all")
    plan = bench._write_files(lines, tmp_path, args)
    folder = tmp_path / bench.FILES_DIR
    texts = [(folder / plan["warmup"]["name"]).read_text()] + \
            [(folder / f["name"]).read_text() for f in plan["files"]]
    seen = [set(t.splitlines()) for t in texts]
    assert [len(s) for s in seen] == [2, 3, 3, 3]
    assert all(a.isdisjoint(b) for i, a in enumerate(seen) for b in seen[i + 1:])
    with pytest.raises(SystemExit):
        bench._write_files(lines[:5], tmp_path, args)


def test_fresh_files_and_the_same_file_again_stay_apart(bench):
    row = bench.Row(bench.FILES, 1, "gigatoken")
    for i, wall in enumerate([0.5, 0.4, 0.6]):
        row.runs.append({"status": "ok", "kind": "file", "file": i, "bytes": 10_000_000,
                         "wall_s": wall, "cpu_s": wall, "tokens": 3, "digest": f"d{i}"})
    row.runs.append({"status": "ok", "kind": "again", "file": 2, "bytes": 10_000_000,
                     "wall_s": 0.1, "cpu_s": 0.1, "tokens": 3, "digest": "d2"})
    row.extra["ids"] = [{"file": 0, "same": True}, {"file": 1, "same": False, "positions_differ": 4,
                                                     "first_difference": 7}, {"file": 2, "same": True}]
    (s,) = bench.summarize_files([row])
    assert s["file"]["wall"] == {"median": 20.0, "min": 10_000_000 / 0.6 / 1e6, "max": 25.0}
    assert s["again"]["wall"]["median"] == 100.0
    assert s["ids_differ"] == 1 and s["ids"].startswith("DIFFER on 1 of 3 files")
    entries = bench.side_by_side_entries([], [s], {})
    assert [e["mode"] for e in entries] == [(bench.FILES, "file"), (bench.FILES, "again")]
    table = bench.build_side_by_side([([], entries)], [], {}, "wall", markdown=True)
    assert "20.0 (16.7–25.0)*" in table and "100.0 (100.0–100.0)*" in table
