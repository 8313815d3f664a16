"""Numbers the figures are made of: the compression curve (the sample
encoded with truncated models), per-line sizes, SuperBPE's transition, and
each model's summary row."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .._tokenizer import Tokenizer
from ..options import PRESETS
from .models import Model, encode_lines
from .premium import describe_balance


def curve_points(n_merges: int, points: int, extra: Iterable[int] = ()) -> list[int]:
    pts = {0, n_merges}
    p = max(points, 2)
    for i in range(p):
        pts.add(int(round(n_merges * (i / (p - 1)) ** 2)))
    pts.update(x for x in extra if 0 <= x <= n_merges)
    return sorted(pts)


def _pretok_doc(name: str) -> dict[str, Any]:
    if name in PRESETS:
        return {"type": name}
    return {"type": "regex", "pattern": name}


def superbpe_transition(m: Model) -> tuple[int | None, str | None]:
    """(merge index where SuperBPE's stage 2 starts, stage-1 pre-tokenizer), or (None, None)."""
    sb = m.tok.metadata.get("superbpe")
    if not isinstance(sb, dict) or "transition" not in sb:
        return None, None
    base = m.tok.vocab_size - len(m.doc.get("merges", []))
    return max(0, int(sb["transition"]) - base), sb.get("stage1_pretokenizer")


def compression_curve(m: Model, lines: list[str], points: int, threads: int | None) -> dict[str, Any]:
    merges = m.doc.get("merges", [])
    counts = m.doc.get("merge_counts", [])
    transition, stage1 = superbpe_transition(m)
    ks = curve_points(len(merges), points, [transition] if transition else [])
    nbytes = sum(len(x.encode("utf-8")) for x in lines)
    tokens: list[int] = []
    for k in ks:
        if k == len(merges):
            t = m.tok
        else:
            d = dict(m.doc)
            d["merges"] = merges[:k]
            d["merge_counts"] = counts[:k] if counts else []
            d.pop("ids", None)  # external ids (imports): not needed to count tokens
            d["metadata"] = {}
            if transition is not None and stage1 and k <= transition:
                d["pretokenizer"] = _pretok_doc(stage1)
            t = Tokenizer.from_json(json.dumps(d))
        ids, _ = encode_lines(t, lines, threads)
        tokens.append(int(len(ids)))
    base = m.tok.vocab_size - len(merges)
    return {"merges": ks, "vocab_size": [base + k for k in ks], "tokens": tokens, "bytes": nbytes, "lines": len(lines),
            "bytes_per_token": [nbytes / t if t else 0.0 for t in tokens], "superbpe_transition": transition}


def line_stats(lines: list[str]) -> dict[str, Any]:
    import numpy as np

    return {
        "bytes": np.fromiter((len(x.encode("utf-8")) for x in lines), dtype=np.int64, count=len(lines)),
        "chars": np.fromiter((len(x) for x in lines), dtype=np.int64, count=len(lines)),
        "words": np.fromiter((len(x.split()) for x in lines), dtype=np.int64, count=len(lines)),
    }


def r4(x: float, nd: int = 4) -> float:
    return float(round(float(x), nd))


def model_summary(m: Model, stats: dict[str, Any], curve: dict[str, Any]) -> dict[str, Any]:
    meta = m.tok.metadata
    ntok = int(len(m.ids))
    nbytes = int(stats["bytes"].sum())
    unk_id = None
    if m.tok.scheme == "chars":
        unk = (m.doc.get("scheme") or {}).get("unk_token")
        unk_id = m.tok.token_to_id(unk) if unk else None
    used = int((m.counts > 0).sum())
    s: dict[str, Any] = {
        "label": m.label, "source": m.info["source"], "format": m.info["format"], "scheme": m.tok.scheme,
        "pretokenizer": m.tok.pretokenizer if len(m.tok.pretokenizer) < 60 else m.tok.pretokenizer[:57] + "...",
        "vocab_size": m.tok.vocab_size, "merges": len(m.doc.get("merges", [])),
        "special_tokens": len(m.tok.special_tokens), "has_pair_counts": bool(m.doc.get("merge_counts")),
        "sample_tokens": ntok, "bytes_per_token": r4(nbytes / ntok if ntok else 0.0),
        "tokens_per_word": r4(ntok / max(1, int(stats["words"].sum()))),
        "tokens_per_char": r4(ntok / max(1, int(stats["chars"].sum()))),
        "vocab_used_in_sample": r4(used / max(1, len(m.raw))),
        "notes": list(m.info.get("notes", [])),
    }
    if unk_id is not None:
        s["unk_rate"] = r4(int(m.counts[unk_id]) / ntok if ntok else 0.0, 6)
    balance = describe_balance(meta)
    if balance is not None:
        s["language_balance"] = balance
    elif m.info["format"] == "bpeforge":  # trained here without language tags (an import records none)
        s["language_balance"] = "none"
    sb = meta.get("superbpe")
    if isinstance(sb, dict):
        s["superbpe_transition"] = sb.get("transition")
    corpus = meta.get("corpus")
    if isinstance(corpus, dict) and corpus.get("bytes"):
        s["trained_on_bytes"] = corpus.get("bytes")
    if meta.get("inputs"):
        s["trained_on"] = [str(x.get("path", x)) if isinstance(x, dict) else str(x) for x in meta["inputs"]][:5]
    return s
