"""tiktoken's format: a ``.tiktoken`` rank file (``base64(token) rank`` per
line) plus, as bpeforge writes it, ``<file>.json`` beside it with the pattern
and the special tokens. Writing (:func:`to_tiktoken`), reading the two files,
and a ``tiktoken.Encoding`` from either (:func:`tiktoken_encoding`).
"""

from __future__ import annotations

import base64
import json
import lzma
import os
from typing import TYPE_CHECKING, Any

from .._io import open_binary, write_atomic
from ..errors import ModelFormatError, ParameterError
from ._common import ExportedModel, ModelView, PathLike, _require

if TYPE_CHECKING:  # pragma: no cover
    import tiktoken


def _tiktoken_parts(tok: ExportedModel) -> tuple[dict[bytes, int], dict[str, int], str]:
    v = ModelView(tok)
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


def to_tiktoken(tok: ExportedModel, path: PathLike, *, name: str | None = None) -> tuple[str, str]:
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
    write_atomic(path, "".join(lines).encode("ascii"))
    if name is None:
        name = os.path.basename(path)
        if name.endswith(".tiktoken"):
            name = name[: -len(".tiktoken")]
    meta = {"format": "bpeforge-tiktoken", "version": 1, "name": name, "pat_str": pattern, "special_tokens": specials}
    write_atomic(path + ".json", json.dumps(meta, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
    return path, path + ".json"


def read_rank_file(path: PathLike) -> dict[bytes, int]:
    """The ``{token: rank}`` of a rank file, plain or compressed (by its
    suffix, as every input: ``o200k_base.tiktoken.gz``)."""
    ranks: dict[bytes, int] = {}
    lineno = 0
    with open_binary(path) as f:
        try:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    token, rank = line.split()
                    ranks[base64.b64decode(token, validate=True)] = int(rank)
                except ValueError as e:
                    raise ModelFormatError(f"{os.fspath(path)}, line {lineno}: not a tiktoken rank line ({e})") from e
        except (EOFError, OSError, lzma.LZMAError) as e:  # a truncated or corrupt compressed file
            where = f" after line {lineno}" if lineno else ""
            raise ModelFormatError(f"{os.fspath(path)}: cannot decompress it{where} ({e}); is it truncated?") from e
    if not ranks:
        raise ModelFormatError(f"{os.fspath(path)}: no rank lines; a .tiktoken file has one 'base64-token rank' per line")
    return ranks


def read_sidecar(path: PathLike) -> dict[str, Any] | None:
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


def tiktoken_encoding(source: ExportedModel | PathLike, *, name: str | None = None) -> tiktoken.Encoding:
    """A ``tiktoken.Encoding`` from a Tokenizer or from the files
    :func:`to_tiktoken` wrote (``path`` and ``path + ".json"``)."""
    tiktoken_mod = _require("tiktoken", "tiktoken_encoding")
    if not isinstance(source, (str, os.PathLike)):  # a Tokenizer
        ranks, specials, pattern = _tiktoken_parts(source)
        name = name or "bpeforge"
    else:
        ranks = read_rank_file(source)
        meta = read_sidecar(source)
        if meta is None:
            raise ParameterError(f"{os.fspath(source)}.json not found: it holds the pattern and special tokens")
        pattern = meta["pat_str"]
        specials = {str(k): int(v) for k, v in meta.get("special_tokens", {}).items()}
        name = name or meta.get("name") or "bpeforge"
    return tiktoken_mod.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
