"""Export to Hugging Face ``tokenizers``: a ``tokenizer.json`` holding a BPE
model with bpeforge's ids, merges, pre-tokenizer and special tokens.

The pipeline pieces (``_WS_NORMALIZER``, ``_WS_WORDS``, ``_metaspace``, ...)
are also what :mod:`.huggingface_import` recognises as bpeforge's own output.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable
from typing import Any

from .._io import check_output, check_side_file, write_atomic
from .._normalizers import name_of
from ..errors import OutputError, ParameterError
from .chat_templates import chat_template_text
from ._common import ExportedModel, _WS_CLASS, SPACE_MARKER, InteropWarning, ModelView, PathLike, _byte_key, _rust_escape, _utf8

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
    """Chars models: ``▁`` through Metaspace, or the end-of-word suffix; the
    decoder from :func:`_chars_decoder`; a normalizer (nmt_nfkc, ...) goes first."""
    normalizer, pre = _chars_steps(v)
    spec = v.json["scheme"].get("normalizer")
    if spec:
        if normalizer is _WS_NORMALIZER:
            # Under SentencePiece's normalizers only U+0020 separates words.
            normalizer = WS_NORMALIZER_AFTER_PRECOMPILED
        # First, as transformers' converters write it. (Put after the dummy
        # prefix's Prepend, HF would normalize ▁ and a leading combining
        # mark as one grapheme.)
        steps = [precompiled(spec["precompiled_charsmap"]), *(normalizer["normalizers"] if normalizer else [])]
        normalizer = {"type": "Sequence", "normalizers": steps}
    return normalizer, pre, _chars_decoder(v)


def _chars_decoder(v: ModelView) -> dict[str, Any]:
    """The decoder that reads back what bpeforge's decode gives, as
    transformers' Llama converter writes it: each token's ``▁`` becomes a
    space, a fused ``<unk>`` SentencePiece's `` ⁇ ``, byte tokens their
    bytes; then one string, less the space before the first word where
    bpeforge drops it. (HF's Metaspace decoder, put after Fuse, would drop
    every space: it strips ``▁`` by token.) In suffix mode, ``BPEDecoder``
    turns the suffix into a space, and drops the last one."""
    steps: list[dict[str, Any]] = []
    if v.suffix is None:
        steps.append({"type": "Replace", "pattern": {"String": SPACE_MARKER}, "content": " "})
    if v.unk_token is not None and v.json["scheme"].get("fuse_unk"):
        # The whole token only (the Rust escapes are Oniguruma's too).
        steps.append({"type": "Replace", "pattern": {"Regex": f"^{_rust_escape(v.unk_token)}$"},
                      "content": FUSED_UNK_TEXT})
    if v.suffix is not None:
        # Token by token: its last token is the text's last (no Fuse before it).
        return {"type": "Sequence", "decoders": [*steps, {"type": "BPEDecoder", "suffix": v.suffix}]}
    if v.byte_specials:
        steps.append({"type": "ByteFallback"})
    steps.append({"type": "Fuse"})
    # bpeforge drops the space that the text got before its first word.
    if v.preset == "whitespace" or v.json["scheme"].get("dummy_prefix"):
        steps.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": steps}


#: How SentencePiece (and bpeforge) read back a fused ``<unk>``.
FUSED_UNK_TEXT = " \u2047 "


def precompiled(charsmap_base64: str) -> dict[str, Any]:
    """HF's SentencePiece normalizer, as transformers' converters write it."""
    return {"type": "Precompiled", "precompiled_charsmap": charsmap_base64}


# The `whitespace` preset after a Precompiled normalizer: as _WS_NORMALIZER,
# but only U+0020 separates words (SentencePiece's remove_extra_whitespaces).
WS_NORMALIZER_AFTER_PRECOMPILED = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": " "},
        {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "},
    ],
}


# SentencePiece with spaces kept, as transformers' Llama converter writes it:
# ▁ before the text, spaces as ▁, the whole text one piece.
_SP_KEPT_SPACES_NORMALIZER = {
    "type": "Sequence",
    "normalizers": [{"type": "Prepend", "prepend": SPACE_MARKER},
                    {"type": "Replace", "pattern": {"String": " "}, "content": SPACE_MARKER}],
}

def _chars_steps(v: ModelView) -> tuple[Any, Any]:
    """The normalizer and pre-tokenizer of a chars model (its decoder: :func:`_chars_decoder`)."""
    if v.suffix is not None:
        if v.preset != "whitespace":  # the core refuses this too; kept for clarity
            raise ParameterError("end_of_word_suffix needs the whitespace pre-tokenizer")
        return None, _split(f"[{_WS_CLASS}]+", "Removed", False)
    if v.keeps_spaces:
        # No pre-tokenizer: no piece spans the regex's cuts, so BPE over the
        # whole text gives the same ids.
        return _SP_KEPT_SPACES_NORMALIZER, None
    if v.preset == "whitespace":
        return _WS_NORMALIZER, _seq([_split(_WS_WORDS, "Removed", True), _metaspace("never", False)])
    if v.preset == "none":
        return None, _metaspace("never", False)
    return None, _seq([_hf_regex_split(v), _metaspace("never", False)])


def _vocab_and_added_tokens(v: ModelView, key: Callable[[bytes], str]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """The vocabulary (text key -> id) and the special tokens as added tokens."""
    vocab: dict[str, int] = {}
    for i in range(v.nspec, len(v.tokens)):
        vocab[key(v.tokens[i])] = v.ext[i]
    added: list[dict[str, Any]] = []
    byte_specials = v.byte_specials
    for i, s in enumerate(v.specials):
        if i in byte_specials:  # in the vocabulary, never matched in text (as Llama's)
            vocab[s] = v.ext[i]
            continue
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


def huggingface_json(tok: ExportedModel) -> dict[str, Any]:
    """The ``tokenizer.json`` document for ``tok`` (see :func:`to_huggingface`).

    Warns (:class:`~bpeforge.interop.InteropWarning`) for a model with a
    normalizer, whose ids ``tokenizers`` does not reproduce on every text."""
    v = ModelView(tok)
    warn_where_ids_can_differ(v, stacklevel=2)
    return _document(v)


def warn_where_ids_can_differ(v: ModelView, stacklevel: int) -> None:
    """The one case where a ``tokenizer.json`` export is not exact, as an
    :class:`InteropWarning`: a SentencePiece normalizer (``nmt_nfkc``, ...).
    ``stacklevel``: the caller's, as for :func:`warnings.warn`."""
    scheme = v.json["scheme"]
    if not scheme.get("normalizer"):
        return
    warnings.warn(
        f"the Hugging Face export of a model with the {name_of(scheme)} normalizer gives other ids than bpeforge "
        "on some texts (0.43% of a multilingual corpus's lines): tokenizers' Precompiled normalizer works per "
        "grapheme cluster, where SentencePiece and bpeforge take the longest table key at each position. A "
        "cluster under 6 bytes is looked up whole, and where only its start is a key the whole cluster is "
        "replaced (u U+0303 U+0336 loses its U+0336); a longer one character by character, so keys of several "
        "characters are missed (Bengali and Tamil vowel signs: U+09C7 U+09BE stays, not U+09CB). The "
        "SentencePiece export gives bpeforge's ids exactly",
        InteropWarning, stacklevel=stacklevel + 1)


