"""Interoperability with Hugging Face tokenizers/transformers, tiktoken and
SentencePiece, checked with the real libraries on real text.

Every check encodes corpus lines with bpeforge and with the other library and
requires identical ids line by line: an export that loads but encodes
differently fails. Where a line *must* differ, the test names the reason and
checks that every differing line has it.

Sizes: the quick tests use the first QUICK_LINES lines of multi-200k (sources
trained elsewhere are trained on the first TRAIN_LINES). The same checks on
the whole corpus (every export and import, models trained on all 200k lines)
run with ``pytest -m slow tests/test_interop.py`` (several minutes).
"""

from __future__ import annotations

import base64
import io
import json
import lzma
import re
import warnings
from functools import lru_cache
from pathlib import Path

import pytest

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")
from bpeforge import ParameterError, interop  # noqa: E402
from bpeforge.cli import main as cli_main  # noqa: E402
from bpeforge.options import DEFAULT_PRETOKENIZER  # noqa: E402

tokenizers = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")
spm = pytest.importorskip("sentencepiece")
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

from conftest import SLICE_FILE, shared_corpus  # noqa: E402

QUICK_LINES = 20_000
TRAIN_LINES = 10_000
SPECIALS = ["<|endoftext|>", "<|pad|>"]
CUSTOM = bpeforge.Regex(r"\p{L}+|\p{N}")


@lru_cache(maxsize=2)
def _read(n: int | None) -> tuple[str, ...]:
    """The first n lines of the shipped sample (all of multi-200k when None:
    the slow tests), split at b"\\n" exactly as files are read."""
    with lzma.open(SLICE_FILE if n is not None else shared_corpus("multi-200k.txt.xz"), "rb") as f:
        data = f.read() if n is None else b""
        if n is not None:
            while data.count(b"\n") < n:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                data += chunk
    out = data.split(b"\n")
    if out and out[-1] == b"":
        out.pop()
    return tuple(x.decode("utf-8") for x in (out if n is None else out[:n]))


def _with_specials(texts: tuple[str, ...], k: int = 500) -> list[str]:
    """The texts plus k lines with special-token text inside them."""
    extra = [f"{t[:20]}<|endoftext|>{t[20:40]}<|pad|> x<|endoftext|>" for t in texts[:k]]
    return list(texts) + extra


def _differing(a: list[list[int]], b: list[list[int]]) -> list[int]:
    assert len(a) == len(b)
    return [i for i, (x, y) in enumerate(zip(a, b)) if list(x) != list(y)]


def _explain(bad: list[int], texts: list[str], a: list[list[int]], b: list[list[int]], what: str) -> str:
    lines = [f"{what}: {len(bad)} of {len(texts)} lines differ"]
    for i in bad[:3]:
        lines.append(f"  line {i}: {texts[i][:120]!r}\n    bpeforge {a[i][:24]}\n    other    {list(b[i])[:24]}")
    return "\n".join(lines)


def _assert_same(a, b, texts, what: str) -> None:
    bad = _differing(a, b)
    assert not bad, _explain(bad, texts, a, b, what)


def _collapse_unk(ids: list[int], unk: int) -> list[int]:
    out: list[int] = []
    for i in ids:
        if i == unk and out and out[-1] == unk:
            continue
        out.append(i)
    return out


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def texts() -> tuple[str, ...]:
    return _read(QUICK_LINES)


@pytest.fixture(scope="module")
def mixed(texts) -> list[str]:
    return _with_specials(texts)


def _train(texts, scheme="bytes", pretokenizer="gpt2", suffix=None, coverage=1.0, specials=SPECIALS, vocab=None,
           fuse_unk=False):
    if vocab is None:
        vocab = 4000 if scheme == "bytes" else (16000 if suffix else 10000)
    kw = dict(vocab_size=vocab, scheme=scheme, pretokenizer=pretokenizer, special_tokens=specials, progress=False)
    if scheme == "chars":
        kw.update(character_coverage=coverage, end_of_word_suffix=suffix, fuse_unk=fuse_unk)
    return bpeforge.train_from_iterator(list(texts), **kw)


_models: dict[tuple, bpeforge.Tokenizer] = {}


def _model(texts, *key):
    """Trained bpeforge models, shared by the tests of a session."""
    k = (len(texts),) + key
    if k not in _models:
        scheme, pre, *rest = key
        _models[k] = _train(texts, scheme, {"custom": CUSTOM}.get(pre, pre), suffix="</w>" if rest else None)
    return _models[k]


BYTES_PRESETS = ["gpt2", "cl100k", "o200k", "whitespace", "none", "custom"]
CHARS_CONFIGS = [("whitespace",), ("whitespace", "suffix"), ("gpt2",), ("none",), ("custom",)]


def test_patterns_equal_the_cores():
    """interop's published patterns are the engine's (its PRESETS table)."""
    from bpeforge import _native

    table = {p["name"]: p["pattern"] for p in _native.PRESETS}
    assert interop.GPT2_PATTERN == table["gpt2"]
    assert interop.CL100K_PATTERN == table["cl100k"]
    assert interop.O200K_PATTERN == table["o200k"]
    assert interop.WHITESPACE == "".join(c for c in map(chr, range(0x3001)) if c.isspace())


# ---------------------------------------------------------------------------
# export: Hugging Face
# ---------------------------------------------------------------------------


def check_hf_export(tok, texts, tmp_path, transformers=False):
    path = tok.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(path)
    ours = tok.encode_batch(texts, allowed_special="all")
    theirs = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    _assert_same(ours, theirs, texts, f"tokenizers vs bpeforge ({tok!r})")
    _assert_same_text(tok.decode_batch(ours), hf.decode_batch(ours, skip_special_tokens=False), texts,
                      f"tokenizers' decode vs bpeforge's ({tok!r})")
    if transformers:
        tf = pytest.importorskip("transformers")
        fast = tf.PreTrainedTokenizerFast(tokenizer_file=path)
        got = fast(list(texts), add_special_tokens=False)["input_ids"]
        _assert_same(ours, got, texts, f"transformers vs bpeforge ({tok!r})")
    return path


def _assert_same_text(ours: list[str], theirs: list[str], texts, what: str) -> None:
    bad = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    assert not bad, f"{what}: {len(bad)} of {len(texts)} lines decode differently, first: " + \
        "; ".join(f"line {i} {texts[i][:60]!r}: bpeforge {ours[i][:60]!r}, other {theirs[i][:60]!r}" for i in bad[:2])


@pytest.mark.parametrize("preset", BYTES_PRESETS)
def test_hf_export_bytes(texts, mixed, preset, tmp_path):
    check_hf_export(_model(texts, "bytes", preset), mixed, tmp_path,
                    transformers=preset in ("gpt2", "whitespace", DEFAULT_PRETOKENIZER))


def test_default_pretokenizer_exports(texts, mixed, tmp_path):
    """A model trained without naming a pre-tokenizer (the default) exports to
    HF tokenizers, transformers and tiktoken with identical ids."""
    tok = bpeforge.train_from_iterator(list(texts), vocab_size=4000, special_tokens=SPECIALS, progress=False)
    assert tok.pretokenizer == DEFAULT_PRETOKENIZER
    check_hf_export(tok, mixed, tmp_path, transformers=True)
    check_tiktoken_export(tok, mixed, tmp_path)


