"""bpeforge.distributed on a local Ray instance that this module starts:
training and encoding across shards give exactly what the local path gives."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bpeforge
from bpeforge import cli
from bpeforge.options import TrainOptions

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'bpeforge[ray]' to test bpeforge.distributed")
from conftest import SLICE_FILE, SLICE_LANGS_FILE, shared_corpus  # noqa: E402
from bpeforge import distributed  # noqa: E402  (after the skip: needs nothing from Ray to import, but is only tested with it)

SPECIAL = "<|endoftext|>"


# Every test here runs on conftest's local Ray.
pytestmark = pytest.mark.usefixtures("ray_instance")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Plain files (one large, with CRLF, empty lines, a line longer than the
    small shards and no final newline), a small one, a gzipped one, and one
    with invalid UTF-8 (bytes scheme only)."""
    d = tmp_path_factory.mktemp("corpus")
    lines = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()
    big = d / "big.txt"
    body = "\n".join(lines[:900]) + "\n"
    body += "carriage\r\nreturns\r\n\n\n" + ("long " * 4000) + "\n" + SPECIAL + " after a special token\n"
    body += "\n".join(lines[900:1200]) + "\nno final newline"
    big.write_bytes(body.encode("utf-8"))
    small = d / "small.txt"
    small.write_text("\n".join(lines[1200:1230]) + "\n", encoding="utf-8")
    gz = d / "part.txt.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines[1230:]) + "\n")
    invalid = d / "invalid.txt"
    invalid.write_bytes(("\n".join(lines[:200]) + "\n").encode() + b"bad \xff\xfe bytes here\n"
                        + ("\n".join(lines[200:400]) + "\n").encode())
    return {"big": big, "small": small, "gz": gz, "invalid": invalid}


def comparable(tok: bpeforge.Tokenizer) -> dict:
    """The whole model file except measurements: the wall-clock timings (also
    of each parity round) and the memory of the count table (hash-table
    capacity depends on how the table was filled, not on its contents)."""
    model = json.loads(tok.to_json())
    model["metadata"].pop("timings")
    model["metadata"].pop("word_count_table", None)
    for r in model["metadata"].get("language_balance", {}).get("rounds", []):
        r.pop("seconds")
    superbpe = model["metadata"].get("superbpe", {})
    for k in [k for k in superbpe if k.endswith("seconds") or k.endswith("breakdown")]:
        superbpe.pop(k)
    return model


SCHEMES = {
    "bytes": dict(scheme="bytes", pretokenizer="gpt2", special_tokens=[SPECIAL]),
    "chars": dict(scheme="chars", pretokenizer="whitespace", character_coverage=0.99),
}


# ---- shards -------------------------------------------------------------------


