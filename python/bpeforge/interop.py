"""Exchange vocabularies with Hugging Face ``tokenizers``, ``tiktoken`` and
SentencePiece.

Export (a trained :class:`bpeforge.Tokenizer` to another library's format):

* :func:`to_huggingface`: a ``tokenizer.json`` (BPE model) that
  ``tokenizers.Tokenizer.from_file`` and
  ``transformers.PreTrainedTokenizerFast(tokenizer_file=...)`` load, giving
  bpeforge's ids. Every scheme and pre-tokenizer is expressible.
* :func:`to_tiktoken`: a ``.tiktoken`` rank file plus ``<file>.json`` beside it
  (pattern and special tokens); :func:`tiktoken_encoding` turns them (or a
  Tokenizer) into a ``tiktoken.Encoding``. Bytes scheme, regex presets and
  ``none`` only.
* :func:`to_sentencepiece`: a SentencePiece BPE ``.model`` for the chars
  scheme (``▁`` prefix mode, ``whitespace`` or ``none`` pre-tokenizer).

Import (a vocabulary trained elsewhere, encoded at bpeforge's speed with the
source's ids, kept through the model's ``ids`` field):
:func:`from_huggingface`, :func:`from_tiktoken`, :func:`from_sentencepiece`.

What another library does that bpeforge's contract cannot express raises
:class:`bpeforge.ParameterError` saying what; what imports with known,
narrow differences warns (:class:`InteropWarning`) and records the reason in
the model's ``metadata["import"]["notes"]``. The differences that remain are
listed in each function's docstring and measured by ``tests/test_interop.py``.

Special tokens: bpeforge matches special-token text only when allowed
(``encode(text, allowed_special="all")``); Hugging Face added tokens and
tiktoken's ``allowed_special="all"`` behave like that, so compare with it.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Union

from ._tokenizer import Tokenizer
from .errors import ModelFormatError, ParameterError

if TYPE_CHECKING:  # pragma: no cover
    import tiktoken

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "InteropWarning",
    "to_huggingface",
    "huggingface_json",
    "to_tiktoken",
    "tiktoken_encoding",
    "to_sentencepiece",
    "sentencepiece_model_proto",
    "from_huggingface",
    "from_tiktoken",
    "from_sentencepiece",
    "GPT2_PATTERN",
    "CL100K_PATTERN",
    "O200K_PATTERN",
    "WHITESPACE",
]

# The published patterns, exactly as crates/core/src/pretok.rs has them
# (tests/test_interop.py checks that they stay equal).
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
CL100K_PATTERN = (
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"
)
O200K_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# SuperBPE's stage-2 units (crates/core/src/pretok.rs SUPERWORD_PATTERN): an
# *isolated* split, the matches and the text between them are pieces, which
# is exactly HF's Split(behavior="Isolated"), as the SuperBPE release uses.
SUPERWORD_PATTERN = r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"
_PRESET_PATTERNS = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN, "superword": SUPERWORD_PATTERN}
_PATTERN_PRESETS = {v: k for k, v in _PRESET_PATTERNS.items()}
# tiktoken's names for the same patterns.
_TIKTOKEN_NAMES = {"gpt2": "gpt2", "r50k_base": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}

# The `whitespace` preset's separators: Python's str.isspace(), i.e. Unicode
# White_Space plus U+001C..U+001F (crates/core/src/pretok.rs `is_split_space`).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# Rust's char::is_whitespace (HF's WhitespaceSplit): the same without U+001C..U+001F.
_RUST_WHITESPACE = "".join(c for c in WHITESPACE if c not in "\x1c\x1d\x1e\x1f")
SPACE_MARKER = "\u2581"


class InteropWarning(UserWarning):
    """An import or export is exact except in a narrow, named case."""


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (as in tokenizers' ByteLevel)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


@functools.lru_cache(maxsize=1)
def _unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in _bytes_to_unicode().items()}


def _byte_key(token: bytes) -> str:
    table = _bytes_to_unicode()
    return "".join(table[b] for b in token)


def _utf8(token: bytes) -> str:
    return token.decode("utf-8")


def _key_bytes(key: str) -> bytes | None:
    table = _unicode_to_bytes()
    try:
        return bytes(table[c] for c in key)
    except KeyError:
        return None


def _class(chars: str) -> str:
    """A regex character class body listing ``chars`` (safe in Oniguruma and Rust)."""
    out = []
    for c in chars:
        if c in "\\]^-[":
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20 or ord(c) in (0x85,):
            out.append(f"\\x{{{ord(c):x}}}")
        else:
            out.append(c)
    return "".join(out)


_WS_CLASS = _class(WHITESPACE)
_RUST_WS_CLASS = _class(_RUST_WHITESPACE)


def _require(module: str, purpose: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ParameterError(f"{purpose} needs the '{module.split('.')[0]}' package (pip install {module.split('.')[0]})") from e


def _write_atomic(path: PathLike, data: bytes) -> None:
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ParameterError(f"cannot write {path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".bpeforge-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _rust_escape(text: str) -> str:
    """Escape ``text`` as a literal for Rust's regex (and fancy-regex)."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in text)


class _View:
    """A trained model's structure, from its JSON: internal ids, token bytes,
    external ids."""

    def __init__(self, tok: Tokenizer) -> None:
        if not isinstance(tok, Tokenizer):
            raise ParameterError(f"expected a bpeforge.Tokenizer, got {type(tok).__name__}")
        d = json.loads(tok.to_json())
        self.json = d
        scheme = d["scheme"]
        self.scheme: str = scheme["type"]
        self.unk_token: str | None = scheme.get("unk_token")
        self.suffix: str | None = scheme.get("end_of_word_suffix")
        pre = d["pretokenizer"]
        self.preset: str = pre["type"]
        self.pattern: str | None = pre.get("pattern") if self.preset == "regex" else _PRESET_PATTERNS.get(self.preset)
        # A custom regex whose gaps are pieces too (every regex trained here);
        # imported ones keep only the matches, as their source did.
        self.isolated: bool = bool(pre.get("isolated"))
        self.specials: list[str] = list(d["special_tokens"])
        self.alphabet: list[str] | None = d.get("alphabet")
        self.merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in d["merges"]]
        tokens: list[bytes] = [s.encode("utf-8") for s in self.specials]
        if self.scheme == "bytes":
            tokens.extend(bytes([b]) for b in range(256))
        else:
            tokens.extend(s.encode("utf-8") for s in self.alphabet or [])
        self.first_merge = len(tokens)
        for a, b in self.merges:
            tokens.append(tokens[a] + tokens[b])
        self.tokens = tokens
        ids = d.get("ids")
        self.ext: list[int] = list(ids) if ids is not None else list(range(len(tokens)))
        self.nspec = len(self.specials)

    @property
    def unk_id(self) -> int | None:
        if self.unk_token is None:
            return None
        return self.specials.index(self.unk_token)


