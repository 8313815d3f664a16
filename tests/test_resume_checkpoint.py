"""A checkpoint continues to the straight run it is part of: it records the
options that change the result, resuming takes those left out from it and
refuses a different one, and the Ctrl-C message prints the whole command."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

import bpeforge
from conftest import interrupt_while_merging, same_training, write_zipf_corpus


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("vocab_size", [700, 1500])
def test_a_checkpoint_resumed_with_no_options_equals_the_straight_run(corpus_file, tmp_path, vocab_size,
                                                                      threads) -> None:
    opts = {"vocab_size": vocab_size, "min_frequency": 3, "min_word_count": 2, "max_token_length": 12,
            "threads": threads, "progress": False}
    ckpt = tmp_path / "ckpt.json"
    straight = bpeforge.train(corpus_file, checkpoint_path=ckpt, checkpoint_every=100, **opts)
    part = bpeforge.load(ckpt)
    assert 0 < len(part.merges) < len(straight.merges)
    record = part.metadata["checkpoint"]
    assert record["options"]["vocab_size"] == vocab_size and record["options"]["min_frequency"] == 3
    # Nothing but the checkpoint: the target size and every option come from it.
    resumed = bpeforge.train(corpus_file, resume_from=ckpt, threads=threads, progress=False)
    same_training(resumed, straight)
    assert resumed.metadata["resumed_merges"] == len(part.merges)
    # The same options given again are accepted, and a larger size continues the same merges.
    again = bpeforge.train(corpus_file, resume_from=ckpt, **opts)
    same_training(again, straight)
    longer = bpeforge.train(corpus_file, resume_from=ckpt, vocab_size=vocab_size + 200, progress=False)
    assert longer.merges[: len(straight.merges)] == straight.merges


@pytest.fixture(scope="module")
def zipf_corpus(tmp_path_factory) -> str:
    """About 7 MB of words drawn from 200k types with Zipf-like frequencies:
    many rare types, which a tight budget drops."""
    return write_zipf_corpus(tmp_path_factory.mktemp("zipf") / "zipf.txt", blocks=60)


# In a fresh interpreter (a budget just above what the process holds means
# something only where that does not drift): the straight run under a
# budget that drops word types, with checkpoints; then its checkpoint
# resumed with no option given.
_BUDGETED = """
import json, sys
import bpeforge
corpus, ckpt = sys.argv[1:3]
bpeforge.train(corpus, vocab_size=300, threads=2, progress=False)  # warm up
rss = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmRSS:"))
budget = rss + (48 << 20) + (4 << 20)  # the merge phase's fixed part and 4 MB of word types
straight = bpeforge.train(corpus, vocab_size=900, threads=2, progress=False, max_memory=budget,
                          checkpoint_path=ckpt, checkpoint_every=150)
resumed = bpeforge.train(corpus, resume_from=ckpt, threads=2, progress=False)
print(json.dumps({"budget": budget, "memory_budget": straight.metadata["memory_budget"],
                  "straight": [straight.merges, straight.merge_counts, straight.vocab_size],
                  "resumed": [resumed.merges, resumed.merge_counts, resumed.vocab_size],
                  "resumed_merges": resumed.metadata["resumed_merges"]},
                 default=lambda b: b.hex()))
