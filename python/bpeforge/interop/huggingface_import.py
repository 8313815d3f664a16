"""Import a Hugging Face BPE ``tokenizer.json``: the pipeline (normalizer,
pre-tokenizer, model options) is mapped to one bpeforge scheme and
pre-tokenizer, then the vocabulary and merges are carried over with the
file's ids. :func:`from_huggingface` reads as the list of those steps."""

from __future__ import annotations

import base64
import itertools
import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import _normalizers
from .._byte_tokens import BYTE_TOKENS, is_byte_token
from .._tokenizer import Tokenizer
from ..errors import ModelFormatError, ParameterError
from ._builder import Builder, foreign_file_errors, unreachable_tokens
from ._common import (
    _PATTERN_PRESETS,
    _RUST_WS_CLASS,
    _WS_CLASS,
    SP_WORDS_DIGITS_PATTERN,
    SP_WORDS_PATTERN,
    SPACE_MARKER,
    _key_bytes,
    _pretokenizer_for_pattern,
    _rust_escape,
)
from .huggingface_export import _WS_NORMALIZER, _WS_WORDS, WS_NORMALIZER_AFTER_PRECOMPILED

# What the pipeline maps to: (scheme, pre-tokenizer, rename_space). rename_space:
# a chars model without Metaspace, whose tokens hold real spaces where
# bpeforge's hold ▁.
_Mapping = tuple[dict[str, Any], dict[str, Any], bool]


