"""The typed Python face of bpeforge's models: the `Tokenizer` that
`load` (`_load`) and the training functions (`_training`) return, and
`pretokenize`. Algorithms live in the Rust core (reached through `_engine`);
this module only checks arguments, converts types and documents the contract.

Why this file is long: it is one class's public surface (Tokenizer),
and most lines are its docstrings; the mechanisms it calls live elsewhere
(_offsets, _arrow, _io, _truncate, interop).
"""

from __future__ import annotations

import gc
import json
import os
import random
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, Union, overload

from . import _arrow, _engine, _text_names
from ._extras import require
from .errors import ParameterError
from ._byte_tokens import is_byte_token
from ._bytelevel import token_text
from ._io import check_output
from ._offsets import token_offsets
from ._progress import Progress, native_progress
from .options import DEFAULT_PRETOKENIZER, Regex, _str, _text_field, check_pretokenizer, paths


# ``encode``'s defaults, shown in its signature. A call that passes no
# option never reaches Python (the engine's ``TokenizerBase.encode``); one that
# passes options equal to these (``_is_default_call``) is encoded on the
# same default rules.
_NO_SPECIALS: tuple = ()
_ALL_SPECIALS = "all"
_NO_DROPOUT = 0.0

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

PathLike = Union[str, "os.PathLike[str]"]
SpecialSet = Union[Literal["all"], Collection[str]]

__all__ = ["Tokenizer", "pretokenize"]


def pretokenize(text: str, preset: str | Regex = DEFAULT_PRETOKENIZER) -> list[str]:
    """The pieces a pre-tokenizer cuts ``text`` into (no special-token handling):
    ``preset`` is a preset name or a :class:`bpeforge.Regex`, as in :func:`train`.

    Examples:
        >>> pretokenize("Hello   world!")
        ['Hello', '  ', ' world', '!']
    """
    return _engine.pretokenize(text, check_pretokenizer(preset))


