"""No output ever replaces an input or a file of the user's, and a trained
model is never thrown away: as a new user met it, on the command line and
in Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge
from bpeforge import cli
from bpeforge.errors import OutputError

TEXTS = [f"the quick brown fox {i % 17} jumps over the lazy dog {i % 5}" for i in range(300)]


def bpeforge_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=300, cwd=cwd)


@pytest.fixture()
def corpus(tmp_path) -> Path:
    path = tmp_path / "copy.txt"
    path.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "m.json"
    bpeforge.train_from_iterator(TEXTS, vocab_size=300, special_tokens=["<s>", "</s>", "<pad>"],
                                 progress=False).save(path)
    return path


def _spellings(path: Path) -> list[str]:
    link = path.parent / "link-to-corpus.txt"
    if not link.exists():
        link.symlink_to(path.name)
    return [str(path), f"{path.parent}/./{path.name}", str(link),
            f"{path.parent}/../{path.parent.name}/{path.name}"]


def test_train_output_is_never_the_corpus(corpus) -> None:
    before = corpus.read_bytes()
    for out in _spellings(corpus):
        r = bpeforge_cli("train", str(corpus), "--vocab-size", "300", "-o", out)
        assert r.returncode == 1 and "it is the input" in r.stderr, (out, r.stderr)
        assert corpus.read_bytes() == before
    langs = corpus.with_suffix(".langs")
    langs.write_text("en\n" * len(TEXTS))
    r = bpeforge_cli("train", str(corpus), "--langs", str(langs), "--temperature", "2", "--vocab-size", "300",
                     "-o", str(langs))
    assert r.returncode == 1 and "it is the input" in r.stderr and langs.read_text() == "en\n" * len(TEXTS)


def test_encode_output_is_never_the_input_nor_the_model(corpus, model_file, tmp_path) -> None:
    before = corpus.read_bytes()
    for out in _spellings(corpus):
        r = bpeforge_cli("encode", "-m", str(model_file), str(corpus), "-o", out)
        assert r.returncode == 1 and "it is the input" in r.stderr, (out, r.stderr)
    r = bpeforge_cli("encode", "-m", str(model_file), str(corpus), "-o", str(model_file))
    assert r.returncode == 1 and bpeforge.load(model_file)
    assert corpus.read_bytes() == before
    tok = bpeforge.load(model_file)
    with pytest.raises(OutputError, match="it is the input"):
        tok.encode_file(corpus, _spellings(corpus)[2])
    assert corpus.read_bytes() == before


def test_export_import_and_decode_never_replace_their_input(model_file, tmp_path) -> None:
    r = bpeforge_cli("export", "-m", str(model_file), "--to", "tiktoken", "-o", str(model_file))
    assert r.returncode == 1 and "it is the input" in r.stderr
    tok = bpeforge.load(model_file)
    tok.to_tiktoken(tmp_path / "t.tiktoken")
    r = bpeforge_cli("import", "--from", "tiktoken", str(tmp_path / "t.tiktoken"), "-o", str(tmp_path / "t.tiktoken"))
    assert r.returncode == 1 and "it is the input" in r.stderr


# ---- a trained model is never thrown away ------------------------------------------


def test_train_without_output_saves_under_a_default_name(corpus, tmp_path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    r = bpeforge_cli("train", str(corpus), "--vocab-size", "300", "--progress", "off", cwd=work)
    assert r.returncode == 0, r.stderr
    saved = work / "copy.bpeforge.json"
    assert "saved to copy.bpeforge.json (no --output given" in r.stdout
    assert bpeforge.load(saved) == bpeforge.train(corpus, vocab_size=300, progress=False)
    # A second run never replaces it: refused before reading anything.
    mtime = saved.stat().st_mtime_ns
    r = bpeforge_cli("train", str(corpus), "--vocab-size", "300", cwd=work)
    assert r.returncode == 1 and "already exists" in r.stderr and "--output" in r.stderr
    assert saved.stat().st_mtime_ns == mtime
    # A quiet run still says where the model went when the name was not the user's.
    (work / "quiet").mkdir()
    r = bpeforge_cli("train", str(corpus), "--vocab-size", "300", "-q", cwd=work / "quiet")
    assert r.returncode == 0 and r.stderr.strip() == "saved to copy.bpeforge.json (no --output given)"
    r = bpeforge_cli("train", str(corpus), "--vocab-size", "300", "-q", "-o", str(work / "named.json"), cwd=work)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""


def test_default_name_drops_folders_and_extensions() -> None:
    assert cli.default_model_path("data/corpus.txt.xz") == "corpus.bpeforge.json"
    assert cli.default_model_path("x.jsonl.zst") == "x.bpeforge.json"


def test_the_bare_train_command_still_runs_the_demo(tmp_path) -> None:
    r = bpeforge_cli("train", "--quiet", cwd=tmp_path)
    assert r.returncode == 0 and "bundled sample corpus" in r.stderr
    assert list(tmp_path.iterdir()) == []  # the demo saves nothing


# ---- exports: folders and side files ----------------------------------------------


def test_huggingface_folder_is_created_and_every_file_is_named(model_file, tmp_path) -> None:
    tok = bpeforge.load(model_file)
    written = tok.to_huggingface(tmp_path / "hf_dir/")  # pathlib drops the slash: a name without .json
    assert written == str(tmp_path / "hf_dir" / "tokenizer.json")
    assert tok.to_huggingface(str(tmp_path / "hf_slash") + "/") == str(tmp_path / "hf_slash" / "tokenizer.json")
    for folder in ("hf_dir", "hf_slash"):
        assert sorted(os.listdir(tmp_path / folder)) == ["special_tokens_map.json", "tokenizer.json",
                                                         "tokenizer_config.json"]
    r = bpeforge_cli("export", "-m", str(model_file), "--to", "huggingface", "-o", str(tmp_path / "cli_dir"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cli_dir").is_dir() and bpeforge.load(tmp_path / "cli_dir") == tok
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert str(tmp_path / "cli_dir" / name) in r.stderr
    # A .json name is the file itself; one not called tokenizer.json gets no side files.
    tok.to_huggingface(tmp_path / "alone.json")
    assert not (tmp_path / "tokenizer_config.json").exists()


def test_side_files_of_the_user_are_never_replaced_silently(model_file, tmp_path) -> None:
    tok = bpeforge.load(model_file)
    folder = tmp_path / "hf"
    folder.mkdir()
    mine = {"tokenizer_class": "MyTokenizer", "model_max_length": 512}
    (folder / "tokenizer_config.json").write_text(json.dumps(mine))
    with pytest.raises(OutputError, match="tokenizer_config.json exists.*overwrite=True"):
        tok.to_huggingface(folder)
    assert json.loads((folder / "tokenizer_config.json").read_text()) == mine
    assert not (folder / "tokenizer.json").exists()  # nothing written at all
    r = bpeforge_cli("export", "-m", str(model_file), "--to", "huggingface", "-o", str(folder))
    assert r.returncode == 1 and "--force" in r.stderr and "overwrite=True" not in r.stderr
    assert json.loads((folder / "tokenizer_config.json").read_text()) == mine
    r = bpeforge_cli("export", "-m", str(model_file), "--to", "huggingface", "-o", str(folder), "--force")
    assert r.returncode == 0
    assert json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    tok.to_huggingface(folder)  # its own earlier export is replaced without a word: same content


def test_an_earlier_export_of_another_model_is_replaced(model_file, tmp_path) -> None:
    """Exporting a retrained model where the last one went (the README's quick
    start, run twice) replaces bpeforge's own side files; the same file edited
    by hand is the user's, and is kept."""
    first = bpeforge.load(model_file)
    other = bpeforge.train_from_iterator(TEXTS, vocab_size=280, special_tokens=["<|endoftext|>"], progress=False)
    first.to_huggingface(tmp_path / "tokenizer.json")
    assert json.loads((tmp_path / "special_tokens_map.json").read_text())["eos_token"] == "</s>"
    other.to_huggingface(tmp_path / "tokenizer.json")
    assert json.loads((tmp_path / "special_tokens_map.json").read_text())["eos_token"] == "<|endoftext|>"
    assert bpeforge.load(tmp_path / "tokenizer.json") == other
    edited = json.loads((tmp_path / "tokenizer_config.json").read_text())
    edited["model_max_length"] = 2048
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(edited, indent=2) + "\n")
    with pytest.raises(OutputError, match="tokenizer_config.json exists"):
        first.to_huggingface(tmp_path / "tokenizer.json")
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["model_max_length"] == 2048


def test_a_report_never_replaces_a_folder_holding_its_input(model_file, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from bpeforge.report import build_report, write_directory

    tok = bpeforge.load(model_file)
    out = tmp_path / "rep"
    rep = build_report(tok, TEXTS, sample=0, curve_points=2, curve_lines=20)
    write_directory(rep, out)
    (out / "corpus.txt").write_text("\n".join(TEXTS))
    with pytest.raises(OutputError, match="corpus.txt"):
        write_directory(rep, out)
    assert (out / "corpus.txt").exists()
