"""Several vocabulary sizes from one training run: ``vocab_sizes=[...]`` of
the training entry points. The run trains once, at the largest size, and
each smaller model is its first merges (:mod:`bpeforge._truncate`), which
equals a run at that size.

Each size is checked before any work starts by the engine's own rules for
a run at that size (the same options with that ``vocab_size``), so a size
that a run could not take fails now, naming ``vocab_sizes``. One rule waits
for counting: a chars-scheme alphabet comes from the corpus, so a size
below it is refused once the run has counted and merged.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

from . import _engine
from ._tokenizer import Tokenizer
from ._truncate import size_arg, truncate_model
from .errors import ParameterError
from .options import TrainOptions

__all__ = ["plan_sizes", "run_size", "check_sizes", "at_sizes", "DEFAULT_VOCAB_SIZE", "VOCAB_SIZES_DOC"]

def _default_vocab_size() -> int:
    default = next(f.default for f in dataclasses.fields(TrainOptions) if f.name == "vocab_size")
    assert isinstance(default, int)
    return default


#: ``vocab_size``'s default: a run given ``vocab_sizes`` leaves it there.
DEFAULT_VOCAB_SIZE: int = _default_vocab_size()


def plan_sizes(vocab_sizes: Sequence[int | str] | None, vocab_size_given: bool) -> list[int] | None:
    """The sizes asked for, ascending (None when ``vocab_sizes`` is not
    given); refused: an empty or repeated list, a size that is not a count,
    and ``vocab_size`` given as well (the run's size is the largest)."""
    if vocab_sizes is None:
        return None
    if vocab_size_given:
        raise ParameterError("give vocab_sizes or vocab_size, not both: with vocab_sizes the run trains at the "
                             "largest size")
    if isinstance(vocab_sizes, (str, bytes, int)):
        raise ParameterError(f"vocab_sizes must be a list of sizes (e.g. [8000, 16000]), got {vocab_sizes!r}")
    try:
        sizes = [size_arg(v, "vocab_sizes") for v in vocab_sizes]
    except TypeError:
        raise ParameterError(f"vocab_sizes must be a list of sizes, got {vocab_sizes!r}") from None
    if not sizes:
        raise ParameterError("vocab_sizes is empty: give at least one size")
    twice = sorted({s for s in sizes if sizes.count(s) > 1})
    if twice:
        raise ParameterError(f"vocab_sizes names {', '.join(map(str, twice))} more than once")
    return sorted(sizes)


def run_size(sizes: list[int] | None, vocab_size: Any) -> Any:
    """The ``vocab_size`` the run trains at: the largest size asked for."""
    return vocab_size if sizes is None else sizes[-1]


def check_sizes(options: TrainOptions, sizes: list[int] | None) -> None:
    """Each size through the engine's rules of a run at it (the base
    vocabulary of the bytes scheme, a resumed model's size, the SuperBPE
    transition), and what no single run can give several sizes of."""
    if sizes is None:
        return
    if options.vocab_size != sizes[-1]:
        raise ParameterError(f"vocab_sizes: this run trains to vocab_size {options.vocab_size} (the checkpoint "
                             f"it resumes records it), not to the largest size given, {sizes[-1]}; give "
                             f"vocab_sizes whose largest is {options.vocab_size}")
    if options.max_premium is not None:
        raise ParameterError("vocab_sizes: not with max_premium (parity language balance measures its language "
                             "weights on models of the run's own size, so a smaller size needs its own run)")
    # A checkpoint's run continues to the largest size, and each smaller
    # model is a prefix of that straight run, which is checked as a run
    # from the start (the checkpoint may already be past a smaller size).
    straight: dict[str, Any] = {"resume_from": None, "checkpoint_path": None} if _resumes_checkpoint(options) else {}
    for size in sizes[:-1]:
        try:
            dataclasses.replace(options, vocab_size=size, **straight)
        except ParameterError as e:
            raise ParameterError(f"vocab_sizes: a run at {size} is refused: {e}") from None


def _resumes_checkpoint(options: TrainOptions) -> bool:
    """Whether the run resumes an unfinished run's checkpoint (not a
    finished model, which it extends)."""
    source = options.resume_from
    if source is None:
        return False
    if isinstance(source, Tokenizer):
        return "checkpoint" in source.metadata
    if hasattr(source, "to_json"):
        return "checkpoint" in (json.loads(source.to_json()).get("metadata") or {})
    return "checkpoint" in json.loads(_engine.load_model(os.fspath(source)).metadata_json)


def at_sizes(tok: Tokenizer, sizes: list[int]) -> dict[int, Tokenizer]:
    """The model of each size, smallest first, from the run at the largest."""
    model = json.loads(tok.to_json())
    out: dict[int, Tokenizer] = {}
    for size in sizes[:-1]:
        try:
            cut = truncate_model(model, size, trained_for=True)
        except ParameterError as e:
            raise ParameterError(f"vocab_sizes: {e}") from None
        out[size] = Tokenizer.from_json(json.dumps(cut, ensure_ascii=False))
    out[sizes[-1]] = tok
    return out


#: The ``vocab_sizes`` entry of the training functions' ``Args:``.
VOCAB_SIZES_DOC = """        vocab_sizes: several vocabulary sizes from one run, instead of
            ``vocab_size`` (e.g. ``[8000, 16000, "32k"]``): the run trains
            at the largest, and each smaller model is its first merges
            (:meth:`Tokenizer.truncated`), equal to a run at that size, merge
            for merge and id for id. Returns a dict from each size to its
            model, smallest first. Each size is checked before the run
            starts, as a run at it would be (a chars-scheme alphabet is
            known once counted: a size below it fails after the run);
            refused with ``max_premium`` (parity balance measures its
            weights at the run's own size)."""