@pytest.mark.parametrize("config", CHARS_CONFIGS, ids=lambda c: "-".join(c))
def test_hf_export_chars(texts, mixed, config, tmp_path):
    check_hf_export(_model(texts, "chars", *config), mixed, tmp_path, transformers=config == ("whitespace",))


def test_hf_export_layout(texts, tmp_path):
    tok = _model(texts, "bytes", "gpt2")
    doc = json.loads(Path(tok.to_huggingface(tmp_path)).read_text(encoding="utf-8"))
    assert doc["pre_tokenizer"] == {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    assert [(t["content"], t["id"], t["special"]) for t in doc["added_tokens"]] == [(s, i, True) for i, s in enumerate(SPECIALS)]
    vocab = doc["model"]["vocab"]
    assert vocab["Ġ"] == len(SPECIALS) + 32 and vocab["!"] == len(SPECIALS) + 33
    assert len(doc["model"]["merges"]) == len(tok.merges)
    chars = json.loads(Path(_model(texts, "chars", "whitespace").to_huggingface(tmp_path / "c.json")).read_text("utf-8"))
    assert chars["model"]["unk_token"] == "<unk>" and chars["pre_tokenizer"]["pretokenizers"][-1]["type"] == "Metaspace"


# Every setting that changes the tokenizer.json: schemes, pre-tokenizers with
# and without the text's first space, the end-of-word suffix, unknown
# characters fused or not, byte fallback, the nmt_nfkc normalizer, special
# tokens or none.
HF_SETTINGS = {
    "bytes-gpt2": dict(scheme="bytes", pretokenizer="gpt2"),
    "bytes-whitespace": dict(scheme="bytes", pretokenizer="whitespace"),
    "bytes-none-nospecials": dict(scheme="bytes", pretokenizer="none", special_tokens=[]),
    "chars-whitespace": dict(scheme="chars", pretokenizer="whitespace"),
    "chars-gpt2-nospecials": dict(scheme="chars", pretokenizer="gpt2", special_tokens=[]),
    "chars-suffix": dict(scheme="chars", pretokenizer="whitespace", end_of_word_suffix="</w>"),
    "chars-fused-unknowns": dict(scheme="chars", pretokenizer="whitespace", fuse_unk=True),
    "chars-byte-fallback": dict(scheme="chars", pretokenizer="whitespace", byte_fallback=True),
    "chars-gpt2-byte-fallback": dict(scheme="chars", pretokenizer="gpt2", byte_fallback=True),
    "chars-byte-fallback-fused": dict(scheme="chars", pretokenizer="whitespace", byte_fallback=True, fuse_unk=True),
    "chars-nmt_nfkc": dict(scheme="chars", pretokenizer="whitespace", normalizer="nmt_nfkc"),
    "chars-nmt_nfkc-byte-fallback": dict(scheme="chars", pretokenizer="whitespace", normalizer="nmt_nfkc",
                                         byte_fallback=True),
    "chars-none-nmt_nfkc-byte-fallback": dict(scheme="chars", pretokenizer="none", normalizer="nmt_nfkc",
                                              byte_fallback=True),
}
HF_TRAIN, HF_HELD_OUT = 5000, 2000


def _charsmap_differs(rule: str, folder):
    """Whether tokenizers' Precompiled normalizer (per grapheme cluster)
    changes a text otherwise than sentencepiece's own normalizer with the
    same table (character by character)."""
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    charsmap = next(s for s in doc["normalizer"]["normalizers"] if s["type"] == "Precompiled")["precompiled_charsmap"]
    hf = normalizers.Precompiled(base64.b64decode(charsmap))
    sp = spm.SentencePieceNormalizer(rule_name=rule, add_dummy_prefix=False, remove_extra_whitespaces=False,
                                     escape_whitespaces=False)
    return lambda text: hf.normalize_str(text) != sp.normalize(text)


@pytest.mark.parametrize("name", HF_SETTINGS)
def test_hf_export_gives_bpeforges_ids_and_text(texts, name, tmp_path):
    """Held-out lines (and lines with special tokens) through the export,
    loaded by tokenizers from the file and by transformers from the file and
    from the folder: the ids are bpeforge's and they decode to bpeforge's
    text. Only a normalizer may change ids, only on lines where tokenizers'
    normalizer gives another text, and the export says so."""
    settings = {"special_tokens": ["<s>", "</s>"], "character_coverage": 0.995, **HF_SETTINGS[name]}
    if settings["scheme"] == "bytes":
        del settings["character_coverage"]
    tok = bpeforge.train_from_iterator(list(texts[:HF_TRAIN]), vocab_size=3000, progress=False, **settings)
    held = list(texts[HF_TRAIN:HF_TRAIN + HF_HELD_OUT]) + ["Hello world", "  Hello   world  ", "", " "]
    if settings["special_tokens"]:
        held += [f"<s>{t[:30]}</s>{t[30:60]} <s>" for t in held[:200]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok.to_huggingface(tmp_path)
    notes = [str(w.message) for w in caught if issubclass(w.category, interop.InteropWarning)]
    normalized = "normalizer" in settings
    assert len(notes) == normalized, notes
    transformers = pytest.importorskip("transformers")
    loaded = {"tokenizers": tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json")),
              "PreTrainedTokenizerFast": transformers.PreTrainedTokenizerFast(
                  tokenizer_file=str(tmp_path / "tokenizer.json")),
              "AutoTokenizer": transformers.AutoTokenizer.from_pretrained(tmp_path)}
    ours = tok.encode_batch(held, allowed_special="all")
    text = tok.decode_batch(ours)
    assert text[HF_HELD_OUT] == "Hello world"
    for lib, hf in loaded.items():
        if lib == "tokenizers":
            theirs = [e.ids for e in hf.encode_batch(held, add_special_tokens=False)]
            decoded = hf.decode_batch(ours, skip_special_tokens=False)
        else:
            theirs = hf(held, add_special_tokens=False)["input_ids"]
            decoded = hf.batch_decode(ours, skip_special_tokens=False)
        _assert_same_text(text, decoded, held, f"{lib}'s decode vs bpeforge's ({name})")
        bad = _differing(ours, theirs)
        if normalized:
            differs = _charsmap_differs(settings["normalizer"], tmp_path)
            bad = [i for i in bad if not differs(held[i])]
        assert not bad, _explain(bad, held, ours, theirs, f"{lib} vs bpeforge ({name})")


def test_hf_export_warns_where_a_normalizer_differs(texts, tmp_path, capsys):
    """The one inexact export says so, naming the cause, in Python and on the
    command line; the same model without the normalizer exports silently."""
    bengali = "\u0995\u09c7\u09be\u09a8 \u0995\u09cb\u09a8"  # কে + া (two code points) and কো
    corpus = list(texts[:3000]) + [bengali] * 20
    for normalizer in ("nmt_nfkc", "identity"):
        tok = bpeforge.train_from_iterator(corpus, vocab_size=4000, scheme="chars", pretokenizer="whitespace",
                                           normalizer=normalizer, progress=False)
        model = tmp_path / f"{normalizer}.json"
        tok.save(model)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            path = tok.to_huggingface(tmp_path / normalizer)
        notes = [w for w in caught if issubclass(w.category, interop.InteropWarning)]
        hf = tokenizers.Tokenizer.from_file(path)
        same = hf.encode(bengali, add_special_tokens=False).ids == tok.encode(bengali)
        capsys.readouterr()
        assert cli_main(["export", "-m", str(model), "--to", "huggingface", "-o", str(tmp_path / f"cli-{normalizer}"),
                         "-q"]) == 0
        err = capsys.readouterr().err
        if normalizer == "identity":
            assert same and not notes and err == ""
            continue
        assert not same, "tokenizers normalizes this Bengali text as SentencePiece does: the warning is stale"
        assert len(notes) == 1 and notes[0].filename == __file__
        message = str(notes[0].message)
        assert "nmt_nfkc normalizer" in message and "Precompiled" in message and "grapheme cluster" in message
        assert err.startswith("bpeforge: warning: the Hugging Face export") and "Precompiled" in err
        assert err.count("\n") == 1


# ---------------------------------------------------------------------------
# export: chat templates for transformers' apply_chat_template
# ---------------------------------------------------------------------------

CHAT_SPECIALS = ["<s>", "</s>", "<|im_start|>", "<|im_end|>"]
CHAT_MODELS = {"bytes": dict(scheme="bytes"),
               "chars-byte-fallback": dict(scheme="chars", pretokenizer="whitespace", byte_fallback=True,
                                           character_coverage=0.995)}


def _conversations(texts) -> list[list[dict[str, str]]]:
    """Conversations of held-out corpus lines (many scripts), one to four
    messages, a line with a newline and an empty message among them."""
    lines = [t for t in texts[HF_TRAIN:HF_TRAIN + 400] if t]
    roles = ["system", "user", "assistant", "user"]
    out = [[{"role": roles[j], "content": lines[(5 * i + j) % len(lines)]} for j in range(1 + i % 4)]
           for i in range(60)]
    out.append([{"role": "user", "content": f"{lines[0]}\n{lines[1]}"}, {"role": "assistant", "content": ""}])
    return out


def _chatml(conversation: list[dict[str, str]], generation_prompt: bool) -> str:
    """ChatML as its specification writes it, independently of the template."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in conversation)
    return text + ("<|im_start|>assistant\n" if generation_prompt else "")


@pytest.mark.parametrize("name", CHAT_MODELS)
def test_chatml_export_gives_bpeforges_ids_and_text(texts, name, tmp_path):
    """apply_chat_template of the exported folder renders ChatML, its ids are
    bpeforge's encoding of that text with <|im_start|> and <|im_end|> one id
    each, and they decode to bpeforge's text (to the rendered text itself for
    the byte-level model)."""
    transformers = pytest.importorskip("transformers")
    tok = bpeforge.train_from_iterator(list(texts[:HF_TRAIN]), vocab_size=3000, special_tokens=CHAT_SPECIALS,
                                       progress=False, **CHAT_MODELS[name])
    tok.to_huggingface(tmp_path, chat_template="chatml", eos_token="<|im_end|>")
    auto = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert auto.eos_token == "<|im_end|>" and auto.bos_token == "<s>"
    start, end = tok.token_to_id("<|im_start|>"), tok.token_to_id("<|im_end|>")
    for conversation in _conversations(texts):
        for prompt in (False, True):
            text = _chatml(conversation, prompt)
            assert auto.apply_chat_template(conversation, tokenize=False, add_generation_prompt=prompt) == text
            ids = auto.apply_chat_template(conversation, tokenize=True, add_generation_prompt=prompt)["input_ids"]
            assert ids == tok.encode(text, allowed_special="all"), conversation
            assert ids.count(start) == len(conversation) + prompt and ids.count(end) == len(conversation)
            assert auto.decode(ids) == tok.decode(ids)
            if name == "bytes":
                assert tok.decode(ids) == text


def test_chat_template_from_a_file(texts, tmp_path):
    """A template of one's own, given as a file: Llama-3-style headers with
    the bos token, trim_blocks and transformers' generation block. Its
    special tokens are the model's, so each is one id."""
    transformers = pytest.importorskip("transformers")
    specials = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    tok = bpeforge.train_from_iterator(list(texts[:HF_TRAIN]), vocab_size=2000, special_tokens=specials,
                                       progress=False)
    template = tmp_path / "llama3.jinja"
    template.write_text(
        "{{ bos_token }}{% for message in messages %}\n"
        "{% if message['role'] == 'assistant' %}{% generation %}"
        "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
        "{% endgeneration %}{% else %}"
        "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
        "{% endif %}\n"
        "{% endfor %}\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every token the template writes is special: no warning
        tok.to_huggingface(tmp_path / "hf", chat_template=template, eos_token="<|eot_id|>")
    config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == template.read_text(encoding="utf-8")
    auto = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    conversation = [{"role": "user", "content": texts[HF_TRAIN]}, {"role": "assistant", "content": texts[HF_TRAIN + 1]}]
    text = "<|begin_of_text|>" + "".join(f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content'].strip()}"
                                         "<|eot_id|>" for m in conversation)
    assert auto.apply_chat_template(conversation, tokenize=False) == text
    ids = auto.apply_chat_template(conversation, tokenize=True)["input_ids"]
    assert ids == tok.encode(text, allowed_special="all") and ids.count(tok.token_to_id("<|eot_id|>")) == 2
    assert auto.decode(ids) == tok.decode(ids) == text


def test_chat_template_and_role_refusals(texts, tmp_path):
    """Nothing is written when a role or a template cannot work, and the
    error says what to do."""
    tok = bpeforge.train_from_iterator(list(texts[:2000]), vocab_size=600, special_tokens=["<|endoftext|>"],
                                       progress=False)
    refusals = [
        (dict(chat_template="chatml"), r"lacks \['<\|im_start\|>', '<\|im_end\|>'\].*with_special_tokens"),
        (dict(eos_token="<|im_end|>"), r"eos_token '<\|im_end\|>' is not a special token.*'<\|endoftext\|>'"),
        (dict(chat_template="chat.jinja"), r"neither a built-in template \(chatml\) nor Jinja text.*pathlib.Path"),
        (dict(chat_template=tmp_path / "missing.jinja"), r"missing.jinja: cannot read it"),
        (dict(chat_template="{% for m in messages %}\n{{ m['content'] }\n{% endfor %}"), r"line 2: not a valid Jinja"),
        (dict(chat_template="  \n"), r"neither a built-in"),
    ]
    for kwargs, message in refusals:
        with pytest.raises(ParameterError, match=message):
            tok.to_huggingface(tmp_path / "hf", **kwargs)
        assert not (tmp_path / "hf").exists(), kwargs
    with pytest.raises(ParameterError, match=r"bos_token='<\|endoftext\|>', chat_template: .*mine.json is written alone"):
        tok.with_special_tokens(["<|im_start|>", "<|im_end|>"]).to_huggingface(
            tmp_path / "mine.json", bos_token="<|endoftext|>", chat_template="chatml")
    assert not (tmp_path / "mine.json").exists()
    # Template text that looks like a special token the model lacks warns: it is encoded as text.
    with pytest.warns(interop.InteropWarning, match=r"\['<\|user\|>'\].*ordinary text") as caught:
        tok.to_huggingface(tmp_path / "hf", chat_template="{% for m in messages %}<|user|>{{ m['content'] }}"
                                                          "<|endoftext|>{% endfor %}")
    assert caught[0].filename == __file__
    assert "chat_template" in json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------
# export: tiktoken
# ---------------------------------------------------------------------------


def check_tiktoken_export(tok, texts, tmp_path):
    ranks_path, meta_path = tok.to_tiktoken(tmp_path / "m.tiktoken")
    enc = interop.tiktoken_encoding(ranks_path)
    assert isinstance(enc, tiktoken.Encoding)
    ours = tok.encode_batch(texts, allowed_special="all")
    theirs = enc.encode_batch(list(texts), allowed_special="all")
    # tiktoken merges by the rank of a pair's concatenation and takes whole
    # pieces that are tokens; on this corpus that never differs from
    # bpeforge's merge list (zero lines), so any difference fails.
    _assert_same(ours, theirs, texts, f"tiktoken vs bpeforge ({tok!r})")
    _assert_same_text(tok.decode_batch(ours), enc.decode_batch(ours), texts, f"tiktoken's decode vs bpeforge's ({tok!r})")
    return ranks_path


@pytest.mark.parametrize("preset", ["gpt2", "cl100k", "o200k", "none"])
def test_tiktoken_export(texts, mixed, preset, tmp_path):
    check_tiktoken_export(_model(texts, "bytes", preset), mixed, tmp_path)


def test_tiktoken_export_refuses_a_custom_regex(texts, tmp_path):
    # bpeforge keeps the text between a custom regex's matches; tiktoken would drop it.
    with pytest.raises(bpeforge.ParameterError, match="between the regex's matches"):
        _model(texts, "bytes", "custom").to_tiktoken(tmp_path / "c.tiktoken")


def test_tiktoken_export_files(texts, tmp_path):
    tok = _model(texts, "bytes", "cl100k")
    ranks_path, meta_path = tok.to_tiktoken(tmp_path / "cl.tiktoken")
    meta = json.loads(Path(meta_path).read_text(encoding="utf-8"))
    assert meta["pat_str"] == interop.CL100K_PATTERN and meta["special_tokens"] == {s: i for i, s in enumerate(SPECIALS)}
    assert meta["name"] == "cl"
    # tiktoken's own loader reads the rank file.
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(ranks_path)
    assert len(ranks) == tok.vocab_size - len(SPECIALS) and ranks[b"a"] == tok.token_to_id(b"a")
    enc = interop.tiktoken_encoding(tok)  # straight from a Tokenizer
    assert enc.encode("hello world") == tok.encode("hello world")


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2"])
def test_tiktoken_compressed_rank_file_loads(texts, mixed, tmp_path, suffix):
    """A compressed rank file with its sidecar loads like the plain one, in
    load(), from_tiktoken() and tiktoken_encoding()."""
    import bz2
    import gzip
    import lzma

    tok = _model(texts, "bytes", "cl100k")
    ranks_path, meta_path = tok.to_tiktoken(tmp_path / "cl.tiktoken")
    packed = tmp_path / f"cl.tiktoken{suffix}"
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}[suffix]
    with opener(packed, "wb") as f:
        f.write(Path(ranks_path).read_bytes())
    Path(f"{packed}.json").write_bytes(Path(meta_path).read_bytes())
    sample = mixed[:2000]
    want = tok.encode_batch(sample, allowed_special="all")
    for again in (bpeforge.load(packed), bpeforge.from_tiktoken(packed)):
        assert again.encode_batch(sample, allowed_special="all") == want
    enc = interop.tiktoken_encoding(packed)
    _assert_same(enc.encode_batch(sample, allowed_special="all"), want, sample, f"tiktoken from {packed.name}")
    assert [enc.decode(x) for x in want[:200]] == [tok.decode(x) for x in want[:200]]


def test_tiktoken_export_refuses(texts, tmp_path):
    with pytest.raises(ParameterError, match="whitespace"):
        _model(texts, "bytes", "whitespace").to_tiktoken(tmp_path / "w.tiktoken")
    with pytest.raises(ParameterError, match="bytes scheme"):
        _model(texts, "chars", "whitespace").to_tiktoken(tmp_path / "c.tiktoken")


# ---------------------------------------------------------------------------
# export: SentencePiece
# ---------------------------------------------------------------------------

SP_SPECIALS = ["<s>", "</s>", "<mask>"]


@lru_cache(maxsize=8)
def _sp_source_model(n: int, pretokenizer: str, coverage: float, fuse_unk: bool = True) -> bpeforge.Tokenizer:
    return _train(_read(n), "chars", pretokenizer, coverage=coverage, specials=SP_SPECIALS, vocab=12000,
                  fuse_unk=fuse_unk)


def check_sp_export(tok, texts, tmp_path, whitespace="all"):
    path = tok.to_sentencepiece(tmp_path / "m.model", whitespace=whitespace)
    sp = spm.SentencePieceProcessor(model_file=path)
    ours = tok.encode_batch(texts, allowed_special=["<mask>"], disallowed_special=())
    theirs = sp.encode(list(texts))
    return sp, ours, theirs


@pytest.mark.parametrize("pretokenizer", ["whitespace", "none"])
def test_sentencepiece_export(texts, pretokenizer, tmp_path):
    tok = _sp_source_model(QUICK_LINES, pretokenizer, 1.0)
    sp, ours, theirs = check_sp_export(tok, texts, tmp_path)
    _assert_same(ours, theirs, texts, f"sentencepiece vs bpeforge ({tok!r})")
    pieces = sp.encode(list(texts[:3000]), out_type=str)
    assert pieces == [[tok.id_to_token(i).decode("utf-8") for i in ids] for ids in ours[:3000]]
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()) == (0, 1, 2, -1)
    assert sp.piece_size() == tok.vocab_size
    assert sp.id_to_piece(3) == "<mask>" and sp.is_control(1) and not sp.is_control(3)
    _assert_same_text(tok.decode_batch(ours), sp.decode(ours), texts, f"sentencepiece's decode vs bpeforge's ({tok!r})")