@foreign_file_errors("Hugging Face tokenizer.json")
def from_huggingface(source: Any, *, ignore_normalizer: bool = False) -> Tokenizer:
    """Import a Hugging Face BPE ``tokenizer.json`` (a path, a directory holding
    one, a ``tokenizers.Tokenizer``, a ``transformers`` fast tokenizer or the
    parsed dict). The ids are the file's.

    Understood pipelines:

    * byte-level (GPT-2 style): ``ByteLevel(use_regex=True)`` (``gpt2``),
      ``Split(regex) + ByteLevel(use_regex=False)`` (Llama-3 style; the
      published gpt2/cl100k/o200k patterns map to the presets, other regexes
      become a custom regex), a bare ``ByteLevel`` (``none``), and what
      :func:`to_huggingface` writes for ``whitespace``;
    * chars: ``Metaspace`` forms (SentencePiece style), ``WhitespaceSplit`` or
      ``Whitespace`` (then no ``▁`` marker), ``end_of_word_suffix``;
    * SentencePiece BPE with spaces kept, as transformers converts Llama 2,
      Mistral and Gemma: ``Prepend("▁") + Replace(" ", "▁")`` normalizers or
      ``Metaspace(split=False)``, with ``byte_fallback`` (the ``<0x00>``..
      ``<0xFF>`` tokens become special tokens keeping their ids, never matched
      in text) and ``fuse_unk``, both kept in the scheme.

    Added tokens become special tokens; compare with
    ``encode(text, allowed_special="all")`` against
    ``encode(text, add_special_tokens=False)`` (post-processors, which add
    tokens such as BOS, are not imported). Differences that can remain, each
    warned about and recorded in ``metadata["import"]``:

    * a merge whose result another earlier merge already made (the HF trainer
      can emit both ``a + bc`` and ``ab + c``): bpeforge keeps one merge per
      token, so the later one is dropped;
    * ``ignore_merges=True`` (tiktoken-like whole-piece lookup) matters for
      tokens merge-list BPE cannot reach from their own bytes;
    * the standard ``Metaspace(prepend_scheme="always", split=True)`` keeps
      runs of spaces as ``▁`` pieces and does not split at other whitespace,
      while it is imported as the ``whitespace`` preset;
    * a normalizer other than the one :func:`to_huggingface` writes raises,
      unless ``ignore_normalizer=True`` (ids then match on text the normalizer
      leaves unchanged).
    """
    # Why this function is long: its docstring lists every pipeline it
    # understands and every difference that can remain; the body is the
    # import's steps in order, each a helper of this module.
    doc, where = _load_hf(source)
    model = _bpe_model(doc, where)
    vocab: dict[str, int] = {str(k): int(v) for k, v in model["vocab"].items()}
    merges = _merge_pairs(model["merges"], where)
    notes: list[str] = []
    normalizer, doc = _peel_precompiled(doc, ignore_normalizer, notes, where)
    if _is_sentencepiece_kept_spaces(doc):
        scheme, pretok, rename_space = _kept_spaces_mapping(model, vocab, where)
    else:
        ws_normalizer = _accept_normalizer(doc.get("normalizer"), ignore_normalizer, where, notes,
                                           precompiled=normalizer is not None)
        scheme, pretok, rename_space = _map_pipeline(model, _steps(doc.get("pre_tokenizer")), ws_normalizer, notes,
                                                     where)
    if model.get("byte_fallback"):
        scheme["byte_fallback"] = True
    if model.get("fuse_unk"):
        scheme["fuse_unk"] = True
    if normalizer is not None:
        if scheme["type"] != "chars" or scheme.get("end_of_word_suffix"):
            raise ParameterError(f"{where}: a Precompiled normalizer goes with SentencePiece-style (▁) models; "
                                 "bpeforge applies it only in the chars scheme's ▁ prefix mode")
        scheme["normalizer"] = normalizer
    byte_level = scheme["type"] == "bytes"

    b = Builder(scheme, pretok, where)
    for n in notes:
        b.note(n)
    if model.get("dropout"):
        b.note(f"BPE dropout {model['dropout']} ignored (use encode(..., dropout=p) in bpeforge)")
    added = sorted(doc.get("added_tokens") or [], key=lambda t: int(t["id"]))
    special_text = _add_specials(b, added, vocab, scheme, where)
    if scheme.get("byte_fallback"):
        _add_byte_tokens(b, vocab, special_text, where)
    token_bytes = _token_bytes_fn(byte_level, rename_space)
    used_ext = set(vocab.values()) | {int(t["id"]) for t in added}
    b.source_id_end = max(used_ext) + 1 if used_ext else 0
    fresh = itertools.count(b.source_id_end)  # ids for what the source lacks

    alphabet: list[str] | None = None
    missing: list[int] = []
    if byte_level:
        missing = _add_bytes(b, vocab, special_text, fresh)
    else:
        _add_unknown_token(b, model, vocab, scheme["unk_token"], special_text, fresh)
        alphabet = _add_alphabet(b, vocab, merges, special_text, scheme["end_of_word_suffix"], token_bytes)
    if pretok.get("type") == "regex" and scheme.get("dummy_prefix") and not _one_merge_per_token(merges):
        _add_sentencepiece_merges(b, merges, vocab, special_text, where)
    else:
        _add_merges(b, merges, vocab, special_text, token_bytes, where)
    dropped_tokens = sum(1 for k in vocab if k not in special_text) - (len(b.base) - len(missing)) - len(b.merges)
    if dropped_tokens:
        b.count("tokens_not_reachable_by_merges", dropped_tokens)
    _note_merge_losses(b, model)
    meta = {"format": "huggingface", "source": where, "model": {k: model.get(k) for k in
            ("unk_token", "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges")}}
    return b.build(meta, alphabet)


# ---- reading the file -------------------------------------------------------


def _load_hf(source: Any) -> tuple[dict[str, Any], str]:
    if isinstance(source, Mapping):
        return dict(source), "tokenizer.json"
    if hasattr(source, "to_str") and callable(source.to_str):  # tokenizers.Tokenizer
        return json.loads(source.to_str()), "tokenizers.Tokenizer"
    if hasattr(source, "backend_tokenizer"):  # transformers fast tokenizer
        return json.loads(source.backend_tokenizer.to_str()), type(source).__name__
    path = os.fspath(source)
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), path
    except json.JSONDecodeError as e:
        raise ModelFormatError(f"{path}: not a JSON tokenizer file ({e})") from e


def _steps(pre: Any) -> list[dict[str, Any]]:
    if pre is None:
        return []
    if pre.get("type") == "Sequence":
        out: list[dict[str, Any]] = []
        for p in pre.get("pretokenizers", []):
            out.extend(_steps(p))
        return out
    return [pre]


