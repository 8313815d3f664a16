"""``bpeforge inspect``: a model's settings, merges with counts and vocabulary."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._display import show_token
from .._normalizers import name_of as normalizer_name
from .._byte_tokens import BYTE_TOKENS
from .._load import load


def _inspect_balance(bal: Any, w: Any) -> None:
    """Language balance in a few lines: method, rounds, the most lifted languages."""
    if not isinstance(bal, dict) or not isinstance(bal.get("languages"), dict):
        return
    langs = bal["languages"]
    if bal.get("method") == "parity":
        w(f"  language balance: parity, max_premium {bal.get('max_premium')}, reference {bal.get('reference')}, "
          f"temperature {bal.get('temperature')}, {len(langs)} languages\n")
        for r in bal.get("rounds", []):
            # Older models recorded bytes per token; newer ones text units per token.
            upt = r.get("reference_units_per_token", r.get("reference_bytes_per_token"))
            unit = "text units/token" if "reference_units_per_token" in r else "bytes/token"
            w(f"    round {r.get('round', 0) + 1}: {bal.get('reference')} {upt} {unit}, "
              f"worst premium {r.get('worst_premium')} ({r.get('worst_language')}), {r.get('above_band')} above\n")
    else:
        w(f"  language balance: temperature {bal.get('temperature')}, {len(langs)} languages\n")
    top = sorted(langs.items(), key=lambda kv: -float(kv[1].get("weight", 1.0)))[:8]
    w("    largest weights: " + ", ".join(f"{k} {v.get('weight')}" for k, v in top) + "\n")


def cmd_inspect(args: argparse.Namespace) -> int:
    tok = load(args.model)
    meta = tok.metadata
    w = sys.stdout.write
    w(f"model: {args.model}\n")
    w(f"  {tok!r}\n")
    scheme = tok._scheme_settings()
    byte_tokens = set(BYTE_TOKENS) if scheme.get("byte_fallback") else set()
    w(f"  special tokens: {[t for t in tok.special_tokens if t not in byte_tokens]}\n")
    if byte_tokens:
        low, high = (tok.token_to_id(t) for t in (BYTE_TOKENS[0], BYTE_TOKENS[-1]))
        w(f"  byte fallback: {BYTE_TOKENS[0]}..{BYTE_TOKENS[-1]} (ids {low}..{high})\n")
    for flag in ("fuse_unk", "dummy_prefix"):
        if scheme.get(flag):
            w(f"  {flag}: true\n")
    if tok.scheme == "chars":
        w(f"  normalizer: {normalizer_name(scheme)}\n")
    if tok.alphabet is not None:
        w(f"  alphabet: {len(tok.alphabet)} symbols\n")
    w(f"  ids: {_describe_ids(tok)}\n")
    merges, counts = tok.merges, tok.merge_counts
    w(f"  merges: {len(merges)}{_merge_origin(meta, bool(counts))}\n")
    for key in ("library", "settings", "corpus", "timings", "inputs", "word_types", "stopped_early", "truncated_from",
                "import"):
        if key in meta:
            w(f"  {key}: {json.dumps(meta[key], ensure_ascii=False)}\n")
    _inspect_balance(meta.get("language_balance"), w)
    limit = len(merges) if args.all else min(args.merges, len(merges))
    columns = "rank, new id, left + right -> token" + (", pair count" if counts else "")
    w(f"\nmerges ({columns}){'' if limit == len(merges) else f' — first {limit} of {len(merges)}'}:\n")
    for k in range(limit):
        a, b = merges[k]
        count = f"  {counts[k]}" if counts else ""
        w(f"  {k:>6} {tok.token_to_id(a + b):>7}  {show_token(a)} + {show_token(b)} -> {show_token(a + b)}{count}\n")
    n = tok.vocab_size
    end = n if args.all else args.vocab
    if end == 0:
        w("\nvocabulary: not listed (--vocab 0)\n")
    elif 2 * end >= n:
        w("\nvocabulary (id, token):\n")
        _list_ids(tok, range(n), w)
    else:
        w(f"\nvocabulary (id, token) — ids 0..{end - 1} and {n - end}..{n - 1} of 0..{n - 1}:\n")
        _list_ids(tok, range(end), w)
        _list_ids(tok, range(n - end, n), w)
    return 0


def _describe_ids(tok: Any) -> str:
    """How many ids the model has, and which of them no token has (an imported
    numbering can have gaps, e.g. between the ranks and the special tokens)."""
    n = tok.vocab_size
    free = [i for i in range(n) if tok.id_to_token(i) is None]
    text = f"{n} (0..{n - 1})" if n else "0"
    return text + (f", {len(free)} of them not assigned to a token ({_ranges(free)})" if free else "")


def _merge_origin(meta: dict[str, Any], has_counts: bool) -> str:
    """Where the merges come from, for a model whose merges carry no pair counts."""
    if has_counts:
        return ""
    imported = meta.get("import")
    if isinstance(imported, dict) and imported.get("format") == "tiktoken":
        return " (derived from the imported tiktoken ranks; a rank file has no pair counts)"
    if isinstance(imported, dict):
        return f" (imported from {imported.get('format', 'another tool')}; no pair counts recorded)"
    return " (no pair counts recorded)"


def _list_ids(tok: Any, ids: range, w: Any) -> None:
    """One line per token; a run of ids no token has is one line saying so."""
    tokens = tok.tokens()
    k = ids.start
    while k < ids.stop:
        if tok.id_to_token(k) is not None:
            w(f"  {k:>7}  {show_token(tokens[k])}\n")
            k += 1
            continue
        end = k
        while end + 1 < ids.stop and tok.id_to_token(end + 1) is None:
            end += 1
        shown = f"{k}" if end == k else f"{k}..{end}"
        w(f"  {shown:>7}  (not assigned: no token has {'this id' if end == k else f'these {end - k + 1} ids'})\n")
        k = end + 1


def _ranges(ids: list[int]) -> str:
    """``[3, 7, 8, 9]`` as ``"3, 7..9"``."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in runs)


def _count(text: str) -> int:
    """A ``--merges``/``--vocab`` value: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, not {text!r}")
    return value


def add_command(sub: Any) -> None:
    i = sub.add_parser("inspect", help="show a model: settings, merges with counts, vocabulary")
    i.add_argument("model")
    i.add_argument("--merges", type=_count, default=50, help="how many merges to list")
    i.add_argument("--vocab", type=_count, default=30, help="how many ids to list at each end")
    i.add_argument("--all", action="store_true", help="list every merge and every token")
    i.set_defaults(func=cmd_inspect)