def test_sentencepiece_export_proto(texts):
    pb = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    tok = _sp_source_model(QUICK_LINES, "whitespace", 1.0)
    m = interop.sentencepiece_model_proto(tok)
    assert m.trainer_spec.model_type == pb.TrainerSpec.BPE
    assert (m.trainer_spec.unk_id, m.trainer_spec.bos_id, m.trainer_spec.eos_id, m.trainer_spec.pad_id) == (0, 1, 2, -1)
    ns = m.normalizer_spec
    assert ns.add_dummy_prefix and ns.remove_extra_whitespaces and ns.escape_whitespaces
    # The charsmap maps every str.isspace() character to a space and nothing else.
    rules = spm.SentencePieceNormalizer(normalizer_spec=ns.SerializeToString()).decompile()
    assert sorted(rules) == sorted((c, " ") for c in interop.WHITESPACE if c != " ")
    first = len(tok.special_tokens) + len(tok.alphabet)
    scores = [p.score for p in m.pieces[first:]]
    assert scores == sorted(scores, reverse=True) and scores[0] == 0.0
    assert max(p.score for p in m.pieces[len(tok.special_tokens):first]) < scores[-1]
    identity = interop.sentencepiece_model_proto(tok, whitespace="space").normalizer_spec
    assert identity.name == "identity" and not identity.precompiled_charsmap