def _split_regex(step: dict[str, Any], where: str) -> str:
    """The bpeforge regex whose matches are the pieces an HF Split gives."""
    pat = step.get("pattern", {})
    if "Regex" in pat:
        p = pat["Regex"]
    elif "String" in pat:
        p = _rust_escape(pat["String"])
    else:
        raise ParameterError(f"{where}: Split has an unknown pattern {pat!r}")
    behavior = str(step.get("behavior", "")).lower()
    invert = bool(step.get("invert", False))
    gaps = f"(?s:(?:(?!(?:{p})).)+)"
    if behavior == "removed":
        return p if invert else gaps
    if behavior == "isolated" and not invert:
        if p in _PATTERN_PRESETS:  # the presets cover the text: no gaps
            return p
        return f"(?:{p})|{gaps}"
    raise ParameterError(
        f"{where}: Split(behavior={step.get('behavior')!r}, invert={invert}) cannot be expressed as a bpeforge "
        "pre-tokenizer (only Isolated and Removed)"
    )


def _same_json(a: Any, b: Any) -> bool:
    return isinstance(a, dict) and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _is_ws_normalizer(norm: Any) -> bool:
    return isinstance(norm, dict) and json.dumps(norm, sort_keys=True) == json.dumps(_WS_NORMALIZER, sort_keys=True)


def _is_ws_words(step: dict[str, Any]) -> bool:
    return (step.get("type") == "Split" and step.get("pattern") == {"Regex": _WS_WORDS}
            and str(step.get("behavior")).lower() == "removed" and bool(step.get("invert")))


def _is_metaspace(step: dict[str, Any], prepend: tuple[str, ...], split: bool) -> bool:
    if step.get("type") != "Metaspace" or step.get("replacement", SPACE_MARKER) != SPACE_MARKER:
        return False
    scheme = step.get("prepend_scheme")
    if scheme is None:  # tokenizers < 0.14: add_prefix_space
        scheme = "always" if step.get("add_prefix_space", True) else "never"
    return scheme in prepend and bool(step.get("split", True)) == split


def _bpe_model(doc: dict[str, Any], where: str) -> dict[str, Any]:
    model = doc.get("model") or {}
    if model.get("type", "BPE") != "BPE" or "merges" not in model:
        raise ParameterError(f"{where}: not a BPE model (model type {model.get('type')!r}); only BPE vocabularies import")
    if model.get("continuing_subword_prefix"):
        raise ParameterError(f"{where}: continuing_subword_prefix {model['continuing_subword_prefix']!r} has no bpeforge equivalent")
    return model


def _merge_pairs(raw_merges: Any, where: str) -> list[tuple[str, str]]:
    """Merges as (left, right): "left right" strings or two-item lists."""
    merges: list[tuple[str, str]] = []
    for m in raw_merges:
        if isinstance(m, str):
            parts = m.split(" ")
            if len(parts) != 2:
                raise ModelFormatError(f"{where}: merge {m!r} is not two tokens separated by one space")
            merges.append((parts[0], parts[1]))
        else:
            merges.append((str(m[0]), str(m[1])))
    return merges


# ---- the pipeline -----------------------------------------------------------


def _peel_precompiled(doc: dict[str, Any], ignore_normalizer: bool, notes: list[str],
                      where: str) -> tuple[dict[str, str] | None, dict[str, Any]]:
    """A ``Precompiled`` normalizer first (alone or first in a Sequence, as
    transformers' converters write SentencePiece's): the normalizer to keep
    (bpeforge's stored form), and the document with the steps after it."""
    norm = doc.get("normalizer")
    steps = norm.get("normalizers") if isinstance(norm, dict) and norm.get("type") == "Sequence" else [norm]
    if not isinstance(steps, list):
        return None, doc
    # Also accepted after a Prepend (bpeforge normalizes first and then
    # prefixes, which is SentencePiece's order).
    at = 1 if len(steps) > 1 and isinstance(steps[0], dict) and steps[0].get("type") == "Prepend" else 0
    first = steps[at] if steps else None
    if not (isinstance(first, dict) and first.get("type") == "Precompiled"):
        return None, doc
    rest = steps[:at] + steps[at + 1:]
    after = {"type": "Sequence", "normalizers": rest} if len(rest) > 1 else (rest[0] if rest else None)
    doc = {**doc, "normalizer": after}
    if ignore_normalizer:
        notes.append("normalizer 'Precompiled' ignored: ids differ on text it would change")
        return None, doc
    charsmap = first.get("precompiled_charsmap")
    try:
        blob = base64.b64decode(charsmap, validate=True) if isinstance(charsmap, str) else bytes(charsmap or [])
    except (ValueError, TypeError) as e:
        raise ModelFormatError(f"{where}: the Precompiled normalizer's charsmap is not base64 ({e})") from e
    if not blob:
        return None, doc
    return _normalizers.spec(_normalizers.known_name(blob) or "precompiled", blob), doc