def _document(v: ModelView) -> dict[str, Any]:
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
            "fuse_unk": bool(v.json["scheme"].get("fuse_unk")),
            "byte_fallback": bool(v.byte_specials),
            "ignore_merges": False,
            "vocab": vocab,
            "merges": _merge_list(v, key),
        },
    }


#: "Fill from the model's special tokens by convention" (see to_huggingface).
AUTO: Any = "auto"
#: The special-token roles an export writes for transformers, each with its
#: conventional names, most specific first (what AUTO picks from).
ROLE_CONVENTIONS: dict[str, tuple[str, ...]] = {
    "bos_token": ("<s>", "<|begin_of_text|>", "<bos>", "<|endoftext|>"),
    "eos_token": ("</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>"),
    "pad_token": ("<pad>", "<|pad|>", "<|endoftext|>", "</s>", "<eos>"),
    "unk_token": ("<unk>",),
}
#: The roles: ``to_huggingface``'s keywords, the CLI's ``--bos-token``... flags.
ROLES = tuple(ROLE_CONVENTIONS)


def special_token_roles(tok: ExportedModel, **given: str | None) -> dict[str, str]:
    """bos/eos/pad/unk: each as given (None: none), or for ``AUTO`` the first
    conventional name that is one of the model's special tokens."""
    specials = list(tok.special_tokens)
    roles: dict[str, str] = {}
    for role, names in ROLE_CONVENTIONS.items():
        value = given.get(role, AUTO)
        if value is AUTO or value == AUTO:
            value = next((n for n in names if n in specials), None)
        elif value is not None and value not in specials:
            raise ParameterError(f"{role} {value!r} is not a special token of this model (its special tokens: "
                                 f"{_listed(specials)}): train with special_tokens=[{value!r}], or add it with "
                                 "Tokenizer.with_special_tokens (every old id is kept)")
        if value is not None:
            roles[role] = value
    return roles