def test_sentencepiece_export_unknown_runs(tmp_path):
    """SentencePiece always makes a run of unknown characters one <unk>. A
    model trained with fuse_unk exports exactly (coverage 0.9995 leaves runs
    of unknown characters); one trained without it would give other ids
    there, so its export is refused, naming fuse_unk, and writes nothing."""
    texts = _read(QUICK_LINES)
    tok = _sp_source_model(QUICK_LINES, "whitespace", 0.9995)
    sp, ours, theirs = check_sp_export(tok, texts, tmp_path)
    assert any(_collapse_unk(ids, 0) != ids for ids in _unfused(tok, texts)), "no run of unknown characters"
    _assert_same(ours, theirs, texts, f"sentencepiece vs bpeforge, unknown runs ({tok!r})")
    _assert_same_text(tok.decode_batch(ours), sp.decode(ours), texts, "sentencepiece's decode, unknown runs")
    unfused = _sp_source_model(QUICK_LINES, "whitespace", 0.9995, fuse_unk=False)
    with pytest.raises(ParameterError, match="trained without fuse_unk .*fuse_unk=True") as e:
        unfused.to_sentencepiece(tmp_path / "unfused.model")
    assert "SentencePiece always makes a run of unknown characters one <unk>" in str(e.value)
    assert not (tmp_path / "unfused.model").exists()
    # byte_fallback needs no fuse_unk: no character is unknown.
    with_bytes = bpeforge.train_from_iterator(texts, vocab_size=8000, scheme="chars", pretokenizer="whitespace",
                                              character_coverage=0.9995, byte_fallback=True, special_tokens=SP_SPECIALS,
                                              progress=False)
    sp, ours, theirs = check_sp_export(with_bytes, texts, tmp_path)
    _assert_same(ours, theirs, texts, "sentencepiece vs bpeforge, byte fallback")
    _assert_same_text(with_bytes.decode_batch(ours), sp.decode(ours), texts, "sentencepiece's decode, byte fallback")


