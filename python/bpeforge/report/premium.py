"""Premiums by language, measured as parity balancing measures them.

A language's *premium* is the reference language's text units per token
divided by its own (2.0: twice the tokens for the same text). A text unit
is a character, two for a syllable of a syllabary, three for a Han
character, so scripts of 2-3 bytes a letter are not mistaken for cheap ones
(bytes per token would). Both the units and the ratio are the engine's own
functions (``balance::parity::text_units`` and ``premiums_of``, through
``_engine``): a report's premium is the number training steers by
(``max_premium``), measured on the report's sample instead of the training
counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import _engine
from ..errors import ParameterError
from .models import Model


def text_units(lines: Sequence[str]) -> list[int]:
    """The text units of each line (the engine's ``text_units``)."""
    return _engine.text_units(list(lines))


def premiums(units: Sequence[int], tokens: Sequence[int], reference: int) -> list[float]:
    """Every language's premium from its text units and tokens, against the
    language at index ``reference`` (the engine's ``premiums_of``; 1.0 for a
    language without tokens)."""
    return _engine.premiums([int(u) for u in units], [int(t) for t in tokens], reference)


def premium_reference(models: Sequence[Model], corpus_bytes: Mapping[str, int], requested: str | None) -> tuple[str, str]:
    """The language premiums are measured against, and why: ``requested``
    (it must occur in the sample), else the reference a parity-balanced
    model was trained against, else the language with the most bytes in the
    corpus (as training picks it)."""
    if requested is not None:
        if requested not in corpus_bytes:
            raise ParameterError(f"premium_reference: language {requested!r} does not occur in the language tags")
        return requested, "as asked"
    for m in models:
        lb = m.tok.metadata.get("language_balance")
        ref = lb.get("reference") if isinstance(lb, dict) else None
        if isinstance(ref, str) and corpus_bytes.get(ref):
            return ref, f"the reference {m.label!r} was balanced against"
    ref = max(corpus_bytes, key=lambda lang: (corpus_bytes[lang], lang))
    return ref, "the language with the most bytes in the corpus"


def describe_balance(metadata: Mapping[str, Any]) -> str | None:
    """The language balancing a model was trained with, in words, from its
    ``language_balance`` metadata (None: trained without language tags)."""
    lb = metadata.get("language_balance")
    if not isinstance(lb, dict):
        return None
    temperature = lb.get("temperature")
    t = f"temperature {_num(temperature)}" if temperature is not None else "temperature ?"
    if lb.get("method") != "parity":
        return t + (" (no reweighting)" if temperature == 1 else "")
    parts = [f"parity, max_premium {_num(lb.get('max_premium'))}", f"reference {lb.get('reference', '?')}"]
    rounds = lb.get("rounds")
    if isinstance(rounds, list):
        text = f"{len(rounds)} measuring round{'s' if len(rounds) != 1 else ''}"
        above = rounds[-1].get("above_band") if rounds and isinstance(rounds[-1], dict) else None
        if isinstance(above, int) and above > 0:
            text += f" ({above} language{'s' if above != 1 else ''} above max_premium when last measured)"
        parts.append(text)
    held = lb.get("held_apart")
    if held:
        parts.append(f"premiums measured on {_num(float(held) * 100)}% of lines held apart")
    elif held is not None:
        parts.append("premiums measured on the training counts")
    if lb.get("min_lines") is not None:
        parts.append(f"languages with {_num(lb['min_lines'])}+ lines balanced")
    if lb.get("max_lift") is not None:
        parts.append(f"max lift {_num(lb['max_lift'])}")
    parts.append(f"starting from {t}")
    langs = lb.get("languages")
    if isinstance(langs, dict):
        lifted = sum(1 for v in langs.values() if isinstance(v, dict) and v.get("weight", 1) > 1)
        parts.append(f"{lifted} language{'s' if lifted != 1 else ''} lifted")
    return "; ".join(parts)


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)
