"""Resume and extend, checkpoints, pruning rare word types, sharded counting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import bpeforge
from bpeforge import _engine


@pytest.mark.parametrize("scheme, pretok", [("bytes", "gpt2"), ("chars", "whitespace")])
def test_resume_equals_straight_run(corpus_file, tmp_path, scheme, pretok) -> None:
    kw = {"scheme": scheme, "pretokenizer": pretok, "special_tokens": ["<s>"], "progress": False}
    # the chars alphabet of this multilingual slice has ~2,500 symbols
    n1, n2 = (600, 1200) if scheme == "bytes" else (3000, 3600)
    small = bpeforge.train(corpus_file, vocab_size=n1, **kw)
    straight = bpeforge.train(corpus_file, vocab_size=n2, **kw)
    path = tmp_path / "small.json"
    small.save(path)
    resumed = bpeforge.train(corpus_file, vocab_size=n2, resume_from=path, progress=False)
    assert resumed.merges == straight.merges
    assert resumed.merge_counts == straight.merge_counts
    assert resumed.vocab_size == straight.vocab_size
    assert resumed.metadata["resumed_merges"] == len(small.merges)
    # old ids are stable
    for i in range(small.vocab_size):
        assert resumed.id_to_token(i) == small.id_to_token(i)
    # resuming from a Tokenizer object works too; shrinking is refused
    assert bpeforge.train(corpus_file, vocab_size=n2, resume_from=small, progress=False).merges == straight.merges
    with pytest.raises(bpeforge.ParameterError, match="only grows|below"):
        bpeforge.train(corpus_file, vocab_size=n1 - 100, resume_from=small, progress=False)


def test_extend_with_new_language_keeps_ids(corpus_slice) -> None:
    base_texts = [line for line in corpus_slice if line.isascii()][:800]
    new_texts = ["Γειά σου κόσμε, καλημέρα σε όλους τους φίλους μας", "Η γλώσσα είναι ζωντανή και όμορφη"] * 50
    base = bpeforge.train_from_iterator(base_texts, vocab_size=500, progress=False)
    words = " ".join(new_texts[:2]).split()
    before = sum(len(base.encode(" " + w)) for w in words) / len(words)
    extended = bpeforge.train_from_iterator(new_texts, vocab_size=600, resume_from=base, progress=False)
    after = sum(len(extended.encode(" " + w)) for w in words) / len(words)
    assert extended.merges[: len(base.merges)] == base.merges
    assert all(extended.id_to_token(i) == base.id_to_token(i) for i in range(base.vocab_size))
    assert after < before / 2, (before, after)


def test_checkpoints_and_interrupted_restart(corpus_file, tmp_path) -> None:
    ckpt = tmp_path / "ckpt.json"
    full = bpeforge.train(corpus_file, vocab_size=900, progress=False)
    bpeforge.train(corpus_file, vocab_size=900, checkpoint_path=ckpt, checkpoint_every=100, progress=False)
    saved = bpeforge.load(ckpt)
    assert 500 <= len(saved.merges) <= len(full.merges)
    assert saved.merges == full.merges[: len(saved.merges)]
    # Interrupt a long run; the checkpoint written at the interrupt resumes it.
    script = f"""
import bpeforge, random, sys
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the runner ignores SIGINT (nohup, &)
rng = random.Random(3)
texts = ["".join(rng.choices("abcdefghij", k=30)) for _ in range(60000)]
print("started", flush=True)
try:
    bpeforge.train_from_iterator(texts, vocab_size=3_000_000, min_frequency=1, progress="json",
                                 checkpoint_path={str(tmp_path / 'run.json')!r}, checkpoint_every=1_000_000)
except KeyboardInterrupt:
    sys.exit(7)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if '"phase":"merging"' in line and '"done"' not in line:
            break
        assert line, "ended before merging"
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 7
    part = bpeforge.load(tmp_path / "run.json")
    assert len(part.merges) > 0


def test_min_word_count_prunes(corpus_file) -> None:
    full = bpeforge.train(corpus_file, vocab_size=800, progress=False)
    pruned = bpeforge.train(corpus_file, vocab_size=800, min_word_count=3, progress=False)
    assert pruned.metadata["word_types_pruned"] > 0
    assert pruned.metadata["word_types"] == full.metadata["word_types"]
    # Dropping word types can only lower pair counts, and shrinks the table.
    assert pruned.merge_counts[0] <= full.merge_counts[0]
    assert pruned.metadata["word_table"]["symbols"] < full.metadata["word_table"]["symbols"]
    assert pruned.merges != full.merges
    # min_word_count=1 is the unpruned run
    assert bpeforge.train(corpus_file, vocab_size=800, min_word_count=1, progress=False).merges == full.merges


def _args(vocab_size: int) -> object:
    from bpeforge.options import TrainOptions

    return TrainOptions(vocab_size=vocab_size, threads=1).settings()


@pytest.mark.parametrize("shards", [1, 2, 5])
def test_byte_range_shards_equal_whole_file(corpus_file, shards) -> None:
    size = os.path.getsize(corpus_file)
    # As the Ray tasks count byte ranges and the driver sums them (bpeforge.distributed).
    total = _engine.CountSum()
    for k in range(shards):
        table, _ = _engine.count_shard([corpus_file], [0], _args(700), "off", (size * k // shards, size * (k + 1) // shards))
        total.add(table)
    tok = bpeforge.Tokenizer(_engine.train_count_sum(total, _args(700), "off", [corpus_file]))
    straight = bpeforge.train(corpus_file, vocab_size=700, progress=False)
    assert tok.merges == straight.merges and tok.merge_counts == straight.merge_counts


def test_corrupt_counts_are_refused() -> None:
    with pytest.raises(bpeforge.InputError, match="word counts"):
        _engine.CountSum().add(b"BPFCNT01" + b"\x00" * 10)


def test_extend_an_imported_model(tmp_path, corpus_slice) -> None:
    pytest.importorskip("tokenizers")
    tok = bpeforge.train_from_iterator(corpus_slice[:1000], vocab_size=500, progress=False)
    tok.to_huggingface(tmp_path / "t.json")
    imported = bpeforge.from_huggingface(tmp_path / "t.json")
    grown = bpeforge.train_from_iterator(corpus_slice[1000:], vocab_size=600, resume_from=imported, progress=False)
    assert grown.vocab_size == 600
    assert all(grown.id_to_token(i) == imported.id_to_token(i) for i in range(imported.vocab_size))
