"""Progress where people look: through a redirected
``sys.stderr`` (notebooks, capsys), to a callback, as a tqdm bar, for training,
``encode_batch`` and ``encode_file``; per-file counting and the merge phase's
setup steps; exceptions raised by a callback end the call."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge
from bpeforge import ProgressEvent

PHASE_ORDER = ["counting", "word table", "pair index", "merging"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Two inputs large enough for live counting events: a plain file and
    a gzipped one (its progress counts compressed bytes)."""
    d = tmp_path_factory.mktemp("progress")
    rng = random.Random(18)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(30_000)]
    lines = [" ".join(rng.choices(words, k=12)) for _ in range(150_000)]
    plain = d / "a.txt"
    plain.write_text("\n".join(lines[:100_000]) + "\n", encoding="utf-8")
    packed = d / "b.txt.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines[100_000:]) + "\n")
    return {"plain": plain, "gz": packed, "lines": lines}  # type: ignore[dict-item]


def by_phase(events: list[ProgressEvent]) -> dict[str, list[ProgressEvent]]:
    out: dict[str, list[ProgressEvent]] = {}
    for e in events:
        out.setdefault(e.phase, []).append(e)
    return out


def assert_monotone(events: list[ProgressEvent]) -> None:
    """Each phase's events: done never decreases, a total is known and kept,
    the last one (only) is finished, with done == total."""
    for phase, evs in by_phase(events).items():
        dones = [e.done for e in evs]
        assert dones == sorted(dones), (phase, dones)
        assert all(e.total is not None and e.done <= e.total for e in evs), phase
        assert len({e.total for e in evs}) == 1, (phase, [e.total for e in evs])
        assert [e.finished for e in evs] == [False] * (len(evs) - 1) + [True], phase
        assert evs[-1].done == evs[-1].total and evs[-1].eta == 0.0, phase
        assert all(e.elapsed >= 0 and e.rate >= 0 for e in evs), phase


def test_callback_gets_monotone_events_with_totals_in_phase_order(corpus) -> None:
    events: list[ProgressEvent] = []
    tok = bpeforge.train([corpus["plain"], corpus["gz"]], vocab_size=2000, threads=2, progress=events.append)
    assert_monotone(events)
    phases = [e.phase for e in events]
    assert sorted(set(phases), key=phases.index) == PHASE_ORDER
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == PHASE_ORDER
    counting = by_phase(events)["counting"]
    sizes = corpus["plain"].stat().st_size + corpus["gz"].stat().st_size
    assert counting[-1].total == sizes and counting[-1].unit == "B"
    assert counting[-1].info["word_types"] == tok.metadata["word_types"]
    # Per-file figures: the gzipped file's total is its compressed size.
    live = [e for e in counting if not e.finished]
    assert live, "counting reported nothing while it ran"
    files = {e.info["file"]: e.info["file_total"] for e in live}
    assert all(e.info["files"] == 2 and e.info["file_done"] <= e.info["file_total"] for e in live)
    if str(corpus["gz"]) in files:
        assert files[str(corpus["gz"])] == corpus["gz"].stat().st_size
    merging = by_phase(events)["merging"]
    assert merging[-1].done == len(tok.merges) and merging[-1].unit == "merges"
    assert by_phase(events)["word table"][-1].total == tok.metadata["word_types"]


def test_iterator_training_reports_through_the_callback() -> None:
    events: list[ProgressEvent] = []
    bpeforge.train_from_iterator(["low lower lowest newer wider"] * 2000, vocab_size=270, progress=events.append)
    assert_monotone(events)
    assert [e.phase for e in events if e.finished] == PHASE_ORDER


def test_redirected_stderr_sees_human_lines_by_default() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        bpeforge.train(bpeforge.sample_corpus(), vocab_size=400)
    text = buf.getvalue()
    for line in ("counted: ", "word table: ", "pair index: ", "merged: "):
        assert line in text, text
    assert "\x1b[" not in text  # no terminal codes in a notebook's stream


def test_capsys_sees_json_lines_when_asked(capsys) -> None:
    bpeforge.train(bpeforge.sample_corpus(), vocab_size=400, progress="json")
    err = capsys.readouterr().err
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    finished = [e["phase"] for e in events if e["finished"]]
    assert finished == PHASE_ORDER, err


def test_tqdm_bar_draws_each_phase() -> None:
    pytest.importorskip("tqdm")
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        bpeforge.train(bpeforge.sample_corpus(), vocab_size=400, progress="tqdm")
    text = buf.getvalue()
    for phase in PHASE_ORDER:
        assert f"{phase}: 100%" in text, text


class Boom(Exception):
    pass


def raise_on(phase: str, finished: bool | None = None):
    def callback(e: ProgressEvent) -> None:
        if e.phase == phase and (finished is None or e.finished == finished):
            raise Boom(f"stop at {phase}")

    return callback


@pytest.mark.parametrize("phase, finished", [("counting", None), ("merging", False), ("merging", True), ("pair index", True)])
def test_an_exception_in_the_callback_ends_training_with_it(corpus, phase, finished) -> None:
    with pytest.raises(Boom, match=f"stop at {phase}"):
        bpeforge.train([corpus["plain"]], vocab_size=3000, progress=raise_on(phase, finished))


def test_keyboard_interrupt_in_the_callback_interrupts(corpus) -> None:
    def callback(e: ProgressEvent) -> None:
        if e.phase == "merging" and not e.finished:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bpeforge.train([corpus["plain"]], vocab_size=3000, progress=callback)