def _unfused(tok: bpeforge.Tokenizer, texts) -> list[list[int]]:
    """``tok``'s ids with one <unk> per unknown character (its fuse_unk off)."""
    model = json.loads(tok.to_json())
    model["scheme"]["fuse_unk"] = False
    return bpeforge.Tokenizer.from_json(json.dumps(model)).encode_batch(texts, disallowed_special=())


def test_sentencepiece_export_space_only(tmp_path):
    """Named difference of whitespace="space" (the pure identity normalizer):
    SentencePiece separates words only at U+0020, so only lines with other
    whitespace characters may differ."""
    texts = _read(QUICK_LINES)
    tok = _sp_source_model(QUICK_LINES, "whitespace", 1.0)
    sp, ours, theirs = check_sp_export(tok, texts, tmp_path, whitespace="space")
    for i in _differing(ours, theirs):
        assert any(c.isspace() and c != " " for c in texts[i]), _explain([i], list(texts), ours, theirs, "space-only")


def test_sentencepiece_export_refuses(texts, tmp_path):
    for key, match in [(("bytes", "gpt2"), "chars scheme"), (("chars", "whitespace", "suffix"), "suffix"),
                       (("chars", "gpt2"), "regex pre-tokenizer")]:
        with pytest.raises(ParameterError, match=match):
            _model(texts, *key).to_sentencepiece(tmp_path / "x.model")


# ---------------------------------------------------------------------------
# import: Hugging Face (sources trained here with `tokenizers`)
# ---------------------------------------------------------------------------


def _hf_source(kind: str, texts, vocab: int = 8000) -> tokenizers.Tokenizer:
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if kind == "gpt2":  # GPT-2 style tokenizer.json
        hf = tokenizers.Tokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        tr = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS, initial_alphabet=alphabet, show_progress=False)
    elif kind == "llama3":  # Split(regex) + ByteLevel, ignore_merges
        hf = tokenizers.Tokenizer(models.BPE(ignore_merges=True))
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(interop.CL100K_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        hf.decoder = decoders.ByteLevel()
        tr = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS, initial_alphabet=alphabet, show_progress=False)
    elif kind == "metaspace":  # SentencePiece-style
        hf = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
        hf.pre_tokenizer = pre_tokenizers.Metaspace()
        hf.decoder = decoders.Metaspace()
        tr = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<unk>"] + SPECIALS, show_progress=False)
    elif kind == "whitespace":  # the tokenizers quicktour
        hf = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
        hf.pre_tokenizer = pre_tokenizers.Whitespace()
        tr = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["[UNK]"] + SPECIALS, show_progress=False)
    elif kind == "suffix":  # subword-nmt style
        hf = tokenizers.Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
        hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        hf.decoder = decoders.BPEDecoder()
        tr = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<unk>"] + SPECIALS, end_of_word_suffix="</w>",
                                 show_progress=False)
    else:  # pragma: no cover
        raise AssertionError(kind)
    hf.train_from_iterator(list(texts), tr)
    return hf


_hf_sources: dict[tuple, tokenizers.Tokenizer] = {}


def _hf(kind: str, n: int = TRAIN_LINES) -> tokenizers.Tokenizer:
    if (kind, n) not in _hf_sources:
        _hf_sources[(kind, n)] = _hf_source(kind, _read(n))
    return _hf_sources[(kind, n)]


def check_hf_import(hf, texts, tmp_path, expect_warning=False):
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = bpeforge.from_huggingface(path)
    notes = [str(w.message) for w in caught if issubclass(w.category, interop.InteropWarning)]
    assert bool(notes) == expect_warning, notes
    ours = tok.encode_batch(texts, allowed_special="all")
    theirs = [e.ids for e in hf.encode_batch(list(texts), add_special_tokens=False)]
    return tok, ours, theirs