def test_plan_mixes_files_and_tiling_byte_ranges(corpus):
    paths = [str(corpus["big"]), str(corpus["small"]), str(corpus["gz"])]
    size = corpus["big"].stat().st_size
    group = corpus["small"].stat().st_size + corpus["gz"].stat().st_size
    assert size > 3 * group
    shards = distributed.plan_shards(paths, group, group=True)
    ranges = [s["byte_range"] for s in shards if s["byte_range"] is not None]
    assert len(ranges) == -(-size // group)
    assert ranges[0][0] == 0 and ranges[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    whole = [s["paths"] for s in shards if s["byte_range"] is None]
    assert whole == [[str(corpus["small"]), str(corpus["gz"])]]  # grouped, and the .gz is never cut
    # Compressed files stay whole however small the shards; no grouping when asked not to.
    assert distributed.plan_shards([str(corpus["gz"])], 10) == [
        {"paths": [str(corpus["gz"])], "byte_range": None, "bytes": corpus["gz"].stat().st_size}]
    assert len(distributed.plan_shards(paths[1:], 1 << 30, group=False)) == 2


# ---- training -------------------------------------------------------------------


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("shard_bytes", [7_000, 50_000, 1 << 26])
def test_train_equals_local(corpus, scheme, shard_bytes):
    paths = [corpus["big"], corpus["small"], corpus["gz"]]
    kw = dict(vocab_size=2000 if scheme == "chars" else 900, progress=False, **SCHEMES[scheme])
    local = bpeforge.train(paths, **kw)
    dist = distributed.train(paths, shard_bytes=shard_bytes, **kw)
    assert comparable(dist) == comparable(local)
    assert dist.metadata["inputs"] == [str(p) for p in paths]
    assert len(dist.merges) > 300
    timings = dist.metadata["timings"]
    assert timings["count_shards"] == len(distributed.plan_shards([str(p) for p in paths], shard_bytes, group=True))
    assert timings["count_shards"] > (3 if shard_bytes < 10_000 else 0)
    assert timings["count_seconds"] >= timings["count_sum_seconds"]


def test_train_invalid_utf8_bytes_scheme_cut_anywhere(corpus):
    kw = dict(vocab_size=700, progress=False)
    local = bpeforge.train([corpus["invalid"]], **kw)
    for shard_bytes in (997, 5_000):
        assert comparable(distributed.train([corpus["invalid"]], shard_bytes=shard_bytes, **kw)) == comparable(local)


@pytest.mark.parametrize("extra", [
    dict(min_word_count=2, max_token_length=5, min_frequency=3),
    dict(scheme="chars", pretokenizer="whitespace", end_of_word_suffix="</w>", vocab_size=3000, character_coverage=0.99),
    dict(documents=True),
    dict(separator=". "),
], ids=["pruned", "eow-suffix", "documents", "separator"])
def test_train_options_equal_local(corpus, extra):
    paths = [corpus["big"], corpus["small"], corpus["gz"]]
    kw = dict(dict(vocab_size=700, progress=False), **extra)
    assert comparable(distributed.train(paths, shard_bytes=9_000, **kw)) == comparable(bpeforge.train(paths, **kw))


def test_train_resume_equals_local(corpus, tmp_path):
    paths = [corpus["big"], corpus["gz"]]
    first = bpeforge.train(paths, vocab_size=500, progress=False, **SCHEMES["bytes"])
    kw = dict(vocab_size=800, progress=False, resume_from=first, **SCHEMES["bytes"])
    assert comparable(distributed.train(paths, shard_bytes=8_000, **kw)) == comparable(bpeforge.train(paths, **kw))


def test_train_driver_writes_checkpoint_and_progress_csv(corpus, tmp_path):
    kw = dict(vocab_size=600, progress=False)
    local = bpeforge.train([corpus["big"]], progress_csv=tmp_path / "local.csv", **kw)
    dist = distributed.train([corpus["big"]], shard_bytes=20_000, progress_csv=tmp_path / "dist.csv",
                             checkpoint_path=tmp_path / "ckpt.json", checkpoint_every=100, **kw)
    assert comparable(dist) == comparable(local)

    def rows(name):
        return [line.split(",")[:2] for line in (tmp_path / name).read_text().splitlines()]

    assert rows("dist.csv") == rows("local.csv") and len(rows("dist.csv")) > 100
    assert bpeforge.load(tmp_path / "ckpt.json").merges == dist.merges[:len(bpeforge.load(tmp_path / "ckpt.json").merges)]


def test_train_progress_reports_shards(corpus, capfd):
    distributed.train([corpus["big"]], vocab_size=300, shard_bytes=30_000, progress="json")
    events = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")]
    final = [e for e in events if e["phase"] == "shards" and e["finished"]]
    assert final and final[-1]["done"] == final[-1]["total"] > 1 and final[-1]["task"] == "counting"
    assert any(e["phase"] == "merging" and e["finished"] for e in events)


def test_progress_forms_are_a_local_runs(corpus, tmp_path):
    """A callback gets the shards as events (then the merge loop's), and a
    stream that is not fd 2 gets the printer's human lines: the same forms
    and the same printer as a local run."""
    events = []
    distributed.train([corpus["big"]], vocab_size=300, shard_bytes=30_000, progress=events.append)
    shards = [e for e in events if e.phase == "shards"]
    assert shards[-1].finished and shards[-1].done == shards[-1].total > 1 and shards[-1].unit == "shards"
    assert shards[-1].info["task"] == "counting" and shards[-1].info["bytes_done"] == shards[-1].info["bytes_total"]
    assert [e.done for e in shards] == sorted(e.done for e in shards)
    assert any(e.phase == "merging" and e.finished for e in events)
    out = io.StringIO()
    with contextlib.redirect_stderr(out):
        model = bpeforge.train([corpus["small"]], vocab_size=300, progress=False)
        distributed.encode(model, [corpus["big"]], tmp_path / "ids", shard_bytes=30_000, progress="human")
    assert re.search(r"encoding on Ray: (\d+)/\1 shards, [\d.]+/[\d.]+ MB in [\d.]+s\n", out.getvalue()), out.getvalue()
    with pytest.raises(bpeforge.ParameterError, match="'auto', 'human', 'json', 'off'"):
        distributed.train([corpus["small"]], vocab_size=300, progress="loud")


def test_missing_file_raises_input_error_naming_it(corpus, tmp_path):
    missing = tmp_path / "no-such-corpus.txt"
    with pytest.raises(bpeforge.InputError, match="no-such-corpus.txt"):
        distributed.train([corpus["small"], missing], vocab_size=300, progress=False)


def test_chars_invalid_utf8_error_names_file(corpus):
    kw = dict(vocab_size=300, progress=False, scheme="chars")
    with pytest.raises(bpeforge.InputError) as local:
        bpeforge.train([corpus["invalid"]], **kw)
    with pytest.raises(bpeforge.InputError, match="invalid.txt.*invalid UTF-8") as dist:
        distributed.train([corpus["invalid"]], shard_bytes=5_000, **kw)
    assert type(dist.value) is type(local.value)


def test_bad_settings_fail_before_any_task(corpus):
    with pytest.raises(bpeforge.ParameterError, match="shard_bytes"):
        distributed.train([corpus["small"]], shard_bytes=0, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="vocab_size"):
        distributed.train([corpus["small"]], vocab_size=0, progress=False)
    # The engine's own cross-option checks, on the driver.
    with pytest.raises(bpeforge.ParameterError, match="superbpe_transition 600 must be below vocab_size"):
        distributed.train([corpus["small"]], superbpe_transition=600, vocab_size=500, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="temperature needs langs"):
        distributed.train([corpus["small"]], temperature=3.0, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="file_languages: 1 tag"):
        distributed.train([corpus["small"], corpus["big"]], file_languages=["en"], temperature=3.0, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="format"):
        distributed.encode(bpeforge.train([corpus["small"]], vocab_size=300, progress=False),
                           [corpus["small"]], "out", format="txt")


# ---- every option on the real corpus: balancing and SuperBPE ---------------------
# Real multilingual text, decompressed so that it is cut into byte ranges
# (several per worker), with its language file read compressed by the
# workers: the shipped 25k-line sample in the normal suite, all of multi-200k
# with ``pytest -m slow``.

#: corpus -> (text, language file, shard bytes giving about 7 byte ranges)
REAL_CORPORA = {
    "sample": lambda: (SLICE_FILE, SLICE_LANGS_FILE, 512 << 10),  # 3.6 MB
    "multi-200k": lambda: (shared_corpus("multi-200k.txt.xz"), shared_corpus("multi-200k.langs.txt.xz"),
                           4 << 20),  # 28 MB
}
_plain_copies: dict[str, Path] = {}


def _real_corpus(name: str, tmp_path_factory) -> tuple[Path, Path, int]:
    import lzma

    text, langs, shard_bytes = REAL_CORPORA[name]()
    if name not in _plain_copies:
        plain = tmp_path_factory.mktemp("real") / f"{name}.txt"
        with lzma.open(text) as f, open(plain, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        _plain_copies[name] = plain
    return _plain_copies[name], langs, shard_bytes


MULTI_RUNS = {
    "plain": dict(vocab_size=3000),
    "temperature": dict(vocab_size=3000, temperature=3.0),
    "parity": dict(vocab_size=2000, max_premium=1.2, balance_rounds=2),
    "superbpe": dict(vocab_size=3000, superbpe_transition=2000),
}


@pytest.mark.parametrize("corpus_name", ["sample", pytest.param("multi-200k", marks=pytest.mark.slow)])
@pytest.mark.parametrize("run", sorted(MULTI_RUNS))
def test_real_corpus_on_ray_equals_local(tmp_path_factory, corpus_name, run):
    text, langs, shard_bytes = _real_corpus(corpus_name, tmp_path_factory)
    kw = dict(MULTI_RUNS[run], progress=False)
    if run in ("temperature", "parity"):
        kw["langs"] = [langs]
    local = bpeforge.train([text], **kw)
    dist = distributed.train([text], shard_bytes=shard_bytes, **kw)
    assert dist.metadata["timings"]["count_shards"] >= 6
    assert comparable(dist) == comparable(local)
    if run == "superbpe":
        assert dist.metadata["superbpe"]["stage2_units"] > 0
    if "langs" in kw:
        assert len(dist.metadata["language_balance"]["languages"]) > 20


def test_balanced_grouped_and_split_files_on_ray_equal_local(corpus, tmp_path):
    """Language files per input, with inputs both grouped into one shard and
    cut into ranges; a tag per input file (file_languages); SuperBPE with
    temperature balancing (weighted stage-2 units); parity balancing."""
    paths = [corpus["big"], corpus["small"], corpus["gz"]]
    lang_files = []
    for i, p in enumerate(paths):
        opener = gzip.open if str(p).endswith(".gz") else open
        with opener(p, "rb") as f:
            data = f.read()
        n = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        lang_files.append(tmp_path / f"{i}.langs")
        lang_files[-1].write_text("".join(("xx\n" if k % 7 == 0 else f"l{i}\n") for k in range(n)))
    for balance in (dict(langs=lang_files), dict(file_languages=["en", "de", "en"]),
                    dict(langs=lang_files, superbpe_transition=600), dict(langs=lang_files, max_premium=1.1)):
        kw = dict(vocab_size=700, temperature=2.0, progress=False, **balance)
        local = bpeforge.train(paths, **kw)
        assert comparable(distributed.train(paths, shard_bytes=9_000, **kw)) == comparable(local)


def test_a_short_language_file_is_named_on_ray(corpus, tmp_path):
    short = tmp_path / "short.langs"
    short.write_text("en\n" * 100)
    with pytest.raises(bpeforge.InputError, match="short.langs has only"):
        distributed.train([corpus["big"]], langs=[short], temperature=2.0, shard_bytes=9_000, progress=False)


# ---- structured inputs: JSON lines with lang_field, Parquet and Arrow files -------


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, Path]:
    """The sample corpus as tagged records: a JSON-lines file (cut into byte
    ranges by small shards), two Parquet files of many row groups (one with
    large_string text, a bad row in the second) and an Arrow IPC file, each
    text with a language tag in a field or column."""
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed: pip install 'bpeforge[arrow]'")
    import pyarrow.feather
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("records")
    texts = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()
    langs = [("xx" if k % 7 == 0 else "en" if k % 3 else "de") for k in range(len(texts))]
    jsonl = d / "records.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t, "meta": {"lang": g}}) + "\n" for t, g in zip(texts, langs)),
                     encoding="utf-8")
    half = len(texts) // 2
    pq.write_table(pa.table({"text": texts[:half], "lang": langs[:half]}), d / "a.parquet", row_group_size=100)
    pq.write_table(pa.table({"text": pa.array(texts[half:], pa.large_string()), "lang": langs[half:]}),
                   d / "b.parquet", row_group_size=100)
    pyarrow.feather.write_feather(pa.table({"text": texts, "lang": langs}), d / "all.arrow")
    bad = [*texts[:250], None, *texts[250:300]]
    pq.write_table(pa.table({"text": bad, "lang": ["en"] * len(bad)}), d / "bad.parquet", row_group_size=100)
    return {"jsonl": jsonl, "a": d / "a.parquet", "b": d / "b.parquet", "arrow": d / "all.arrow",
            "bad": d / "bad.parquet"}


STRUCTURED_RUNS = {
    "plain": dict(vocab_size=700),
    "temperature": dict(vocab_size=700, temperature=2.0),
    "parity": dict(vocab_size=500, max_premium=1.2, balance_rounds=2),
    "superbpe": dict(vocab_size=700, temperature=2.0, superbpe_transition=600),
}


@pytest.mark.parametrize("run", sorted(STRUCTURED_RUNS))
def test_lang_field_on_ray_equals_local(records, run):
    kw = dict(STRUCTURED_RUNS[run], text_field="text", progress=False)
    if run != "plain":
        kw["lang_field"] = "meta.lang"
    local = bpeforge.train([records["jsonl"]], **kw)
    dist = distributed.train([records["jsonl"]], shard_bytes=20_000, **kw)
    assert dist.metadata["timings"]["count_shards"] > 3
    assert comparable(dist) == comparable(local)
    if run != "plain":
        assert set(dist.metadata["language_balance"]["languages"]) == {"en", "de", "xx"}


@pytest.mark.parametrize("run", sorted(STRUCTURED_RUNS))
def test_parquet_and_arrow_on_ray_equal_local(records, run):
    kw = dict(STRUCTURED_RUNS[run], text_column="text", progress=False)
    if run != "plain":
        kw["lang_column"] = "lang"
    files = [records["a"], records["b"], records["arrow"]]
    local = bpeforge.train(files, **kw)
    # Small shards: the Parquet files are cut into runs of row groups.
    dist = distributed.train(files, shard_bytes=10_000, **kw)
    assert dist.metadata["timings"]["count_shards"] > len(files)
    assert comparable(dist) == comparable(local)


def test_parquet_bad_rows_on_ray_as_locally(records):
    kw = dict(vocab_size=400, text_column="text", progress=False)
    with pytest.raises(bpeforge.InputError, match=r"bad\.parquet, row group 2, row 51: the text is null"):
        distributed.train([records["bad"]], shard_bytes=2_000, **kw)
    local = bpeforge.train([records["bad"]], on_bad_record="skip", **kw)
    dist = distributed.train([records["bad"]], shard_bytes=2_000, on_bad_record="skip", **kw)
    assert dist.metadata["corpus"]["bad_records"] == local.metadata["corpus"]["bad_records"] == 1
    assert comparable(dist) == comparable(local)
    with pytest.raises(bpeforge.ParameterError, match="not both"):
        distributed.train([records["a"], records["jsonl"]], **kw)
    with pytest.raises(bpeforge.InputError, match="no column 'body'"):
        distributed.train([records["a"]], vocab_size=400, text_column="body", progress=False)


def test_encode_structured_inputs_on_ray_equals_encode_file(records, tmp_path):
    tok = bpeforge.train([records["jsonl"]], vocab_size=600, text_field="text", progress=False)
    for path, shard_bytes in ((records["jsonl"], 20_000), (records["a"], 1_000), (records["arrow"], 1_000)):
        out = tmp_path / path.name
        name = {"text_field": "text"} if path.suffix == ".jsonl" else {"text_column": "text"}
        manifest = distributed.encode(tok, [path], out, format="npy", shard_bytes=shard_bytes, progress=False,
                                      **name)
        whole = tmp_path / f"{path.name}.npy"
        tok.encode_file(path, whole, format="npy", **name)
        ids, offsets = distributed.load_encoded(out)
        assert np.array_equal(ids, np.load(whole)) and np.array_equal(offsets, np.load(f"{whole}.offsets.npy"))
        # JSON lines split into byte ranges; a Parquet/Arrow file is one shard.
        assert (len(manifest["shards"]) > 1) == (path.suffix == ".jsonl")


# ---- encoding -------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(corpus) -> bpeforge.Tokenizer:
    return bpeforge.train([corpus["big"], corpus["gz"]], vocab_size=800, progress=False, **SCHEMES["bytes"])


@pytest.mark.parametrize("fmt", ["npy", "bin", "ids"])
@pytest.mark.parametrize("shard_bytes", [6_000, 40_000])
def test_encode_shards_concatenate_to_encode_file(corpus, model, tmp_path, fmt, shard_bytes):
    paths = [corpus["big"], corpus["small"], corpus["gz"], corpus["invalid"]]
    out = tmp_path / "out"
    manifest = distributed.encode(model, paths, out, format=fmt, shard_bytes=shard_bytes, progress=False,
                                  allowed_special="all")
    assert json.loads((out / distributed.MANIFEST_NAME).read_text()) == manifest
    assert manifest["inputs"] == [str(p) for p in paths]
    for p in paths:
        whole = tmp_path / f"whole-{p.name}.{fmt}"
        stats = model.encode_file(p, whole, format=fmt, allowed_special="all")
        shards = [e for e in manifest["shards"] if e["input"] == str(p)]
        assert [e["shard"] for e in shards] == list(range(len(shards)))
        assert [e["path"] for e in shards] == [f"{p.name}.{k}.{fmt}" for k in range(len(shards))]
        assert sum(e["lines"] for e in shards) == stats["lines"]
        assert sum(e["tokens"] for e in shards) == stats["tokens"]
        assert sum(e["bytes"] for e in shards) == stats["bytes"]
        if p.suffix == ".gz":
            assert len(shards) == 1 and shards[0]["byte_range"] is None
        if p == corpus["big"]:
            assert len(shards) > 2
        # Byte-exact concatenation: ids lines and raw ids (offsets are per shard).
        if fmt == "ids":
            assert b"".join((out / e["path"]).read_bytes() for e in shards) == whole.read_bytes()
        else:
            ids, offsets = distributed.load_encoded(out, str(p))
            ref = np.load(whole) if fmt == "npy" else np.fromfile(whole, dtype=manifest["dtype"])
            assert ids.dtype == ref.dtype and np.array_equal(ids, ref)
            assert np.array_equal(offsets, np.load(f"{whole}.offsets.npy"))
            if fmt == "bin":
                assert b"".join((out / e["path"]).read_bytes() for e in shards) == whole.read_bytes()
    ids, offsets = distributed.load_encoded(out)
    assert len(offsets) == manifest["lines"] + 1 and len(ids) == manifest["tokens"] == offsets[-1]


def test_encode_special_token_rules_match_encode_file(corpus, model, tmp_path):
    for rules in ({"allowed_special": "all"}, {"allowed_special": (), "disallowed_special": ()}):
        manifest = distributed.encode(model, [corpus["big"]], tmp_path / "o", format="npy",
                                      shard_bytes=5_000, progress=False, **rules)
        model.encode_file(corpus["big"], tmp_path / "w.npy", format="npy", **rules)
        assert np.array_equal(distributed.load_encoded(tmp_path / "o")[0], np.load(tmp_path / "w.npy"))
        assert manifest["tokens"] == len(np.load(tmp_path / "w.npy"))
    with pytest.raises(bpeforge.ParameterError):
        distributed.encode(model, [corpus["big"]], tmp_path / "o", allowed_special={"<nope>"}, progress=False)
    # The default is Tokenizer.encode's: special-token text is an error, on both paths.
    with pytest.raises(bpeforge.SpecialTokenError):
        model.encode_file(corpus["big"], tmp_path / "d.npy", format="npy")
    with pytest.raises(bpeforge.SpecialTokenError):
        distributed.encode(model, [corpus["big"]], tmp_path / "d", format="npy", shard_bytes=5_000, progress=False)


def test_encode_colliding_names_and_model_file(corpus, model, tmp_path):
    a, b = tmp_path / "en" / "train.txt", tmp_path / "de" / "train.txt"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(corpus["small"], p)
    model.save(tmp_path / "model.json")
    manifest = distributed.encode(tmp_path / "model.json", [a, b], tmp_path / "out", format="ids", progress=False)
    assert [e["path"] for e in manifest["shards"]] == ["en__train.txt.0.ids", "de__train.txt.0.ids"]
    with pytest.raises(bpeforge.ParameterError, match="twice"):
        distributed.encode(model, [a, a], tmp_path / "out2", progress=False)


def test_encode_missing_file(model, tmp_path):
    with pytest.raises(bpeforge.InputError, match="absent.txt"):
        distributed.encode(model, [tmp_path / "absent.txt"], tmp_path / "out", progress=False)


# ---- command line ---------------------------------------------------------------


def test_cli_train_ray_equals_local(corpus, tmp_path, capsys):
    common = [str(corpus["big"]), str(corpus["gz"]), "--vocab-size", "600", "--special-token", SPECIAL, "--quiet"]
    assert cli.main(["train", *common, "-o", str(tmp_path / "local.json")]) == 0
    assert cli.main(["train", *common, "-o", str(tmp_path / "ray.json"), "--shard-mb", "0.01", "--ray"]) == 0
    assert comparable(bpeforge.load(tmp_path / "ray.json")) == comparable(bpeforge.load(tmp_path / "local.json"))


def _summary_times(out: str) -> tuple[float, dict[str, float]]:
    """The total and the parts of a training summary's first line,
    ``trained ... in 6.92s (Ray start-up 4.36s, counting 0.80s, ...)``."""
    m = re.search(r"^trained .* in (\d+\.\d\d)s \((.*)\)$", out, flags=re.M)
    assert m, out
    parts = dict(re.fullmatch(r"(.+) (\d+\.\d\d)s", p).groups() for p in m[2].split(", "))
    return float(m[1]), {k: float(v) for k, v in parts.items()}


def test_cli_ray_summary_time_is_the_whole_call(corpus, tmp_path, capsys):
    """``bpeforge train --ray`` called on the Ray already running here: the
    time it prints is at least the time the call took, saving included, and
    its parts add up to it."""
    args = ["train", str(corpus["big"]), str(corpus["gz"]), "--vocab-size", "600", "--shard-mb", "0.01",
            "--ray", "-o", str(tmp_path / "m.json"), "--progress", "off"]
    capsys.readouterr()
    t = time.perf_counter()
    assert cli.main(args) == 0
    elapsed = time.perf_counter() - t
    total, parts = _summary_times(capsys.readouterr().out)
    assert total >= elapsed - 0.001, (total, elapsed)  # 1 ms: writing the summary itself
    assert {"counting", "merging"} <= set(parts) and "Ray shut-down" not in parts  # not this test's Ray
    assert abs(sum(parts.values()) - total) <= 0.01 * len(parts)
    assert ray.is_initialized()


def test_cli_ray_summary_time_is_the_commands_wall_time(corpus, tmp_path):
    """``bpeforge train --ray=local`` as a command, starting and shutting down
    its own Ray: the time it prints covers the process from its start to the
    end of main() (Python's start-up, Ray's start-up and shut-down included),
    to within 50 ms (the fork before the process starts, the summary's own
    writing); only the interpreter's exit after it is outside."""
    argv = ["bpeforge", "train", str(corpus["big"]), "--vocab-size", "600", "--ray=local",
            "-o", str(tmp_path / "m.json"), "--progress", "off"]
    # The console script's main(), with the time main() returned on stderr.
    code = ("import sys, time; from bpeforge.cli import main; sys.argv = %r; rc = main(); "
            "sys.stderr.write('main returned at %%r\\n' %% time.perf_counter()); sys.exit(rc)" % argv)
    t = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    returned = float(re.search(r"main returned at (\S+)", run.stderr)[1])
    total, parts = _summary_times(run.stdout)
    assert total >= returned - t - 0.05, (total, returned - t, run.stdout)
    assert {"Python start-up", "Ray start-up", "counting", "merging", "Ray shut-down"} <= set(parts)
    assert abs(sum(parts.values()) - total) <= 0.01 * len(parts)


def test_cli_encode_ray_writes_shards_and_manifest(corpus, model, tmp_path, capsys):
    model.save(tmp_path / "m.json")
    rc = cli.main(["encode", "-m", str(tmp_path / "m.json"), str(corpus["big"]), str(corpus["small"]),
                   "--format", "npy", "--ray", "--shard-mb", "0.01", "--output", str(tmp_path / "out"),
                   "--allowed-special", "all"])
    assert rc == 0
    assert "manifest" in capsys.readouterr().err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    model.encode_file([corpus["big"], corpus["small"]], tmp_path / "w.npy", format="npy", allowed_special="all")
    assert np.array_equal(distributed.load_encoded(tmp_path / "out")[0], np.load(tmp_path / "w.npy"))
    assert manifest["format"] == "npy" and len(manifest["shards"]) > 2


def test_cli_ray_argument_mistakes(corpus, model, tmp_path, capsys):
    model.save(tmp_path / "m.json")
    # `--ray FILE`: the file was meant as an input, not as the address.
    assert cli.main(["train", "--ray", str(corpus["small"]), "--quiet"]) == 1
    assert "--ray took" in capsys.readouterr().err
    assert cli.main(["encode", "-m", str(tmp_path / "m.json"), str(corpus["small"]), "--ray"]) == 1
    assert "--output DIR" in capsys.readouterr().err
    # Several inputs without --ray are refused rather than silently dropped.
    assert cli.main(["encode", "-m", str(tmp_path / "m.json"), str(corpus["small"]), str(corpus["big"]),
                     "-o", str(tmp_path / "x.ids")]) == 1
    assert "need --ray" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x.ids")


def test_each_counting_task_takes_its_share_of_the_memory_budget(corpus):
    # The local instance has 2 CPUs: a 1-CPU task may use half the budget,
    # a 2-CPU task all of it; without max_memory, half the default budget.
    from bpeforge import _ray_tasks
    from bpeforge.options import TrainOptions

    share = ray.remote(num_cpus=0.1)(lambda engine, cpus: _ray_tasks._task_settings(engine, cpus).memory_budget)
    assert ray.get(share.remote(TrainOptions(max_memory=1000).engine_options(), 1)) == 500
    assert ray.get(share.remote(TrainOptions(max_memory=1000).engine_options(), 2)) == 1000
    default = ray.get(share.remote(TrainOptions().engine_options(), 1))
    assert 0 < default <= TrainOptions().settings().memory_budget * 0.6
    # A budget above what this (long-lived) test process holds already.
    with open("/proc/self/status", encoding="ascii") as f:
        rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    kw = dict(vocab_size=700, progress=False, max_memory=rss + (512 << 20))
    assert comparable(distributed.train([corpus["big"]], shard_bytes=9_000, **kw)) == comparable(
        bpeforge.train([corpus["big"]], **kw))


def test_count_tasks_side_by_side_on_one_node_share_its_budget(corpus):
    """Two 1-CPU counting tasks running at the same time on the 2-CPU node:
    the budgets they received add up to at most max_memory."""

    from bpeforge import _ray_tasks

    @ray.remote(num_cpus=1, max_calls=1)
    def counted(shard, engine):
        start = time.monotonic()
        budget = _ray_tasks._task_settings(engine, 1).memory_budget
        _ray_tasks._count_task(shard, engine, None, 1)
        time.sleep(0.5)  # long enough for the other task to start meanwhile
        return budget, start, time.monotonic()

    max_memory = 3 << 30
    engine = TrainOptions(threads=1, max_memory=max_memory).engine_options()
    shard = {"paths": [str(corpus["big"])], "byte_range": None, "files": [0]}
    (a, a0, a1), (b, b0, b1) = ray.get([counted.remote(shard, engine) for _ in range(2)])
    assert max(a0, b0) < min(a1, b1), "the tasks did not run side by side"
    assert a + b <= max_memory and a == b == max_memory // 2


def test_a_count_task_whose_counts_cannot_fit_its_share_fails_before_making_them(corpus):
    """A 1-CPU task's share leaves about 1 MiB beside what its worker holds:
    no counts can fit (not even counting's input buffers), so the task fails
    before counting, naming max_memory, instead of passing its share."""

    @ray.remote(num_cpus=1, max_calls=1)
    def counted(shard):
        from bpeforge import _ray_tasks

        with open("/proc/self/status", encoding="ascii") as f:
            rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
        engine = TrainOptions(threads=1, max_memory=2 * (rss + (1 << 20))).engine_options()
        try:
            _ray_tasks._count_task(shard, engine, None, 1)
        except bpeforge.ParameterError as e:
            return str(e)
        return None

    shard = {"paths": [str(corpus["big"])], "byte_range": None, "files": [0]}
    message = ray.get(counted.remote(shard))
    assert message is not None and "max_memory" in message and "below what any corpus needs" in message, message


def test_structured_input_is_refused_on_ray_as_locally(tmp_path, capsys):
    """JSON lines (by name or content) and Parquet go through the same check
    as the local path: never counted or encoded as plain text."""
    records = "".join(json.dumps({"text": f"line {i} of text", "id": i}) + "\n" for i in range(200))
    named, sniffed = tmp_path / "x.jsonl", tmp_path / "records.txt"
    named.write_text(records)
    sniffed.write_text(records)
    tok = bpeforge.train_from_iterator([f"line {i} of text" for i in range(200)], vocab_size=280, progress=False)
    for path in (named, sniffed):
        with pytest.raises(bpeforge.ParameterError, match="give text_field="):
            distributed.train([path], vocab_size=280, progress=False)
        with pytest.raises(bpeforge.ParameterError, match="give text_field="):
            distributed.encode(tok, [path], tmp_path / "out", progress=False)
    assert cli.main(["train", str(named), "--vocab-size", "280", "-o", str(tmp_path / "m.json"), "--ray"]) == 1
    assert "--text-field" in capsys.readouterr().err
    assert comparable(distributed.train([named], text_field="text", vocab_size=280, shard_bytes=2_000,
                                        progress=False)) == comparable(bpeforge.train(named, text_field="text",
                                                                                      vocab_size=280, progress=False))