class Tokenizer(_engine.TokenizerBase):
    """A trained BPE vocabulary: encode, decode, inspect and save.

    Ids: special tokens first, then the base symbols (the 256 bytes in byte
    order, or the character alphabet), then one id per merge in the order
    learned. What decides ids never changes once a Tokenizer is made, and it
    is safe to share between threads; the one setting is the memory bound of
    ``encode``'s cache (:attr:`encode_cache_bytes`), which never changes ids.
    """

    __slots__ = ("_native", "_merges", "_specials", "_textual", "_lengths", "_texts", "_default_rules")

    def __init__(self, native: _engine.NativeTokenizer) -> None:
        self._native = native
        self._merges: list[tuple[bytes, bytes]] | None = None
        self._specials = {t: i for i, t in enumerate(native.special_tokens)}
        # The special tokens "all" names: byte fallback's <0xHH> tokens stand
        # for bytes and are never read from text (SentencePiece's BYTE pieces).
        fallback = json.loads(native.scheme_json).get("byte_fallback", False)
        self._textual = [t for t in self._specials if not (fallback and is_byte_token(t))]
        self._lengths: list[int] | None = None
        self._texts: list[str] | None = None
        # The engine's special-token rules for the default policy, made once:
        # building them on every call was a good part of a short line's cost.
        self._default_rules = self._rules((), "all") if self._specials else (None, None)
        # ``encode(text)`` with no options runs natively on these rules
        # (``TokenizerBase.encode``); every other call comes to
        # ``_encode_options``.
        self._set_default_rules(*self._default_rules)

    # ---- properties -------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Number of ids: special tokens + base symbols + merges."""
        return self._native.vocab_size

    @property
    def encode_cache_bytes(self) -> int:
        """The most memory, in bytes, of the piece cache ``encode`` keeps
        between calls (0: none).

        ``encode`` remembers the ids of the pieces (pre-tokens) it has
        encoded, so a piece met again is looked up instead of merged again;
        it starts holding the vocabulary's one-token pieces. The cache is a
        table of 64-byte slots made at the first call and grown as it fills,
        up to this bound, and never beyond it: a new piece then takes the
        place of one that shared its slot. Its default is 8 MiB, and 64 MiB
        (starting at 16 MiB) for vocabularies of 65,536 one-token pieces or
        more (``o200k_base``, ``cl100k_base``). ``encode_batch`` keeps caches of its own (one per
        thread, 8 MiB each), which this does not bound.

        Set it to bound the memory (a larger cache keeps more of a long
        tail of rare pieces; text in many languages has many): the value is
        rounded down to a power of two of slots, at least 65,536 bytes;
        ``0`` turns the cache off, ``None`` restores the default. Setting it
        drops what the cache held. Ids never depend on it.
        """
        return self._native.encode_cache_bytes

    @encode_cache_bytes.setter
    def encode_cache_bytes(self, max_bytes: int | None) -> None:
        if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0):
            raise ParameterError(f"encode_cache_bytes must be None or an int >= 0, got {max_bytes!r}")
        self._native.set_encode_cache_bytes(max_bytes)

    @property
    def scheme(self) -> str:
        """``"bytes"`` or ``"chars"``."""
        return self._native.scheme

    @property
    def id_dtype(self) -> str:
        """The integer type of this model's ids in arrays and files:
        ``"uint16"`` when every id fits (up to 65,536 ids), else ``"uint32"``.
        ``encode_batch(as_numpy=True)``, ``encode_file(format="npy"|"bin")``,
        ``bpeforge encode --format npy|bin`` and ``bpeforge.distributed``
        all use it, so one model's ids have one type everywhere."""
        return id_dtype(self.vocab_size)

    @property
    def pretokenizer(self) -> str:
        """The pre-tokenizer preset name, or the custom regex."""
        return self._native.pretokenizer

    @property
    def special_tokens(self) -> list[str]:
        """Special tokens in id order (their ids are 0, 1, ...)."""
        return list(self._native.special_tokens)

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges in the order learned, as ``(left bytes, right bytes)``."""
        if self._merges is None:
            self._merges = self._native.merges()
        return list(self._merges)

    @property
    def merge_counts(self) -> list[int]:
        """How often each merge's pair occurred when it was chosen."""
        return self._native.merge_counts

    @property
    def metadata(self) -> dict[str, Any]:
        """Training metadata: inputs, settings, corpus sizes, timings, version."""
        return json.loads(self._native.metadata_json)

    @property
    def alphabet(self) -> list[str] | None:
        """The chars scheme's base symbols in id order (None for bytes)."""
        return self._native.alphabet

    def tokens(self) -> list[bytes]:
        """Every token's bytes, by id (``▁`` kept as is in the chars scheme)."""
        return self._native.tokens()

    def id_to_token(self, id: int) -> bytes | None:
        """The bytes of token ``id``, or None when there is no such id."""
        return self._native.id_to_token(id)

    def token_to_id(self, token: bytes | str) -> int | None:
        """The id of a token given as bytes or str, or None."""
        if isinstance(token, str):
            token = token.encode("utf-8")
        return self._native.token_to_id(token)

    def get_vocab(self) -> dict[str, int]:
        """Every token as text, with its id (as Hugging Face's ``get_vocab``):
        byte-level tokens in GPT-2's printable alphabet (``" the"`` is
        ``"Ġthe"``, as in an exported ``tokenizer.json``), chars-scheme tokens
        as they are (``"▁the"``). Special tokens as their text."""
        specials = {i: t for t, i in self._specials.items()}
        if self.scheme == "bytes":
            return {specials.get(i) or token_text(t): i for i, t in self._vocab_items()}
        return {t.decode("utf-8", "replace"): i for i, t in self._vocab_items()}

    def get_vocab_bytes(self) -> dict[bytes, int]:
        """Every token's bytes, with its id (special tokens as their UTF-8)."""
        return {t: i for i, t in self._vocab_items()}

    def _vocab_items(self) -> list[tuple[int, bytes]]:
        return [(i, t) for i in range(self.vocab_size) if (t := self._native.id_to_token(i)) is not None]

    def _token_lengths(self) -> list[int]:
        """Bytes per token, by id (cached: offsets need it per call)."""
        if self._lengths is None:
            self._lengths = [len(t) for t in self._native.tokens()]
        return self._lengths

    def _token_texts(self) -> list[str]:
        """Tokens as text by id (chars scheme; byte-level as raw bytes read as Latin-1)."""
        if self._texts is None:
            enc = "utf-8" if self.scheme == "chars" else "latin-1"
            self._texts = [t.decode(enc, "replace") for t in self._native.tokens()]
        return self._texts

    def _scheme_settings(self) -> dict[str, Any]:
        return json.loads(self._native.scheme_json)

    # ---- encoding ---------------------------------------------------------
    def _rules(self, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> tuple[list[int], list[int]]:
        names = self._specials
        if allowed_special == "all":
            allowed = set(self._textual)
        else:
            if isinstance(allowed_special, str):
                raise ParameterError("allowed_special must be 'all' or a collection of special tokens")
            allowed = set(allowed_special)
            unknown = allowed - set(names)
            if unknown:
                raise ParameterError(f"allowed_special names tokens that are not special tokens of this model: {sorted(unknown)!r}")
        if disallowed_special == "all":
            disallowed = set(self._textual) - allowed
        else:
            if isinstance(disallowed_special, str):
                raise ParameterError("disallowed_special must be 'all' or a collection of special tokens")
            disallowed = set(disallowed_special)
        return sorted(names[t] for t in allowed), sorted(names[t] for t in disallowed if t in names)

    # ``encode`` itself is the engine's ``TokenizerBase.encode`` (its docstring
    # is there): a call with no options is answered without a Python frame.

    def _encode_options(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = _NO_SPECIALS,
        disallowed_special: SpecialSet = _ALL_SPECIALS,
        dropout: float = _NO_DROPOUT,
        seed: int | None = None,
        **unknown: object,
    ) -> list[int]:
        """``encode`` with options, or with a ``text`` that is not exactly a
        ``str`` (a subclass is encoded; anything else is refused)."""
        if unknown:
            raise TypeError(f"Tokenizer.encode() got an unexpected keyword argument {next(iter(unknown))!r}")
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        if _is_default_call(allowed_special, disallowed_special, dropout, seed):
            return self._native.encode(text, *self._default_rules)
        p, s = _dropout_args(dropout, seed)
        if not self._specials:
            return self._native.encode(text, None, None, p, s)
        allowed, disallowed = self._rules(allowed_special, disallowed_special)
        return self._native.encode(text, allowed, disallowed, p, s)

    def encode_with_offsets(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        unit: Literal["chars", "bytes"] = "chars",
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """Encode ``text`` and say where each token comes from.

        Returns ``(ids, offsets)``: ``text[start:end]`` holds the characters
        token ``k`` was made from, for ``(start, end) = offsets[k]`` (UTF-8
        byte offsets with ``unit="bytes"``). A byte-level token holding only
        part of a character spans the whole character; a word's ``▁`` stands
        for the whitespace before it. These are the offsets Hugging Face
        ``tokenizers`` gives for this model's ``to_huggingface`` export.
        Special tokens as in :meth:`encode`.

        Examples:
            >>> tok = train_from_iterator(["ab ab ab"], vocab_size=258, progress=False)
            >>> tok.encode_with_offsets("ab ab")[1]
            [(0, 2), (2, 5)]
        """
        if unit not in ("chars", "bytes"):
            raise ParameterError(f"unit must be 'chars' or 'bytes', got {unit!r}")
        ids = self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        allowed_ids = set(self._rules(allowed_special, disallowed_special)[0]) if self._specials else set()
        allowed = [t for t, i in self._specials.items() if i in allowed_ids]
        return ids, token_offsets(self, text, ids, allowed, unit)

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special-token text as ordinary text."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        return self._native.encode(text)

    def encode_file(
        self,
        src: PathLike | Sequence[PathLike],
        dst: PathLike,
        *,
        format: Literal["ids", "npy", "bin"] = "ids",
        threads: int | None = None,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        progress: bool | str = False,
        text_field: str | None = None,
        text_column: str | None = None,
    ) -> dict[str, Any]:
        """Stream a corpus of any size (plain or compressed, one text per line)
        into ids, with bounded memory, on all cores.

        ``text_field="text"`` reads JSON lines (each line's text is that
        field; a dotted path reaches nested fields); a line without it is an
        error naming file and line, and a blank line is an empty text, so
        row ``i`` of the output is always line ``i`` of the input. Parquet
        and Arrow files (``.parquet``, ``.arrow``, ...; needs pyarrow) are
        read by column: ``text_column="text"`` names the text column, and
        row ``i`` of the output is row ``i`` of the input (a null text is an
        error naming file, row group and row). A JSON lines file without
        ``text_field``, or a Parquet or Arrow file without ``text_column``
        (by name or content, as for :func:`train`), is refused: it is never
        encoded as plain text.
        ``dst`` must not be one of the inputs (the same file by any path
        spelling or link is refused).

        Lines are cut as training cuts them (a ``"\\r"`` before the
        ``"\\n"`` is part of the line end). A bytes-scheme model encodes any
        bytes, UTF-8 or not, exactly (:meth:`decode_bytes` gives them back);
        a chars-scheme model refuses a line that is not valid UTF-8 with an
        InputError naming the file and the line, as training does.

        ``format="ids"``: one line of space-separated ids per input line.
        ``"npy"``: a 1-D array of all ids in :attr:`id_dtype` (uint16 up to
        65,536 ids, else uint32, as everywhere in bpeforge);
        ``"bin"``: the same as raw little-endian integers. Both come with
        ``<dst>.offsets.npy`` (int64, one offset per line + 1), so line ``i``
        is ``ids[offsets[i]:offsets[i + 1]]``. Outputs appear atomically.
        Special tokens as in :meth:`encode` (the same policy everywhere):
        their text is an error unless ``allowed_special`` names them.

        ``progress`` as in :func:`train` (off by default): bytes read, rate
        and ETA, on ``sys.stderr``, to a callable, or as a tqdm bar.

        Returns ``{"lines", "tokens", "bytes", "seconds", "id_bytes"}``.
        """
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ParameterError(f"threads must be a positive integer or None, got {threads!r}")
        check_output(dst, "encoded output", inputs=paths(src))
        if format != "ids":
            check_output(os.fspath(dst) + ".offsets.npy", "offsets", inputs=paths(src))
        allowed, disallowed = self._rules(allowed_special, disallowed_special) if self._specials else (None, None)
        files = paths(src)
        names = _text_names.resolve(files, text_field=_text_field(text_field),
                                    text_column=_str("text_column", none_ok=True)(text_column))
        if names.kind == "columnar":
            assert names.text_column is not None  # resolve() refuses columns without one
            lines, tokens, nbytes, seconds, id_bytes = _arrow.encode_files(
                self, files, os.fspath(dst), format, threads, (allowed, disallowed), native_progress(progress),
                names.text_column)
        else:
            lines, tokens, nbytes, seconds, id_bytes = self._native.encode_file(
                files, os.fspath(dst), format, threads, allowed, disallowed, native_progress(progress),
                names.text_field,
            )
        return {"lines": lines, "tokens": tokens, "bytes": nbytes, "seconds": seconds, "id_bytes": id_bytes}

    def encode_dataset(
        self,
        ds: Any,
        *,
        text_column: str = "text",
        output_column: str = "input_ids",
        batch_size: int = 1000,
        threads: int | None = None,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
    ) -> Any:
        """Encode a Hugging Face ``Dataset`` or ``IterableDataset``: ``ds.map``
        (batched) adding an ``output_column`` of ids per row, for
        ``map``-style pipelines (lazy for an ``IterableDataset``).

        Each batch's text column goes to the engine as Arrow buffers and the
        ids come back as an Arrow list column, with no Python object per row
        or per id. Special tokens as in :meth:`encode`. A null text is an
        ``InputError``.
        """
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ParameterError(f"threads must be a positive integer or None, got {threads!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError(f"batch_size must be a positive integer, got {batch_size!r}")
        rules = self._rules(allowed_special, disallowed_special) if self._specials else (None, None)
        return _arrow.encode_dataset(self, ds, text_column, output_column, batch_size, threads, rules)

    @overload
    def encode_batch(self, texts: Iterable[str], *, threads: int | None = ..., allowed_special: SpecialSet = ...,
                     disallowed_special: SpecialSet = ..., as_numpy: Literal[False] = ..., dropout: float = ...,
                     seed: int | None = ..., progress: Progress = ...) -> list[list[int]]: ...

    @overload
    def encode_batch(self, texts: Iterable[str], *, threads: int | None = ..., allowed_special: SpecialSet = ...,
                     disallowed_special: SpecialSet = ..., as_numpy: Literal[True], dropout: float = ...,
                     seed: int | None = ..., progress: Progress = ...) -> tuple[np.ndarray, np.ndarray]: ...

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        threads: int | None = None,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        as_numpy: bool = False,
        dropout: float = 0.0,
        seed: int | None = None,
        progress: Progress = False,
    ) -> list[list[int]] | tuple[np.ndarray, np.ndarray]:
        """Encode many texts on ``threads`` threads (None: all cores), GIL released.

        Results are in input order and never depend on the thread count. With
        ``as_numpy=True`` (needs numpy: ``pip install 'bpeforge[numpy]'``) the
        result is ``(ids, offsets)``: one flat array of :attr:`id_dtype`
        (uint16 up to 65,536 ids, else uint32: the type ``encode_file`` and
        the CLI write) and an int64 array of ``len(texts) + 1`` offsets, so
        text ``i`` is ``ids[offsets[i]:offsets[i + 1]]`` (no Python object
        per token).
        With ``dropout``, text ``i`` uses seed ``seed + i`` (thread-independent).
        ``progress`` as in :func:`train` (off by default): the texts' bytes
        encoded, reported after each slice of about 1% of the batch.
        A list or tuple is read as it is encoded (other iterables are
        collected first): a list whose size another thread changes during
        the call raises ``RuntimeError``.
        """
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ParameterError(f"threads must be a positive integer or None, got {threads!r}")
        if isinstance(texts, str):
            raise ParameterError("texts must be an iterable of str, not a single string")
        if not self._specials:
            allowed, disallowed = None, None
        elif _is_default_call(allowed_special, disallowed_special, 0.0, None):
            allowed, disallowed = self._default_rules
        else:
            allowed, disallowed = self._rules(allowed_special, disallowed_special)
        p, s = _dropout_args(dropout, seed)
        native = native_progress(progress)
        prog = None if native == "off" else native
        if p is not None:
            batch = self._native.encode_batch(texts, threads, allowed, disallowed, p, s, prog)
            if not as_numpy:
                return batch
            np = require("numpy", "encode_batch(as_numpy=True)")
            offsets = np.zeros(len(batch) + 1, dtype=np.int64)
            np.cumsum([len(b) for b in batch], out=offsets[1:])
            flat32 = np.fromiter((i for b in batch for i in b), dtype=np.uint32, count=int(offsets[-1]))
            return flat32.astype(self.id_dtype, copy=False), offsets
        if as_numpy:
            np = require("numpy", "encode_batch(as_numpy=True)")
            flat, ends, id_bytes = self._native.encode_batch_flat(texts, threads, allowed, disallowed, prog)
            # Packed by the engine in the model's id type, int64 offsets:
            # no copy here (on little-endian machines).
            ids = np.frombuffer(flat, dtype=f"<u{id_bytes}")
            return ids.astype(self.id_dtype, copy=False), np.frombuffer(ends, dtype="<i8").astype(np.int64, copy=False)
        with _gc_paused():
            return self._native.encode_batch(texts, threads, allowed, disallowed, progress=prog)

    # ---- decoding ---------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes that ``ids`` stand for (exact, even mid-character).

        ``ids`` may be a list of ints or a numpy integer array (decoded from
        one raw buffer, without a Python object per id)."""
        raw = _raw_ids(ids)
        if raw is not None:
            return self._native.decode_raw(raw)
        try:
            return self._native.decode_bytes(_id_list(ids))
        except OverflowError as e:
            raise ParameterError(f"a token id is outside the vocabulary (too large or negative): {e}") from e

    def decode(self, ids: Iterable[int], errors: Literal["replace", "strict"] = "replace") -> str:
        """Decode ids to text. ``errors="strict"`` raises on bytes that are not
        valid UTF-8 (possible when a byte-level sequence is cut mid-character);
        ``"replace"`` substitutes U+FFFD."""
        if errors not in ("replace", "strict"):
            raise ParameterError(f"errors must be 'replace' or 'strict', got {errors!r}")
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_batch(
        self,
        batch: Iterable[Iterable[int]] | tuple[np.ndarray, np.ndarray],
        errors: Literal["replace", "strict"] = "replace",
        *,
        threads: int | None = None,
    ) -> list[str]:
        """Decode several id sequences on ``threads`` threads (None: all cores).

        ``batch`` is a list of id lists, or the ``(ids, offsets)`` pair that
        ``encode_batch(..., as_numpy=True)`` returns."""
        if errors not in ("replace", "strict"):
            raise ParameterError(f"errors must be 'replace' or 'strict', got {errors!r}")
        if isinstance(batch, tuple) and len(batch) == 2 and hasattr(batch[0], "dtype"):
            import numpy as np

            ids, offsets = batch
            raw_ids = _raw_ids(ids)
            if raw_ids is None:
                raise ParameterError(f"decode_batch: ids must be an integer array, got {getattr(ids, 'dtype', type(ids))}")
            offsets = np.asarray(offsets)
            if offsets.ndim != 1 or offsets.dtype.kind not in "iu":
                raise ParameterError("decode_batch: offsets must be a 1-D integer array")
            raw = self._native.decode_batch_raw(raw_ids, offsets.astype("<i8").tobytes(), threads)
        else:
            try:
                raw = self._native.decode_batch_bytes([_id_list(x) for x in batch], threads)
            except OverflowError as e:
                raise ParameterError(f"a token id is outside the vocabulary (too large or negative): {e}") from e
        return [b.decode("utf-8", errors=errors) for b in raw]

    # ---- persistence ------------------------------------------------------
    def save(self, path: PathLike) -> None:
        """Save as JSON (gzip when the name ends in ``.gz``), atomically: a
        failed save leaves any earlier file at ``path`` intact."""
        self._native.save(os.fspath(path))

    def to_json(self) -> str:
        """The model file's JSON text."""
        return self._native.to_json().decode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> Tokenizer:
        """Rebuild a Tokenizer from :meth:`to_json` output (validated)."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        return cls(_engine.model_from_json(text))

    # ---- interoperability (bpeforge.interop's exporters, which do not import this module) ----
    def to_huggingface(self, path: PathLike, *, bos_token: str | None = "auto", eos_token: str | None = "auto",
                       pad_token: str | None = "auto", unk_token: str | None = "auto",
                       chat_template: str | PathLike | None = None, overwrite: bool = False) -> str:
        """Write a Hugging Face ``tokenizer.json`` giving this model's ids.

        ``path`` is a folder when it is an existing directory, ends in ``/``
        or does not end in ``.json`` (created if missing: ``"hf_dir/"`` gives
        ``hf_dir/tokenizer.json``); else the file itself. A folder (or a file
        named ``tokenizer.json``) also gets ``tokenizer_config.json`` and
        ``special_tokens_map.json``, which
        ``transformers.AutoTokenizer.from_pretrained`` reads (special-token
        roles filled by convention unless given); an existing one that holds
        anything else is refused unless ``overwrite=True``. ``chat_template``
        (a built-in name such as ``"chatml"``, Jinja text, or a
        ``pathlib.Path`` to a template file) goes into
        ``tokenizer_config.json`` for ``apply_chat_template``. See
        :func:`bpeforge.interop.to_huggingface`. Returns the ``tokenizer.json``
        written."""
        from .interop import huggingface_export  # the interop package imports this module (see its docstring)

        return huggingface_export.to_huggingface(self, path, bos_token=bos_token, eos_token=eos_token,
                                                 pad_token=pad_token, unk_token=unk_token,
                                                 chat_template=chat_template, overwrite=overwrite)

    def to_tiktoken(self, path: PathLike, *, name: str | None = None) -> tuple[str, str]:
        """Write a ``.tiktoken`` rank file and ``path + ".json"`` (pattern,
        special tokens); load them with :func:`bpeforge.interop.tiktoken_encoding`.
        Bytes scheme only. Returns both paths."""
        from .interop import tiktoken_export  # the interop package imports this module (see its docstring)

        return tiktoken_export.to_tiktoken(self, path, name=name)

    def to_sentencepiece(
        self, path: PathLike, *, whitespace: str = "all", control_tokens: Collection[str] | None = None
    ) -> str:
        """Write a SentencePiece BPE ``.model``. Needs the chars scheme, the
        ``whitespace`` or ``none`` pre-tokenizer, the default ``▁`` word prefix
        (no ``end_of_word_suffix``), ``fuse_unk`` (or ``byte_fallback``) and
        dense ids: e.g. a model from ``bpeforge.train(files, scheme="chars",
        pretokenizer="whitespace", fuse_unk=True)``.
        Any other model is refused with one error listing every requirement
        it misses (see :func:`bpeforge.interop.to_sentencepiece`)."""
        from .interop import sentencepiece_export  # the interop package imports this module (see its docstring)

        return sentencepiece_export.to_sentencepiece(self, path, whitespace=whitespace, control_tokens=control_tokens)

    def with_special_tokens(self, tokens: Iterable[str]) -> Tokenizer:
        """A copy of this model with more special tokens, at new ids after the
        largest one in use (every old id stays the same). Exports give them
        those ids; ``encode(..., allowed_special=...)`` turns their text into
        them. A token that is already special is refused, as is one whose
        bytes are already an ordinary token's."""
        new = _strings_arg(tokens, "tokens")
        clash = [t for t in new if t in self._specials] + [t for t in new if new.count(t) > 1]
        if clash:
            raise ParameterError(f"with_special_tokens: {sorted(set(clash))!r} given twice or already special")
        ordinary = [t for t in new if self._native.token_to_id(t.encode("utf-8")) is not None]
        if ordinary:
            raise ParameterError(f"with_special_tokens: {ordinary!r} already ordinary tokens of this model "
                                 "(their text encodes to that id already)")
        model = json.loads(self._native.to_json())
        old_specials, k = len(model["special_tokens"]), len(new)
        ext = model.get("ids") or list(range(self.vocab_size))
        first = max(ext, default=-1) + 1
        # Internal ids: specials first, so every later internal id moves up by k;
        # the external ids (what callers see) keep their values.
        model["special_tokens"] = model["special_tokens"] + new
        model["merges"] = [[a + k if a >= old_specials else a, b + k if b >= old_specials else b]
                           for a, b in model["merges"]]
        model["ids"] = ext[:old_specials] + list(range(first, first + k)) + ext[old_specials:]
        model.setdefault("metadata", {})["added_special_tokens"] = {t: first + i for i, t in enumerate(new)}
        return Tokenizer.from_json(json.dumps(model, ensure_ascii=False))

    def truncated(self, vocab_size: int | str) -> Tokenizer:
        """This model cut to ``vocab_size`` ids: the first merges, with every
        special token, base symbol and setting (scheme, pre-tokenizer,
        normalizer, byte fallback) kept. It equals the model a training run
        at ``vocab_size`` gives, merge for merge and id for id, and so do its
        exports: the merge loop depends on the target size only where it
        stops, and ids are special tokens, then base symbols, then merges.
        ``vocab_size`` counts every id, as :attr:`vocab_size` does (an int or
        a count such as ``"16k"``); ``metadata`` records the run's
        ``settings`` with it and ``truncated_from``.

        Refused (``ParameterError`` naming ``vocab_size``): a size larger
        than this model, or smaller than its special tokens and base symbols
        (for the chars scheme, the alphabet the corpus gave). Refused with
        the reason, because no run at that size gives the cut model: parity
        language balance (``max_premium``), a SuperBPE model cut at or below
        its transition, an unfinished run's checkpoint, and an imported model
        with ids of its own. Special tokens added with
        :meth:`with_special_tokens` stay after the kept merges, at the ids
        adding them to a model of that size gives.

        Examples:
            >>> tok = train_from_iterator(["low lower lowest"] * 10, vocab_size=262, progress=False)
            >>> small = tok.truncated(259)
            >>> small.merges == tok.merges[:3], small.vocab_size
            (True, 259)
        """
        from ._truncate import size_arg, truncate_model

        size = size_arg(vocab_size, "vocab_size")
        model = truncate_model(json.loads(self._native.to_json()), size)
        return Tokenizer.from_json(json.dumps(model, ensure_ascii=False))

    # ---- Python conventions ------------------------------------------------
    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        # Pickled as an encoder snapshot: the model file's own JSON (the same
        # validation on load) plus the table that is slow to derive, so a
        # 200k-token vocabulary unpickles in tens of milliseconds.
        return (_from_snapshot, (self._native.to_snapshot(),))

    def __copy__(self) -> Tokenizer:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokenizer:
        return self  # immutable: a copy could never differ

    def _identity(self) -> bytes:
        """What decides every id, in one canonical form: the model less its
        training record (``metadata``, ``merge_counts``), with an ``ids``
        table that maps every token to its own position left out (it says
        nothing then: an imported model spells it out, a trained one does
        not)."""
        model = json.loads(self._native.to_json())
        for record in ("metadata", "merge_counts"):
            model.pop(record, None)
        if model.get("ids") == list(range(len(model.get("ids") or []))):
            model.pop("ids")
        return json.dumps(model, sort_keys=True).encode("utf-8")

    def __eq__(self, other: object) -> bool:
        """Equal when they encode and decode alike: same settings, tokens, ids
        and merges. What training recorded is not compared: ``metadata``
        (timings, inputs) and ``merge_counts``; nor how the ids are written
        down (a model exported and imported back with the same ids equals
        the original)."""
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self is other or self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"Tokenizer(scheme={self.scheme!r}, pretokenizer={self.pretokenizer!r}, vocab_size={self.vocab_size})"


def id_dtype(vocab_size: int) -> str:
    """The id type of a model of ``vocab_size`` ids (the engine's rule for
    its npy/bin files: crates/core/src/encode/file.rs)."""
    return "uint16" if vocab_size <= 1 << 16 else "uint32"


def _strings_arg(items: Iterable[str], name: str) -> list[str]:
    if isinstance(items, (str, bytes)):
        raise ParameterError(f"{name} must be a list of strings, not one string ({items!r})")
    out = list(items)
    if not out or not all(isinstance(t, str) and t for t in out):
        raise ParameterError(f"{name} must be a non-empty list of non-empty strings, got {out!r}")
    return out


def _from_snapshot(data: bytes) -> Tokenizer:
    """Unpickles a :class:`Tokenizer` (see ``Tokenizer.__reduce__``)."""
    return Tokenizer(_engine.model_from_snapshot(data))


def _from_model_json(data: bytes) -> Tokenizer:
    """Unpickles a :class:`Tokenizer` pickled by bpeforge before snapshots
    (the model JSON alone); kept so those pickles still load."""
    return Tokenizer(_engine.model_from_json(data))


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a batch's id lists are built.

    Each list is a container the collector tracks, so building one per text
    sets off a collection every 700 lists, and each walks all the young lists
    and their ids: 15% of ``encode_batch`` on 100k lines at 1 thread,
    all of it serial, under the GIL. Lists of ints make no cycles; reference
    counting frees everything as before.

    The collector is left as it was found: enabled again only if it was, and
    nothing else changed. A library must not change the caller's collector
    state: no object is frozen or moved between generations (the new lists
    are young objects like any the caller makes, examined by the next young
    collection, which this pause only postpones).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _is_default_call(allowed_special: object, disallowed_special: object, dropout: object, seed: object) -> bool:
    """Whether an encode call uses the default special-token policy and no
    dropout: the common case, answered without building anything."""
    return (type(allowed_special) is tuple and not allowed_special
            and isinstance(disallowed_special, str) and disallowed_special == "all"
            and type(dropout) in (float, int) and dropout == 0 and seed is None)


def _dropout_args(dropout: float, seed: int | None) -> tuple[float | None, int]:
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout <= 1.0:
        raise ParameterError(f"dropout must be a probability between 0 and 1, got {dropout!r}")
    if seed is None:
        seed = random.getrandbits(64)
    elif not isinstance(seed, int) or isinstance(seed, bool):
        raise ParameterError(f"seed must be an integer or None, got {seed!r}")
    return (float(dropout) if dropout > 0 else None), seed % (1 << 64)


def _id_list(ids: Iterable[int]) -> list[int]:
    """Ids as a list of ints (range checks happen in the engine)."""
    if isinstance(ids, list):
        return ids
    try:
        return [int(i) for i in ids]
    except (TypeError, ValueError) as e:
        raise ParameterError(f"ids must be integers: {e}") from e


def _raw_ids(ids: Any) -> bytes | None:
    """A numpy integer array as little-endian uint32 bytes (None otherwise)."""
    dtype = getattr(ids, "dtype", None)
    if dtype is None or getattr(dtype, "kind", "") not in "iu":
        return None
    import numpy as np

    arr = np.asarray(ids).ravel()
    if arr.dtype == np.dtype("<u4"):
        return arr.tobytes()  # in range by construction; checked against the vocabulary in the engine
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > 0xFFFFFFFF):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise ParameterError(f"token id {bad} is outside the vocabulary")
    return arr.astype("<u4", copy=False).tobytes()