def _accept_normalizer(norm: Any, ignore_normalizer: bool, where: str, notes: list[str], *,
                       precompiled: bool = False) -> bool:
    """True when the normalizer is the one to_huggingface writes for the
    ``whitespace`` preset (after a Precompiled one: words cut at U+0020
    only); any other raises unless ignored (then noted)."""
    if precompiled and _same_json(norm, WS_NORMALIZER_AFTER_PRECOMPILED):
        return True
    if norm is None or _is_ws_normalizer(norm):
        return norm is not None
    if not ignore_normalizer:
        raise ParameterError(
            f"{where}: the normalizer {norm.get('type')!r} has no bpeforge equivalent (bpeforge applies only "
            "SentencePiece's Precompiled tables); pass ignore_normalizer=True to import anyway: ids then match "
            "only on text the normalizer leaves unchanged"
        )
    notes.append(f"normalizer {norm.get('type')!r} ignored: ids differ on text it would change")
    return False


def _map_pipeline(model: dict[str, Any], steps: list[dict[str, Any]], ws_normalizer: bool, notes: list[str],
                  where: str) -> _Mapping:
    types = [s.get("type") for s in steps]

    def fail(what: str) -> ParameterError:
        return ParameterError(f"{where}: the pre-tokenizer {types!r} {what}")

    if "ByteLevel" in types:
        return {"type": "bytes"}, _byte_level_pretokenizer(steps, ws_normalizer, fail, where), False
    suffix = model.get("end_of_word_suffix") or None
    scheme = {"type": "chars", "unk_token": model.get("unk_token") or "<unk>", "end_of_word_suffix": suffix,
              "character_coverage": 1.0}
    if suffix is not None:
        return scheme, _suffix_pretokenizer(steps, suffix, notes, fail, where), False
    pretok, rename_space = _chars_pretokenizer(steps, ws_normalizer, notes, fail, where)
    return scheme, pretok, rename_space


def _byte_level_pretokenizer(steps: list[dict[str, Any]], ws_normalizer: bool,
                             fail: Callable[[str], ParameterError], where: str) -> dict[str, Any]:
    """ByteLevel last: alone (gpt2 or none), after one Split (a regex), or the
    whitespace form bpeforge writes."""
    types = [s.get("type") for s in steps]
    bl = steps[-1]
    if bl.get("type") != "ByteLevel" or types.count("ByteLevel") != 1:
        raise fail("has ByteLevel in a place bpeforge cannot follow (it must be the last step)")
    if bl.get("add_prefix_space", False):
        raise fail("uses ByteLevel(add_prefix_space=True), which inserts a space at the start of the text; "
                   "bpeforge's byte-level presets never insert text")
    rest = steps[:-1]
    if ws_normalizer:
        if len(rest) != 1 or not _is_ws_words(rest[0]) or bl.get("use_regex", True):
            raise fail("with this normalizer is not the whitespace form bpeforge writes")
        return {"type": "whitespace"}
    if not rest:
        return {"type": "gpt2"} if bl.get("use_regex", True) else {"type": "none"}
    if len(rest) == 1 and rest[0].get("type") == "Split" and not bl.get("use_regex", True):
        return _pretokenizer_for_pattern(_split_regex(rest[0], where))
    raise fail("cannot be expressed as one bpeforge pre-tokenizer (supported: ByteLevel; Split + ByteLevel)")


