"""Parquet, Arrow files and Hugging Face ``datasets``, read with pyarrow.

The text column's Arrow buffers (offsets and UTF-8 data) go to the engine
as they are: no Python ``str`` is built per row. Parquet files stream one
row group at a time (in batches inside it), so memory stays bounded by the
batch size whatever the file size. Bad rows (a null text, a null or empty
language) are errors naming the file, row group and row, or are skipped and
counted with ``on_bad_record="skip"``, as for JSON lines.

A language column (``lang_column``) is read in a first
pass over that column only (the weights need every language's share before
counting); the model equals the texts as plain lines with a ``langs`` file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, NamedTuple

from . import _engine, _input_formats
from ._extras import require
from ._input_formats import is_parquet
from .errors import InputError, ParameterError

#: Rows handed to the engine at a time (a few MiB of typical text).
BATCH_ROWS = 16_384
#: Options that choose how text files are cut: meaningless for columns.
TEXT_FILE_ONLY = ("documents", "separator", "columns", "langs", "file_languages")


def _pyarrow() -> Any:
    pyarrow = require("pyarrow", "Parquet/Arrow input")
    require("pyarrow.compute", "Parquet/Arrow input")
    require("pyarrow.parquet", "Parquet/Arrow input")
    return pyarrow


# ---- reading ------------------------------------------------------------------


class _Source:
    """Batches of one column set from Parquet/Arrow files, each with where it
    comes from (file and row group, for errors) and its first row's number."""

    def __init__(self, paths: list[str], columns: list[str], batch_rows: int = BATCH_ROWS,
                 row_groups: tuple[int, int] | None = None) -> None:
        # row_groups: only Parquet row groups first..end-1 (a shard of one file).
        self.paths, self.columns, self.batch_rows, self.row_groups = paths, columns, batch_rows, row_groups

    def __iter__(self) -> Iterator[tuple[str, int, Any]]:
        for path in self.paths:
            if is_parquet(path):
                yield from self._parquet(path)
            else:
                yield from self._ipc(path)

    def _check_columns(self, path: str, names: list[str]) -> None:
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise InputError(f"{path}: no column {missing[0]!r} (its columns: {', '.join(names)})")

    def _parquet(self, path: str) -> Iterator[tuple[str, int, Any]]:
        pa = _pyarrow()
        try:
            pf = pa.parquet.ParquetFile(path, memory_map=True)
        except FileNotFoundError:
            raise InputError(f"cannot read {path}: no such file") from None
        except (pa.ArrowException, OSError) as e:
            raise InputError(f"{path}: not a readable Parquet file ({e})") from None
        self._check_columns(path, pf.schema_arrow.names)
        first, end = self.row_groups or (0, pf.num_row_groups)
        for group in range(first, min(end, pf.num_row_groups)):
            row = 1  # rows are numbered within their row group
            batches = pf.iter_batches(batch_size=self.batch_rows, row_groups=[group], columns=self.columns)
            for where, batch in _read(batches, lambda _: f"{path}, row group {group}"):  # noqa: B023 (used at once)
                yield where, row, batch
                row += batch.num_rows

    def _ipc(self, path: str) -> Iterator[tuple[str, int, Any]]:
        pa = _pyarrow()
        try:
            source = pa.memory_map(path)
        except FileNotFoundError:
            raise InputError(f"cannot read {path}: no such file") from None
        try:
            try:
                reader = pa.ipc.open_file(source)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
                schema = reader.schema
            except pa.ArrowInvalid:
                source.seek(0)
                stream = pa.ipc.open_stream(source)
                batches, schema = iter(stream), stream.schema
        except (pa.ArrowException, OSError) as e:
            raise InputError(f"{path}: not a readable Arrow file ({e})") from None
        self._check_columns(path, schema.names)
        row = 1
        for where, batch in _read(batches, lambda index: f"{path}, record batch {index}"):
            yield where, row, batch.select(self.columns)
            row += batch.num_rows


