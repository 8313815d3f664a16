"""Two names for two things: ``text_field`` / ``lang_field`` name a field of
JSON lines records, ``text_column`` / ``lang_column`` a column of Parquet,
Arrow or datasets input, in every entry point. The old spelling on a
Parquet/Arrow file still works, with a DeprecationWarning naming the new
parameter (a warning line on the command line); a name that means nothing
for the input is a ParameterError naming it."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import bpeforge
from bpeforge import cli
from bpeforge.errors import ParameterError

TEXTS = [f"row {i}: a quick brown fox {i % 11} and the lazy dog" for i in range(300)] + \
        ["Größere Straßen führen über die Brücke.", "敏捷的棕色狐狸跳过了懒狗。"] * 15
LANGS = ["en" if i % 3 else "de" for i in range(len(TEXTS))]
VOCAB = 300


def bpeforge_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("columns")
    out = {"plain": d / "corpus.txt", "langs": d / "corpus.langs", "jsonl": d / "x.jsonl",
           "parquet": d / "x.parquet", "arrow": d / "x.arrow"}
    out["plain"].write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    out["langs"].write_text("".join(t + "\n" for t in LANGS), encoding="utf-8")
    out["jsonl"].write_text("".join(json.dumps({"text": t, "lang": g}, ensure_ascii=False) + "\n"
                                    for t, g in zip(TEXTS, LANGS)), encoding="utf-8")
    table = pa.table({"text": TEXTS, "lang": LANGS})
    pq.write_table(table, out["parquet"], row_group_size=100)
    with pa.ipc.new_file(str(out["arrow"]), table.schema) as w:
        w.write_table(table)
    return out


@pytest.fixture(scope="module")
def plain_model(files) -> bpeforge.Tokenizer:
    return bpeforge.train(files["plain"], vocab_size=VOCAB, progress=False)


@pytest.fixture(scope="module")
def balanced_model(files) -> bpeforge.Tokenizer:
    return bpeforge.train(files["plain"], langs=files["langs"], temperature=3.0, vocab_size=VOCAB, progress=False)


def _no_warning(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return fn(*args, **kw)


def _comparable(tok: bpeforge.Tokenizer) -> tuple:
    return tok.merges, tok.vocab_size


# ---- training -------------------------------------------------------------------


@pytest.mark.parametrize("key", ["parquet", "arrow"])
def test_train_reads_a_column_by_text_column(files, plain_model, key) -> None:
    tok = _no_warning(bpeforge.train, files[key], text_column="text", vocab_size=VOCAB, progress=False)
    assert _comparable(tok) == _comparable(plain_model)


def test_train_balances_by_lang_column(files, balanced_model) -> None:
    tok = _no_warning(bpeforge.train, files["parquet"], text_column="text", lang_column="lang",
                      temperature=3.0, vocab_size=VOCAB, progress=False)
    assert _comparable(tok) == _comparable(balanced_model)
    assert tok.metadata["language_balance"]["languages"].keys() == {"en", "de"}


@pytest.mark.parametrize("key", ["parquet", "arrow"])
def test_text_field_on_a_column_file_still_works_with_a_warning(files, plain_model, key) -> None:
    with pytest.warns(DeprecationWarning, match=r"text_column=") as caught:
        tok = bpeforge.train(files[key], text_field="text", vocab_size=VOCAB, progress=False)
    assert _comparable(tok) == _comparable(plain_model)
    assert len([w for w in caught if issubclass(w.category, DeprecationWarning)]) == 1
    assert caught[0].filename == __file__  # points at the caller's line


def test_lang_field_on_a_column_file_still_works_with_a_warning(files, balanced_model) -> None:
    with pytest.warns(DeprecationWarning, match=r"lang_column="):
        tok = bpeforge.train(files["parquet"], text_column="text", lang_field="lang", temperature=3.0,
                             vocab_size=VOCAB, progress=False)
    assert _comparable(tok) == _comparable(balanced_model)


def test_json_lines_take_text_field_without_a_warning(files, plain_model, balanced_model) -> None:
    assert _comparable(_no_warning(bpeforge.train, files["jsonl"], text_field="text", vocab_size=VOCAB,
                                   progress=False)) == _comparable(plain_model)
    assert _comparable(_no_warning(bpeforge.train, files["jsonl"], text_field="text", lang_field="lang",
                                   temperature=3.0, vocab_size=VOCAB, progress=False)) == \
        _comparable(balanced_model)


@pytest.mark.parametrize("key, given, named", [
    ("jsonl", dict(text_column="text"), "text_column"),
    ("plain", dict(text_column="text"), "text_column"),
    ("jsonl", dict(text_field="text", lang_column="lang", temperature=2.0), "lang_column"),
    ("plain", dict(lang_column="lang", temperature=2.0), "lang_column"),
])
def test_a_column_name_for_a_line_file_is_refused(files, key, given, named) -> None:
    with pytest.raises(ParameterError, match=rf"{named}=") as e:
        bpeforge.train(files[key], vocab_size=VOCAB, progress=False, **given)
    assert str(files[key]) in str(e.value)


def test_both_names_for_one_column_are_refused(files) -> None:
    with pytest.raises(ParameterError, match=r"text_field=.*text_column=|text_column=.*text_field="):
        bpeforge.train(files["parquet"], text_field="text", text_column="text", vocab_size=VOCAB, progress=False)


def test_a_column_file_without_a_column_names_text_column(files) -> None:
    with pytest.raises(ParameterError, match=r"give text_column="):
        bpeforge.train(files["parquet"], vocab_size=VOCAB, progress=False)


def test_text_column_is_for_files_and_datasets_only() -> None:
    with pytest.raises(TypeError, match="text_column"):
        bpeforge.train_from_iterator(TEXTS, text_column="text", vocab_size=VOCAB, progress=False)  # type: ignore[call-arg]


def test_train_from_dataset_takes_its_columns(plain_model) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"body": TEXTS})
    tok = _no_warning(bpeforge.train_from_dataset, ds, text_column="body", vocab_size=VOCAB, progress=False)
    assert _comparable(tok) == _comparable(plain_model)
    with pytest.raises(ParameterError, match="text_column="):
        bpeforge.train_from_dataset(ds, text_field="body", vocab_size=VOCAB, progress=False)


# ---- encoding and the report ------------------------------------------------------


def test_encode_file_reads_a_column_by_text_column(files, plain_model, tmp_path) -> None:
    plain_model.encode_file(files["plain"], tmp_path / "plain.txt")
    _no_warning(plain_model.encode_file, files["parquet"], tmp_path / "new.txt", text_column="text")
    with pytest.warns(DeprecationWarning, match="text_column="):
        plain_model.encode_file(files["arrow"], tmp_path / "old.txt", text_field="text")
    expected = (tmp_path / "plain.txt").read_text()
    assert (tmp_path / "new.txt").read_text() == (tmp_path / "old.txt").read_text() == expected
    assert plain_model.decode([int(i) for i in expected.split("\n")[0].split()]) == TEXTS[0]
    with pytest.raises(ParameterError, match="text_column=") as e:
        plain_model.encode_file(files["jsonl"], tmp_path / "x.txt", text_column="text")
    assert str(files["jsonl"]) in str(e.value)
    assert not (tmp_path / "x.txt").exists()


def test_report_reads_a_column_by_text_column(files, plain_model) -> None:
    pytest.importorskip("matplotlib")
    from bpeforge.report import build_report

    kw = dict(sample=0, curve_points=2, curve_lines=50)
    plain = build_report(plain_model, str(files["plain"]), **kw)
    rep = _no_warning(build_report, plain_model, str(files["parquet"]), text_column="text", **kw)
    assert rep.models[0]["bytes_per_token"] == plain.models[0]["bytes_per_token"]
    with pytest.warns(DeprecationWarning, match="text_column="):
        old = build_report(plain_model, str(files["parquet"]), text_field="text", **kw)
    assert old.models[0]["bytes_per_token"] == plain.models[0]["bytes_per_token"]
    with pytest.raises(ParameterError, match="text_column="):
        build_report(plain_model, str(files["jsonl"]), text_column="text", **kw)


def test_distributed_encode_takes_text_column(files, plain_model, tmp_path, ray_instance) -> None:
    from bpeforge import distributed

    plain_model.encode_file(files["parquet"], tmp_path / "local.npy", format="npy", text_column="text")
    distributed.encode(plain_model, [files["parquet"]], tmp_path / "shards", format="npy", text_column="text")
    import numpy as np

    shards = sorted(p for p in (tmp_path / "shards").glob("*.npy") if not p.name.endswith(".offsets.npy"))
    got = np.concatenate([np.load(p) for p in shards])
    assert got.tolist() == np.load(tmp_path / "local.npy").tolist()
    with pytest.raises(ParameterError, match="text_column="):
        distributed.encode(plain_model, [files["jsonl"]], tmp_path / "bad", text_column="text")


# ---- the command line -------------------------------------------------------------


def test_cli_train_reads_a_column_by_text_column(files, plain_model, tmp_path) -> None:
    out = tmp_path / "m.json"
    r = bpeforge_cli("train", str(files["parquet"]), "--text-column", "text", "--vocab-size", str(VOCAB),
                     "-o", str(out), "-q")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert _comparable(bpeforge.load(out)) == _comparable(plain_model)


def test_cli_text_field_on_a_column_file_warns_on_stderr(files, plain_model, tmp_path) -> None:
    out = tmp_path / "m.json"
    r = bpeforge_cli("train", str(files["parquet"]), "--text-field", "text", "--vocab-size", str(VOCAB),
                     "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    warned = [line for line in r.stderr.splitlines() if line.startswith("bpeforge: warning:")]
    assert len(warned) == 1 and "--text-column" in warned[0] and "text_column=" not in warned[0], r.stderr
    assert _comparable(bpeforge.load(out)) == _comparable(plain_model)


def test_cli_text_column_on_a_line_file_is_an_error_naming_the_flag(files, plain_model, tmp_path) -> None:
    r = bpeforge_cli("train", str(files["jsonl"]), "--text-column", "text", "--vocab-size", str(VOCAB),
                     "-o", str(tmp_path / "m.json"))
    assert r.returncode == 1 and "--text-column" in r.stderr and "text_column=" not in r.stderr, r.stderr
    plain_model.save(tmp_path / "model.json")
    r = bpeforge_cli("encode", "-m", str(tmp_path / "model.json"), str(files["parquet"]), "--text-column", "text",
                     "-o", str(tmp_path / "ids.txt"))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    plain_model.encode_file(files["plain"], tmp_path / "plain.txt")
    assert (tmp_path / "ids.txt").read_text() == (tmp_path / "plain.txt").read_text()
    r = bpeforge_cli("encode", "-m", str(tmp_path / "model.json"), str(files["jsonl"]), "--text-column", "text",
                     "-o", str(tmp_path / "bad.txt"))
    assert r.returncode == 1 and "--text-column" in r.stderr, r.stderr


def test_cli_report_reads_a_column_by_text_column(files, plain_model, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    plain_model.save(tmp_path / "model.json")
    out = tmp_path / "rep"
    r = bpeforge_cli("report", "-m", str(tmp_path / "model.json"), "-i", str(files["parquet"]), "--text-column",
                     "text", "-o", str(out), "--sample", "0", "--curve-points", "2", "--curve-lines", "50")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert json.loads((out / "report.json").read_text())["corpus"]["sampled_lines"] == len(TEXTS)


def test_cli_train_lang_column_reaches_the_run(files, balanced_model, tmp_path) -> None:
    out = tmp_path / "m.json"
    assert cli.main(["train", str(files["parquet"]), "--text-column", "text", "--lang-column", "lang",
                     "--temperature", "3", "--vocab-size", str(VOCAB), "-o", str(out), "-q"]) == 0
    assert _comparable(bpeforge.load(out)) == _comparable(balanced_model)


def test_a_column_run_checks_its_null_row_rule(files) -> None:
    with pytest.raises(ParameterError, match=r"on_bad_record must be .*'ignore'"):
        bpeforge.train(files["parquet"], text_column="text", on_bad_record="ignore", vocab_size=VOCAB,
                       progress=False)


def test_counting_names_what_it_cannot_read(files, tmp_path) -> None:
    # A counts file is counted by the engine from line files: a column name,
    # or a Parquet file, is refused before any counting, never read as text.
    with pytest.raises(ParameterError, match="text_column="):
        bpeforge.count(files["plain"], tmp_path / "a.counts", text_column="text", progress=False)
    with pytest.raises(ParameterError, match=r"x\.parquet.*Parquet"):
        bpeforge.count(files["parquet"], tmp_path / "b.counts", text_column="text", progress=False)
    r = bpeforge_cli("count", str(files["parquet"]), "--text-column", "text", "-o", str(tmp_path / "c.counts"))
    assert r.returncode == 1 and "x.parquet" in r.stderr and "--text-column" in r.stderr, r.stderr
    assert not any(tmp_path.iterdir())
    header = bpeforge.count(files["jsonl"], tmp_path / "d.counts", text_field="text", progress=False)
    assert header["options"]["text_field"] == "text"


def test_distributed_train_takes_the_columns_and_the_old_spelling(files, balanced_model, ray_instance) -> None:
    from bpeforge import distributed

    kw = dict(temperature=3.0, vocab_size=VOCAB, shard_bytes=2_000, progress=False)
    new = _no_warning(distributed.train, [files["parquet"]], text_column="text", lang_column="lang", **kw)
    with pytest.warns(DeprecationWarning) as caught:
        old = distributed.train([files["parquet"]], text_field="text", lang_field="lang", **kw)
    assert sorted("text_column=" in str(w.message) for w in caught) == [False, True]
    assert sorted("lang_column=" in str(w.message) for w in caught) == [False, True]
    assert _comparable(new) == _comparable(old) == _comparable(balanced_model)
    with pytest.raises(ParameterError, match="lang_column="):
        distributed.train([files["jsonl"]], text_field="text", lang_column="lang", **kw)