def _suffix_pretokenizer(steps: list[dict[str, Any]], suffix: str, notes: list[str],
                         fail: Callable[[str], ParameterError], where: str) -> dict[str, Any]:
    """end_of_word_suffix needs whitespace splitting: bpeforge's ``whitespace``."""
    if len(steps) == 1 and steps[0].get("type") == "WhitespaceSplit":
        notes.append("WhitespaceSplit does not split at U+001C..U+001F; bpeforge's whitespace preset does")
    elif not (len(steps) == 1 and steps[0].get("type") == "Split"
              and _split_regex(steps[0], where) == f"(?s:(?:(?!(?:[{_WS_CLASS}]+)).)+)"):
        raise fail(f"with end_of_word_suffix={suffix!r}: bpeforge's suffix mode needs whitespace splitting")
    return {"type": "whitespace"}


def _chars_pretokenizer(steps: list[dict[str, Any]], ws_normalizer: bool, notes: list[str],
                        fail: Callable[[str], ParameterError], where: str) -> tuple[dict[str, Any], bool]:
    """Chars models: the Metaspace forms, or a split without ▁ (then spaces in
    tokens are renamed ▁). Returns (pre-tokenizer, rename_space)."""
    if steps and _is_metaspace(steps[-1], ("never",), False):
        rest = steps[:-1]
        if ws_normalizer:
            if len(rest) != 1 or not _is_ws_words(rest[0]):
                raise fail("with this normalizer is not the whitespace form bpeforge writes")
            return {"type": "whitespace"}, False
        if not rest:
            return {"type": "none"}, False
        if len(rest) == 1 and rest[0].get("type") == "Split":
            return _pretokenizer_for_pattern(_split_regex(rest[0], where)), False
        raise fail("cannot be expressed as one bpeforge pre-tokenizer")
    if len(steps) == 1 and _is_metaspace(steps[0], ("always", "first"), True) and not ws_normalizer:
        notes.append(
            "Metaspace(split=True) keeps runs of spaces as '▁' pieces and does not split at tabs or other "
            "whitespace; imported as bpeforge's whitespace preset, so ids differ on texts with leading, "
            "trailing or repeated spaces or with other whitespace characters"
        )
        return {"type": "whitespace"}, False
    if not ws_normalizer and len(steps) == 1 and steps[0].get("type") in ("WhitespaceSplit", "Whitespace"):
        if steps[0].get("type") == "WhitespaceSplit":
            return {"type": "regex", "pattern": f"[^{_RUST_WS_CLASS}]+"}, True
        return {"type": "regex", "pattern": r"\w+|[^\w\s]+"}, True
    if not ws_normalizer and len(steps) == 1 and steps[0].get("type") == "Split":
        return _pretokenizer_for_pattern(_split_regex(steps[0], where)), True
    raise fail("cannot be expressed as a bpeforge pre-tokenizer")


def _is_sentencepiece_kept_spaces(doc: Mapping[str, Any]) -> bool:
    """The Llama forms: ▁ prepended and spaces replaced by the normalizer (no
    pre-tokenizer), or by ``Metaspace(split=False)`` (no normalizer)."""
    norm, pre = doc.get("normalizer"), doc.get("pre_tokenizer")
    llama_norm = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": SPACE_MARKER},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE_MARKER}]}
    if pre is None and isinstance(norm, dict) and json.dumps(norm, sort_keys=True) == json.dumps(llama_norm, sort_keys=True):
        return True
    return norm is None and isinstance(pre, dict) and _is_metaspace(pre, ("always", "first"), False)