def _read(batches: Iterator[Any], where: Any) -> Iterator[tuple[str, Any]]:
    """Each batch with its place (``where(index)``); a batch that cannot be
    read (a truncated or corrupt file) is an InputError naming its place."""
    pa = _pyarrow()
    index = 0
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as e:
            raise InputError(f"{where(index)}: cannot read ({e})") from None
        yield where(index), batch
        index += 1


def _strings(column: Any, name: str, where: str) -> list[Any]:
    """The column as string/large_string arrays (other string encodings cast)."""
    pa = _pyarrow()
    t = column.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        string_like = pa.types.is_dictionary(t) and pa.types.is_string(t.value_type) or "string_view" in str(t)
        if not string_like:
            raise InputError(f"{where}: column {name!r} is {t}, not a string column")
        column = column.cast(pa.large_string())
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def _bad_rows(text: Any, lang: Any | None) -> Any:
    """A boolean mask of rows without a text (or without a language)."""
    pc = _pyarrow().compute
    bad = pc.is_null(text)
    if lang is not None:
        no_lang = pc.or_kleene(pc.is_null(lang), pc.equal(pc.utf8_length(lang), 0)).fill_null(True)
        bad = pc.or_(bad, no_lang)
    return bad


class _Rows:
    """Turns batches into the engine's row tuples, dropping or refusing bad rows."""

    def __init__(self, text: str, lang: str | None, on_bad_record: str, languages: dict[str, int] | None) -> None:
        self.text, self.lang, self.on_bad_record, self.languages = text, lang, on_bad_record, languages
        self.skipped = 0

    def clean(self, where: str, first_row: int, table: Any) -> tuple[Any, Any | None]:
        """The text and (trimmed) language columns of a batch, bad rows handled."""
        pa = _pyarrow()
        pc = pa.compute
        text = table.column(self.text)
        lang = pc.utf8_trim_whitespace(table.column(self.lang).cast(pa.large_string())) if self.lang else None
        if text.null_count or lang is not None:
            bad = _bad_rows(text, lang)
            n_bad = pc.sum(bad).as_py() or 0
            if n_bad:
                if self.on_bad_record == "error":
                    first = pc.index(bad, True).as_py()
                    why = "the text is null" if not text[first].is_valid else "the language is null or empty"
                    raise InputError(f"{where}, row {first_row + first}: {why} (on_bad_record=\"skip\" skips such "
                                     "rows and counts them)")
                keep = pc.invert(bad)
                text = pc.filter(text, keep)
                lang = pc.filter(lang, keep) if lang is not None else None
                self.skipped += n_bad
        return text, lang

    def batches(self, source: _Source) -> Iterator[tuple]:
        pa = _pyarrow()
        names = pa.array(list(self.languages), pa.large_string()) if self.languages else None
        for where, first_row, table in source:
            text, lang = self.clean(where, first_row, table)
            ids = None
            if names is not None and lang is not None:
                ids = pa.compute.index_in(lang, value_set=names).cast(pa.uint16())
                ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
            skipped, self.skipped = self.skipped, 0
            at = 0
            for chunk in _strings(text, self.text, where):
                _, offsets, data = chunk.buffers()
                wide = pa.types.is_large_string(chunk.type)
                langs = None
                if ids is not None:
                    part = ids.slice(at, len(chunk))
                    langs = (part.buffers()[1], part.offset)
                yield (where, first_row, offsets, data, chunk.offset, len(chunk), wide, langs, skipped)
                skipped = 0
                at += len(chunk)

    def count_languages(self, source: _Source) -> tuple[list[str], list[int]]:
        """Rows per language, in first-seen order (as a side file's tags)."""
        pc = _pyarrow().compute
        counts: dict[str, int] = {}
        for where, first_row, table in source:
            _, lang = self.clean(where, first_row, table)
            for pair in pc.value_counts(lang).to_pylist():
                counts[pair["values"]] = counts.get(pair["values"], 0) + pair["counts"]
        self.skipped = 0
        return list(counts), list(counts.values())