def test_encode_batch_progress_changes_no_id(corpus) -> None:
    tok = bpeforge.train(bpeforge.sample_corpus(), vocab_size=500, progress=False)
    texts = corpus["lines"][:60_000]  # several megabytes: several slices
    events: list[ProgressEvent] = []
    assert tok.encode_batch(texts, progress=events.append) == tok.encode_batch(texts)
    assert_monotone(events)
    assert {e.phase for e in events} == {"encoding"}
    # Callbacks come at most every 0.1 s, so how many there are depends on the
    # machine's speed (a fast build encodes these megabytes in under 0.1 s):
    # at least the first slice's and the final one.
    assert events[-1].total == sum(len(t.encode()) for t in texts) and len(events) >= 2
    ids, offsets = tok.encode_batch(texts, as_numpy=True, progress=lambda e: None)
    plain_ids, plain_offsets = tok.encode_batch(texts, as_numpy=True)
    assert (ids == plain_ids).all() and (offsets == plain_offsets).all()
    kw = {"dropout": 0.3, "seed": 7}
    assert tok.encode_batch(texts, progress=lambda e: None, **kw) == tok.encode_batch(texts, **kw)
    with pytest.raises(Boom):
        tok.encode_batch(texts, progress=raise_on("encoding"))


def test_encode_file_progress(corpus, tmp_path) -> None:
    tok = bpeforge.train(bpeforge.sample_corpus(), vocab_size=500, progress=False)
    events: list[ProgressEvent] = []
    stats = tok.encode_file(corpus["gz"], tmp_path / "ids.txt", progress=events.append)
    assert_monotone(events)
    assert events[-1].total == corpus["gz"].stat().st_size
    assert events[-1].info["tokens"] == stats["tokens"]
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        tok.encode_file(corpus["gz"], tmp_path / "ids2.txt", progress="json")
    events_json = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert events_json[-1]["phase"] == "encoding" and events_json[-1]["finished"] is True
    with pytest.raises(Boom):
        tok.encode_file(corpus["gz"], tmp_path / "ids3.txt", progress=raise_on("encoding", True))


def test_bad_progress_values_are_parameter_errors() -> None:
    for bad in ("loud", 3, ["json"]):
        with pytest.raises(bpeforge.ParameterError, match="progress"):
            bpeforge.train_from_iterator(["a b"], vocab_size=258, progress=bad)  # type: ignore[arg-type]


def test_cli_still_prints_to_stderr(corpus, tmp_path) -> None:
    out = tmp_path / "m.json"
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(corpus["plain"]), str(corpus["gz"]),
                        "--vocab-size", "1000", "--output", str(out), "--progress", "json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    assert [e["phase"] for e in events if e["finished"]] == PHASE_ORDER, r.stderr
    live = [e for e in events if e["phase"] == "counting" and "file" in e]
    assert all(e["files"] == 2 and "file_eta" in e for e in live)


def test_cli_human_progress_to_a_log_file_has_no_terminal_codes(corpus, tmp_path) -> None:
    out = tmp_path / "m.json"
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(corpus["plain"]), "--vocab-size", "1000",
                        "--output", str(out), "--progress", "human"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "merged: " in r.stderr and "\x1b[" not in r.stderr, r.stderr


#: Keys whose values are measured times, which differ between two runs.
TIMED = {"elapsed", "rate", "eta", "cpu_seconds", "file_rate", "file_eta"}


def callback_dict(e: ProgressEvent) -> dict:
    """The event as the engine gave it: its main keys, then ``info``."""
    main = ("phase", "done", "total", "unit", "elapsed", "rate", "eta", "finished")
    return {**{k: getattr(e, k) for k in main}, **e.info}


def test_json_lines_and_callback_events_have_one_schema(corpus, tmp_path) -> None:
    """A training run and an encode run, reported once as JSON lines and
    once to a callback: each phase's events have the same keys, in the same
    order, and the same values where they are not measured times."""
    paths = [corpus["plain"], corpus["gz"]]

    def both(run):
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            run("json")
        lines = [json.loads(line) for line in buf.getvalue().splitlines()]
        events: list[ProgressEvent] = []
        run(events.append)
        return lines, [callback_dict(e) for e in events]

    tok = None

    def train(progress):
        nonlocal tok
        tok = bpeforge.train(paths, vocab_size=1200, threads=2, progress=progress)

    lines, dicts = both(train)
    assert tok is not None
    lines_enc, dicts_enc = both(lambda p: tok.encode_file(corpus["gz"], tmp_path / "ids.txt", progress=p))
    lines, dicts = lines + lines_enc, dicts + dicts_enc

    def finished(events):
        return [e for e in events if e["finished"]]

    assert [e["phase"] for e in finished(lines)] == PHASE_ORDER + ["encoding"]
    for line, d in zip(finished(lines), finished(dicts), strict=True):
        assert list(line) == list(d), (line, d)
        assert {k: v for k, v in line.items() if k not in TIMED} == {k: v for k, v in d.items() if k not in TIMED}
        for k in TIMED & set(line):
            assert (line[k] is None) == (d[k] is None) and type(line[k]) is type(d[k]), (k, line, d)
    # Live events: the first, reported as the first file opens (before any
    # rate limit applies), is the same event in both forms.
    first_line, first_dict = (next(e for e in events if not e["finished"]) for events in (lines, dicts))
    assert first_line["phase"] == "counting" and first_line["file_index"] == 0 and first_line["files"] == 2
    assert list(first_line) == list(first_dict)
    assert {k: v for k, v in first_line.items() if k not in TIMED} == {k: v for k, v in first_dict.items() if k not in TIMED}
    assert tok.metadata["word_types"] == finished(dicts)[0]["word_types"]
