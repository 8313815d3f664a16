"""Training and encoding on a Ray cluster (``pip install 'bpeforge[ray]'``).

:func:`train` counts word types in Ray tasks, one per *shard* of the input,
sums the tables and runs the merge loop on the driver; :func:`encode` writes a
corpus as sharded id files, one Ray task per shard, plus a manifest. Both give
exactly what the local path gives: ``train(paths, ...)`` returns the model
:func:`bpeforge.train` returns for the same keywords (only measurements in
its metadata differ: timings and the count table's memory), and the shards
of :func:`encode`, concatenated in manifest order, are
:meth:`bpeforge.Tokenizer.encode_file` of each input.

Shards:

* a plain (uncompressed) file larger than ``shard_bytes`` is cut into byte
  ranges of about ``shard_bytes``; a range holds the lines that *start* in it,
  so the ranges of a file see every line exactly once;
* a compressed file (any compression :func:`bpeforge.train` reads) is always one whole
  shard (it cannot be entered in the middle): split big corpora into several
  compressed files, or keep them plain, to spread them over the cluster;
* for training, small files are grouped into shards of about ``shard_bytes``;
  ``documents=True`` and ``separator=...`` never cut a file;
* a Parquet file is cut into runs of row groups of about ``shard_bytes``
  (uncompressed) for training, and an Arrow file is one shard; for
  encoding, each Parquet/Arrow file is one shard (``text_column`` names the
  column, as in :meth:`bpeforge.Tokenizer.encode_file`).

Where things run: input paths (and language files) are made absolute against
the driver's working directory and then opened *by the workers*: on a
cluster, put the corpus on storage every node mounts at the same path (NFS, a
shared volume, ...). Shard planning, the language table, counting, encoding
and the output files (including the manifest) all happen on the workers; each
shard's serialized word counts come back to the driver, which adds each to a
running sum as it arrives and drops it: the driver holds the summed table
plus one shard's table at a time, never every shard's table at once.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from . import _arrow, _engine, _text_names
from ._io import write_atomic
from ._load import load
from ._progress import Progress, native_progress
from ._sizes import at_sizes, check_sizes, plan_sizes, run_size
from ._tokenizer import PathLike, SpecialSet, Tokenizer
from .options import TrainOptions
from .options import paths as _paths
from .errors import ParameterError
from ._shard_plan import DEFAULT_SHARD_BYTES, plan_shards
from ._ray_tasks import (_abspaths, _arrow_count_task, _arrow_languages_task, _arrow_plan_task, _check_task_settings,
                         _connect, _count_task, _encode_task, _get, _language_table_task, _plan_task, _ray, _remote)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["train", "encode", "plan_shards", "load_encoded", "DEFAULT_SHARD_BYTES", "MANIFEST_NAME"]

#: The manifest :func:`encode` writes into its output directory.
MANIFEST_NAME = "manifest.json"

_EXTENSIONS = {"ids": "ids", "npy": "npy", "bin": "bin"}


def _gather(refs: list[Any], sizes: list[int], progress: Any, use: Any = None) -> list[Any]:
    """Results of ``refs`` in order, reporting shards as they finish to
    ``progress`` (an ``_engine.ShardReporter``: the engine's progress printer
    or the caller's callback, as for a local run); on an
    error (or Ctrl-C) the other tasks are cancelled and the task's own
    exception is raised. With ``use``, each result is handed to
    ``use(index, result)`` as soon as it is ready and not kept (nor is its
    reference, so Ray frees it): the list returned is then all None.
    ``refs`` is emptied (the references are held here only)."""
    ray = _ray()
    index = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    pending = list(refs)
    refs.clear()
    done = done_bytes = 0
    progress.update(0, 0)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.5)
            for ref in ready:
                i = index.pop(ref)
                if use is None:
                    results[i] = _get(ref)
                else:
                    use(i, _get(ref))
                done += 1
                done_bytes += sizes[i]
            ready = ref = None  # no reference outlives its use
            progress.update(done, done_bytes)
    except BaseException:
        for ref in pending:
            try:
                ray.cancel(ref)
            except Exception:  # pragma: no cover - best effort
                pass
        raise
    progress.update(done, done_bytes, final=True)
    return results


def _write_manifest_task(output_dir: str, manifest: dict[str, Any]) -> str:
    path = os.path.join(output_dir, MANIFEST_NAME)
    write_atomic(path, json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return path


# ---- training ---------------------------------------------------------------


@overload
def train(paths: PathLike | Sequence[PathLike], *, address: str | None = None,
          shard_bytes: int = DEFAULT_SHARD_BYTES, num_cpus_per_task: float = 1, progress: Progress = True,
          vocab_sizes: None = None, **options: Any) -> Tokenizer: ...


@overload
def train(paths: PathLike | Sequence[PathLike], *, address: str | None = None,
          shard_bytes: int = DEFAULT_SHARD_BYTES, num_cpus_per_task: float = 1, progress: Progress = True,
          vocab_sizes: Sequence[int | str], **options: Any) -> dict[int, Tokenizer]: ...


def train(
    paths: PathLike | Sequence[PathLike],
    *,
    address: str | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    num_cpus_per_task: float = 1,
    progress: Progress = True,
    vocab_sizes: Sequence[int | str] | None = None,
    **options: Any,
) -> Tokenizer | dict[int, Tokenizer]:
    """Train like :func:`bpeforge.train`, counting on a Ray cluster.

    One Ray task per shard (see the module docs) counts the word types of its
    shard with ``num_cpus_per_task`` threads; the driver adds each shard's
    table to a running sum as it arrives, then runs the merge loop
    (``threads`` is only recorded, as in :func:`bpeforge.train`).
    ``max_memory`` is each machine's budget: the driver's merge phase keeps
    within it, and each counting task within its share of its machine's
    (its CPUs over the node's; without ``max_memory``, of that machine's
    default budget), spilling to its temporary folder past it. The model
    equals ``bpeforge.train(paths, ...)`` with the same keywords, merge for
    merge and count for count, for every option; its metadata lists
    ``paths`` as given. Its ``timings`` say how long counting took from the
    first task to the summed table (``count_seconds``, Ray start-up
    excluded), of which ``count_sum_seconds`` adding tables on the driver,
    and in how many shards (``count_shards``).

    Language balancing (``langs`` or ``file_languages``): one task builds
    the language table (line counts per language, as the local run does),
    then every shard tags its lines from it and counts them weighted
    (``temperature``) or keyed by language (``max_premium``), exactly as the
    local run counts; a byte range skips the tags of the lines before it.
    SuperBPE (``superbpe_transition``): each shard also counts the stage-2
    units in the same pass, and they travel in its table.

    Args:
        paths: a path or a list of paths; relative paths are resolved against
            the driver's working directory, then read by the workers.
        address: where Ray runs, used only when Ray is not initialised in
            this process yet (otherwise the existing connection is used):
            ``None`` does what ``ray.init()`` does: connect to the cluster in
            ``RAY_ADDRESS`` or the one ``ray start`` started on this machine,
            else start a local instance; ``"auto"`` connects to that
            existing cluster and fails if there is none; ``"local"`` always
            starts a new local instance; ``"HOST:PORT"`` connects to that
            cluster's head (GCS port, 6379 by default) and
            ``"ray://HOST:10001"`` uses Ray Client.
        shard_bytes: plain files larger than this are cut into byte ranges of
            about this size; smaller files are grouped up to it.
        num_cpus_per_task: CPUs Ray reserves for each counting task (and its
            counting threads, rounded up).
        progress: as in :func:`bpeforge.train` (text on stderr, a callback,
            ``"tqdm"``): shards done (phase ``"shards"``), then the merge
            loop's progress.
        vocab_sizes: several sizes from one run, as for
            :func:`bpeforge.train` (then a dict from each size to its model).
        options: the keywords of :func:`bpeforge.train`
            (:class:`bpeforge.options.TrainOptions`), checked the same way;
            ``checkpoint_path`` and ``progress_csv`` are written by the
            driver; ``langs`` files are read by the workers.

    Examples:
        >>> import bpeforge, bpeforge.distributed
        >>> tok = bpeforge.distributed.train([bpeforge.sample_corpus()], vocab_size=500,
        ...                                  shard_bytes=100_000, progress=False)  # doctest: +SKIP
    """
    sizes = plan_sizes(vocab_sizes, "vocab_size" in options)
    if sizes is not None:
        options["vocab_size"] = run_size(sizes, None)
    opts = TrainOptions(**options)
    check_sizes(opts, sizes)
    tok = train_with(_paths(paths), opts, address=address, shard_bytes=shard_bytes,
                     num_cpus_per_task=num_cpus_per_task, progress=progress)
    return tok if sizes is None else at_sizes(tok, sizes)


def train_with(inputs: list[str], opts: TrainOptions, *, address: str | None, shard_bytes: int,
               num_cpus_per_task: float, progress: Progress) -> Tokenizer:
    """:func:`train` with its options made (the command line's ``--ray``
    makes them from its flags); ``progress`` as in :func:`train`."""
    _check_task_settings(shard_bytes, num_cpus_per_task)
    # Parquet/Arrow files: shards are runs of row groups, read with pyarrow
    # on the workers (Python applies the text and language columns).
    text_names = _text_names.for_training(inputs, opts)
    arrow = text_names.kind == "columnar"
    abs_inputs = _abspaths(inputs)
    names = _arrow.check_files(abs_inputs, opts, text_names) if arrow else None
    columns = _arrow.columns_of(opts, text_names) if arrow else None
    engine = _arrow.engine_options(opts, text_names.lang_column) if arrow else opts.engine_options()
    settings = opts.settings(**_arrow.engine_changes(text_names.lang_column)) if arrow else opts.settings()
    prog = native_progress(progress)
    ray = _connect(address)
    start = time.perf_counter()
    # The tasks read the language files from their own working directory.
    if engine.langs is not None:
        engine = dataclasses.replace(engine, langs=_abspaths(engine.langs))
    balanced = any(v is not None for v in (engine.langs, engine.file_languages, engine.lang_field))
    if arrow:
        plan = _remote(_arrow_plan_task, 0.1).remote(abs_inputs, shard_bytes)
    else:
        split = not opts.documents and opts.separator is None
        plan = _remote(_plan_task, 0.1).remote(abs_inputs, shard_bytes, split, True, balanced,
                                               engine.langs is not None)
    languages, lang_bytes = None, []
    if balanced:
        task = (_remote(_arrow_languages_task, num_cpus_per_task).remote(abs_inputs, names, columns)
                if arrow else _remote(_language_table_task, num_cpus_per_task).remote(abs_inputs, engine))
        languages_found, lines, lang_bytes = _get(task)
        languages = (languages_found, lines)
    shards = _get(plan)
    languages_ref = ray.put(languages)
    task_args: tuple[Any, ...]
    if arrow:
        count, task_args = _remote(_arrow_count_task, num_cpus_per_task), (ray.put(names), columns, ray.put(engine))
    else:
        count, task_args = _remote(_count_task, num_cpus_per_task), (ray.put(engine),)
    sizes = [s["bytes"] for s in shards]
    total = _engine.CountSum()

    def add(_: int, result: tuple[bytes, list[int]]) -> None:
        table, shard_lang_bytes = result
        total.add(table)
        lang_bytes[:] = [a + b for a, b in zip(lang_bytes, shard_lang_bytes)]

    _gather([count.remote(s, *task_args, languages_ref, num_cpus_per_task) for s in shards], sizes,
            _engine.shard_reporter(prog, "counting", len(shards), sum(sizes)), add)
    # The engine times only the adding of the tables; the model records the
    # whole count, from the first task to the summed table, and its shards.
    sharded = (time.perf_counter() - start, len(shards))
    return Tokenizer(_engine.train_count_sum(total, settings, prog, inputs, languages,
                                             lang_bytes if balanced else None, sharded))


# ---- encoding ---------------------------------------------------------------


def _output_names(paths: list[str]) -> list[str]:
    """File-name stems for the outputs: the input's base name, or (when base
    names collide) its path below the inputs' common folder with ``/``
    written as ``__``."""
    if len(set(paths)) != len(paths):
        raise ParameterError("the same input file is given twice; its outputs would collide")
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    common = os.path.commonpath([os.path.dirname(p) for p in paths])
    return [os.path.relpath(p, common).replace(os.sep, "__") for p in paths]


def encode(
    model: Tokenizer | PathLike,
    paths: PathLike | Sequence[PathLike],
    output_dir: PathLike,
    *,
    format: Literal["ids", "npy", "bin"] = "npy",
    address: str | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    num_cpus_per_task: float = 1,
    allowed_special: SpecialSet = (),
    disallowed_special: SpecialSet = "all",
    progress: Progress = True,
    text_field: str | None = None,
    text_column: str | None = None,
) -> dict[str, Any]:
    """Encode a corpus across a Ray cluster into sharded id files.

    One task per shard: a whole input file, or a byte range of a plain file
    larger than ``shard_bytes`` (the lines that start in it). Shard ``k`` of
    input ``f`` is written as ``<output_dir>/<f>.<k>.<format>`` (``<f>`` is
    the file's base name; when two inputs share one, their path below the
    inputs' common folder with ``/`` as ``__``), in the format of
    :meth:`bpeforge.Tokenizer.encode_file`: ``ids`` (a line of ids per line),
    or ``npy``/``bin`` with ``<shard>.offsets.npy`` beside it.

    ``<output_dir>/manifest.json`` lists the shards in order (input order,
    then ``k``) with their line, token and byte counts; concatenating the
    shards of an input in that order gives exactly ``encode_file`` of the
    whole input (for ``npy``/``bin``, each shard's offsets start at 0:
    add the tokens of the shards before it; :func:`load_encoded` does that).
    The manifest is written last, so its presence means every shard is
    complete. The manifest is also returned.

    ``model`` is a :class:`~bpeforge.Tokenizer` or a model file (read on the
    driver and shipped to the workers). ``address``, ``shard_bytes`` and
    ``num_cpus_per_task`` (also each task's encoding threads) are as in
    :func:`train`; paths and ``output_dir`` are resolved against the driver's
    working directory and used by the workers (shared storage on a cluster).
    Special tokens as in ``encode_file`` and ``Tokenizer.encode``: their text
    is an error unless ``allowed_special`` names them. ``text_field`` and
    ``text_column`` as in ``encode_file``: the field of JSON lines (split
    into byte ranges like plain text) or the text column of Parquet/Arrow
    files (each file one shard).
    """
    # Why this function is long: most of it is its signature and docstring;
    # the body is the driver's few steps (check, plan, one task per shard,
    # gather, manifest), each a call.
    tok = model if isinstance(model, Tokenizer) else load(model)
    inputs = _paths(paths)
    _check_task_settings(shard_bytes, num_cpus_per_task)
    if format not in _EXTENSIONS:
        raise ParameterError(f"format must be 'ids', 'npy' or 'bin', got {format!r}")
    # Structured input needs its text field or column, as locally.
    text = _text_names.resolve(inputs, text_field=text_field, text_column=text_column)
    if tok.special_tokens:
        tok._rules(allowed_special, disallowed_special)  # checked here, before any task starts
    out_dir = os.path.abspath(os.fspath(output_dir))
    abs_inputs = _abspaths(inputs)
    names = _output_names(abs_inputs)
    prog = native_progress(progress)
    ray = _connect(address)
    shards = _get(_remote(_plan_task, 0.1).remote(abs_inputs, shard_bytes, True, False))
    threads = max(1, math.ceil(num_cpus_per_task))
    model_ref = ray.put(tok.to_json())
    task = _remote(_encode_task, num_cpus_per_task)
    entries: list[dict[str, Any]] = []
    refs = []
    file_index = {p: i for i, p in enumerate(abs_inputs)}
    next_k: dict[int, int] = {}
    for s in shards:
        i = file_index[s["paths"][0]]
        k = next_k.get(i, 0)
        next_k[i] = k + 1
        name = f"{names[i]}.{k}.{_EXTENSIONS[format]}"
        entries.append({
            "input": inputs[i], "shard": k, "byte_range": s["byte_range"], "path": name,
            "offsets": f"{name}.offsets.npy" if format != "ids" else None,
        })
        refs.append(task.remote(model_ref, s["paths"][0], s["byte_range"], os.path.join(out_dir, name),
                                format, threads, allowed_special, disallowed_special, text.text_field,
                                text.text_column))
    sizes = [s["bytes"] for s in shards]
    stats = _gather(refs, sizes, _engine.shard_reporter(prog, "encoding", len(refs), sum(sizes)))
    id_bytes = None
    for entry, st in zip(entries, stats):
        entry.update(lines=st["lines"], tokens=st["tokens"], bytes=st["bytes"], seconds=round(st["seconds"], 3))
        id_bytes = st["id_bytes"]
    manifest: dict[str, Any] = {
        "format": format,
        "dtype": None if format == "ids" else ("<u2" if id_bytes == 2 else "<u4"),
        "model": {"vocab_size": tok.vocab_size, "scheme": tok.scheme, "pretokenizer": tok.pretokenizer,
                  "special_tokens": tok.special_tokens},
        "inputs": inputs,
        "lines": sum(e["lines"] for e in entries),
        "tokens": sum(e["tokens"] for e in entries),
        "bytes": sum(e["bytes"] for e in entries),
        "shards": entries,
    }
    _get(_remote(_write_manifest_task, 0.1).remote(out_dir, manifest))
    return manifest


def load_encoded(output_dir: PathLike, input: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reads what :func:`encode` wrote into ``output_dir`` as ``(ids, offsets)``
    (numpy): the shards concatenated in manifest order, offsets rebased, so
    line ``i`` is ``ids[offsets[i]:offsets[i + 1]]``. ``input`` (a path as
    given to :func:`encode`) keeps that file's shards only; without it all
    inputs follow each other in order. Works for every format (``ids`` files
    are parsed)."""
    import numpy as np

    base = os.fspath(output_dir)
    with open(os.path.join(base, MANIFEST_NAME), encoding="utf-8") as f:
        manifest = json.load(f)
    fmt = manifest["format"]
    id_parts: list[np.ndarray] = []
    off_parts: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
    total = 0
    for entry in manifest["shards"]:
        if input is not None and entry["input"] != input:
            continue
        path = os.path.join(base, entry["path"])
        if fmt == "ids":
            with open(path, encoding="ascii") as g:
                rows = [np.array(line.split(), dtype=np.uint32) for line in g]
            ids = np.concatenate(rows) if rows else np.zeros(0, dtype=np.uint32)
            offsets = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum([len(r) for r in rows], out=offsets[1:])
        else:
            ids = np.load(path) if fmt == "npy" else np.fromfile(path, dtype=manifest["dtype"])
            offsets = np.load(os.path.join(base, entry["offsets"]))
        id_parts.append(ids)
        off_parts.append(offsets[1:] + total)
        total += int(offsets[-1])
    if input is not None and len(id_parts) == 0:
        raise ParameterError(f"{input!r} is not an input of the manifest in {base}")
    dtype = np.uint32 if fmt == "ids" else np.dtype(manifest["dtype"])
    ids_all = np.concatenate(id_parts).astype(dtype, copy=False) if id_parts else np.zeros(0, dtype=dtype)
    return ids_all, np.concatenate(off_parts)