@pytest.mark.parametrize("kind", ["gpt2", "llama3", "whitespace", "suffix"])
def test_hf_import(mixed, kind, tmp_path):
    hf = _hf(kind)
    tok, ours, theirs = check_hf_import(hf, mixed, tmp_path, expect_warning=kind == "suffix")
    _assert_same(ours, theirs, mixed, f"bpeforge (imported) vs tokenizers, {kind}")
    assert tok.vocab_size == hf.get_vocab_size()
    for t, i in list(hf.get_vocab().items())[:300]:
        assert tok.id_to_token(i) is not None
    if kind in ("gpt2", "llama3"):
        assert tok.scheme == "bytes" and tok.pretokenizer == ("gpt2" if kind == "gpt2" else "cl100k")
        assert tok.token_to_id(b" the") == hf.token_to_id("Ġthe")
        assert [tok.decode(x) for x in ours[:300]] == [hf.decode(x) for x in theirs[:300]]
    meta = tok.metadata["import"]
    assert meta["format"] == "huggingface" and not meta["stats"], meta
    if kind == "gpt2":  # the older file layout: merges as "left right" strings
        doc = json.loads(hf.to_str())
        doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
        legacy = bpeforge.from_huggingface(doc)
        assert legacy.encode_batch(mixed[:3000], allowed_special="all") == ours[:3000]


def test_hf_import_metaspace(mixed, tmp_path):
    """Named difference: HF's Metaspace(split=True) keeps runs of spaces as
    lone '▁' pieces (leading, trailing and repeated spaces) and does not split
    at other whitespace, unlike bpeforge's whitespace preset; only such lines
    may differ (here: the special-token lines, which have spaces before a
    special token, and corpus lines with other whitespace)."""
    tok, ours, theirs = check_hf_import(_hf("metaspace"), mixed, tmp_path, expect_warning=True)
    assert tok.scheme == "chars" and tok.pretokenizer == "whitespace"
    check_metaspace_differences(ours, theirs, mixed)


def _metaspace_reason(text: str) -> bool:
    """A segment (between special tokens) with a leading, trailing or repeated
    space, or a whitespace character other than U+0020."""
    segments = re.split(r"<\|endoftext\|>|<\|pad\|>", text)
    return any(s != s.strip(" ") or "  " in s or any(c.isspace() and c != " " for c in s) for s in segments)


def check_metaspace_differences(ours, theirs, texts) -> None:
    bad = _differing(ours, theirs)
    assert len(bad) < len(texts) // 100
    for i in bad:
        assert _metaspace_reason(texts[i]), _explain([i], texts, ours, theirs, "Metaspace beyond the named reason")


def test_hf_import_refuses(tmp_path):
    hf = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    hf.normalizer = normalizers.NFKC()
    hf.pre_tokenizer = pre_tokenizers.Metaspace()
    hf.train_from_iterator(list(_read(2000)), trainers.BpeTrainer(vocab_size=1200, special_tokens=["<unk>"], show_progress=False))
    with pytest.raises(ParameterError, match="normalizer"):
        bpeforge.from_huggingface(hf)
    with pytest.warns(interop.InteropWarning):
        tok = bpeforge.from_huggingface(hf, ignore_normalizer=True)
    assert tok.encode("hello world") == hf.encode("hello world").ids
    wp = tokenizers.Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    with pytest.raises(ParameterError, match="BPE"):
        bpeforge.from_huggingface(wp)
    prefixed = tokenizers.Tokenizer(models.BPE())
    prefixed.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    prefixed.train_from_iterator(["a b c"], trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    with pytest.raises(ParameterError, match="add_prefix_space"):
        bpeforge.from_huggingface(prefixed)


# ---------------------------------------------------------------------------
# import: tiktoken
# ---------------------------------------------------------------------------

TT_SPECIALS = {"<|endoftext|>": 9000, "<|pad|>": 9002}


def _tiktoken_from_hf(n: int = TRAIN_LINES) -> tiktoken.Encoding:
    """A tiktoken encoding whose ranks come from a BPE trained by `tokenizers`
    with the o200k pattern (no tiktoken vocabulary can be downloaded here)."""
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(interop.O200K_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    hf.train_from_iterator(list(_read(n)), trainers.BpeTrainer(vocab_size=8000, show_progress=False,
                                                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    ranks = {interop._key_bytes(k): v for k, v in hf.get_vocab().items()}
    return tiktoken.Encoding(name="hf-o200k", pat_str=interop.O200K_PATTERN, mergeable_ranks=ranks, special_tokens=TT_SPECIALS)


@lru_cache(maxsize=2)
def _tt_source(n: int = TRAIN_LINES) -> tiktoken.Encoding:
    return _tiktoken_from_hf(n)


def check_tiktoken_import(enc, texts, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", interop.InteropWarning)
        tok = bpeforge.from_tiktoken(enc, **kw) if kw else bpeforge.from_tiktoken(enc)
    ours = tok.encode_batch(texts, allowed_special="all")
    return tok, ours


def test_tiktoken_import_encoding(mixed):
    enc = _tt_source()
    tok, ours = check_tiktoken_import(enc, mixed)
    theirs = enc.encode_batch(mixed, allowed_special="all")
    _assert_same(ours, theirs, mixed, "bpeforge (imported) vs tiktoken")
    assert tok.pretokenizer == "o200k" and tok.special_tokens == list(TT_SPECIALS)
    assert tok.encode("<|pad|>", allowed_special="all") == [9002]
    assert not tok.metadata["import"]["stats"]


def test_tiktoken_import_file(mixed, tmp_path):
    enc = _tt_source()
    path = tmp_path / "hf.tiktoken"
    import base64

    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in sorted(enc._mergeable_ranks.items(),
                                                                                       key=lambda kv: kv[1])))
    with pytest.raises(ParameterError, match="pattern"):
        bpeforge.from_tiktoken(path)
    tok = bpeforge.from_tiktoken(path, pattern="o200k_base", special_tokens=TT_SPECIALS)
    _assert_same(tok.encode_batch(mixed[:5000], allowed_special="all"),
                 enc.encode_batch(mixed[:5000], allowed_special="all"), mixed[:5000], "from a .tiktoken file")


@pytest.mark.parametrize("name", ["r50k_base", "p50k_base"])
def test_tiktoken_import_takes_tiktokens_names_for_gpt2s_pattern(mixed, tmp_path, name):
    """tiktoken's r50k_base and p50k_base use GPT-2's pattern: pattern= takes
    their names (the engine's table lists them as the gpt2 preset's aliases)."""
    source = _tt_source()
    enc = tiktoken.Encoding(name, pat_str=interop.GPT2_PATTERN, mergeable_ranks=source._mergeable_ranks,
                            special_tokens=TT_SPECIALS)
    path = tmp_path / "ranks.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in sorted(enc._mergeable_ranks.items(),
                                                                                       key=lambda kv: kv[1])))
    tok = bpeforge.from_tiktoken(path, pattern=name, special_tokens=TT_SPECIALS)
    assert tok.pretokenizer == "gpt2"
    ours = tok.encode_batch(mixed[:3000], allowed_special="all")
    _assert_same(ours, enc.encode_batch(mixed[:3000], allowed_special="all"), mixed[:3000], f"pattern={name!r}")
    _assert_same_text([tok.decode(ids) for ids in ours], enc.decode_batch(ours), mixed[:3000], "decodes")