def column_texts(path: str, text_column: str) -> Iterator[str]:
    """The ``text_column`` column of one Parquet/Arrow file as Python strings
    (for readers that need ``str``: the report); a null text is an error
    naming file, row group and row."""
    rows = _Rows(text_column, None, "error", None)
    for where, first_row, table in _Source([path], [text_column]):
        text, _ = rows.clean(where, first_row, table)
        for chunk in _strings(text, text_column, where):
            yield from chunk.to_pylist()


class Columns(NamedTuple):
    """What Python reads of Arrow data for a training run: the text column
    (``text_column``), the language column (``lang_column``) and the
    ``on_bad_record`` rule for null rows, which Python applies to the
    batches."""

    text: str
    lang: str | None
    on_bad_record: str

    def rows(self, languages: dict[str, int] | None = None) -> _Rows:
        return _Rows(self.text, self.lang, self.on_bad_record, languages)


def columns_of(options: Any, names: Any) -> Columns:
    """The columns a training run on Parquet/Arrow files reads (``names``:
    :func:`bpeforge._text_names.for_training`)."""
    return Columns(names.text_column, names.lang_column, options.on_bad_record)


def engine_changes(lang: str | None) -> dict[str, Any]:
    """How an Arrow run's options differ in the engine's form. The engine
    counts the batches as they come, so it reads no JSON field
    (``text_field`` unset) and refuses no record itself; ``lang`` (the
    language column's name) tells it the run is balanced by each row's
    language."""
    return {"text_field": None, "on_bad_record": "error", "lang_field": lang}


def engine_options(options: Any, lang: str | None) -> Any:
    """An Arrow run's options in the engine's form (:func:`engine_changes`)."""
    return options.engine_options(**engine_changes(lang))


def text_bytes(paths: list[str], column: str) -> list[tuple[str, int]]:
    """Each file's path and the text bytes expected in its ``column`` (for the
    progress line's total and ETA): a Parquet file's uncompressed column
    chunks less their 4-byte length prefixes, an Arrow file's size; 0 when
    the metadata cannot be read (the reader then reports the problem)."""
    pa = _pyarrow()
    out = []
    for path in paths:
        size = 0
        try:
            if is_parquet(path):
                meta = pa.parquet.ParquetFile(path).metadata
                for g in range(meta.num_row_groups):
                    group = meta.row_group(g)
                    for c in range(group.num_columns):
                        chunk = group.column(c)
                        if chunk.path_in_schema == column:
                            size += max(chunk.total_uncompressed_size - 4 * chunk.num_values, 0)
            else:
                size = os.path.getsize(path)
        except (pa.ArrowException, OSError):
            size = 0
        out.append((path, size))
    return out


def _train(make_source: Any, inputs: list[str], columns: Columns, options: Any, progress: str,
           files: list[tuple[str, int]] | None = None) -> Any:
    """Trains on Arrow batches (``make_source()`` gives a fresh iterable each
    pass) of the text column, balanced by the language column if given."""
    settings = options.settings(**engine_changes(columns.lang))
    rows = columns.rows()
    languages = None
    if columns.lang is not None:
        languages = rows.count_languages(make_source())
        rows.languages = {name: i for i, name in enumerate(languages[0])}
    return _engine.train_arrow(rows.batches(make_source()), settings, progress, inputs, languages, files)


def check_files(files: list[str], options: Any, names: Any) -> list[str]:
    """Checks Parquet/Arrow inputs (``names``: what they are and the columns
    that apply, :func:`bpeforge._text_names.for_training`) and their
    options; returns the column names to read (the text column, then the
    language column if any)."""
    if names.kind != "columnar" or names.text_column is None:
        raise ParameterError(f"{files[0]} is not a Parquet/Arrow file")
    options.refuse(TEXT_FILE_ONLY, "for Parquet/Arrow input", "texts are rows of a column")
    text, lang = names.text_column, names.lang_column
    for f in files:
        if not os.path.isfile(f):
            raise _input_formats.missing_file_error(f)
    return [text] + ([lang] if lang and lang != text else [])