def _listed(specials: list[str], most: int = 12) -> str:
    """A model's special tokens for a message: at most ``most``, byte fallback's summed up."""
    named = [s for s in specials if not _BYTE_TOKEN.fullmatch(s)]
    if not specials:
        return "none"
    text = repr(named[:most]) + (f" and {len(named) - most} more" if len(named) > most else "")
    return text + (f" and {len(specials) - len(named)} byte tokens" if len(named) < len(specials) else "")


_BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")


def transformers_config(roles: dict[str, str], chat_template: str | None = None) -> dict[str, Any]:
    """``tokenizer_config.json`` for ``transformers.AutoTokenizer.from_pretrained``;
    ``chat_template`` (Jinja text) where ``apply_chat_template`` reads it."""
    config: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False,
                              "model_max_length": 1_000_000_000_000_000_019_884_624_838_656, **roles}
    if chat_template is not None:
        config["chat_template"] = chat_template
    return config


#: The files written beside a ``tokenizer.json`` for ``transformers``.
SIDE_FILES = ("tokenizer_config.json", "special_tokens_map.json")


def huggingface_paths(path: PathLike) -> tuple[str, list[str]]:
    """Where :func:`to_huggingface` writes for ``path``: the ``tokenizer.json``
    and the side files beside it.

    ``path`` is a folder when it is an existing directory, ends in ``/``, or
    does not end in ``.json`` (``hf_dir``, ``hf_dir/``: the folder is created,
    and gets ``tokenizer.json``, ``tokenizer_config.json`` and
    ``special_tokens_map.json``). Otherwise it is the file to write; a file
    named ``tokenizer.json`` gets the two side files beside it, any other
    name (``my-tok.json``) is written alone."""
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(("/", os.sep)) or not path.lower().endswith(".json"):
        path = os.path.join(path, "tokenizer.json")
    folder = os.path.dirname(path)
    beside = [os.path.join(folder, name) for name in SIDE_FILES] if os.path.basename(path) == "tokenizer.json" else []
    return path, beside


