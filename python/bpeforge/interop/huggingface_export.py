"""Export to Hugging Face ``tokenizers``: a ``tokenizer.json`` holding a BPE
model with bpeforge's ids, merges, pre-tokenizer and special tokens.

The pipeline pieces (``_WS_NORMALIZER``, ``_WS_WORDS``, ``_metaspace``, ...)
are also what :mod:`.huggingface_import` recognises as bpeforge's own output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._io import write_atomic
from ..errors import ParameterError
from ._common import _WS_CLASS, SPACE_MARKER, ModelView, PathLike, _byte_key, _utf8

if TYPE_CHECKING:  # pragma: no cover
    from .._tokenizer import Tokenizer

def _metaspace(prepend_scheme: str, split: bool) -> dict[str, Any]:
    return {"type": "Metaspace", "replacement": SPACE_MARKER, "prepend_scheme": prepend_scheme, "split": split}


def _bytelevel(use_regex: bool) -> dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def _split(pattern: str, behavior: str, invert: bool) -> dict[str, Any]:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}


# The `whitespace` preset as HF steps: one space before the text, every run of
# whitespace becomes one space, then each " word" is a piece.
_WS_NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": " "},
        {"type": "Replace", "pattern": {"Regex": f"[{_WS_CLASS}]+"}, "content": " "},
    ],
}
_WS_WORDS = " [^ ]+"


def _seq(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return steps[0] if len(steps) == 1 else {"type": "Sequence", "pretokenizers": steps}


def _hf_regex_split(v: ModelView) -> dict[str, Any]:
    assert v.pattern is not None
    if v.preset == "regex" and not v.isolated:
        # An imported regex that drops the text between matches: keep the matches only.
        return _split(v.pattern, "Removed", True)
    return _split(v.pattern, "Isolated", False)


# A pipeline: (normalizer, pre-tokenizer, decoder) as tokenizer.json objects.
_Pipeline = tuple[Any, dict[str, Any], dict[str, Any]]


def _bytes_pipeline(v: ModelView) -> _Pipeline:
    """Byte-level models: GPT-2's byte alphabet through ByteLevel."""
    normalizer = None
    if v.preset == "gpt2":
        pre = _bytelevel(True)
    elif v.preset == "none":
        pre = _bytelevel(False)
    elif v.preset == "whitespace":
        normalizer = _WS_NORMALIZER
        pre = _seq([_split(_WS_WORDS, "Removed", True), _bytelevel(False)])
    else:
        pre = _seq([_hf_regex_split(v), _bytelevel(False)])
    decoder: dict[str, Any] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    if v.preset == "whitespace":
        decoder = {"type": "Sequence", "decoders": [decoder, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return normalizer, pre, decoder


def _chars_pipeline(v: ModelView) -> _Pipeline:
    """Chars models: ``▁`` through Metaspace, or the end-of-word suffix."""
    if v.suffix is not None:
        if v.preset != "whitespace":  # the core refuses this too; kept for clarity
            raise ParameterError("end_of_word_suffix needs the whitespace pre-tokenizer")
        return None, _split(f"[{_WS_CLASS}]+", "Removed", False), {"type": "BPEDecoder", "suffix": v.suffix}
    if v.preset == "whitespace":
        pre = _seq([_split(_WS_WORDS, "Removed", True), _metaspace("never", False)])
        return _WS_NORMALIZER, pre, _metaspace("always", True)
    if v.preset == "none":
        return None, _metaspace("never", False), _metaspace("never", False)
    return None, _seq([_hf_regex_split(v), _metaspace("never", False)]), _metaspace("never", False)


def _vocab_and_added_tokens(v: ModelView, key: Callable[[bytes], str]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """The vocabulary (text key -> id) and the special tokens as added tokens."""
    vocab: dict[str, int] = {}
    for i in range(v.nspec, len(v.tokens)):
        vocab[key(v.tokens[i])] = v.ext[i]
    added: list[dict[str, Any]] = []
    for i, s in enumerate(v.specials):
        if s in vocab and vocab[s] != v.ext[i]:
            raise ParameterError(
                f"special token {s!r} has the same text as token {vocab[s]} in the Hugging Face vocabulary; "
                "tokenizer.json keys tokens by text, so this vocabulary cannot be exported"
            )
        vocab[s] = v.ext[i]
        added.append({"id": v.ext[i], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
    added.sort(key=lambda t: t["id"])
    return dict(sorted(vocab.items(), key=lambda kv: kv[1])), added


def _merge_list(v: ModelView, key: Callable[[bytes], str]) -> list[Any]:
    pairs = [(key(v.tokens[a]), key(v.tokens[b])) for a, b in v.merges]
    # "left right" strings load in every tokenizers version; the list form
    # (tokenizers >= 0.20) is needed only when a token contains a space,
    # which neither scheme produces (spaces are Ġ or ▁).
    if any(" " in x or " " in y for x, y in pairs):
        return [[x, y] for x, y in pairs]
    return [f"{x} {y}" for x, y in pairs]


def huggingface_json(tok: Tokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` document for ``tok`` (see :func:`to_huggingface`)."""
    v = ModelView(tok)
    key: Callable[[bytes], str]
    if v.scheme == "bytes":
        key, (normalizer, pre, decoder) = _byte_key, _bytes_pipeline(v)
        unk_token, end_of_word_suffix = None, None
    else:
        key, (normalizer, pre, decoder) = _utf8, _chars_pipeline(v)
        unk_token, end_of_word_suffix = v.unk_token, v.suffix
    vocab, added = _vocab_and_added_tokens(v, key)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": decoder,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk_token,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": end_of_word_suffix,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": _merge_list(v, key),
        },
    }


def to_huggingface(tok: Tokenizer, path: PathLike) -> str:
    """Write ``tok`` as a Hugging Face ``tokenizer.json`` (a directory gets
    ``tokenizer.json`` inside it). Returns the file written.

    The file holds a BPE model with bpeforge's ids and merges, the same
    pre-tokenizer, and the special tokens as added tokens (``special=True``):

    * bytes scheme: GPT-2's byte-to-unicode alphabet; ``gpt2`` is
      ``ByteLevel(use_regex=True)``, the other regex presets and custom regexes
      a ``Split`` before ``ByteLevel``, ``none`` a bare ``ByteLevel``.
    * chars scheme: ``▁`` through ``Metaspace``; ``</w>`` through the BPE
      model's ``end_of_word_suffix``.
    * ``whitespace`` preset: a normalizer puts one space before the text and
      turns every run of whitespace (``str.isspace()``) into one space; then
      each ``" word"`` is a piece (byte-level: ``Ġword``; chars: ``▁word``).

    ``tokenizers.Tokenizer.from_file(path).encode(text, add_special_tokens=False)``
    then gives ``tok.encode(text, allowed_special="all")``; Hugging Face always
    matches added tokens in text. Regexes run on Oniguruma there; characters
    whose Unicode properties differ between Oniguruma's tables and the Rust
    ``regex`` crate's (Unicode 16.0) could split differently.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    doc = huggingface_json(tok)
    write_atomic(path, json.dumps(doc, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
    return path

