"""A counts file: a run's word counts saved once, trained on again without
reading the text (``bpeforge count`` / ``bpeforge.count``, ``train --counts``
/ ``train_from_counts``, and the file a checkpointed run keeps beside its
checkpoint, which resuming reuses). The models equal the runs that count
the text; a counts file that is not the run's is refused, never trained on."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

import bpeforge
from conftest import same_training
from bpeforge.cli.train import _interrupted, cmd_train


@pytest.mark.parametrize("scheme", ["bytes", "chars"])
def test_a_counts_file_trains_every_size_as_the_text_does(corpus_file, tmp_path, scheme) -> None:
    counts = tmp_path / "corpus.counts"
    header = bpeforge.count(corpus_file, counts, scheme=scheme, progress=False)
    assert header["inputs"][0]["path"] == os.path.realpath(corpus_file)
    assert header["counting"]["scheme"] == scheme
    base = 256 if scheme == "bytes" else 2600
    for size, extra in ((base + 300, {}), (base + 900, {"min_frequency": 3, "max_token_length": 8})):
        same_training(bpeforge.train_from_counts(counts, vocab_size=size, scheme=scheme, progress=False, **extra),
              bpeforge.train(corpus_file, vocab_size=size, scheme=scheme, progress=False, **extra))


def test_a_counts_file_refuses_other_counting_settings(corpus_file, tmp_path) -> None:
    counts = tmp_path / "corpus.counts"
    bpeforge.count(corpus_file, counts, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="counted with other settings: scheme"):
        bpeforge.train_from_counts(counts, vocab_size=600, scheme="chars", progress=False)
    with pytest.raises(bpeforge.ParameterError, match="pretokenizer"):
        bpeforge.train_from_counts(counts, vocab_size=600, pretokenizer="gpt2", progress=False)
    not_counts = tmp_path / "x.counts"
    not_counts.write_bytes(b"hello world\n" * 4)
    with pytest.raises(bpeforge.InputError, match="not a bpeforge counts file"):
        bpeforge.train_from_counts(not_counts, vocab_size=600, progress=False)


def test_count_never_writes_over_its_input(corpus_file) -> None:
    with pytest.raises(bpeforge.OutputError, match="it is the input"):
        bpeforge.count(corpus_file, corpus_file, progress=False)


def test_the_command_line_counts_once_and_trains_twice(corpus_file, tmp_path) -> None:
    counts, model = tmp_path / "c.counts", tmp_path / "m.json"
    run = subprocess.run([sys.executable, "-m", "bpeforge", "count", corpus_file, "-o", str(counts)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert f"bpeforge train --counts {counts}" in run.stdout
    for size in ("700", "1k"):
        run = subprocess.run([sys.executable, "-m", "bpeforge", "train", "--counts", str(counts), "-o", str(model),
                              "--vocab-size", size, "--progress", "off"], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        same_training(bpeforge.load(model), bpeforge.train(corpus_file, vocab_size=int(size.replace("k", "000")),
                                                   progress=False))
    run = subprocess.run([sys.executable, "-m", "bpeforge", "train", corpus_file, "--counts", str(counts), "-o",
                          str(model)], capture_output=True, text=True)
    assert run.returncode != 0 and "give no INPUT" in run.stderr


def _checkpointed(tmp_path, corpus_file) -> tuple[str, str, bpeforge.Tokenizer]:
    """A copy of the corpus, and the checkpoint a run on it leaves (its
    last, unfinished one) beside its counts file."""
    text = tmp_path / "corpus.txt"
    text.write_bytes(open(corpus_file, "rb").read())
    ckpt = tmp_path / "ckpt.json"
    straight = bpeforge.train(text, vocab_size=1500, progress=False, checkpoint_path=ckpt, checkpoint_every=300)
    assert 0 < len(bpeforge.load(ckpt).merges) < len(straight.merges)
    return str(text), str(ckpt), straight


def test_a_resumed_checkpoint_trains_on_the_counts_its_run_saved(corpus_file, tmp_path) -> None:
    """The resumed run does not read the text again: with the corpus's
    bytes replaced (same size, same time of last change) it still gives
    the straight run on the original text."""
    text, ckpt, straight = _checkpointed(tmp_path, corpus_file)
    counts = ckpt + ".counts"
    assert bpeforge.load(ckpt).metadata["checkpoint"]["counts"] == os.path.realpath(counts)
    same_training(bpeforge.train_from_counts(counts, vocab_size=1500, progress=False), straight)
    stamp = os.stat(text)
    original = open(text, "rb").read()
    with open(text, "wb") as f:
        f.write(bytes(b if b == 0x0A else 0x78 for b in original))
    os.utime(text, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    same_training(bpeforge.train(text, resume_from=ckpt, progress=False), straight)


def test_a_counts_file_changed_since_is_refused(corpus_file, tmp_path) -> None:
    text, ckpt, _ = _checkpointed(tmp_path, corpus_file)
    os.utime(text, ns=(10**18, 10**18))
    with pytest.raises(bpeforge.InputError, match=r"counts file .* is not this run's: .* changed since"):
        bpeforge.train(text, resume_from=ckpt, progress=False)


def test_a_run_that_keeps_no_counts_leaves_no_stale_ones(corpus_file, tmp_path) -> None:
    """A balanced run counts by language and saves no counts file: one left
    beside its checkpoint by an earlier run is removed, so that its
    checkpoint can never name counts not its own."""
    text, ckpt, _ = _checkpointed(tmp_path, corpus_file)
    langs = tmp_path / "langs.txt"
    n = sum(1 for _ in open(text, "rb"))
    langs.write_text("".join("en\n" if i % 2 else "fr\n" for i in range(n)))
    bpeforge.train(text, vocab_size=900, langs=langs, temperature=2.0, progress=False, checkpoint_path=ckpt,
                   checkpoint_every=100)
    assert not os.path.exists(ckpt + ".counts")
    assert "counts" not in bpeforge.load(ckpt).metadata["checkpoint"]


def _args(out: str, **more: object) -> argparse.Namespace:
    options = bpeforge.TrainOptions(vocab_size=5000, min_frequency=3)
    return argparse.Namespace(func=cmd_train, output=out, inputs=["corpus.txt"], checkpoint_every=100,
                              train_options=options, started=0.0, **more)


def test_ctrl_c_says_what_was_saved_at_each_stage(tmp_path) -> None:
    out = str(tmp_path / "m.json")
    during_counting = _interrupted(_args(out))
    assert "while counting: nothing was saved" in during_counting and out + ".counts" in during_counting
    open(out + ".counts", "wb").close()
    counted = _interrupted(_args(out))
    assert "the counts are saved in" in counted and f"--counts {out}.counts" in counted
    assert "--min-frequency 3" in counted and "--vocab-size 5000" in counted
    open(out, "w").close()
    merging = _interrupted(_args(out))
    assert "saved in the checkpoint" in merging and "resuming does not count again" in merging
    assert f"--resume {out}" in merging
    plain = _interrupted(argparse.Namespace(func=cmd_train, output=out, inputs=["corpus.txt"]))
    assert "nothing was saved" in plain and "--checkpoint-every N" in plain
