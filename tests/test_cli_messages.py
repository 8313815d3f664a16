"""The smaller things a new user met: CLI errors in the CLI's words and in one
line, counts like 32k, checks before counting, one encode summary, Ctrl-C
on its own line with the way to resume, and models that compare equal after
an export and import that keep every id."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge
from bpeforge import cli
from bpeforge.errors import ParameterError
from bpeforge.options import parse_count
from conftest import interrupt_while_merging

TEXTS = [f"the quick brown fox {i % 17} jumps over the lazy dog {i % 5}" for i in range(300)]


def bpeforge_cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=300, **kw)


@pytest.fixture()
def corpus(tmp_path) -> Path:
    path = tmp_path / "c.txt"
    path.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    return path


# ---- errors name flags, in one line ----------------------------------------------------


def test_special_token_error_names_the_flags(corpus, tmp_path) -> None:
    model = tmp_path / "m.json"
    bpeforge.train(corpus, vocab_size=300, special_tokens=["<s>"], progress=False).save(model)
    text = tmp_path / "t.txt"
    text.write_text("hello <s> world\n")
    r = bpeforge_cli("encode", "-m", str(model), str(text), "-o", str(tmp_path / "ids.txt"))
    assert r.returncode == 1
    assert "--allowed-special" in r.stderr and "--disallowed-special none" in r.stderr, r.stderr
    assert "allowed_special=" not in r.stderr and "encode_ordinary" not in r.stderr
    # Python keeps Python's words.
    with pytest.raises(bpeforge.SpecialTokenError, match=r"allowed_special=\{'<s>'\}|allowed_special=\{\"<s>\"\}"):
        bpeforge.load(model).encode("hello <s> world")


@pytest.mark.parametrize("python, flags", [
    ("give text_field= (the field)", "give --text-field (the field)"),
    ("vocab_size 100 is below", "--vocab-size 100 is below"),
    ("pass allowed_special={\"<s>\"} (or \"all\")", "pass --allowed-special \"<s>\" (or \"all\")"),
    ("on_bad_record=\"skip\" skips", "on_bad_record=\"skip\" skips".replace('on_bad_record="skip"',
                                                                        "--on-bad-record \"skip\"")),
    ("pass overwrite=True to replace", "pass --force to replace"),
    ("given as pretokenizer=bpeforge.Regex('G\\w+')", "given as --pattern 'G\\w+'"),
    ("given as pretokenizer=bpeforge.Regex(\"it's\")", "given as --pattern \"it's\""),
    ("cannot read /data/vocab_size.txt: no such file", "cannot read /data/vocab_size.txt: no such file"),
])
def test_cli_wording(python, flags) -> None:
    assert cli.cli_wording(python) == flags


def test_a_usage_error_is_one_line(corpus) -> None:
    r = bpeforge_cli("train", str(corpus), "--vocab-size", "32x")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "bpeforge train: error: argument --vocab-size: '32x' is not a count (e.g. 32000, 32k = 32,000, "
        "64Ki = 65,536) (see bpeforge train --help)"]


@pytest.mark.parametrize("command, flag, meant", [
    (["train", "c.txt"], "--vocab", "--vocab-size or --vocab-sizes"), (["train", "c.txt"], "--out", "--output"),
    (["encode", "-m", "m.json", "c.txt"], "--out", "--output"),
    (["export", "-m", "m.json", "--to", "tiktoken", "-o", "x.tiktoken"], "--forc", "--force"),
])
def test_flags_are_never_abbreviated(corpus, tmp_path, command, flag, meant) -> None:
    """A prefix of a flag is an error that names the whole flag, in every
    command, before anything is read or written."""
    out = tmp_path / "x.json"
    r = bpeforge_cli(*command, flag, *{"--vocab": ["2000"], "--out": [str(out)]}.get(flag, []), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert f"unrecognized arguments: {flag}" in r.stderr and f"did you mean {meant}?" in r.stderr, r.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]


def test_every_parser_refuses_abbreviations() -> None:
    parser = cli.build_parser()
    subparsers = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert subparsers and not parser.allow_abbrev
    assert not [name for name, sub in subparsers[0].choices.items() if sub.allow_abbrev]


# ---- counts like 32k --------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [("32000", 32000), ("32k", 32000), ("32K", 32000), ("1.5M", 1_500_000),
                                         ("64Ki", 65536), ("32_000", 32000), ("0.3k", 300)])
def test_counts_as_people_write_them(text, value) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["32x", "k", "1.2345k", "", "3 2"])
def test_what_is_not_a_count(text) -> None:
    with pytest.raises(ValueError):
        parse_count(text)


def test_cli_vocab_size_with_k(corpus, tmp_path) -> None:
    out = tmp_path / "m.json"
    assert cli.main(["train", str(corpus), "--vocab-size", "0.3k", "-o", str(out), "-q"]) == 0
    assert bpeforge.load(out) == bpeforge.train(corpus, vocab_size=300, progress=False)


@pytest.mark.parametrize("text", ["0.3k", "0.3K", "300", "3_00"])
def test_python_vocab_size_takes_the_cli_forms(corpus, tmp_path, text) -> None:
    """Python takes the counts the CLI takes (one parser for both)."""
    out = tmp_path / "m.json"
    assert cli.main(["train", str(corpus), "--vocab-size", text, "-o", str(out), "-q"]) == 0
    assert bpeforge.train(corpus, vocab_size=text, progress=False) == bpeforge.load(out)
    assert bpeforge.train_from_iterator(TEXTS, vocab_size=text, progress=False) == \
        bpeforge.train_from_iterator(TEXTS, vocab_size=300, progress=False)


@pytest.mark.parametrize("value", ["32x", "1.2345k", "", 1.5, True])
def test_python_vocab_size_refusal_names_the_parameter(value) -> None:
    with pytest.raises(ParameterError, match=r"^vocab_size must be an integer or a count such as \"32k\""):
        bpeforge.TrainOptions(vocab_size=value)


@pytest.mark.parametrize("flags, said", [
    (["--balance-rounds", "30"], "--balance-rounds must be an integer from 0 to 20, got 30"),
    (["--min-word-count", "0"], "--min-word-count must be a positive integer"),
    (["--columns", "0"], "--columns must be column numbers counted from 1"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--vocab-size", "-3"], "--vocab-size must not be negative, got -3"),
    (["--checkpoint-every", "0"], "--checkpoint-every must be a positive integer"),
])
def test_value_rules_checked_by_the_engine_name_the_flags(corpus, tmp_path, capsys, flags, said) -> None:
    assert cli.main(["train", str(corpus), "-o", str(tmp_path / "m.json"), *flags]) == 1
    assert said in capsys.readouterr().err


# ---- checks before counting ---------------------------------------------------------------


def test_byte_vocabulary_below_256_is_refused_before_reading(tmp_path, capsys) -> None:
    # A first line of invalid UTF-8: had counting started, the error would be about it.
    bad = tmp_path / "c.txt"
    bad.write_bytes(b"\xff\xfe\n" + b"hello world\n" * 100)
    assert cli.main(["train", str(bad), "--vocab-size", "200", "--special-token", "<s>", "-o",
                     str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err
    assert "--vocab-size 200 is below" in err and "at least 257" in err and "UTF-8" not in err
    with pytest.raises(ParameterError, match="at least 256"):
        bpeforge.train(bad, vocab_size=255, progress=False)


# ---- one encode summary ---------------------------------------------------------------------


@pytest.mark.parametrize("progress", ["human", "off", "json"])
def test_encode_summary_is_printed_once(corpus, tmp_path, progress) -> None:
    model = tmp_path / "m.json"
    bpeforge.train(corpus, vocab_size=300, progress=False).save(model)
    r = bpeforge_cli("encode", "-m", str(model), str(corpus), "-o", str(tmp_path / "ids.txt"), "--progress", progress)
    assert r.returncode == 0
    summaries = [line for line in r.stderr.replace("\r", "\n").splitlines() if line.startswith("encoded")]
    assert len(summaries) == 1, r.stderr


# ---- Ctrl-C -----------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("checkpoint", [True, False])
def test_interrupt_message_is_on_its_own_line_and_says_how_to_resume(tmp_path, checkpoint) -> None:
    rng = random.Random(5)
    corpus = tmp_path / "words.txt"
    corpus.write_text("".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=40)) + "\n"
                              for _ in range(100_000)))
    out = tmp_path / "m.json"
    argv = [sys.executable, "-m", "bpeforge", "train", str(corpus), "--vocab-size", "5000000", "--min-frequency", "1",
            "--progress", "human", "-o", str(out), "--threads", "2"]
    if checkpoint:
        argv += ["--checkpoint-every", "200"]
    returncode, err = interrupt_while_merging(argv, settle=1.0, timeout=30)
    assert returncode == 130
    message = err[err.index("bpeforge: interrupted"):]
    assert err[err.index("bpeforge: interrupted") - 1] == "\n"  # not glued to the live progress line
    if checkpoint:
        assert out.exists()
        assert f"saved in the checkpoint {out}" in message and f"--resume {out}" in message
    else:
        assert not out.exists()
        assert "nothing was saved" in message and "--checkpoint-every" in message


# ---- == after an export and import that keep every id ---------------------------------------


def test_exported_and_imported_models_compare_equal(tmp_path) -> None:
    pytest.importorskip("sentencepiece")
    byte_level = bpeforge.train_from_iterator(TEXTS, vocab_size=300, special_tokens=["<|endoftext|>"],
                                              progress=False)
    chars = bpeforge.train_from_iterator(TEXTS, vocab_size=120, scheme="chars", pretokenizer="whitespace",
                                         fuse_unk=True, special_tokens=["<s>", "</s>"], progress=False)
    round_trips = {
        "huggingface bytes": (byte_level, lambda t: bpeforge.load(t.to_huggingface(tmp_path / "hf_b"))),
        "tiktoken": (byte_level, lambda t: bpeforge.load(t.to_tiktoken(tmp_path / "b.tiktoken")[0])),
        "huggingface chars": (chars, lambda t: bpeforge.load(t.to_huggingface(tmp_path / "hf_c"))),
        "sentencepiece": (chars, lambda t: bpeforge.load(t.to_sentencepiece(tmp_path / "c.model"))),
    }
    for name, (tok, trip) in round_trips.items():
        back = trip(tok)
        assert back.merge_counts != tok.merge_counts or not tok.merge_counts  # the import has no counts
        assert back == tok and hash(back) == hash(tok), name
        assert back.encode_batch(TEXTS) == tok.encode_batch(TEXTS), name
    # What decides ids still counts: another vocabulary is not equal.
    fewer = bpeforge.train_from_iterator(TEXTS, vocab_size=byte_level.vocab_size - 1,
                                         special_tokens=["<|endoftext|>"], progress=False)
    assert fewer.vocab_size < byte_level.vocab_size and fewer != byte_level


def test_sentencepiece_export_states_every_requirement_at_once(tmp_path) -> None:
    tok = bpeforge.train_from_iterator(TEXTS, vocab_size=300, progress=False)  # bytes, o200k: two misses
    with pytest.raises(ParameterError) as e:
        tok.to_sentencepiece(tmp_path / "x.model")
    msg = str(e.value)
    assert "scheme is 'bytes'" in msg and "pre-tokenizer is o200k" in msg
    assert "chars scheme" in msg and "whitespace or none pre-tokenizer" in msg and "end_of_word_suffix" in msg
    assert 'scheme="chars"' in msg and 'pretokenizer="whitespace"' in msg and "fuse_unk=True" in msg
    for doc in (bpeforge.Tokenizer.to_sentencepiece.__doc__, bpeforge.interop.to_sentencepiece.__doc__):
        assert "chars" in doc and "whitespace" in doc and "none" in doc
    r = subprocess.run([sys.executable, "-m", "bpeforge", "export", "-m", str(_saved(tok, tmp_path)), "--to",
                        "sentencepiece", "-o", str(tmp_path / "x.model")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and '--scheme "chars", --pretokenizer "whitespace" (or "none") and --fuse-unk' in r.stderr
    assert "fuse_unk" not in r.stderr, r.stderr


def _saved(tok: bpeforge.Tokenizer, folder: Path) -> Path:
    tok.save(folder / "m.json")
    return folder / "m.json"
