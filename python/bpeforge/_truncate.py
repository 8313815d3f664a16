"""Cutting a model's merge list: the model a training run at a smaller
``vocab_size`` gives (:meth:`bpeforge.Tokenizer.truncated`, and
``train(..., vocab_sizes=...)``, which trains once at the largest size).

The merge loop (docs/SEMANTICS.md §6) depends on the target size only
where it stops: the first K merges of a run are those of a run that stops
after K. Ids are special tokens, then the base symbols, then merges in
order (§5), so keeping the first merges keeps every id. What a run at
another size would not repeat is refused, with the reason:

* parity language balance (``max_premium``): its weights are measured on
  models of the run's own size, so a smaller run weighs the languages
  differently;
* a SuperBPE model cut at or below its transition: that is a stage-1
  vocabulary with the stage-2 pre-tokenizer, which no run gives;
* an unfinished run's checkpoint (resume it, then cut the finished model);
* an imported model with ids of its own (its ids follow its source file,
  not a training run).

A model whose special tokens were added after training
(:meth:`Tokenizer.with_special_tokens`), or that extended such a model,
has an id table; cutting it keeps the order of its ids and closes the gap
the dropped merges leave, so the added special tokens follow the kept
merges, as adding them to a run of that size would place them.

This module works on the model file's JSON record; the Tokenizer makes
the record and reads the result back (and validates it).
"""

from __future__ import annotations

from typing import Any

from .errors import ParameterError
from .options import parse_count

__all__ = ["truncate_model", "size_arg"]


def size_arg(value: Any, name: str) -> int:
    """A vocabulary size as ``vocab_size`` takes it: an int or a count
    (``"32k"``), named ``name`` in the error."""
    if isinstance(value, str):
        try:
            return parse_count(value)
        except ValueError as e:
            raise ParameterError(f"{name}: {e}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterError(f"{name} must be an integer or a count such as \"32k\", got {value!r}")
    return value


def truncate_model(model: dict[str, Any], vocab_size: int, *, trained_for: bool = False) -> dict[str, Any]:
    """The model record with the first merges that make ``vocab_size`` ids.

    ``trained_for=True`` is ``train(..., vocab_sizes=...)``'s case: a run
    at ``vocab_size`` is asked for, and where the run stopped early (no
    pair reached ``min_frequency``) below it, that run's model is the
    whole model, as a run at ``vocab_size`` would stop there too.
    """
    meta: dict[str, Any] = model.get("metadata") or {}
    _refuse_unrepeatable(model, meta, vocab_size)
    specials, merges = model["special_tokens"], model["merges"]
    fixed = len(specials) + (256 if model["scheme"]["type"] == "bytes" else len(model.get("alphabet") or []))
    size = fixed + len(merges)
    if vocab_size < fixed:
        raise ParameterError(f"vocab_size {vocab_size} is below this model's base vocabulary: {len(specials)} "
                             f"special token(s) + {fixed - len(specials)} base symbols = {fixed}; give at "
                             f"least {fixed}")
    stopped_short = trained_for and vocab_size > size and bool(meta.get("stopped_early"))
    if vocab_size > size and not stopped_short:
        raise ParameterError(f"vocab_size {vocab_size} is larger than this model's {size} ids: truncation only "
                             "removes merges (train at that size, or extend the model with resume_from)")
    kept = min(vocab_size, size) - fixed
    out = dict(model)
    out["merges"] = merges[:kept]
    out["merge_counts"] = (model.get("merge_counts") or [])[:kept]
    ids = model.get("ids")
    if ids is not None:
        compact = _compact_ids(ids[:fixed + kept])
        out["ids"] = None if compact == list(range(len(compact))) else compact
        if out["ids"] is None:
            del out["ids"]
    out["metadata"] = _record(meta, specials, out.get("ids"), vocab_size, kept, len(merges), size, stopped_short)
    return out


def _refuse_unrepeatable(model: dict[str, Any], meta: dict[str, Any], vocab_size: int) -> None:
    """ParameterError, with the reason, for a model whose truncation would
    equal no training run at ``vocab_size``."""
    if "checkpoint" in meta:
        raise ParameterError("this model is an unfinished run's checkpoint: resume it (resume_from) to its "
                             "vocab_size, then truncate the finished model")
    balance = meta.get("language_balance")
    if isinstance(balance, dict) and balance.get("method") == "parity":
        raise ParameterError("this model was trained with parity language balance (max_premium): its language "
                             "weights were measured on models of its own size, and a run at vocab_size "
                             f"{vocab_size} measures its own, so no truncation equals it; train at that size")
    superbpe = meta.get("superbpe")
    if isinstance(superbpe, dict) and isinstance(superbpe.get("transition"), int) \
            and vocab_size <= superbpe["transition"]:
        raise ParameterError(f"vocab_size {vocab_size} is not above this SuperBPE model's transition "
                             f"{superbpe['transition']}: its first {superbpe['transition']} ids are a stage-1 "
                             "vocabulary, meant for the stage-1 pre-tokenizer, and no SuperBPE run stops there; "
                             "give a vocab_size above the transition (or train without SuperBPE at that size)")
    ids = model.get("ids")
    if ids is not None and ids != list(range(len(ids))):
        if "import" in meta:
            raise ParameterError("this model was imported with ids of its own: they follow its source file, not "
                                 "a training run, so truncation is refused (truncate the bpeforge model before "
                                 "exporting it)")
        if sorted(ids) != list(range(len(ids))):
            raise ParameterError("this model's ids have gaps: truncation keeps ids dense, so it is refused")


def _compact_ids(ids: list[int]) -> list[int]:
    """The kept tokens' ids, renumbered 0, 1, ... in their old order: the
    gap the dropped merges leave closes, and tokens added after them
    (special tokens of ``with_special_tokens``, merges of an extension)
    move down by the same amount, as if added to the smaller model."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    out = [0] * len(ids)
    for new, internal in enumerate(order):
        out[internal] = new
    return out


def _record(meta: dict[str, Any], specials: list[str], ids: list[int] | None, vocab_size: int, kept: int,
            merges: int, size: int, stopped_short: bool) -> dict[str, Any]:
    """The training record of the cut model: the run's, with the size asked
    for, what it was cut from and the fields that count merges."""
    out = dict(meta)
    if isinstance(meta.get("settings"), dict):
        out["settings"] = {**meta["settings"], "vocab_size": vocab_size}
    if "stopped_early" in meta:
        out["stopped_early"] = stopped_short
    if isinstance(meta.get("resumed_merges"), int):
        out["resumed_merges"] = min(meta["resumed_merges"], kept)
    added = meta.get("added_special_tokens")
    if isinstance(added, dict):
        index = {t: i for i, t in enumerate(specials)}
        out["added_special_tokens"] = {t: (ids[index[t]] if ids is not None else index[t])
                                       for t in added if t in index}
    if kept < merges and "truncated_from" not in meta:
        out["truncated_from"] = {"vocab_size": size, "merges": merges}
    return out