def _kept_spaces_mapping(model: dict[str, Any], vocab: Mapping[str, int], where: str) -> _Mapping:
    """SentencePiece's whole-text BPE as the chars scheme's word regex (cut
    where no token can span the cut) plus the dummy prefix."""
    for key in vocab:
        if SPACE_MARKER in key.lstrip(SPACE_MARKER):
            raise ParameterError(f"{where}: the token {key!r} spans a space after a word; bpeforge cannot cut "
                                 "this model's text into words without changing its ids")
    digits = set("0123456789")
    split_digits = all(len(k) == 1 or not digits & set(k) for k in vocab if not is_byte_token(k))
    scheme = {"type": "chars", "unk_token": model.get("unk_token") or "<unk>", "end_of_word_suffix": None,
              "character_coverage": 1.0, "dummy_prefix": True}
    pattern = SP_WORDS_DIGITS_PATTERN if split_digits else SP_WORDS_PATTERN
    return scheme, {"type": "regex", "pattern": pattern, "isolated": True}, False


def _add_byte_tokens(b: Builder, vocab: Mapping[str, int], special_text: set[str], where: str) -> None:
    """byte_fallback's 256 tokens ``<0x00>``..``<0xFF>``: all present, ids in
    byte order (as every converted SentencePiece model has them)."""
    names = BYTE_TOKENS
    missing = [n for n in names if n not in vocab]
    if missing:
        raise ModelFormatError(f"{where}: byte_fallback needs the 256 tokens <0x00>..<0xFF>; {missing[0]} "
                               f"(and {len(missing) - 1} more) missing")
    ids = [int(vocab[n]) for n in names]
    if ids != sorted(ids) or len(set(ids)) != 256:
        raise ModelFormatError(f"{where}: byte_fallback's tokens <0x00>..<0xFF> have ids out of byte order or shared")
    for n, ext in zip(names, ids):
        if n not in special_text:
            b.add_special(n, ext)
            special_text.add(n)


# ---- the vocabulary ---------------------------------------------------------


def _add_specials(b: Builder, added: list[dict[str, Any]], vocab: Mapping[str, int], scheme: dict[str, Any],
                  where: str) -> set[str]:
    """Every added token becomes a special token (HF matches them all in
    text); the unknown token goes first. Returns their texts."""
    special_text: set[str] = set()
    for t in added:
        if t.get("lstrip") or t.get("rstrip") or t.get("single_word"):
            raise ParameterError(
                f"{where}: added token {t['content']!r} uses lstrip/rstrip/single_word, which bpeforge's "
                "special tokens cannot express"
            )
        content = str(t["content"])
        ext = vocab.get(content, int(t["id"]))
        if scheme["type"] == "chars" and content == scheme["unk_token"]:
            b.specials.insert(0, content)
            b.special_ext.insert(0, ext)
        else:
            b.add_special(content, ext)
        special_text.add(content)
    return special_text


def _token_bytes_fn(byte_level: bool, rename_space: bool) -> Callable[[str], bytes | None]:
    """A vocabulary key's bytes in bpeforge's terms (None: not representable)."""

    def token_bytes(key: str) -> bytes | None:
        if byte_level:
            return _key_bytes(key)
        if rename_space:
            if SPACE_MARKER in key:
                return None
            key = key.replace(" ", SPACE_MARKER)
        return key.encode("utf-8")

    return token_bytes


def _add_unknown_token(b: Builder, model: dict[str, Any], vocab: Mapping[str, int], unk: str, special_text: set[str],
                       fresh: Iterator[int]) -> None:
    """The chars scheme needs an unknown token: the source's, or a new one."""
    if unk not in special_text:
        known = vocab.get(unk)
        ext = next(fresh) if known is None else known
        if known is None:
            b.note(f"the model has no unknown token; {unk!r} was added with id {ext} where the source drops "
                   "unknown characters")
        b.specials.insert(0, unk)
        b.special_ext.insert(0, ext)
        special_text.add(unk)


def _add_bytes(b: Builder, vocab: Mapping[str, int], special_text: set[str], fresh: Iterator[int]) -> list[int]:
    """The 256 bytes with the source's ids; returns the byte values it lacks
    (they get new ids after the source's)."""
    by_bytes: dict[bytes, int] = {}
    for k, ext in vocab.items():
        if k in special_text:
            continue
        t = _key_bytes(k)
        if t is not None and len(t) == 1:
            by_bytes[t] = ext
    missing = []
    for x in range(256):
        t = bytes([x])
        if t not in by_bytes:
            missing.append(x)
        b.add_base(t, by_bytes[t] if t in by_bytes else next(fresh))
    if missing:
        b.note(f"{len(missing)} byte values are not in the vocabulary; they got new ids after the source's "
               f"(the source maps them to its unknown token or drops them): {missing[:16]}")
    return missing