def test_tiktoken_import_rustbpe(texts):
    """A second, independent trainer of tiktoken vocabularies (nanochat's rustbpe)."""
    rustbpe = pytest.importorskip("rustbpe")
    r = rustbpe.Tokenizer()
    r.train_from_iterator(iter(_read(TRAIN_LINES)), 8000)
    ranks = r.get_mergeable_ranks()
    ranks = {bytes(k): v for k, v in (ranks.items() if isinstance(ranks, dict) else ranks)}
    enc = tiktoken.Encoding(name="rustbpe", pat_str=r.get_pattern(), mergeable_ranks=ranks, special_tokens={})
    tok, ours = check_tiktoken_import(enc, texts)
    _assert_same(ours, enc.encode_ordinary_batch(list(texts)), texts, "bpeforge (imported) vs tiktoken (rustbpe ranks)")


# ---------------------------------------------------------------------------
# import: SentencePiece (sources trained here with `sentencepiece`)
# ---------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _sp_source(normalizer: str, coverage: float = 1.0, n: int = TRAIN_LINES, vocab: int = 8000) -> bytes:
    buf = io.BytesIO()
    kw = dict(sentence_iterator=iter(_read(n)), model_writer=buf, vocab_size=vocab, model_type="bpe", minloglevel=2,
              character_coverage=coverage, user_defined_symbols=["<mask>"], num_threads=2)
    if normalizer == "whitespace":  # every str.isspace() character becomes a space
        kw["normalization_rule_tsv"] = str(_ws_tsv())
    else:
        kw["normalization_rule_name"] = normalizer
    spm.SentencePieceTrainer.train(**kw)
    return buf.getvalue()


@lru_cache(maxsize=1)
def _ws_tsv() -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="bpeforge-interop-")) / "whitespace.tsv"
    path.write_text("".join(f"{ord(c):X}\t20\n" for c in interop.WHITESPACE if c != " "), encoding="ascii")
    return path


def check_sp_import(model: bytes, texts, **kw):
    sp = spm.SentencePieceProcessor(model_proto=model)
    tok = bpeforge.from_sentencepiece(model, **kw)
    user = tok.metadata["import"]["user_defined"]
    ours = tok.encode_batch(texts, allowed_special=user, disallowed_special=())
    return tok, ours, sp.encode(list(texts))


def test_sentencepiece_import(texts, tmp_path):
    model = _sp_source("whitespace")
    texts = texts[:TRAIN_LINES]  # every character known: no <unk> runs (see test_sentencepiece_import_unknown_runs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", interop.InteropWarning)
        tok, ours, theirs = check_sp_import(model, texts)
    _assert_same(ours, theirs, texts, "bpeforge (imported) vs sentencepiece")
    assert tok.scheme == "chars" and tok.pretokenizer == "whitespace"
    assert tok.vocab_size == spm.SentencePieceProcessor(model_proto=model).piece_size()
    assert tok.metadata["import"]["user_defined"] == ["<mask>"] and not tok.metadata["import"]["stats"]
    path = tmp_path / "sp.model"
    path.write_bytes(model)
    assert bpeforge.from_sentencepiece(path).encode("hello world") == tok.encode("hello world")


def test_sentencepiece_import_identity(texts):
    """Named difference: with the identity normalizer SentencePiece separates
    words only at U+0020; only lines with other whitespace may differ."""
    texts = texts[:TRAIN_LINES]  # no unknown characters
    with pytest.warns(interop.InteropWarning, match="U\\+0020"):
        tok, ours, theirs = check_sp_import(_sp_source("identity"), texts)
    for i in _differing(ours, theirs):
        assert any(c.isspace() and c != " " for c in texts[i]), _explain([i], list(texts), ours, theirs, "identity")


def test_sentencepiece_import_unknown_runs(texts):
    """Named difference: SentencePiece gives one <unk> for a run of unknown
    characters (coverage 0.9995 leaves some), bpeforge one per character."""
    with pytest.warns(interop.InteropWarning):
        tok, ours, theirs = check_sp_import(_sp_source("identity", 0.9995), texts)
    bad = _differing(ours, theirs)
    assert bad
    for i in bad:
        other_ws = any(c.isspace() and c != " " for c in texts[i])
        assert other_ws or _collapse_unk(ours[i], 0) == theirs[i], _explain([i], list(texts), ours, theirs, "unk runs")


def test_sentencepiece_import_refuses():
    # nmt_nfkc imports now, its table kept (tests/test_normalizer.py checks the ids)
    tok = bpeforge.from_sentencepiece(_sp_source("nmt_nfkc", 0.98, n=2000, vocab=4000))
    assert json.loads(tok.to_json())["scheme"]["normalizer"]["name"] == "nmt_nfkc"
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(_read(2000)), model_writer=buf, vocab_size=4000,
                                   character_coverage=0.98, model_type="unigram", minloglevel=2)
    with pytest.raises(ParameterError, match="BPE"):
        bpeforge.from_sentencepiece(buf.getvalue())


# ---------------------------------------------------------------------------
# round trips and the command line
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["huggingface", "tiktoken", "sentencepiece"])
def test_round_trip(texts, fmt, tmp_path):
    """Export, import back: the same ids as the original model."""
    if fmt == "sentencepiece":
        tok = _sp_source_model(QUICK_LINES, "whitespace", 1.0)
        back = bpeforge.from_sentencepiece(tok.to_sentencepiece(tmp_path / "m.model"))
    elif fmt == "tiktoken":
        tok = _model(texts, "bytes", "o200k")
        back = bpeforge.from_tiktoken(tok.to_tiktoken(tmp_path / "m.tiktoken")[0])
    else:
        tok = _model(texts, "chars", "whitespace")
        back = bpeforge.from_huggingface(tok.to_huggingface(tmp_path))
    sample = list(texts[:5000])
    _assert_same(back.encode_batch(sample), tok.encode_batch(sample), sample, f"{fmt} round trip")
    assert back.vocab_size == tok.vocab_size and back.tokens() == tok.tokens()


def test_reexport_imported(texts, tmp_path):
    """An imported vocabulary (its own ids) exports again with those ids."""
    hf = _hf("llama3")
    tok = bpeforge.from_huggingface(hf)
    again = tokenizers.Tokenizer.from_file(tok.to_huggingface(tmp_path / "again.json"))
    sample = list(texts[:5000])
    _assert_same([e.ids for e in again.encode_batch(sample)], [e.ids for e in hf.encode_batch(sample)], sample, "re-export")
    enc = interop.tiktoken_encoding(tok)
    _assert_same(enc.encode_ordinary_batch(sample), tok.encode_batch(sample), sample, "imported -> tiktoken")