"""


def test_a_budget_that_prunes_is_kept_by_the_resumed_run(zipf_corpus, tmp_path) -> None:
    ckpt = tmp_path / "ckpt.json"
    run = subprocess.run([sys.executable, "-c", _BUDGETED, zipf_corpus, str(ckpt)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    chosen = out["memory_budget"]["effective_min_word_count"]
    assert chosen > 1 and out["memory_budget"]["word_types_dropped"] > 0, out["memory_budget"]
    part = bpeforge.load(ckpt)
    assert part.metadata["checkpoint"]["effective_min_word_count"] == chosen
    assert part.metadata["checkpoint"]["options"]["max_memory"] == out["budget"]
    assert 0 < out["resumed_merges"] == len(part.merges) < len(out["straight"][0])
    # The checkpoint's budget, and the min_word_count it chose, without being given.
    assert out["resumed"] == out["straight"]
    # Not what an unbudgeted run learns: the budget mattered.
    whole = bpeforge.train(zipf_corpus, vocab_size=900, threads=2, progress=False)
    assert json.loads(json.dumps(whole.merges, default=lambda b: b.hex())) != out["straight"][0]


def test_a_different_option_given_is_refused_naming_both_values(corpus_file, tmp_path) -> None:
    ckpt = tmp_path / "ckpt.json"
    bpeforge.train(corpus_file, vocab_size=900, min_frequency=3, checkpoint_path=ckpt, checkpoint_every=100,
                   progress=False)
    with pytest.raises(bpeforge.ParameterError, match=r"min_frequency=5 \(the checkpoint has 3\)"):
        bpeforge.train(corpus_file, resume_from=ckpt, min_frequency=5, progress=False)
    with pytest.raises(bpeforge.ParameterError, match=r"documents=True \(the checkpoint has False\)"):
        bpeforge.train(corpus_file, resume_from=ckpt, documents=True, progress=False)
    other = tmp_path / "other.txt"
    other.write_text("some other text\n" * 100, encoding="utf-8")
    with pytest.raises(bpeforge.ParameterError, match="same input files"):
        bpeforge.train(other, resume_from=ckpt, progress=False)


def test_a_finished_model_is_extended_with_the_options_given(corpus_file, tmp_path) -> None:
    # A finished model has no checkpoint record: its new run's options are the user's.
    model = bpeforge.train(corpus_file, vocab_size=700, min_frequency=3, progress=False)
    assert "checkpoint" not in model.metadata
    grown = bpeforge.train(corpus_file, resume_from=model, vocab_size=800, min_frequency=2, progress=False)
    assert grown.vocab_size == 800


def test_a_size_below_the_resumed_model_is_refused_before_any_input_is_read(tmp_path, corpus_file) -> None:
    model = bpeforge.train(corpus_file, vocab_size=700, progress=False)
    missing = tmp_path / "not-there.txt"
    # The options are refused when made: the (missing) input is never opened.
    with pytest.raises(bpeforge.ParameterError, match="below the resumed model's 700 tokens"):
        bpeforge.train(missing, resume_from=model, vocab_size=600, progress=False)
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(missing), "--resume",
                        _saved(model, tmp_path), "--vocab-size", "600", "-o", str(tmp_path / "out.json")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "below the resumed model's 700 tokens" in r.stderr, r.stderr


def test_an_import_is_measured_in_ids(tmp_path, corpus_slice) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    del tiktoken
    tok = bpeforge.train_from_iterator(corpus_slice[:2000], vocab_size=400, progress=False)
    paths = tok.to_tiktoken(tmp_path / "m.tiktoken")
    imported = bpeforge.from_tiktoken(paths[0], pattern="gpt2")
    # Leave a gap: the largest id is what counts.
    data = json.loads(imported.to_json())
    data["ids"][-1] += 19
    gapped = bpeforge.Tokenizer.from_json(json.dumps(data))
    ids = max(data["ids"]) + 1
    with pytest.raises(bpeforge.ParameterError, match=f"below the resumed model's {ids} ids"):
        bpeforge.train_from_iterator(corpus_slice[:100], resume_from=gapped, vocab_size=ids - 1, progress=False)


def _saved(model: bpeforge.Tokenizer, tmp_path) -> str:
    path = tmp_path / "model.json"
    model.save(path)
    return str(path)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_prints_the_command_that_resumes_to_the_straight_run(tmp_path, corpus_file) -> None:
    # A merge loop long enough to be interrupted: every pair counts (min
    # frequency 1) on a large vocabulary, on one thread.
    out = tmp_path / "m.json"
    options = ["--vocab-size", "24k", "--min-frequency", "1", "--max-token-length", "16", "--min-word-count", "2"]
    argv = [sys.executable, "-m", "bpeforge", "train", corpus_file, *options, "--threads", "1",
            "--progress", "human", "-o", str(out), "--checkpoint-every", "100"]
    returncode, err = interrupt_while_merging(argv)
    assert returncode == 130, err[-2000:]
    command = err[err.index("resume with:"):].splitlines()[1].strip()
    words = shlex.split(command)
    assert words[:2] == ["bpeforge", "train"] and "(and the same options)" not in err
    for flag in ("--vocab-size", "--min-frequency", "--max-token-length", "--min-word-count"):
        assert flag in words, command
    assert words[words.index("--vocab-size") + 1] == "24000"
    part = bpeforge.load(out)
    assert len(part.merges) < 24000 - 256
    resumed = subprocess.run([sys.executable, "-m", "bpeforge", *words[1:], "--progress", "off"],
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed: " in resumed.stdout
    straight = bpeforge.train(corpus_file, vocab_size=24000, min_frequency=1, max_token_length=16,
                              min_word_count=2, progress=False)
    same_training(bpeforge.load(out), straight)


def test_an_explicit_default_on_the_command_line_is_checked_too(tmp_path, corpus_file) -> None:
    ckpt = tmp_path / "ckpt.json"
    bpeforge.train(corpus_file, vocab_size=900, min_frequency=3, checkpoint_path=ckpt, checkpoint_every=100,
                   progress=False)
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", corpus_file, "--resume", str(ckpt),
                        "--min-frequency", "2", "-o", str(ckpt)], capture_output=True, text=True)
    assert r.returncode != 0 and "--min-frequency 2 (the checkpoint has 3)" in r.stderr, r.stderr
