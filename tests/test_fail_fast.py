"""Never lose a run, a byte or an option: outputs are checked before any work,
no setting falls back silently, and files get the permissions users expect."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

import bpeforge
from bpeforge import OutputError, ParameterError, cli



@pytest.fixture(scope="module")
def tok() -> bpeforge.Tokenizer:
    return bpeforge.train(bpeforge.sample_corpus(), vocab_size=500, special_tokens=["<|endoftext|>"], progress=False)


# ---- outputs are checked before the first byte is read ---------------------------


def _bad_outputs(tmp_path) -> dict[str, str]:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return {"missing folder": str(tmp_path / "nodir" / "x.json"), "a folder": str(folder),
            "under a file": str(a_file / "x.json")}


@pytest.mark.parametrize("case", ["missing folder", "a folder", "under a file"])
def test_cli_train_checks_its_output_before_counting(case, tmp_path, capsys) -> None:
    # An input whose first line is invalid UTF-8: had counting started, the
    # error would be about it, not about the output.
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\xff\xfe not text\n" + b"hello world\n" * 1000)
    out = _bad_outputs(tmp_path)[case]
    assert cli.main(["train", str(corpus), "--vocab-size", "32000", "-o", out, "-q"]) == 1
    err = capsys.readouterr().err
    assert out in err and "cannot write" in err and "UTF-8" not in err


@pytest.mark.parametrize("option", ["checkpoint_path", "progress_csv"])
def test_python_train_checks_its_outputs_first(option, tmp_path) -> None:
    bad = str(tmp_path / "nodir" / "x")
    with pytest.raises(OutputError, match=f"{option}.*{bad}"):
        bpeforge.train(bpeforge.sample_corpus(), vocab_size=300, progress=False, **{option: bad})


def test_exports_and_encode_outputs_name_the_users_path(tok, tmp_path) -> None:
    for case, bad in _bad_outputs(tmp_path).items():
        calls = {"to_tiktoken": lambda: tok.to_tiktoken(bad), "save": lambda: tok.save(bad),
                 "encode_file": lambda: tok.encode_file(bpeforge.sample_corpus(), bad, format="npy")}
        if case != "a folder":  # a folder is where to_huggingface writes tokenizer.json
            calls["to_huggingface"] = lambda: tok.to_huggingface(bad)
        for name, call in calls.items():
            with pytest.raises(OutputError) as e:
                call()
            assert bad in str(e.value) and ".bpeforge-" not in str(e.value), (case, name, str(e.value))


def test_cli_encode_checks_its_output_first(tok, tmp_path, capsys) -> None:
    model = tmp_path / "m.json"
    tok.save(model)
    bad = str(tmp_path / "nodir" / "ids.txt")
    assert cli.main(["encode", "-m", str(model), str(bpeforge.sample_corpus()), "-o", bad, "-q"]) == 1
    assert bad in capsys.readouterr().err
    assert cli.main(["decode", "-m", str(model), str(bpeforge.sample_corpus()), "-o", bad]) == 1
    assert bad in capsys.readouterr().err


# ---- no silent fallbacks ------------------------------------------------------------


def test_no_input_with_output_does_not_train_the_demo(tmp_path, capsys) -> None:
    out = tmp_path / "prod.json"
    assert cli.main(["train", "-o", str(out), "-q"]) == 1
    assert "no INPUT" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("value", ["0", "-3"])
def test_cli_vocab_size_zero_is_an_error(value, capsys) -> None:
    assert cli.main(["train", str(bpeforge.sample_corpus()), "--vocab-size", value, "-q"]) == 1
    assert "--vocab-size" in capsys.readouterr().err  # the flag, not the Python parameter


def test_resume_refuses_conflicting_settings(tok) -> None:
    with pytest.raises(ParameterError, match="scheme='chars'.*special_tokens") as e:
        bpeforge.train(bpeforge.sample_corpus(), vocab_size=600, resume_from=tok, scheme="chars",
                       special_tokens=["<s>"], progress=False)
    assert "resume_from" in str(e.value)
    # the same settings as the model's, given again, are fine
    grown = bpeforge.train(bpeforge.sample_corpus(), vocab_size=600, resume_from=tok,
                           special_tokens=["<|endoftext|>"], progress=False)
    assert grown.vocab_size == 600


def test_with_special_tokens_adds_new_ids_and_exports_them(tok, tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    grown = tok.with_special_tokens(["<pad>", "<|im_start|>"])
    assert grown.special_tokens == ["<|endoftext|>", "<pad>", "<|im_start|>"]
    assert [grown.token_to_id("<pad>"), grown.token_to_id("<|im_start|>")] == [500, 501]
    assert all(grown.id_to_token(i) == tok.id_to_token(i) for i in range(tok.vocab_size))
    text = "a<pad>b <|im_start|>c<|endoftext|>"
    ids = grown.encode(text, allowed_special="all")
    assert 500 in ids and 501 in ids and grown.decode(ids) == text
    grown.to_huggingface(tmp_path / "tokenizer.json")
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode(text).ids == ids
    with pytest.raises(ParameterError, match="already special"):
        grown.with_special_tokens(["<pad>"])
    with pytest.raises(ParameterError, match="ordinary"):
        tok.with_special_tokens(["a"])


# ---- files as users expect ---------------------------------------------------------


def test_outputs_follow_the_umask(tok, tmp_path) -> None:
    old = os.umask(0o022)
    try:
        src = tmp_path / "in.txt"
        src.write_text("hello world\n" * 5, encoding="utf-8")
        paths = [tmp_path / "m.json", tmp_path / "ids.npy", tmp_path / "ids.npy.offsets.npy", tmp_path / "t.json"]
        tok.save(paths[0])
        tok.encode_file(src, paths[1], format="npy")
        tok.to_huggingface(paths[3])
        for p in paths:
            assert stat.S_IMODE(os.stat(p).st_mode) == 0o644, p
        os.umask(0o077)
        tok.save(paths[0])
        assert stat.S_IMODE(os.stat(paths[0]).st_mode) == 0o600
    finally:
        os.umask(old)


# ---- transformers-ready exports -----------------------------------------------------


def test_auto_tokenizer_pads_a_batch(tok, tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    folder = tmp_path / "hf"
    folder.mkdir()
    tok.to_huggingface(folder)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["eos_token"] == config["pad_token"] == "<|endoftext|>"
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    batch = auto(["hello world", "hi"], padding=True)
    assert batch["input_ids"][0] == tok.encode("hello world")
    assert batch["input_ids"][1][len(tok.encode("hi")):] == [0] * (len(batch["input_ids"][0]) - len(tok.encode("hi")))
    assert batch["attention_mask"][1].count(0) == len(batch["input_ids"][0]) - len(tok.encode("hi"))


def test_special_token_roles_are_checked(tok, tmp_path) -> None:
    with pytest.raises(ParameterError, match="bos_token"):
        tok.to_huggingface(tmp_path / "tokenizer.json", bos_token="<s>")
    tok.to_huggingface(tmp_path / "tokenizer.json", pad_token=None)
    assert "pad_token" not in json.loads((tmp_path / "special_tokens_map.json").read_text(encoding="utf-8"))


# ---- load, inspect and encode -m read other tools' files -------------------------------


def test_load_recognises_other_tools_files(tok, tmp_path, capsys) -> None:
    pytest.importorskip("tokenizers")
    (tmp_path / "hf").mkdir()
    tok.to_huggingface(tmp_path / "hf")
    tok.to_tiktoken(tmp_path / "m.tiktoken")
    text = "hello <|endoftext|> world"
    for path in (tmp_path / "hf" / "tokenizer.json", tmp_path / "hf", tmp_path / "m.tiktoken"):
        assert bpeforge.load(path).encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
        assert cli.main(["inspect", str(path), "--merges", "1", "--vocab", "1"]) == 0
    chars = bpeforge.train(bpeforge.sample_corpus(), vocab_size=3000, scheme="chars", pretokenizer="whitespace",
                           character_coverage=0.995, fuse_unk=True, progress=False)
    chars.to_sentencepiece(tmp_path / "sp.model")
    assert bpeforge.load(tmp_path / "sp.model").encode("hello world") == chars.encode("hello world")
    (tmp_path / "bare.tiktoken").write_bytes((tmp_path / "m.tiktoken").read_bytes())
    with pytest.raises(bpeforge.ModelFormatError, match="bpeforge import"):
        bpeforge.load(tmp_path / "bare.tiktoken")