# --------------------------------------------------------------------------
# export: Hugging Face tokenizers
# --------------------------------------------------------------------------


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


def _hf_regex_split(v: _View) -> dict[str, Any]:
    assert v.pattern is not None
    if v.preset == "regex" and not v.isolated:
        # An imported regex that drops the text between matches: keep the matches only.
        return _split(v.pattern, "Removed", True)
    return _split(v.pattern, "Isolated", False)


def huggingface_json(tok: Tokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` document for ``tok`` (see :func:`to_huggingface`)."""
    v = _View(tok)
    normalizer: dict[str, Any] | None = None
    end_of_word_suffix = None
    unk_token = None
    key: Callable[[bytes], str]
    if v.scheme == "bytes":
        key = _byte_key
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
    else:
        key = _utf8
        unk_token = v.unk_token
        if v.suffix is not None:
            if v.preset != "whitespace":  # the core refuses this too; kept for clarity
                raise ParameterError("end_of_word_suffix needs the whitespace pre-tokenizer")
            end_of_word_suffix = v.suffix
            pre = _split(f"[{_WS_CLASS}]+", "Removed", False)
            decoder = {"type": "BPEDecoder", "suffix": v.suffix}
        elif v.preset == "whitespace":
            normalizer = _WS_NORMALIZER
            pre = _seq([_split(_WS_WORDS, "Removed", True), _metaspace("never", False)])
            decoder = _metaspace("always", True)
        elif v.preset == "none":
            pre = _metaspace("never", False)
            decoder = _metaspace("never", False)
        else:
            pre = _seq([_hf_regex_split(v), _metaspace("never", False)])
            decoder = _metaspace("never", False)

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
    pairs = [(key(v.tokens[a]), key(v.tokens[b])) for a, b in v.merges]
    # "left right" strings load in every tokenizers version; the list form
    # (tokenizers >= 0.20) is needed only when a token contains a space,
    # which neither scheme produces (spaces are Ġ or ▁).
    merges: list[Any]
    if any(" " in x or " " in y for x, y in pairs):
        merges = [[x, y] for x, y in pairs]
    else:
        merges = [f"{x} {y}" for x, y in pairs]
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
            "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
            "merges": merges,
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
    _write_atomic(path, json.dumps(doc, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
    return path


# --------------------------------------------------------------------------
# export: tiktoken
# --------------------------------------------------------------------------


def _tiktoken_parts(tok: Tokenizer) -> tuple[dict[bytes, int], dict[str, int], str]:
    v = _View(tok)
    if v.scheme != "bytes":
        raise ParameterError("tiktoken is byte-level: only the bytes scheme exports to tiktoken (this model uses chars)")
    if v.preset == "whitespace":
        raise ParameterError(
            "tiktoken cannot express the whitespace pre-tokenizer: it prefixes each word with a space byte "
            "that is not in the text, and tiktoken pieces are always substrings of the text"
        )
    if v.preset == "regex" and v.isolated:
        raise ParameterError(
            "tiktoken cannot express this custom pre-tokenizer: bpeforge keeps the text between the regex's "
            "matches as pieces of their own, and tiktoken drops it; export to huggingface instead"
        )
    pattern = r"(?s:.+)" if v.preset == "none" else v.pattern
    assert pattern is not None
    merge_ranks = [v.ext[v.first_merge + k] for k in range(len(v.merges))]
    if any(b <= a for a, b in zip(merge_ranks, merge_ranks[1:])):
        raise ParameterError(
            "tiktoken applies merges by rank (= id): this vocabulary's ids (an imported numbering) "
            "do not increase with the merge order, so a rank file would encode differently"
        )
    ranks = {v.tokens[i]: v.ext[i] for i in range(v.nspec, len(v.tokens))}
    specials = {s: v.ext[i] for i, s in enumerate(v.specials)}
    return ranks, specials, pattern


def to_tiktoken(tok: Tokenizer, path: PathLike, *, name: str | None = None) -> tuple[str, str]:
    """Write ``tok`` as a tiktoken rank file ``path`` (``base64(token) rank``
    per line, rank = bpeforge id) plus ``path + ".json"`` with the pattern
    (``pat_str``) and the special tokens. Returns both paths; load them with
    :func:`tiktoken_encoding`.

    Bytes scheme only, with a regex preset, a custom regex or ``none``
    (pattern ``(?s:.+)``). tiktoken merges the adjacent pair whose
    concatenation has the lowest rank instead of following a merge list; with
    ranks in merge order this is the same on real text, except for a token
    that another pair of tokens also concatenates to (measured in
    tests/test_interop.py: no such line on multi-200k), and tiktoken takes a
    piece that is itself a token whole, even one BPE cannot reach.
    """
    ranks, specials, pattern = _tiktoken_parts(tok)
    path = os.fspath(path)
    lines = [f"{base64.b64encode(t).decode('ascii')} {r}\n" for t, r in sorted(ranks.items(), key=lambda kv: kv[1])]
    _write_atomic(path, "".join(lines).encode("ascii"))
    if name is None:
        name = os.path.basename(path)
        if name.endswith(".tiktoken"):
            name = name[: -len(".tiktoken")]
    meta = {"format": "bpeforge-tiktoken", "version": 1, "name": name, "pat_str": pattern, "special_tokens": specials}
    _write_atomic(path + ".json", json.dumps(meta, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
    return path, path + ".json"


def _read_tiktoken_file(path: PathLike) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                token, rank = line.split()
                ranks[base64.b64decode(token, validate=True)] = int(rank)
            except ValueError as e:
                raise ModelFormatError(f"{os.fspath(path)}, line {lineno}: not a tiktoken rank line ({e})") from e
    if not ranks:
        raise ModelFormatError(f"{os.fspath(path)}: no rank lines; a .tiktoken file has one 'base64-token rank' per line")
    return ranks


def _read_sidecar(path: PathLike) -> dict[str, Any] | None:
    side = os.fspath(path) + ".json"
    if not os.path.exists(side):
        return None
    try:
        with open(side, encoding="utf-8") as f:
            meta = json.load(f)
    except (UnicodeDecodeError, ValueError) as e:
        raise ModelFormatError(f"{side}: not a JSON sidecar of a .tiktoken file ({e})") from e
    if not isinstance(meta, dict) or not isinstance(meta.get("pat_str"), str):
        raise ModelFormatError(f"{side}: expected a JSON object with 'pat_str' and 'special_tokens'")
    return meta


def tiktoken_encoding(source: Tokenizer | PathLike, *, name: str | None = None) -> tiktoken.Encoding:
    """A ``tiktoken.Encoding`` from a Tokenizer or from the files
    :func:`to_tiktoken` wrote (``path`` and ``path + ".json"``)."""
    tiktoken_mod = _require("tiktoken", "tiktoken_encoding")
    if isinstance(source, Tokenizer):
        ranks, specials, pattern = _tiktoken_parts(source)
        name = name or "bpeforge"
    else:
        ranks = _read_tiktoken_file(source)
        meta = _read_sidecar(source)
        if meta is None:
            raise ParameterError(f"{os.fspath(source)}.json not found: it holds the pattern and special tokens")
        pattern = meta["pat_str"]
        specials = {str(k): int(v) for k, v in meta.get("special_tokens", {}).items()}
        name = name or meta.get("name") or "bpeforge"
    return tiktoken_mod.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)


# --------------------------------------------------------------------------
# export: SentencePiece
# --------------------------------------------------------------------------


def _sp_pb() -> Any:
    _require("sentencepiece", "SentencePiece interop")
    try:
        from sentencepiece import sentencepiece_model_pb2 as pb
    except ImportError as e:  # pragma: no cover - protobuf missing
        raise ParameterError(f"SentencePiece interop needs the 'protobuf' package (pip install protobuf): {e}") from e
    return pb


def _whitespace_rules() -> list[tuple[str, str]]:
    return [(c, " ") for c in WHITESPACE if c != " "]


@functools.lru_cache(maxsize=1)
def _sp_whitespace_charsmap() -> bytes:
    """A precompiled SentencePiece charsmap mapping every ``str.isspace()``
    character to U+0020 (and nothing else)."""
    spm = _require("sentencepiece", "SentencePiece interop")
    pb = _sp_pb()
    spm.set_min_log_level(2)
    norm = spm.SentencePieceNormalizer(norm_map=_whitespace_rules())
    spec = pb.NormalizerSpec()
    spec.ParseFromString(norm.serialized_normalizer_spec())
    return bytes(spec.precompiled_charsmap)


_SP_DEFAULT_CONTROL = ("<s>", "</s>", "<pad>")


def sentencepiece_model_proto(tok: Tokenizer, *, whitespace: str = "all", control_tokens: Iterable[str] | None = None) -> Any:
    """The ``ModelProto`` for ``tok`` (see :func:`to_sentencepiece`)."""
    pb = _sp_pb()
    v = _View(tok)
    if v.scheme != "chars":
        raise ParameterError(
            "only the chars scheme exports to SentencePiece (its BPE works on characters; "
            "byte_fallback is not a byte-level alphabet)"
        )
    if v.suffix is not None:
        raise ParameterError(
            f"SentencePiece cannot express the end-of-word suffix {v.suffix!r}: it marks words with a ▁ prefix "
            "(treat_whitespace_as_suffix moves ▁ to the word's end, which is not a per-character suffix symbol)"
        )
    if v.preset not in ("whitespace", "none"):
        raise ParameterError(
            f"SentencePiece has no regex pre-tokenizer: only the 'whitespace' and 'none' pre-tokenizers export "
            f"to it (this model uses {v.preset if v.preset != 'regex' else 'a custom regex'})"
        )
    if whitespace not in ("all", "space"):
        raise ParameterError(f"whitespace must be 'all' or 'space', got {whitespace!r}")
    n = len(v.tokens)
    order = sorted(range(n), key=lambda i: v.ext[i])
    if [v.ext[i] for i in order] != list(range(n)):
        raise ParameterError(
            "SentencePiece ids are dense (0..n-1); this vocabulary's ids (an imported numbering) have gaps"
        )
    control = set(_SP_DEFAULT_CONTROL).intersection(v.specials) if control_tokens is None else set(control_tokens)
    unknown = control - set(v.specials)
    if unknown:
        raise ParameterError(f"control_tokens names tokens that are not special tokens of this model: {sorted(unknown)!r}")
    unk = v.unk_id
    first_merge, nmerges = v.first_merge, len(v.merges)
    seen: dict[str, int] = {}
    m = pb.ModelProto()
    for i in order:
        piece = m.pieces.add()
        text = v.tokens[i].decode("utf-8")
        if text in seen:
            raise ParameterError(f"tokens {seen[text]} and {v.ext[i]} have the same text {text!r}; SentencePiece pieces must be distinct")
        seen[text] = v.ext[i]
        piece.piece = text
        if i < v.nspec:
            piece.score = 0.0
            if i == unk:
                piece.type = pb.ModelProto.SentencePiece.UNKNOWN
            elif text in control:
                piece.type = pb.ModelProto.SentencePiece.CONTROL
            else:
                piece.type = pb.ModelProto.SentencePiece.USER_DEFINED
        elif i >= first_merge:
            piece.type = pb.ModelProto.SentencePiece.NORMAL
            piece.score = -float(i - first_merge)  # merge rank: earlier merges score higher
        else:
            piece.type = pb.ModelProto.SentencePiece.NORMAL
            piece.score = -float(nmerges + (i - v.nspec))  # characters below every merge, as SentencePiece does
    ts = m.trainer_spec
    ts.model_type = pb.TrainerSpec.BPE
    ts.vocab_size = n
    ts.character_coverage = float(v.json["scheme"].get("character_coverage", 1.0))
    ts.split_by_whitespace = v.preset == "whitespace"
    ts.byte_fallback = False
    ts.treat_whitespace_as_suffix = False

    def special_id(name: str) -> int:
        if name in v.specials and name in control:
            return v.ext[v.specials.index(name)]
        return -1

    assert unk is not None and v.unk_token is not None
    ts.unk_id = v.ext[unk]
    ts.unk_piece = v.unk_token
    ts.bos_id, ts.eos_id, ts.pad_id = special_id("<s>"), special_id("</s>"), special_id("<pad>")
    ns = m.normalizer_spec
    ns.escape_whitespaces = True
    if v.preset == "whitespace":
        ns.add_dummy_prefix = True
        ns.remove_extra_whitespaces = True
        if whitespace == "all":
            ns.name = "user_defined"
            ns.precompiled_charsmap = _sp_whitespace_charsmap()
        else:
            ns.name = "identity"
    else:
        ns.name = "identity"
        ns.add_dummy_prefix = False
        ns.remove_extra_whitespaces = False
    m.denormalizer_spec.name = "identity"
    m.denormalizer_spec.add_dummy_prefix = False
    m.denormalizer_spec.remove_extra_whitespaces = False
    m.denormalizer_spec.escape_whitespaces = False
    return m


def to_sentencepiece(
    tok: Tokenizer,
    path: PathLike,
    *,
    whitespace: str = "all",
    control_tokens: Iterable[str] | None = None,
) -> str:
    """Write ``tok`` (chars scheme, ``▁`` prefix mode, ``whitespace`` or
    ``none`` pre-tokenizer) as a SentencePiece BPE ``.model``. Returns ``path``.

    Pieces are in bpeforge id order: ``<unk>`` (UNKNOWN), the special tokens
    (CONTROL for those in ``control_tokens``, default ``<s>``, ``</s>``,
    ``<pad>`` when present, which also become bos/eos/pad; USER_DEFINED for
    the others), the alphabet and the merges (NORMAL; a merge's score is minus
    its rank, characters score below every merge). The normalizer is the
    identity except, for the ``whitespace`` preset with ``whitespace="all"``
    (default), a charsmap mapping every ``str.isspace()`` character to a space,
    so that SentencePiece's ``add_dummy_prefix`` and ``remove_extra_whitespaces``
    cut words exactly where bpeforge does. ``whitespace="space"`` writes the
    pure identity normalizer: then only U+0020 separates words.

    ``sentencepiece.SentencePieceProcessor(model_file=path).encode(text)``
    gives ``tok.encode(text, allowed_special=<the USER_DEFINED ones>)``,
    except that (1) SentencePiece merges a run of unknown characters into one
    ``<unk>`` where bpeforge gives one per character; (2) SentencePiece adds
    the ``▁`` prefix only at the start of the text, not after a special token
    in the middle of it; (3) CONTROL tokens' text is never matched in text.
    """
    m = sentencepiece_model_proto(tok, whitespace=whitespace, control_tokens=control_tokens)
    path = os.fspath(path)
    _write_atomic(path, m.SerializeToString())
    return path


# --------------------------------------------------------------------------
# import: shared
# --------------------------------------------------------------------------


class _Builder:
    """Assembles an imported model: internal ids (specials, base, merges) and
    the source's ids for each."""

    def __init__(self, scheme: dict[str, Any], pretokenizer: dict[str, Any], source: str) -> None:
        self.scheme = scheme
        self.pretokenizer = pretokenizer
        self.source = source
        self.specials: list[str] = []
        self.special_ext: list[int] = []
        self.base: list[bytes] = []
        self.base_ext: list[int] = []
        self.merges: list[tuple[int, int]] = []
        self.merge_ext: list[int] = []
        self.ids: dict[bytes, int] = {}  # non-special token bytes -> internal index
        self.notes: list[str] = []
        self.stats: dict[str, int] = {}
        # One past the largest id the source file uses (tokens bpeforge could
        # not represent included): extending the model starts new ids here.
        self.source_id_end = 0

    def note(self, text: str, warn: bool = True) -> None:
        self.notes.append(text)
        if warn:
            warnings.warn(f"{self.source}: {text}", InteropWarning, stacklevel=3)

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def add_special(self, text: str, ext: int) -> None:
        self.specials.append(text)
        self.special_ext.append(ext)

    def add_base(self, token: bytes, ext: int) -> None:
        self.ids[token] = len(self.base)
        self.base.append(token)
        self.base_ext.append(ext)

    def add_merge(self, left: bytes, right: bytes, ext: int) -> bool:
        """Adds a merge; False (and counted) when it cannot be represented."""
        a, b = self.ids.get(left), self.ids.get(right)
        if a is None or b is None:
            self.count("merges_with_missing_parts")
            return False
        new = left + right
        if new in self.ids:
            self.count("duplicate_merges")
            return False
        self.ids[new] = len(self.base) + len(self.merges)
        self.merges.append((a, b))
        self.merge_ext.append(ext)
        return True

    def build(self, metadata: dict[str, Any], alphabet: list[str] | None = None) -> Tokenizer:
        ns = len(self.specials)
        ext = self.special_ext + self.base_ext + self.merge_ext
        doc = {
            "format": "bpeforge-model",
            "version": 1,
            "scheme": self.scheme,
            "pretokenizer": self.pretokenizer,
            "special_tokens": self.specials,
            "alphabet": alphabet,
            "merges": [[a + ns, b + ns] for a, b in self.merges],
            "merge_counts": [],
            "ids": ext,
            "metadata": {"import": {**metadata, "notes": self.notes, "stats": self.stats,
                                    "source_id_end": self.source_id_end}},
        }
        if len(set(ext)) != len(ext):
            raise ModelFormatError(f"{self.source}: two tokens share one id; the vocabulary is inconsistent")
        return Tokenizer.from_json(json.dumps(doc, ensure_ascii=False))



def _pretokenizer_for_pattern(pattern: str) -> dict[str, Any]:
    preset = _PATTERN_PRESETS.get(pattern)
    return {"type": preset} if preset else {"type": "regex", "pattern": pattern}


def _unreachable(b: _Builder) -> int:
    """How many merged tokens merge-list BPE cannot produce from their own
    symbols (a library that looks whole pieces up first would give them)."""
    ranks = {(a, c): k for k, (a, c) in enumerate(b.merges)}
    nb = len(b.base)
    tokens: list[list[int]] = [[i] for i in range(nb)]
    for a, c in b.merges:
        tokens.append(tokens[a] + tokens[c])
    bad = 0
    for k in range(len(b.merges)):
        syms = list(tokens[nb + k])
        while len(syms) > 1:
            best = None
            for i in range(len(syms) - 1):
                r = ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            r, i = best
            syms[i : i + 2] = [nb + r]
        if syms != [nb + k]:
            bad += 1
    return bad


# --------------------------------------------------------------------------
# import: Hugging Face
# --------------------------------------------------------------------------


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


def _foreign_file_errors(kind: str) -> Callable[[Callable[..., Tokenizer]], Callable[..., Tokenizer]]:
    """Importers read files written by other programs: whatever the parsing of
    such a file raises (bad UTF-8, deep nesting, wrong types, numbers such as
    Infinity that no id can hold, a library's own RuntimeError) becomes a ModelFormatError naming the source, so callers
    catch one bpeforge error class. bpeforge's own errors pass unchanged."""

    def wrap(fn: Callable[..., Tokenizer]) -> Callable[..., Tokenizer]:
        @functools.wraps(fn)
        def guarded(source: Any, *args: Any, **kwargs: Any) -> Tokenizer:
            try:
                return fn(source, *args, **kwargs)
            except (ModelFormatError, ParameterError):
                raise
            except (UnicodeError, RecursionError, AttributeError, KeyError, IndexError, TypeError, ValueError, ArithmeticError,
                    RuntimeError) as e:
                where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
                raise ModelFormatError(f"{where}: not a usable {kind} ({type(e).__name__}: {e})") from e

        return guarded

    return wrap


@_foreign_file_errors("Hugging Face tokenizer.json")
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
      ``Whitespace`` (then no ``▁`` marker), ``end_of_word_suffix``.

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
    * ``fuse_unk=True``: a run of unknown characters is one ``<unk>`` there;
    * a normalizer other than the one :func:`to_huggingface` writes raises,
      unless ``ignore_normalizer=True`` (ids then match on text the normalizer
      leaves unchanged).
    """
    doc, where = _load_hf(source)
    model = doc.get("model") or {}
    if model.get("type", "BPE") != "BPE" or "merges" not in model:
        raise ParameterError(f"{where}: not a BPE model (model type {model.get('type')!r}); only BPE vocabularies import")
    if model.get("continuing_subword_prefix"):
        raise ParameterError(f"{where}: continuing_subword_prefix {model['continuing_subword_prefix']!r} has no bpeforge equivalent")
    vocab: dict[str, int] = {str(k): int(v) for k, v in model["vocab"].items()}
    raw_merges = model["merges"]
    merges: list[tuple[str, str]] = []
    for m in raw_merges:
        if isinstance(m, str):
            parts = m.split(" ")
            if len(parts) != 2:
                raise ModelFormatError(f"{where}: merge {m!r} is not two tokens separated by one space")
            merges.append((parts[0], parts[1]))
        else:
            merges.append((str(m[0]), str(m[1])))
    norm = doc.get("normalizer")
    steps = _steps(doc.get("pre_tokenizer"))
    types = [s.get("type") for s in steps]
    suffix = model.get("end_of_word_suffix") or None
    byte_level = "ByteLevel" in types

    notes_pending: list[str] = []
    ws_normalizer = _is_ws_normalizer(norm)
    if norm is not None and not ws_normalizer:
        if not ignore_normalizer:
            raise ParameterError(
                f"{where}: the normalizer {norm.get('type')!r} has no bpeforge equivalent (bpeforge does not "
                "normalize text); pass ignore_normalizer=True to import anyway: ids then match only on text "
                "the normalizer leaves unchanged"
            )
        notes_pending.append(f"normalizer {norm.get('type')!r} ignored: ids differ on text it would change")
        ws_normalizer = False

    def fail(what: str) -> ParameterError:
        return ParameterError(f"{where}: the pre-tokenizer {types!r} {what}")

    rename_space = False  # chars without Metaspace: spaces inside tokens are bpeforge's ▁
    if byte_level:
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
            pretok: dict[str, Any] = {"type": "whitespace"}
        elif not rest:
            pretok = {"type": "gpt2"} if bl.get("use_regex", True) else {"type": "none"}
        elif len(rest) == 1 and rest[0].get("type") == "Split" and not bl.get("use_regex", True):
            pretok = _pretokenizer_for_pattern(_split_regex(rest[0], where))
        else:
            raise fail("cannot be expressed as one bpeforge pre-tokenizer (supported: ByteLevel; Split + ByteLevel)")
        scheme: dict[str, Any] = {"type": "bytes"}
    else:
        if model.get("byte_fallback"):
            raise ParameterError(f"{where}: byte_fallback has no equivalent in bpeforge's chars scheme")
        unk_token = model.get("unk_token")
        scheme = {"type": "chars", "unk_token": unk_token or "<unk>", "end_of_word_suffix": suffix, "character_coverage": 1.0}
        if suffix is not None:
            if len(steps) == 1 and steps[0].get("type") == "WhitespaceSplit":
                notes_pending.append("WhitespaceSplit does not split at U+001C..U+001F; bpeforge's whitespace preset does")
            elif not (len(steps) == 1 and steps[0].get("type") == "Split"
                      and _split_regex(steps[0], where) == f"(?s:(?:(?!(?:[{_WS_CLASS}]+)).)+)"):
                raise fail(f"with end_of_word_suffix={suffix!r}: bpeforge's suffix mode needs whitespace splitting")
            pretok = {"type": "whitespace"}
        elif steps and _is_metaspace(steps[-1], ("never",), False):
            rest = steps[:-1]
            if ws_normalizer:
                if len(rest) != 1 or not _is_ws_words(rest[0]):
                    raise fail("with this normalizer is not the whitespace form bpeforge writes")
                pretok = {"type": "whitespace"}
            elif not rest:
                pretok = {"type": "none"}
            elif len(rest) == 1 and rest[0].get("type") == "Split":
                pretok = _pretokenizer_for_pattern(_split_regex(rest[0], where))
            else:
                raise fail("cannot be expressed as one bpeforge pre-tokenizer")
        elif len(steps) == 1 and _is_metaspace(steps[0], ("always", "first"), True) and not ws_normalizer:
            pretok = {"type": "whitespace"}
            notes_pending.append(
                "Metaspace(split=True) keeps runs of spaces as '▁' pieces and does not split at tabs or other "
                "whitespace; imported as bpeforge's whitespace preset, so ids differ on texts with leading, "
                "trailing or repeated spaces or with other whitespace characters"
            )
        elif not ws_normalizer and len(steps) == 1 and steps[0].get("type") in ("WhitespaceSplit", "Whitespace"):
            pretok = {"type": "regex", "pattern": f"[^{_RUST_WS_CLASS}]+"} if types[0] == "WhitespaceSplit" \
                else {"type": "regex", "pattern": r"\w+|[^\w\s]+"}
            rename_space = True
        elif not ws_normalizer and len(steps) == 1 and steps[0].get("type") == "Split":
            pretok = _pretokenizer_for_pattern(_split_regex(steps[0], where))
            rename_space = True
        else:
            raise fail("cannot be expressed as a bpeforge pre-tokenizer")

    b = _Builder(scheme, pretok, where)
    for n in notes_pending:
        b.note(n)
    if model.get("dropout"):
        b.note(f"BPE dropout {model['dropout']} ignored (use encode(..., dropout=p) in bpeforge)")

    # Special tokens: every added token (HF matches them all in text).
    added = sorted(doc.get("added_tokens") or [], key=lambda t: int(t["id"]))
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

    def token_bytes(key: str) -> bytes | None:
        if byte_level:
            return _key_bytes(key)
        if rename_space:
            if SPACE_MARKER in key:
                return None
            key = key.replace(" ", SPACE_MARKER)
        return key.encode("utf-8")

    used_ext = set(vocab.values()) | {int(t["id"]) for t in added}
    next_free = [max(used_ext) + 1 if used_ext else 0]
    b.source_id_end = next_free[0]

    def fresh() -> int:
        v = next_free[0]
        next_free[0] += 1
        return v

    alphabet: list[str] | None = None
    missing: list[int] = []
    if scheme["type"] == "chars":
        unk = scheme["unk_token"]
        if unk not in special_text:
            known = vocab.get(unk)
            ext = fresh() if known is None else known
            if known is None:
                b.note(f"the model has no unknown token; {unk!r} was added with id {ext} where the source drops "
                       "unknown characters")
            b.specials.insert(0, unk)
            b.special_ext.insert(0, ext)
            special_text.add(unk)
        if model.get("fuse_unk"):
            b.note("fuse_unk=True: the source gives one unknown token for a run of unknown characters, bpeforge one per character")

    # Base symbols.
    made = {l + r for l, r in merges}
    if byte_level:
        by_bytes: dict[bytes, int] = {}
        for k, ext in vocab.items():
            if k in special_text:
                continue
            t = _key_bytes(k)
            if t is not None and len(t) == 1:
                by_bytes[t] = ext
        for x in range(256):
            t = bytes([x])
            if t not in by_bytes:
                missing.append(x)
            b.add_base(t, by_bytes[t] if t in by_bytes else fresh())
        if missing:
            b.note(f"{len(missing)} byte values are not in the vocabulary; they got new ids after the source's "
                   f"(the source maps them to its unknown token or drops them): {missing[:16]}")
    else:
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
    # Merges, in rank order.
    for left, right in merges:
        lt, rt, new = token_bytes(left), token_bytes(right), left + right
        if new not in vocab:
            raise ModelFormatError(f"{where}: merge {left!r} + {right!r} makes {new!r}, which is not in the vocabulary")
        if lt is None or rt is None or new in special_text:
            b.count("merges_not_representable")
            continue
        b.add_merge(lt, rt, vocab[new])
    dropped_tokens = sum(1 for k in vocab if k not in special_text) - (len(b.base) - len(missing)) - len(b.merges)
    if dropped_tokens:
        b.count("tokens_not_reachable_by_merges", dropped_tokens)
    if b.stats.get("duplicate_merges"):
        b.note(f"{b.stats['duplicate_merges']} merges make a token an earlier merge already made; bpeforge keeps "
               "the earlier one, so texts where the source applies the later pair encode differently")
    if b.stats.get("merges_with_missing_parts") or b.stats.get("merges_not_representable"):
        b.note(f"{b.stats.get('merges_with_missing_parts', 0) + b.stats.get('merges_not_representable', 0)} merges "
               "use tokens that no earlier merge makes; they were dropped")
    if model.get("ignore_merges"):
        bad = _unreachable(b)
        if bad:
            b.count("unreachable_tokens", bad)
            b.note(f"ignore_merges=True: the source takes a piece that is a token whole; {bad} tokens are not "
                   "what merge-list BPE gives for their own text, so pieces equal to them encode differently")
    meta = {"format": "huggingface", "source": where, "model": {k: model.get(k) for k in
            ("unk_token", "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges")}}
    return b.build(meta, alphabet)


# --------------------------------------------------------------------------
# import: tiktoken
# --------------------------------------------------------------------------


def _rank_parts(ranks: Mapping[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
    """tiktoken's algorithm on ``token`` using only ranks below ``max_rank``."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 1:
        best_rank, best_i = None, -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best_rank is None or r < best_rank):
                best_rank, best_i = r, i
        if best_rank is None:
            break
        parts[best_i : best_i + 2] = [parts[best_i] + parts[best_i + 1]]
    return parts


@_foreign_file_errors("tiktoken vocabulary")
def from_tiktoken(
    source: Any,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> Tokenizer:
    """Import a tiktoken vocabulary: a ``tiktoken.Encoding``, a ``.tiktoken``
    rank file (with ``<file>.json`` beside it as :func:`to_tiktoken` writes, or
    ``pattern`` and ``special_tokens`` given here), or a ``{bytes: rank}``
    dict. ``pattern`` may also be a preset name (``gpt2``, ``cl100k_base``,
    ``o200k_base``). Ids are the ranks.

    The merge list is derived from the ranks: each multi-byte token's two
    parts are what tiktoken's own algorithm makes of its bytes with the lower
    ranks. Tokens that do not come out as two parts cannot be a merge and are
    dropped (counted in ``metadata["import"]["stats"]``). tiktoken merges by
    the rank of a pair's concatenation and looks whole pieces up first, so a
    text can still encode differently where another pair of tokens
    concatenates to a token, or a piece is a token that BPE does not reach
    (warned about, with the count).
    """
    name = "tiktoken"
    if hasattr(source, "_mergeable_ranks") and hasattr(source, "_pat_str"):
        ranks = dict(source._mergeable_ranks)
        pattern = pattern or source._pat_str
        special_tokens = dict(source._special_tokens) if special_tokens is None else special_tokens
        name = f"tiktoken.Encoding({getattr(source, 'name', '?')})"
    elif isinstance(source, Mapping):
        ranks = {bytes(k): int(v) for k, v in source.items()}
    else:
        name = os.fspath(source)
        ranks = _read_tiktoken_file(source)
        meta = _read_sidecar(source)
        if meta is not None:
            pattern = pattern or meta["pat_str"]
            if special_tokens is None:
                special_tokens = {str(k): int(v) for k, v in meta.get("special_tokens", {}).items()}
    if pattern is None:
        raise ParameterError(f"{name}: the pre-tokenizer pattern is unknown; pass pattern= (a regex or gpt2/cl100k_base/o200k_base)")
    if pattern in _TIKTOKEN_NAMES:
        pattern = _PRESET_PATTERNS[_TIKTOKEN_NAMES[pattern]]
    elif pattern in _PRESET_PATTERNS:
        pattern = _PRESET_PATTERNS[pattern]
    pretok = {"type": "none"} if pattern == r"(?s:.+)" else _pretokenizer_for_pattern(pattern)
    special_tokens = dict(special_tokens or {})
    clash = set(special_tokens.values()) & set(ranks.values())
    if clash:
        raise ParameterError(f"{name}: special token ids {sorted(clash)[:5]} are also ranks of ordinary tokens")
    b = _Builder({"type": "bytes"}, pretok, name)
    for s, i in sorted(special_tokens.items(), key=lambda kv: kv[1]):
        b.add_special(s, int(i))
    next_id = max(list(ranks.values()) + list(special_tokens.values()), default=-1) + 1
    b.source_id_end = next_id
    missing = []
    for x in range(256):
        t = bytes([x])
        if t in ranks:
            b.add_base(t, ranks[t])
        else:
            b.add_base(t, next_id)
            next_id += 1
            missing.append(x)
    if missing:
        b.note(f"{len(missing)} byte values have no rank; they got new ids (tiktoken cannot encode them): {missing[:16]}")
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = _rank_parts(ranks, token, rank)
        if len(parts) != 2:
            b.count("tokens_not_reachable_by_merges")
            continue
        b.add_merge(parts[0], parts[1], rank)
    if b.stats.get("tokens_not_reachable_by_merges"):
        b.note(f"{b.stats['tokens_not_reachable_by_merges']} tokens are not two lower-ranked tokens; they were dropped "
               "(tiktoken gives them only for a piece equal to the whole token)")
    bad = _unreachable(b)
    if bad:
        b.count("unreachable_tokens", bad)
        b.note(f"{bad} tokens are not what merge-list BPE makes of their own bytes; tiktoken gives them for a "
               "piece equal to the whole token, bpeforge the BPE result")
    return b.build({"format": "tiktoken", "source": name, "pat_str": pattern})


# --------------------------------------------------------------------------
# import: SentencePiece
# --------------------------------------------------------------------------


def _load_sp(source: Any) -> tuple[Any, str]:
    pb = _sp_pb()
    if hasattr(source, "SerializeToString") and hasattr(source, "pieces"):
        return source, "ModelProto"
    if hasattr(source, "serialized_model_proto"):  # SentencePieceProcessor
        m = pb.ModelProto()
        m.ParseFromString(source.serialized_model_proto())
        return m, "SentencePieceProcessor"
    if isinstance(source, (bytes, bytearray)):
        data, where = bytes(source), "<bytes>"
    else:
        where = os.fspath(source)
        with open(where, "rb") as f:
            data = f.read()
    m = pb.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError
        raise ModelFormatError(f"{where}: not a SentencePiece model ({e})") from e
    if not m.pieces:
        raise ModelFormatError(f"{where}: not a SentencePiece model (no pieces)")
    return m, where


def _sp_normalizer_rules(m: Any) -> list[tuple[str, str]] | None:
    """The normalizer's rules, or None for the identity."""
    if not m.normalizer_spec.precompiled_charsmap:
        return None
    spm = _require("sentencepiece", "from_sentencepiece")
    spm.set_min_log_level(2)
    norm = spm.SentencePieceNormalizer(normalizer_spec=m.normalizer_spec.SerializeToString())
    return [(str(a), str(c)) for a, c in norm.decompile()]


@_foreign_file_errors("SentencePiece model")
def from_sentencepiece(source: Any, *, ignore_normalizer: bool = False) -> Tokenizer:
    """Import a SentencePiece BPE model (a ``.model`` path, its bytes, a
    ``ModelProto`` or a ``SentencePieceProcessor``) into the chars scheme.
    Ids are SentencePiece's.

    ``add_dummy_prefix`` + ``remove_extra_whitespaces`` (SentencePiece's
    defaults) become the ``whitespace`` pre-tokenizer, neither of them
    ``none``. Exact when the normalizer maps every ``str.isspace()``
    character to a space and does nothing else (what :func:`to_sentencepiece`
    writes); with the identity normalizer, SentencePiece separates words only
    at U+0020, so texts with tabs or other whitespace encode differently
    (warned). Other normalizers (nmt_nfkc, ...) raise unless
    ``ignore_normalizer=True``. UNKNOWN becomes bpeforge's unknown token,
    CONTROL and USER_DEFINED pieces special tokens (SentencePiece never matches
    CONTROL text, and always matches USER_DEFINED text: compare with
    ``allowed_special`` = the USER_DEFINED pieces). Merges are derived from the
    scores: each multi-character piece's two parts are what SentencePiece's
    BPE makes of it with the higher-scored pieces. SentencePiece also merges a
    run of unknown characters into one ``<unk>``; bpeforge gives one per
    character.
    """
    pb = _sp_pb()
    m, where = _load_sp(source)
    ts, ns = m.trainer_spec, m.normalizer_spec
    if ts.model_type != pb.TrainerSpec.BPE:
        kind = pb.TrainerSpec.ModelType.Name(ts.model_type)
        raise ParameterError(f"{where}: a SentencePiece {kind} model; only BPE models import into bpeforge")
    S = pb.ModelProto.SentencePiece
    if any(p.type == S.BYTE for p in m.pieces):
        raise ParameterError(f"{where}: the model uses byte_fallback (BYTE pieces), which bpeforge's chars scheme cannot express")
    if ts.treat_whitespace_as_suffix:
        raise ParameterError(f"{where}: treat_whitespace_as_suffix has no bpeforge equivalent")
    if not ns.escape_whitespaces:
        raise ParameterError(f"{where}: escape_whitespaces=false (spaces stay spaces) has no bpeforge equivalent")
    if ns.add_dummy_prefix and ns.remove_extra_whitespaces:
        pretok: dict[str, Any] = {"type": "whitespace"}
    elif not ns.add_dummy_prefix and not ns.remove_extra_whitespaces:
        pretok = {"type": "none"}
    else:
        raise ParameterError(
            f"{where}: add_dummy_prefix={ns.add_dummy_prefix} with remove_extra_whitespaces="
            f"{ns.remove_extra_whitespaces} matches no bpeforge pre-tokenizer (both true: whitespace; both false: none)"
        )
    notes: list[str] = []
    rules = _sp_normalizer_rules(m)
    ours = set(_whitespace_rules())
    if rules is None:
        if pretok["type"] == "whitespace":
            notes.append("identity normalizer: SentencePiece separates words only at U+0020, bpeforge at all "
                         "whitespace; texts with tabs or other whitespace characters encode differently")
    elif pretok["type"] == "whitespace" and set(rules) <= ours:
        if set(rules) != ours:
            missing = sorted(ord(a) for a, _ in ours - set(rules))
            notes.append(f"the normalizer maps only some whitespace to spaces; texts with U+{missing[0]:04X} "
                         f"(and {len(missing) - 1} more) encode differently")
    elif not ignore_normalizer:
        raise ParameterError(
            f"{where}: the normalizer ({ns.name or 'precompiled'}, {len(rules)} rules) has no bpeforge equivalent "
            "(bpeforge does not normalize text); pass ignore_normalizer=True to import anyway: ids then match only "
            "on text the normalizer leaves unchanged"
        )
    else:
        notes.append(f"normalizer {ns.name!r} ignored: ids differ on text it would change")

    pieces = list(m.pieces)
    unk = [i for i, p in enumerate(pieces) if p.type == S.UNKNOWN]
    if len(unk) != 1:
        raise ModelFormatError(f"{where}: {len(unk)} UNKNOWN pieces (SentencePiece requires exactly one)")
    unk_piece = pieces[unk[0]].piece
    scheme = {"type": "chars", "unk_token": unk_piece, "end_of_word_suffix": None, "character_coverage": float(ts.character_coverage or 1.0)}
    b = _Builder(scheme, pretok, where)
    b.source_id_end = len(pieces)
    for n in notes:
        b.note(n)
    b.add_special(unk_piece, unk[0])
    user_defined = []
    for i, p in enumerate(pieces):
        if p.type in (S.CONTROL, S.USER_DEFINED):
            b.add_special(p.piece, i)
            if p.type == S.USER_DEFINED:
                user_defined.append(p.piece)
    normal = [(i, p) for i, p in enumerate(pieces) if p.type == S.NORMAL]
    alphabet = []
    for i, p in normal:
        if len(p.piece) == 1:
            b.add_base(p.piece.encode("utf-8"), i)
            alphabet.append(p.piece)
    # Merge order: score descending, then id (SentencePiece breaks score ties by position).
    multi = sorted(((i, p) for i, p in normal if len(p.piece) > 1), key=lambda ip: (-ip[1].score, ip[0]))
    prio = {p.piece: k for k, (_, p) in enumerate(multi)}
    if len({p.score for _, p in multi}) != len(multi):
        b.note("some pieces share a score; SentencePiece then prefers the leftmost pair, bpeforge the lower id")
    for k, (i, p) in enumerate(multi):
        syms = list(p.piece)
        while len(syms) > 1:
            best = None
            for j in range(len(syms) - 1):
                r = prio.get(syms[j] + syms[j + 1])
                if r is not None and r < k and (best is None or r < best[0]):
                    best = (r, j)
            if best is None:
                break
            _, j = best
            syms[j : j + 2] = [syms[j] + syms[j + 1]]
        if len(syms) != 2:
            b.count("tokens_not_reachable_by_merges")
            continue
        b.add_merge(syms[0].encode("utf-8"), syms[1].encode("utf-8"), i)
    if b.stats.get("tokens_not_reachable_by_merges"):
        b.note(f"{b.stats['tokens_not_reachable_by_merges']} pieces are not two higher-scored pieces; dropped")
    meta = {"format": "sentencepiece", "source": where, "user_defined": user_defined,
            "control": [p.piece for p in pieces if p.type == S.CONTROL]}
    return b.build(meta, alphabet)
