"""Where progress goes: the ``progress=`` argument of training, ``encode_batch``
and ``encode_file``, resolved into the form the native module takes.

* ``True``/``"auto"``, ``"human"``, ``"json"``: text on stderr. When
  ``sys.stderr`` is the process's own stream (fd 2, e.g. the CLI), the Rust
  core writes it there directly; otherwise (Jupyter, ``contextlib.redirect_stderr``,
  pytest's capsys) the same text goes through ``sys.stderr.write``, as human
  lines unless ``"json"`` is asked for.
* A callable: called with a :class:`ProgressEvent` for each update.
* ``"tqdm"``: a tqdm bar per phase (needs ``pip install tqdm``).
* ``False``/``None``/``"off"``: nothing.

Updates arrive at a bounded rate (a few per second), never per text.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from . import _engine
from .errors import ParameterError

__all__ = ["ProgressEvent", "ProgressCallback", "Progress", "native_progress", "TqdmProgress"]

#: The text formats, the engine's one list (crates/core/src/progress.rs
#: ``ProgressFormat::NAMES``): the CLI's ``--progress`` choices and the messages.
FORMATS: tuple[str, ...] = _engine.PROGRESS_FORMATS


@dataclass(frozen=True)
class ProgressEvent:
    """One progress update.

    Phases, in order: ``"counting"`` (reading the input; ``unit`` ``"B"``,
    on-disk bytes, so a compressed file's total is its compressed size),
    ``"word table"`` and ``"pair index"`` (the merge phase's setup; ``unit``
    ``"word types"``/``"words"``), ``"merging"`` (``unit`` ``"merges"``),
    ``"balancing"`` (one event per round, language balancing only), and
    ``"encoding"`` (``encode_file``, ``encode_batch``; ``unit`` ``"B"``).

    Within one run of a phase ``done`` never decreases, and the last event
    has ``finished=True`` (a phase may run again: SuperBPE's second stage,
    balancing rounds).

    ``bpeforge.distributed`` adds ``"shards"`` (``unit`` ``"shards"``: Ray
    tasks done; ``info`` has ``task``, ``"counting"`` or ``"encoding"``,
    and ``bytes_done``, ``bytes_total``, the shards' on-disk bytes).

    Attributes:
        phase: the phase's name, as above.
        done: units done so far.
        total: units in all (None while unknown, e.g. an iterator's bytes).
        unit: what ``done`` and ``total`` count.
        elapsed: seconds since the phase started.
        rate: ``done / elapsed``, units per second.
        eta: seconds left at that rate (None when unknown).
        finished: True on the phase's last event.
        info: what else the phase reports: ``file``, ``file_index``,
            ``files``, ``file_done``, ``file_total``, ``file_rate``,
            ``file_eta`` while counting files; ``texts``, ``pretokens``,
            ``word_types`` when counting ends; ``cpu_seconds`` (the process's
            CPU seconds in the phase, all threads; None where unknown) and
            ``threads`` when counting, the word table, the pair index or
            merging ends (``cpu_seconds / elapsed / threads`` is how busy
            the threads were); ``pair_count`` while merging;
            ``lines``, ``tokens`` when encoding ends; the round's premiums
            while balancing; ``task``, ``bytes_done``, ``bytes_total`` for
            ``"shards"``.
    """

    phase: str
    done: int
    total: Optional[int]
    unit: str
    elapsed: float
    rate: float
    eta: Optional[float]
    finished: bool
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_native(cls, d: dict[str, Any]) -> ProgressEvent:
        """The event for one update dict of the engine: its main keys become
        the attributes, the rest ``info``."""
        main = {k: d.pop(k) for k in ("phase", "done", "total", "unit", "elapsed", "rate", "eta", "finished")}
        return cls(**main, info=d)


ProgressCallback = Callable[[ProgressEvent], object]
Progress = Union[bool, str, ProgressCallback, None]


def _is_process_stderr(stream: Any) -> bool:
    """True when ``stream`` writes to the process's fd 2 unbuffered by Python
    (so the core may write to fd 2 directly without reordering)."""
    if stream is not sys.__stderr__ or stream is None:
        return False
    try:
        return bool(stream.fileno() == 2)
    except (AttributeError, OSError, ValueError):
        return False


def native_progress(progress: Progress) -> Any:
    """``progress`` as the native module takes it: a format name, a
    ``(format, stream)`` pair, or a callable taking one dict per event."""
    if progress is None or progress is False:
        return "off"
    if progress is True:
        progress = "auto"
    if isinstance(progress, str):
        if progress == "tqdm":
            return _to_native(TqdmProgress())
        if progress == "bar":
            progress = "human"
        if progress not in FORMATS:
            raise _bad_progress(progress)
        if progress == "off" or _is_process_stderr(sys.stderr):
            return progress
        return (progress, sys.stderr)
    if callable(progress):
        return _to_native(progress)
    raise _bad_progress(progress)


def _bad_progress(progress: Any) -> ParameterError:
    names = ", ".join(repr(f) for f in FORMATS)
    return ParameterError(f"progress must be True, False, {names}, 'tqdm' or a callable, got {progress!r}")


def _to_native(callback: ProgressCallback) -> Callable[[dict[str, Any]], None]:
    def deliver(d: dict[str, Any]) -> None:
        callback(ProgressEvent.from_native(d))

    return deliver


class TqdmProgress:
    """A progress callback that draws one tqdm bar per phase
    (``progress="tqdm"``; ``tqdm.auto`` picks the notebook widget in Jupyter).

    Extra keywords go to every ``tqdm`` bar (e.g. ``leave=False``, ``file=``).
    """

    def __init__(self, **tqdm_kwargs: Any) -> None:
        from ._extras import require

        self._tqdm = require("tqdm.auto", "progress='tqdm'").tqdm
        self._kwargs = tqdm_kwargs
        self._bar: Any = None
        self._phase: Optional[str] = None

    def __call__(self, event: ProgressEvent) -> None:
        if self._bar is None or event.phase != self._phase:
            self.close()
            self._phase = event.phase
            self._bar = self._tqdm(total=event.total, desc=event.phase, unit=event.unit, unit_scale=True,
                                   unit_divisor=1024 if event.unit == "B" else 1000, **self._kwargs)
        bar = self._bar
        if event.total is not None and bar.total != event.total:
            bar.total = event.total
        bar.update(max(0, event.done - bar.n))
        if event.finished:
            self.close()

    def close(self) -> None:
        """Close the bar of the current phase (the next event opens a new one)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._phase = None