def _add_alphabet(b: Builder, vocab: Mapping[str, int], merges: list[tuple[str, str]], special_text: set[str],
                  suffix: str | None, token_bytes: Callable[[str], bytes | None]) -> list[str]:
    """The base characters: one-character tokens (a suffix aside) that no merge makes."""
    made = {left + right for left, right in merges}
    alphabet = []
    for key, ext in sorted(vocab.items(), key=lambda kv: kv[1]):
        if key in special_text or key in made:
            continue
        body = key[: -len(suffix)] if suffix and key.endswith(suffix) and len(key) > len(suffix) else key
        if len(body) != 1:
            continue
        t = token_bytes(key)
        if t is None:
            continue
        b.add_base(t, ext)
        alphabet.append(t.decode("utf-8"))
    return alphabet


def _add_merges(b: Builder, merges: list[tuple[str, str]], vocab: Mapping[str, int], special_text: set[str],
                token_bytes: Callable[[str], bytes | None], where: str) -> None:
    """The merges, in rank order, each with its result's id."""
    for left, right in merges:
        lt, rt, new = token_bytes(left), token_bytes(right), left + right
        if new not in vocab:
            raise ModelFormatError(f"{where}: merge {left!r} + {right!r} makes {new!r}, which is not in the vocabulary")
        if lt is None or rt is None or new in special_text:
            b.count("merges_not_representable")
            continue
        b.add_merge(lt, rt, vocab[new])


def _one_merge_per_token(merges: list[tuple[str, str]]) -> bool:
    """Each token made by one merge, after its parts (what bpeforge writes):
    the list is then taken as it is."""
    made: set[str] = set()
    for left, right in merges:
        new = left + right
        if new in made or (len(left) > 1 and left not in made) or (len(right) > 1 and right not in made):
            return False
        made.add(new)
    return True


def _add_sentencepiece_merges(b: Builder, merges: list[tuple[str, str]], vocab: Mapping[str, int],
                              special_text: set[str], where: str) -> None:
    """A converted SentencePiece model lists every split of every piece,
    ranked by the piece (transformers' converter): BPE over those merges is
    SentencePiece's score-ordered BPE, so each token's one merge is derived as
    the SentencePiece importer derives it, with the rank of the first merge
    making the token as its score."""
    from types import SimpleNamespace

    from .sentencepiece_import import _add_merges as derive

    rank: dict[str, int] = {}
    for k, (left, right) in enumerate(merges):
        new = left + right
        if new not in vocab:
            raise ModelFormatError(f"{where}: merge {left!r} + {right!r} makes {new!r}, which is not in the vocabulary")
        rank.setdefault(new, k)
    multi = [(vocab[t], SimpleNamespace(piece=t, score=-float(r))) for t, r in rank.items() if t not in special_text]
    derive(b, multi)


def _note_merge_losses(b: Builder, model: dict[str, Any]) -> None:
    """Warn about the merges that were dropped and, with ignore_merges, the
    tokens merge-list BPE does not reach."""
    if b.stats.get("duplicate_merges"):
        b.note(f"{b.stats['duplicate_merges']} merges make a token an earlier merge already made; bpeforge keeps "
               "the earlier one, so texts where the source applies the later pair encode differently")
    if b.stats.get("merges_with_missing_parts") or b.stats.get("merges_not_representable"):
        b.note(f"{b.stats.get('merges_with_missing_parts', 0) + b.stats.get('merges_not_representable', 0)} merges "
               "use tokens that no earlier merge makes; they were dropped")
    if model.get("ignore_merges"):
        bad = unreachable_tokens(b)
        if bad:
            b.count("unreachable_tokens", bad)
            b.note(f"ignore_merges=True: the source takes a piece that is a token whole; {bad} tokens are not "
                   "what merge-list BPE gives for their own text, so pieces equal to them encode differently")
