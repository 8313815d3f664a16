"""Import a tiktoken vocabulary (an ``Encoding``, a ``.tiktoken`` file or a
``{bytes: rank}`` dict): the merge list is derived from the ranks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .. import _engine
from .._tokenizer import Tokenizer
from ..errors import ParameterError
from ._builder import Builder, foreign_file_errors, unreachable_tokens
from ._common import _PRESET_PATTERNS, _pretokenizer_for_pattern
from .tiktoken_export import read_rank_file, read_sidecar


@foreign_file_errors("tiktoken vocabulary")
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
    ranks, pattern, special_tokens, name = _read_source(source, pattern, special_tokens)
    pattern = _resolve_pattern(pattern, name)
    pretok = {"type": "none"} if pattern == r"(?s:.+)" else _pretokenizer_for_pattern(pattern)
    clash = set(special_tokens.values()) & set(ranks.values())
    if clash:
        raise ParameterError(f"{name}: special token ids {sorted(clash)[:5]} are also ranks of ordinary tokens")
    b = Builder({"type": "bytes"}, pretok, name)
    for s, i in sorted(special_tokens.items(), key=lambda kv: kv[1]):
        b.add_special(s, int(i))
    _add_bytes(b, ranks, max(list(ranks.values()) + list(special_tokens.values()), default=-1) + 1)
    _add_merges(b, ranks)
    return b.build({"format": "tiktoken", "source": name, "pat_str": pattern})


def _read_source(
    source: Any, pattern: str | None, special_tokens: Mapping[str, int] | None
) -> tuple[dict[bytes, int], str | None, dict[str, int], str]:
    """(ranks, pattern, special tokens, name) from an Encoding, a dict or a file
    (with its ``.json`` sidecar); what the caller gave wins over the source."""
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
        ranks = read_rank_file(source)
        meta = read_sidecar(source)
        if meta is not None:
            pattern = pattern or meta["pat_str"]
            if special_tokens is None:
                special_tokens = {str(k): int(v) for k, v in meta.get("special_tokens", {}).items()}
    return ranks, pattern, dict(special_tokens or {}), name


def _resolve_pattern(pattern: str | None, name: str) -> str:
    """A preset's name or alias (bpeforge's or tiktoken's, from the engine's
    table) becomes its regex."""
    if pattern is None:
        raise ParameterError(f"{name}: the pre-tokenizer pattern is unknown; pass pattern= (a regex or gpt2/cl100k_base/o200k_base)")
    return _PRESET_PATTERNS.get(_engine.preset_name(pattern) or pattern, pattern)


def _add_bytes(b: Builder, ranks: Mapping[bytes, int], next_id: int) -> None:
    """The 256 bytes, with their ranks; a byte without one gets a new id."""
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


def _add_merges(b: Builder, ranks: Mapping[bytes, int]) -> None:
    """One merge per multi-byte token, in rank order: the two parts tiktoken's
    algorithm makes of it with the lower ranks."""
    ordered = sorted(ranks.items(), key=lambda kv: kv[1])
    tokens = [t for t, _ in ordered]
    splits = _engine.merge_splits(tokens, [r for _, r in ordered])
    for (token, rank), split in zip(ordered, splits):
        if len(token) < 2:
            continue
        if split is None:
            b.count("tokens_not_reachable_by_merges")
            continue
        b.add_merge(token[:split], token[split:], rank)
    if b.stats.get("tokens_not_reachable_by_merges"):
        b.note(f"{b.stats['tokens_not_reachable_by_merges']} tokens are not two lower-ranked tokens; they were dropped "
               "(tiktoken gives them only for a piece equal to the whole token)")
    bad = unreachable_tokens(b)
    if bad:
        b.count("unreachable_tokens", bad)
        b.note(f"{bad} tokens are not what merge-list BPE makes of their own bytes; tiktoken gives them for a "
               "piece equal to the whole token, bpeforge the BPE result")