def train_files(files: list[str], options: Any, names: Any, progress: str) -> Any:
    """``bpeforge.train`` on Parquet/Arrow files (``names``: their columns,
    :func:`bpeforge._text_names.for_training`)."""
    read = check_files(files, options, names)
    columns = columns_of(options, names)
    return _train(lambda: _Source(files, read), files, columns, options, progress, text_bytes(files, columns.text))


def encode_files(tok: Any, files: list[str], dst: str, format: str, threads: int | None, rules: tuple[Any, Any],
                 progress: str, text_column: str) -> tuple:
    """``Tokenizer.encode_file`` on Parquet/Arrow files: the ``text_column``
    column, row ``i`` of the output for row ``i`` of the input (a null text
    is an error naming file, row group and row)."""
    if _input_formats.plan(files, text_field=None, text_column=text_column) != "columnar":
        raise ParameterError(f"{files[0]} is not a Parquet/Arrow file")
    rows = _Rows(text_column, None, "error", None)
    total = sum(size for _, size in text_bytes(files, text_column)) or None
    return _engine.encode_arrow_file(tok._native, rows.batches(_Source(files, [text_column])), dst, format, threads,
                                     *rules, progress, total)


# ---- shards of a distributed run (bpeforge.distributed; run on the workers) -----


def plan_shards(paths: list[str], shard_bytes: int) -> list[dict[str, Any]]:
    """Parquet files as runs of consecutive row groups of about
    ``shard_bytes`` (uncompressed, as the file's metadata gives them);
    Arrow files whole. Each shard: ``{"paths": [path], "row_groups":
    [first, end] | None, "bytes": size}``; ``bytes`` is what progress
    counts. A file that cannot be read is one shard whose task reports it."""
    pa = _pyarrow()
    shards: list[dict[str, Any]] = []
    for path in paths:
        groups = None
        if is_parquet(path):
            try:
                meta = pa.parquet.ParquetFile(path).metadata
                groups = [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
            except (pa.ArrowException, OSError):
                pass
        if groups is None:
            shards.append({"paths": [path], "row_groups": None, "bytes": os.path.getsize(path) if os.path.isfile(path) else 0})
            continue
        first, size = 0, 0
        for i, g in enumerate(groups):
            if i > first and size + g > shard_bytes:
                shards.append({"paths": [path], "row_groups": [first, i], "bytes": size})
                first, size = i, 0
            size += g
        shards.append({"paths": [path], "row_groups": [first, len(groups)], "bytes": size})
    return shards


def shard_languages(paths: list[str], names: list[str], columns: Columns) -> tuple[list[str], list[int]]:
    """The run's languages and their row counts, in first-seen order over
    all ``paths`` (one task reads them, as the local run's first pass
    does); ``names``: the columns to read (:func:`check_files`)."""
    return columns.rows().count_languages(_Source(paths, names))


def count_shard(shard: dict[str, Any], names: list[str], columns: Columns, settings: Any,
                languages: tuple[list[str], list[int]] | None) -> tuple[bytes, list[int]]:
    """One shard's serialized counts and the UTF-8 bytes of each language's
    texts in it (``_engine.count_arrow_shard`` with the task's ``settings``)."""
    rows = columns.rows({name: i for i, name in enumerate(languages[0])} if languages else None)
    groups = shard.get("row_groups")
    source = _Source(shard["paths"], names, row_groups=None if groups is None else (groups[0], groups[1]))
    return _engine.count_arrow_shard(rows.batches(source), settings, "off", languages)


# ---- Hugging Face datasets ------------------------------------------------------


class _DatasetSource:
    """Batches of a ``datasets.Dataset`` or ``IterableDataset`` as Arrow tables."""

    def __init__(self, ds: Any, columns: list[str], batch_rows: int) -> None:
        self.ds, self.columns, self.batch_rows = ds, columns, batch_rows

    def __iter__(self) -> Iterator[tuple[str, int, Any]]:
        pa = _pyarrow()
        row = 1
        data = self.ds.select_columns(self.columns).with_format("arrow")
        for table in data.iter(batch_size=self.batch_rows):
            if not isinstance(table, (pa.Table, pa.RecordBatch)):  # pragma: no cover - old datasets versions
                table = pa.table(table)
            yield "<dataset>", row, table
            row += table.num_rows


def _check_dataset(ds: Any, columns: list[str]) -> None:
    names = getattr(ds, "column_names", None)
    if names is None:
        raise ParameterError(f"expected a datasets.Dataset or IterableDataset, got {type(ds).__name__}")
    if isinstance(names, dict):  # a DatasetDict
        raise ParameterError(f"a DatasetDict has several splits ({', '.join(names)}): pass one, e.g. ds['train']")
    missing = [c for c in columns if c not in names]
    if missing:
        raise ParameterError(f"the dataset has no column {missing[0]!r} (its columns: {', '.join(names)})")


def train_from_dataset(ds: Any, text_column: str, lang_column: str | None, batch_size: int, options: Any,
                       progress: str) -> Any:
    columns = [text_column] + ([lang_column] if lang_column and lang_column != text_column else [])
    _check_dataset(ds, columns)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ParameterError(f"batch_size must be a positive integer, got {batch_size!r}")
    name = getattr(getattr(ds, "info", None), "dataset_name", None) or "<dataset>"
    return _train(lambda: _DatasetSource(ds, columns, batch_size), [name],
                  Columns(text_column, lang_column, options.on_bad_record), options, progress)


class _EncodeBatch:
    """The ``map`` function of :func:`encode_dataset`: an Arrow table in, the
    same table with the ids column out. A class, not a closure, so datasets
    can fingerprint it (the tokenizer pickles as its model) and cache the map."""

    def __init__(self, tok: Any, text_column: str, output_column: str, threads: int | None,
                 rules: tuple[Any, Any]) -> None:
        self.tok, self.text_column, self.output_column, self.threads, self.rules = (
            tok, text_column, output_column, threads, rules)

    def __call__(self, batch: Any) -> Any:
        pa = _pyarrow()
        np = require("numpy", "encode_dataset")

        ids_parts, offset_parts, base = [], [np.zeros(1, np.int64)], 0
        for chunk in _strings(batch.column(self.text_column), self.text_column, "<dataset>"):
            if chunk.null_count:
                raise InputError(f"column {self.text_column!r}: a row is null (every row needs its text)")
            _, offsets, data = chunk.buffers()
            ids, ends = _engine.encode_arrow(self.tok._native, offsets, data, chunk.offset, len(chunk),
                                             pa.types.is_large_string(chunk.type), self.threads, *self.rules)
            ids_parts.append(np.frombuffer(ids, "<u4"))
            offset_parts.append(np.frombuffer(ends, "<i8")[1:] + base)
            base += len(ids_parts[-1])
        flat = np.concatenate(ids_parts) if ids_parts else np.zeros(0, np.uint32)
        lists = pa.LargeListArray.from_arrays(pa.array(np.concatenate(offset_parts)), pa.array(flat))
        if self.output_column in batch.column_names:
            batch = batch.drop_columns([self.output_column])
        return batch.append_column(self.output_column, lists)


def encode_dataset(tok: Any, ds: Any, text_column: str, output_column: str, batch_size: int, threads: int | None,
                   rules: tuple[Any, Any]) -> Any:
    """``ds.map`` (batched, Arrow in and out) adding ``output_column``: each
    row's ids as an Arrow list column, built from the engine's flat buffers."""
    _check_dataset(ds, [text_column])
    fmt = getattr(ds, "format", None)
    kept = fmt.get("type") if isinstance(fmt, dict) else None
    encode = _EncodeBatch(tok, text_column, output_column, threads, rules)
    return ds.with_format("arrow").map(encode, batched=True, batch_size=batch_size).with_format(kept)