def to_huggingface(tok: ExportedModel, path: PathLike, *, bos_token: str | None = AUTO, eos_token: str | None = AUTO,
                   pad_token: str | None = AUTO, unk_token: str | None = AUTO,
                   chat_template: str | PathLike | None = None, overwrite: bool = False) -> str:
    """Write ``tok`` as a Hugging Face ``tokenizer.json``. Returns the file
    written (``tokenizer.json`` inside ``path`` when ``path`` is a folder).

    ``path`` is a folder when it is an existing directory, ends in ``/`` or
    does not end in ``.json`` (a missing folder is created, in an existing
    parent: ``to_huggingface("hf_dir/")`` and ``bpeforge export -o hf_dir``
    give ``hf_dir/tokenizer.json``); else the file to write, in an existing
    folder (:func:`huggingface_paths`).

    Written into a folder (or as a file named ``tokenizer.json``), it also
    gets ``tokenizer_config.json`` and ``special_tokens_map.json`` beside it,
    so ``transformers.AutoTokenizer.from_pretrained(folder)`` knows the
    special tokens' roles and can pad. An existing side file is replaced only
    if it already holds what this export writes, or with ``overwrite=True``
    (CLI ``--force``): otherwise nothing is written and the error names it,
    so a ``tokenizer_config.json`` of your own is never lost. ``bos_token``, ``eos_token``,
    ``pad_token``, ``unk_token``: a special token of the model, None for no
    such role, or (default) filled by convention from the model's special
    tokens (``<s>``, ``</s>``, ``<pad>``, ``<unk>``, ``<|endoftext|>``; GPT-2's
    single ``<|endoftext|>`` serves as bos, eos and pad).

    ``chat_template``: written into ``tokenizer_config.json``, so
    ``apply_chat_template`` works: a built-in name (``"chatml"``; its
    ``<|im_start|>`` and ``<|im_end|>`` must be special tokens of the model,
    see :meth:`Tokenizer.with_special_tokens`), Jinja text, or a template
    file as a ``pathlib.Path``; a template Jinja cannot parse is refused.
    The ids it gives are ``tok.encode(rendered_text, allowed_special="all")``.
    Roles and a chat template need the side files: given for an export to a
    lone ``my.json``, they are refused.

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
    matches added tokens in text, and ``decode(ids, skip_special_tokens=False)``
    gives ``tok.decode(ids)`` (byte fallback's byte tokens, fused unknowns
    and the first word's space included). Regexes run on Oniguruma there;
    characters whose Unicode properties differ between Oniguruma's tables and
    the Rust ``regex`` crate's (Unicode 16.0) could split differently.

    A model with a SentencePiece normalizer (``nmt_nfkc``, ...) warns with an
    :class:`~bpeforge.interop.InteropWarning`: ``tokenizers``' ``Precompiled``
    normalizer works per grapheme cluster and changes some texts otherwise
    than SentencePiece does, so ids differ on those (0.43% of the lines of a
    multilingual corpus); its SentencePiece export is exact.
    """
    # Why this function is long: its docstring is the export's reference
    # (what is written, and how ids and decodes match); the body is short.
    v = ModelView(tok)
    warn_where_ids_can_differ(v, stacklevel=3)  # the caller of Tokenizer.to_huggingface
    is_folder = huggingface_paths(path)[0] != os.fspath(path)
    path, side = huggingface_paths(path)
    given = {"bos_token": bos_token, "eos_token": eos_token, "pad_token": pad_token, "unk_token": unk_token}
    roles = special_token_roles(tok, **given)
    template = None if chat_template is None else chat_template_text(chat_template, tok.special_tokens)
    if not side:
        _refuse_what_a_lone_file_cannot_hold(path, given, template)
    doc = _document(v)
    contents = dict(zip(side, (_json_bytes(transformers_config(roles, template)), _json_bytes(roles))))
    folder = os.path.dirname(os.path.abspath(path))
    for p in contents:
        check_side_file(p, _written_by_export, overwrite)
    if is_folder and not os.path.isdir(folder):
        # The folder named is created (its parent must exist, as for any output).
        check_output(folder, "folder")
        try:
            os.mkdir(folder)
        except OSError as e:
            raise OutputError(f"cannot create the folder {folder}: {e.strerror or e}") from e
    for p in (path, *side):
        check_output(p)
    write_atomic(path, _json_bytes(doc))
    for p, content in contents.items():
        write_atomic(p, content)
    return path


def _refuse_what_a_lone_file_cannot_hold(path: str, given: dict[str, Any], template: str | None) -> None:
    """Roles and a chat template go into ``tokenizer_config.json``, which an
    export to a file not named ``tokenizer.json`` does not write: refused,
    never dropped."""
    named = [f"{role}={value!r}" for role, value in given.items() if value is not None and value != AUTO]
    if template is not None:
        named.append("chat_template")
    if named:
        raise ParameterError(f"{', '.join(named)}: {path} is written alone, without the tokenizer_config.json "
                             "that holds special-token roles and the chat template; export to a folder or to a "
                             "file named tokenizer.json")


def _written_by_export(content: bytes) -> bool:
    """Whether ``content`` is a side file exactly as :func:`to_huggingface`
    writes it, for this model or another (a re-export replaces it): the
    ``tokenizer_config.json`` or ``special_tokens_map.json`` of some set of
    roles, byte for byte. A file edited by hand or written by another tool is
    not."""
    try:
        doc = json.loads(content)
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return False
    roles = {k: v for k, v in doc.items() if k in ROLE_CONVENTIONS}
    template = doc.get("chat_template")
    if not all(isinstance(v, str) for v in roles.values()) or not isinstance(template, (str, type(None))):
        return False
    return content in (_json_bytes(roles), _json_bytes(transformers_config(roles, template)))


def _json_bytes(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"

