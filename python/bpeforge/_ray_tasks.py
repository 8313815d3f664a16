"""The Ray side of :mod:`bpeforge.distributed`: connecting, remote calls
and their errors, and the tasks themselves (planning, the language table,
counting a shard, encoding a shard). Each counting task makes its own
settings from the run's options (checked on the driver first)."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from typing import Any

from . import _arrow, _engine
from ._tokenizer import Tokenizer
from .errors import BpeforgeError, ParameterError
from ._shard_plan import _compressed, _copy_lines, plan_shards


def _ray() -> Any:
    from ._extras import require

    return require("ray", "bpeforge.distributed")


def _connect(address: str | None) -> Any:
    """Ray, initialised: an existing connection is reused as is; otherwise
    ``ray.init(address=address)``."""
    ray = _ray()
    if not ray.is_initialized():
        import logging

        ray.init(address=address, logging_level=logging.WARNING)
    return ray


_REMOTES: dict[tuple[str, float], Any] = {}


def _remote(fn: Any, num_cpus: float) -> Any:
    key = (fn.__name__, num_cpus)
    if key not in _REMOTES:
        _REMOTES[key] = _ray().remote(num_cpus=num_cpus)(fn)
    return _REMOTES[key]


def _unwrap(e: BaseException) -> BaseException:
    """The exception a task raised (a bpeforge error names the file), if Ray
    carried it over; else ``e`` itself."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, (BpeforgeError, OSError, ValueError, TypeError)):
        return cause
    return e


def _get(ref: Any) -> Any:
    ray = _ray()
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = _unwrap(e)
        if cause is e:
            raise
        raise cause from None


def _abspaths(paths: list[str]) -> list[str]:
    return [os.path.abspath(p) for p in paths]


def _check_task_settings(shard_bytes: int, num_cpus_per_task: float) -> None:
    if isinstance(shard_bytes, bool) or not isinstance(shard_bytes, int) or shard_bytes < 1:
        raise ParameterError(f"shard_bytes must be a positive integer, got {shard_bytes!r}")
    if isinstance(num_cpus_per_task, bool) or not isinstance(num_cpus_per_task, (int, float)) or not num_cpus_per_task > 0:
        raise ParameterError(f"num_cpus_per_task must be a positive number, got {num_cpus_per_task!r}")


# ---- tasks (run on the workers) ---------------------------------------------


def _budget_share(cpus: float) -> float:
    """The share of its machine's memory budget a task with ``cpus`` CPUs
    counts within: its CPUs over the node's, so the tasks Ray runs side by
    side on a node keep to the budget together (the budget itself, given or
    the machine's default, is the engine's: ``TrainSettings.for_counting_task``)."""
    ray = _ray()
    node_cpus = 0.0
    node = ray.get_runtime_context().get_node_id()
    for n in ray.nodes():
        if n.get("NodeID") == node:
            node_cpus = float(n.get("Resources", {}).get("CPU", 0))
    return min(1.0, cpus / node_cpus) if node_cpus > 0 else 1.0


def _task_settings(engine: Any, cpus: float) -> Any:
    """A counting task's settings: the run's options (checked on the driver
    first), made and checked again here, in the task's own process, with the
    task's threads and its share of the machine's memory budget."""
    return _engine.train_settings(engine).for_counting_task(max(1, math.ceil(cpus)), _budget_share(cpus))


def _plan_task(paths: list[str], shard_bytes: int, split: bool, group: bool, files: bool = False,
               lines: bool = False) -> list[dict[str, Any]]:
    return plan_shards(paths, shard_bytes, split=split, group=group, files=files, lines=lines)


def _language_table_task(paths: list[str], engine: Any) -> tuple[list[str], list[int], list[int]]:
    return _engine.language_table(paths, _engine.train_settings(engine))


def _arrow_plan_task(paths: list[str], shard_bytes: int) -> list[dict[str, Any]]:
    return _arrow.plan_shards(paths, shard_bytes)


def _arrow_languages_task(paths: list[str], names: list[str],
                          columns: _arrow.Columns) -> tuple[list[str], list[int], list[int]]:
    languages, lines = _arrow.shard_languages(paths, names, columns)
    return languages, lines, [0] * len(languages)  # each language's bytes are added while counting


def _arrow_count_task(shard: dict[str, Any], names: list[str], columns: _arrow.Columns, engine: Any,
                      languages: tuple[list[str], list[int]] | None, cpus: float) -> tuple[bytes, list[int]]:
    return _arrow.count_shard(shard, names, columns, _task_settings(engine, cpus), languages)


def _count_task(shard: dict[str, Any], engine: Any,
                languages: tuple[list[str], list[int]] | None, cpus: float) -> tuple[bytes, list[int]]:
    rng = shard["byte_range"]
    # Positions among the inputs matter only to language-balanced runs.
    files = shard.get("files", [0] * len(shard["paths"]))
    return _engine.count_shard(shard["paths"], files, _task_settings(engine, cpus), "off",
                               None if rng is None else (rng[0], rng[1]), shard.get("lines_before", 0), languages)


_MODEL_CACHE: dict[str, Tokenizer] = {}


def _encode_task(
    model_json: str, src: str, byte_range: list[int] | None, dst: str, format: str,
    threads: int, allowed: Any, disallowed: Any, text_field: str | None, text_column: str | None,
) -> dict[str, Any]:
    tok = _MODEL_CACHE.get(model_json)
    if tok is None:
        _MODEL_CACHE.clear()
        tok = _MODEL_CACHE[model_json] = Tokenizer.from_json(model_json)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    kw = {"format": format, "threads": threads, "allowed_special": allowed, "disallowed_special": disallowed,
          "text_field": text_field, "text_column": text_column}
    if byte_range is None:
        return tok.encode_file(src, dst, **kw)
    if _compressed(src):
        raise ParameterError(f"{src}: a compressed file cannot be split by byte range; give it as a whole shard")
    tmpdir = tempfile.mkdtemp(prefix="bpeforge-shard-")
    try:
        tmp = os.path.join(tmpdir, "shard.txt")
        try:
            _copy_lines(src, (byte_range[0], byte_range[1]), tmp)
        except OSError as e:
            from .errors import InputError

            raise InputError(f"cannot read {src}: {e.strerror or e}") from None
        try:
            return tok.encode_file(tmp, dst, **kw)
        except BpeforgeError as e:
            # Name the real input (line numbers count from the shard start).
            where = f"{src} (bytes {byte_range[0]}..{byte_range[1]})"
            raise type(e)(str(e).replace(tmp, where)) from None
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
