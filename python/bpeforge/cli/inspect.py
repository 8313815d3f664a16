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
    w(f"  merges: {len(tok.merge_counts)}\n")
    for key in ("library", "settings", "corpus", "timings", "inputs", "word_types", "stopped_early"):
        if key in meta:
            w(f"  {key}: {json.dumps(meta[key], ensure_ascii=False)}\n")
    _inspect_balance(meta.get("language_balance"), w)
    merges = tok.merges
    counts = tok.merge_counts or [0] * len(merges)
    limit = len(merges) if args.all else min(args.merges, len(merges))
    first_merge = tok.vocab_size - len(merges)
    w(f"\nmerges (rank, new id, left + right -> token, pair count){'' if args.all else f' — first {limit}'}:\n")
    for k in range(limit):
        a, b = merges[k]
        w(f"  {k:>6} {first_merge + k:>7}  {show_token(a)} + {show_token(b)} -> {show_token(a + b)}  {counts[k]}\n")
    vlimit = tok.vocab_size if args.all else min(args.vocab, tok.vocab_size)
    w(f"\nvocabulary (id, token){'' if args.all else f' — first {vlimit} and last {min(vlimit, tok.vocab_size)}'}:\n")
    tokens = tok.tokens()
    ids = list(range(vlimit))
    if not args.all:
        ids += [i for i in range(max(vlimit, tok.vocab_size - vlimit), tok.vocab_size)]
    for i in ids:
        w(f"  {i:>7}  {show_token(tokens[i])}\n")
    return 0


# ---- interoperability: `export` and `import` (bpeforge.interop) ----------
# Kept in one block: the subcommands, their parser and their warning output.


def add_command(sub: Any) -> None:
    i = sub.add_parser("inspect", help="show a model: settings, merges with counts, vocabulary")
    i.add_argument("model")
    i.add_argument("--merges", type=int, default=50, help="how many merges to list")
    i.add_argument("--vocab", type=int, default=30, help="how many ids to list at each end")
    i.add_argument("--all", action="store_true", help="list every merge and every token")
    i.set_defaults(func=cmd_inspect)
