"""The one table of other libraries' model formats (``bpeforge.interop._formats``):
``load``, ``bpeforge export`` / ``import`` and the report all read it, so a
format is recognised, imported, exported and refused the same way everywhere.
Checked with the real libraries' files written by the real exporters."""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path

import pytest
import sentencepiece as spm
import tiktoken
import tokenizers

import bpeforge
from bpeforge import cli
from bpeforge.errors import ModelFormatError, ParameterError
from bpeforge.interop import _formats
from bpeforge.report import models as report_models

TEXTS = [line for line in bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()[:3000] if line]
SAMPLE = TEXTS[:200]


@pytest.fixture(scope="module")
def bytes_model() -> bpeforge.Tokenizer:
    return bpeforge.train_from_iterator(TEXTS, vocab_size=600, pretokenizer="gpt2", special_tokens=["<|endoftext|>"],
                                        progress=False)


@pytest.fixture(scope="module")
def chars_model() -> bpeforge.Tokenizer:
    return bpeforge.train_from_iterator(TEXTS, vocab_size=3000, scheme="chars", pretokenizer="whitespace",
                                        fuse_unk=True, special_tokens=["<unk>"], unk_token="<unk>", progress=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory, bytes_model, chars_model) -> dict[str, Path]:
    """One file (or folder) of each kind, written by the exporters."""
    d = tmp_path_factory.mktemp("formats")
    bytes_model.save(d / "model.json")
    bytes_model.save(d / "model.json.gz")
    bytes_model.to_huggingface(d / "hf")
    bytes_model.to_huggingface(d / "alone.json")
    bytes_model.to_tiktoken(d / "m.tiktoken")
    with open(d / "m.tiktoken", "rb") as src, gzip.open(d / "m.tiktoken.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copy(d / "m.tiktoken.json", d / "m.tiktoken.gz.json")
    shutil.copy(d / "m.tiktoken", d / "ranks.txt")  # no suffix: a rank file by its first line
    chars_model.to_sentencepiece(d / "c.model")
    (d / "empty").mkdir()
    return {"bpeforge": d / "model.json", "bpeforge.gz": d / "model.json.gz", "hf folder": d / "hf",
            "hf file": d / "hf" / "tokenizer.json", "hf alone": d / "alone.json", "tiktoken": d / "m.tiktoken",
            "tiktoken.gz": d / "m.tiktoken.gz", "rank file": d / "ranks.txt", "sentencepiece": d / "c.model",
            "folder": d / "empty", "missing": d / "nothing.json", "missing.gz": d / "nothing.tiktoken.gz"}


@pytest.mark.parametrize("kind, expected", [
    ("bpeforge", None), ("bpeforge.gz", None), ("hf folder", "huggingface"), ("hf file", "huggingface"),
    ("hf alone", "huggingface"), ("tiktoken", "tiktoken"), ("tiktoken.gz", "tiktoken"), ("rank file", "tiktoken"),
    ("sentencepiece", "sentencepiece"), ("folder", None), ("missing", None), ("missing.gz", "tiktoken"),
])
def test_each_file_is_recognised(files, kind, expected) -> None:
    found = _formats.sniff(str(files[kind]))
    assert (found.name if found else None) == expected


def test_the_real_libraries_read_what_the_table_recognises(files, bytes_model, chars_model) -> None:
    # The files above are what each library reads (so the sniffing is tested on real files).
    hf = tokenizers.Tokenizer.from_file(str(files["hf file"]))
    assert [e.ids for e in hf.encode_batch(SAMPLE)] == bytes_model.encode_batch(SAMPLE)
    sp = spm.SentencePieceProcessor(model_file=str(files["sentencepiece"]))
    assert sp.encode(SAMPLE) == chars_model.encode_batch(SAMPLE)
    enc = bpeforge.interop.tiktoken_encoding(bytes_model)
    assert isinstance(enc, tiktoken.Encoding) and enc.encode_ordinary_batch(SAMPLE) == bytes_model.encode_batch(SAMPLE)


@pytest.mark.parametrize("kind", ["bpeforge", "hf folder", "hf alone", "tiktoken", "tiktoken.gz", "sentencepiece"])
def test_load_and_the_report_read_every_format_alike(files, bytes_model, chars_model, kind) -> None:
    tok = bpeforge.load(files[kind])
    same, info = report_models.load_model(files[kind])
    expected = chars_model if kind == "sentencepiece" else bytes_model
    for t in (tok, same):
        assert t.encode_batch(SAMPLE) == expected.encode_batch(SAMPLE)
        assert [t.decode(ids) for ids in t.encode_batch(SAMPLE)] == SAMPLE
    found = _formats.sniff(str(files[kind]))
    assert info["format"] == (found.name if found else "bpeforge")


@pytest.mark.parametrize("fmt", [f.name for f in _formats.exportable()])
def test_an_export_writes_exactly_its_listed_outputs(fmt, tmp_path, bytes_model, chars_model) -> None:
    # The outputs are known before writing (no output may replace an input).
    row = _formats.by_name(fmt)
    assert row.export is not None and row.outputs is not None
    model = tmp_path / "model.json"
    (chars_model if fmt == "sentencepiece" else bytes_model).save(model)
    out = tmp_path / "out" / {"huggingface": "hf", "tiktoken": "m.tiktoken", "sentencepiece": "m.model"}[fmt]
    out.parent.mkdir()
    listed = row.outputs(str(out))
    assert cli.main(["export", "-m", str(model), "--to", fmt, "-o", str(out), "-q"]) == 0
    written = sorted(str(p) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert written == sorted(listed)
    back = bpeforge.load(listed[0])
    assert back.encode_batch(SAMPLE) == bpeforge.load(model).encode_batch(SAMPLE)


def _plain_export(tok, path, **options) -> list[str]:
    # A format that only exports: one token per line, in id order.
    Path(path).write_text("\n".join(t.hex() for t in tok.tokens()) + "\n", encoding="utf-8")
    return [str(path)]


PLAIN = _formats.ModelFormat(
    name="plain", title="plain token list", source="FILE.tokens", output="FILE.tokens",
    sniff=lambda path, head: path.endswith(".tokens"), export=_plain_export, outputs=lambda path: [path])


@pytest.fixture
def with_plain(monkeypatch):
    monkeypatch.setattr(_formats, "FORMATS", (*_formats.FORMATS, PLAIN))


def test_a_new_export_format_is_one_row(with_plain, tmp_path, bytes_model, capsys) -> None:
    model = tmp_path / "m.json"
    bytes_model.save(model)
    assert cli.main(["export", "-m", str(model), "--to", "plain", "-o", str(tmp_path / "m.tokens")]) == 0
    lines = (tmp_path / "m.tokens").read_text(encoding="utf-8").split()
    assert [bytes.fromhex(x) for x in lines] == bytes_model.tokens()
    assert "exported" in capsys.readouterr().err


def test_an_export_only_format_is_never_imported(with_plain, tmp_path, bytes_model, capsys) -> None:
    # Not offered by `import --from`, and refused, naming it, where asked for
    # (never handed to another format's importer).
    model = tmp_path / "m.json"
    bytes_model.save(model)
    assert cli.main(["export", "-m", str(model), "--to", "plain", "-o", str(tmp_path / "m.tokens"), "-q"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["import", "--from", "plain", str(tmp_path / "m.tokens"), "-o", str(tmp_path / "back.json")])
    assert "invalid choice: 'plain'" in capsys.readouterr().err
    args = argparse.Namespace(source_format="plain", input=str(tmp_path / "m.tokens"), output=str(tmp_path / "b.json"),
                              pattern=None, special_token=None, ignore_normalizer=False, quiet=True)
    with pytest.raises(ParameterError, match="writes plain files but cannot import them; it imports huggingface"):
        cli.interop.cmd_import(args)
    assert not (tmp_path / "b.json").exists()
    with pytest.raises(ModelFormatError, match=r"m\.tokens is a plain token list file, which bpeforge writes but"):
        bpeforge.load(tmp_path / "m.tokens")
    with pytest.raises(ParameterError, match="no importer for plain models"):
        report_models.load_model(tmp_path / "m.tokens")


def test_a_tiktoken_file_without_its_pattern_says_how_to_load_it(files, tmp_path) -> None:
    ranks = tmp_path / "alone.tiktoken"
    shutil.copy(files["tiktoken"], ranks)
    with pytest.raises(ModelFormatError, match=r"alone\.tiktoken\.json is missing.*--pattern P"):
        bpeforge.load(ranks)
    tok = bpeforge.from_tiktoken(ranks, pattern="gpt2")
    assert tok.vocab_size > 256


@pytest.mark.parametrize("argv, flag, takers", [
    (["--from", "huggingface", "--pattern", "gpt2"], "--pattern", "--from tiktoken"),
    (["--from", "sentencepiece", "--special-token", "<s>=0"], "--special-token", "--from tiktoken"),
    (["--from", "tiktoken", "--ignore-normalizer"], "--ignore-normalizer", "--from huggingface or --from sentencepiece"),
])
def test_an_import_flag_the_format_does_not_take_is_refused(files, tmp_path, capsys, argv, flag, takers) -> None:
    # Never ignored: the flag, the formats that take it, and nothing written.
    source = {"huggingface": "hf folder", "sentencepiece": "sentencepiece", "tiktoken": "tiktoken"}[argv[1]]
    out = tmp_path / "out.json"
    assert cli.main(["import", *argv, str(files[source]), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{flag}: only for {takers}" in err and not out.exists()


def test_the_command_line_lists_the_tables_formats() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    to = next(a for a in sub.choices["export"]._actions if a.dest == "to")
    source = next(a for a in sub.choices["import"]._actions if a.dest == "source_format")
    assert list(to.choices) == [f.name for f in _formats.exportable()] == ["huggingface", "tiktoken", "sentencepiece"]
    assert list(source.choices) == [f.name for f in _formats.importable()]
    output = next(a for a in sub.choices["export"]._actions if a.dest == "output")
    assert all(f"{f.name}: {f.output}" in output.help for f in _formats.exportable())


def test_the_import_records_the_tables_name(files) -> None:
    for kind in ("hf folder", "tiktoken", "sentencepiece"):
        tok = bpeforge.load(files[kind])
        assert tok.metadata["import"]["format"] == _formats.sniff(str(files[kind])).name
    assert json.loads(bpeforge.load(files["bpeforge"]).to_json()).get("metadata", {}).get("import") is None