def test_cli_export_import(texts, tmp_path, capsys):
    model = tmp_path / "m.json"
    _model(texts, "bytes", "gpt2").save(model)
    tok = bpeforge.load(model)
    sample = list(texts[:2000])
    for fmt, out in [("huggingface", "tok.json"), ("tiktoken", "m.tiktoken")]:
        assert cli_main(["export", "--model", str(model), "--to", fmt, "--output", str(tmp_path / out)]) == 0
        assert cli_main(["import", "--from", fmt, str(tmp_path / out), "--output", str(tmp_path / f"{fmt}.json")]) == 0
        back = bpeforge.load(tmp_path / f"{fmt}.json")
        assert back.encode_batch(sample) == tok.encode_batch(sample)
    assert (tmp_path / "m.tiktoken.json").exists()
    chars = tmp_path / "c.json"
    _sp_source_model(QUICK_LINES, "whitespace", 1.0).save(chars)
    assert cli_main(["export", "-m", str(chars), "--to", "sentencepiece", "-o", str(tmp_path / "c.model"), "-q"]) == 0
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "c.model"))
    assert sp.encode(sample) == bpeforge.load(chars).encode_batch(sample)
    assert cli_main(["import", "--from", "sentencepiece", str(tmp_path / "c.model"), "-o", str(tmp_path / "c2.json")]) == 0
    # Errors are one line, exit status 1.
    capsys.readouterr()
    assert cli_main(["export", "-m", str(model), "--to", "sentencepiece", "-o", str(tmp_path / "x.model")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: ") and "chars scheme" in err and err.count("\n") == 1
    assert cli_main(["import", "--from", "tiktoken", str(tmp_path / "m.tiktoken"), "-o", str(tmp_path / "y.json"),
                     "--special-token", "oops"]) == 1
    assert "TOKEN=ID" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# the whole corpus: pytest -m slow tests/test_interop.py
# ---------------------------------------------------------------------------


def _slow(request) -> None:
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("whole-corpus check: run with -m slow")


@pytest.mark.slow
def test_full_corpus_exports(request, tmp_path):
    """Every export, models trained on all of multi-200k, compared on all of
    it (plus lines with special tokens): zero differing lines."""
    _slow(request)
    texts = _read(None)
    mixed = _with_specials(texts)
    for preset in BYTES_PRESETS:
        tok = _train(texts, "bytes", {"custom": CUSTOM}.get(preset, preset), vocab=32000)
        check_hf_export(tok, mixed, tmp_path, transformers=preset in ("gpt2", DEFAULT_PRETOKENIZER))
        if preset not in ("whitespace", "custom"):
            check_tiktoken_export(tok, mixed, tmp_path)
    for config in CHARS_CONFIGS:
        pre, *rest = config
        tok = _train(texts, "chars", {"custom": CUSTOM}.get(pre, pre), suffix="</w>" if rest else None,
                     coverage=0.9995, vocab=48000 if rest else 32000)
        check_hf_export(tok, mixed, tmp_path, transformers=config == ("whitespace",))
    for pre in ("whitespace", "none"):
        tok = _train(texts, "chars", pre, coverage=1.0, specials=SP_SPECIALS, vocab=32000, fuse_unk=True)
        sp, ours, theirs = check_sp_export(tok, texts, tmp_path)
        _assert_same(ours, theirs, texts, f"sentencepiece export, {pre}, whole corpus")


@pytest.mark.slow
def test_full_corpus_imports(request, tmp_path):
    """Every import, sources trained on all of multi-200k: ids identical to
    the source library on all of it, except the named Metaspace lines."""
    _slow(request)
    texts = _read(None)
    mixed = _with_specials(texts)
    n = len(texts)
    for kind in ("gpt2", "llama3", "whitespace", "suffix"):
        tok, ours, theirs = check_hf_import(_hf(kind, n), mixed, tmp_path, expect_warning=kind == "suffix")
        _assert_same(ours, theirs, mixed, f"HF import {kind}, whole corpus")
    tok, ours, theirs = check_hf_import(_hf("metaspace", n), mixed, tmp_path, expect_warning=True)
    check_metaspace_differences(ours, theirs, mixed)
    enc = _tt_source(n)
    tok, ours = check_tiktoken_import(enc, mixed)
    _assert_same(ours, enc.encode_batch(mixed, allowed_special="all"), mixed, "tiktoken import, whole corpus")
    tok, ours, theirs = check_sp_import(_sp_source("whitespace", n=n, vocab=32000), texts)
    _assert_same(ours, theirs, texts, "sentencepiece import, whole corpus")


def test_exporters_do_not_import_the_tokenizer_module() -> None:
    """Tokenizer.to_* import the exporters at module level, so they (and what
    they import in the package) must not import bpeforge._tokenizer at import
    time, or the two would form an import cycle."""
    import ast
    import pathlib

    pkg = pathlib.Path(interop.__file__).parent
    below = ["_common", "chat_templates", "huggingface_export", "tiktoken_export", "sentencepiece_export",
             "sentencepiece_proto"]
    for name in below:
        tree = ast.parse((pkg / f"{name}.py").read_text(encoding="utf-8"))
        for node in tree.body:  # module-level statements; `if TYPE_CHECKING:` blocks are not run
            if isinstance(node, ast.ImportFrom):
                target = "." * node.level + (node.module or "")
                assert target != ".._tokenizer", f"{name} imports bpeforge._tokenizer"
                if node.level == 1 and node.module:
                    assert node.module in below, f"{name} imports .{node.module}, which is not below _tokenizer"


# ---- deriving merges from ranks: the engine against tiktoken's algorithm in Python --


def _reference_split(ranks: dict[bytes, int], token: bytes, limit: int) -> int | None:
    """tiktoken's algorithm on ``token`` with the ranks below ``limit``: where
    it cuts the token when it ends in two parts."""
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 1:
        found = [(ranks[parts[i] + parts[i + 1]], i) for i in range(len(parts) - 1)
                 if ranks.get(parts[i] + parts[i + 1], limit) < limit]
        if not found:
            break
        _, i = min(found)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return len(parts[0]) if len(parts) == 2 else None


def _reference_unreachable(base: int, merges: list[tuple[int, int]]) -> int:
    rank = {pair: k for k, pair in enumerate(merges)}
    tokens = [[i] for i in range(base)]
    bad = 0
    for k, (a, c) in enumerate(merges):
        tokens.append(tokens[a] + tokens[c])
        syms = list(tokens[-1])
        while len(syms) > 1:
            found = [(rank[(syms[i], syms[i + 1])], i) for i in range(len(syms) - 1) if (syms[i], syms[i + 1]) in rank]
            if not found:
                break
            r, i = min(found)
            syms[i:i + 2] = [base + r]
        bad += syms != [base + k]
    return bad


def test_merge_splits_and_unreachable_tokens_equal_the_python_algorithm() -> None:
    import random

    from bpeforge import _native

    rng = random.Random(5)
    for _ in range(30):
        # Random rank tables over a small alphabet: many tokens whose parts are
        # missing or ranked after them, as hostile or pruned vocabularies have.
        tokens = {bytes([b]) for b in b"abcd"}
        while len(tokens) < 60:
            tokens.add(bytes(rng.choice(b"abcd") for _ in range(rng.randint(2, 6))))
        order = sorted(tokens, key=lambda t: (len(t) + rng.random() * 3, t))
        ranks = {t: r for r, t in enumerate(order)}
        splits = _native.merge_splits(order, list(range(len(order))))
        assert splits == [_reference_split(ranks, t, r) if len(t) > 1 else None for r, t in enumerate(order)]
        base = 4
        merges = [(rng.randrange(base + k), rng.randrange(base + k)) for k in range(40)]
        assert _native.unreachable_merges(base, merges) == _reference_unreachable(base, merges)
