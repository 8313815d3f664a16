"""The typed Python face of bpeforge: `train`, `train_from_iterator`, `load`
and the `Tokenizer` they return. Algorithms live in the Rust core; this module
only checks arguments, converts types and documents the contract.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Union

from . import _native
from .errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

PathLike = Union[str, "os.PathLike[str]"]
SpecialSet = Union[Literal["all"], Collection[str]]

__all__ = ["Tokenizer", "train", "train_from_iterator", "load", "pretokenize"]


def _progress_arg(progress: bool | str) -> str:
    if progress is True:
        return "auto"
    if progress is False or progress is None:
        return "off"
    if isinstance(progress, str):
        return progress
    raise ParameterError(f"progress must be True, False, 'auto', 'human', 'json' or 'off', got {progress!r}")


def _paths(files: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(files, (str, os.PathLike)):
        return [os.fspath(files)]
    try:
        paths = [os.fspath(f) for f in files]
    except TypeError as e:
        raise ParameterError(f"files must be a path or a list of paths, got {files!r}") from e
    if not paths:
        raise ParameterError("files is empty: give at least one input file")
    return paths


def _check_common(vocab_size: int, min_frequency: int, max_token_length: int | None, threads: int | None) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= 0:
        raise ParameterError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 0:
        raise ParameterError(f"min_frequency must be a non-negative integer, got {min_frequency!r}")
    if max_token_length is not None and (not isinstance(max_token_length, int) or max_token_length < 1):
        raise ParameterError(f"max_token_length must be a positive integer or None, got {max_token_length!r}")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ParameterError(f"threads must be a positive integer or None (all cores), got {threads!r}")


def _special_list(special_tokens: Iterable[str]) -> list[str]:
    if isinstance(special_tokens, str):
        raise ParameterError(f"special_tokens must be a list of strings, not one string ({special_tokens!r})")
    out = list(special_tokens)
    for t in out:
        if not isinstance(t, str):
            raise ParameterError(f"special_tokens must be strings, got {t!r}")
    return out


def train(
    files: PathLike | Sequence[PathLike],
    *,
    vocab_size: int = 32000,
    scheme: Literal["bytes", "chars"] = "bytes",
    pretokenizer: str = "gpt2",
    special_tokens: Iterable[str] = (),
    min_frequency: int = 2,
    max_token_length: int | None = None,
    threads: int | None = None,
    progress: bool | str = True,
    character_coverage: float = 1.0,
    end_of_word_suffix: str | None = None,
    unk_token: str = "<unk>",
    documents: bool = False,
    separator: str | None = None,
) -> Tokenizer:
    """Train a BPE vocabulary on one or more text files.

    Files may be plain or compressed (``.gz``, ``.xz``, ``.bz2``, ``.zst``). By
    default each line is one text; ``documents=True`` makes each file one text,
    and ``separator="..."`` cuts texts at that string instead of at newlines.

    Args:
        files: a path or a list of paths.
        vocab_size: total vocabulary size: special tokens + base symbols + merges.
        scheme: ``"bytes"`` (256 byte symbols, lossless) or ``"chars"``
            (Unicode characters with SentencePiece's ``▁`` boundary marker).
        pretokenizer: ``"gpt2"``, ``"cl100k"``, ``"o200k"``, ``"whitespace"``,
            ``"none"``, or a custom regex whose matches are the pieces.
        special_tokens: strings that are never split or merged; they get the
            first ids, in the order given.
        min_frequency: stop when the best pair occurs fewer times than this.
        max_token_length: longest merged token, in bytes (None: no limit).
        threads: counting threads (None: all cores). The result never
            depends on it.
        progress: True (a live line on terminals, JSON lines otherwise),
            False, or one of "human", "json", "off".
        character_coverage: chars scheme: share of character occurrences the
            alphabet must cover; rarer characters become ``unk_token``.
        end_of_word_suffix: chars scheme: mark word ends with this suffix
            (e.g. ``"</w>"``, as subword-nmt) instead of the ``▁`` prefix.
        unk_token: chars scheme: the token for characters outside the alphabet.

    Returns:
        The trained :class:`Tokenizer`. Its ``metadata`` records the inputs,
        settings, corpus sizes and the seconds spent counting and merging.

    Example:
        >>> import bpeforge
        >>> tok = bpeforge.train(bpeforge.sample_corpus(), vocab_size=300, progress=False)
        >>> tok.decode(tok.encode("hello world"))
        'hello world'
    """
    _check_common(vocab_size, min_frequency, max_token_length, threads)
    native = _native.train_files(
        _paths(files),
        vocab_size=vocab_size,
        scheme=scheme,
        pretokenizer=pretokenizer,
        special_tokens=_special_list(special_tokens),
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        threads=threads,
        progress=_progress_arg(progress),
        character_coverage=float(character_coverage),
        end_of_word_suffix=end_of_word_suffix,
        unk_token=unk_token,
        documents=bool(documents),
        separator=separator,
    )
    return Tokenizer(native)


def train_from_iterator(
    texts: Iterable[str],
    *,
    vocab_size: int = 32000,
    scheme: Literal["bytes", "chars"] = "bytes",
    pretokenizer: str = "gpt2",
    special_tokens: Iterable[str] = (),
    min_frequency: int = 2,
    max_token_length: int | None = None,
    threads: int | None = None,
    progress: bool | str = True,
    character_coverage: float = 1.0,
    end_of_word_suffix: str | None = None,
    unk_token: str = "<unk>",
) -> Tokenizer:
    """Train on any iterable of ``str`` (each item is one text).

    Items are pulled in batches on the calling thread while worker threads
    count earlier batches, so a generator over a huge corpus is never held in
    memory. Same keywords and result as :func:`train`; a file and an iterable
    of its lines give the same model.

    Example:
        >>> tok = train_from_iterator(["low lower lowest"] * 10, vocab_size=260, progress=False)
        >>> tok.vocab_size
        260
    """
    _check_common(vocab_size, min_frequency, max_token_length, threads)
    if isinstance(texts, (str, bytes)):
        raise ParameterError("texts must be an iterable of str, not a single string (wrap it in a list)")
    native = _native.train_iterator(
        texts,
        vocab_size=vocab_size,
        scheme=scheme,
        pretokenizer=pretokenizer,
        special_tokens=_special_list(special_tokens),
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        threads=threads,
        progress=_progress_arg(progress),
        character_coverage=float(character_coverage),
        end_of_word_suffix=end_of_word_suffix,
        unk_token=unk_token,
    )
    return Tokenizer(native)


def load(path: PathLike) -> Tokenizer:
    """Load a model saved by :meth:`Tokenizer.save` (``.gz`` names are gunzipped).

    The file is validated completely; a wrong, truncated or hostile file
    raises :class:`bpeforge.ModelFormatError` naming the file and the problem.
    """
    return Tokenizer(_native.NativeTokenizer.load(os.fspath(path)))


def pretokenize(text: str, preset: str = "gpt2") -> list[str]:
    """The pieces a pre-tokenizer cuts ``text`` into (no special-token handling).

    Example:
        >>> pretokenize("Hello   world!")
        ['Hello', '  ', ' world', '!']
    """
    return _native.pretokenize(text, preset)


class Tokenizer:
    """A trained BPE vocabulary: encode, decode, inspect and save.

    Ids: special tokens first, then the base symbols (the 256 bytes in byte
    order, or the character alphabet), then one id per merge in the order
    learned. A Tokenizer is immutable and safe to share between threads.
    """

    __slots__ = ("_native", "_merges", "_specials")

    def __init__(self, native: _native.NativeTokenizer) -> None:
        self._native = native
        self._merges: list[tuple[bytes, bytes]] | None = None
        self._specials = {t: i for i, t in enumerate(native.special_tokens)}

    # ---- properties -------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Number of ids: special tokens + base symbols + merges."""
        return self._native.vocab_size

    @property
    def scheme(self) -> str:
        """``"bytes"`` or ``"chars"``."""
        return self._native.scheme

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
            tokens = self._native.tokens()
            self._merges = [(tokens[a], tokens[b]) for a, b in self._native.merge_ids]
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

    # ---- encoding ---------------------------------------------------------
    def _rules(self, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> tuple[list[int], list[int]]:
        names = self._specials
        if allowed_special == "all":
            allowed = set(names)
        else:
            if isinstance(allowed_special, str):
                raise ParameterError("allowed_special must be 'all' or a collection of special tokens")
            allowed = set(allowed_special)
            unknown = allowed - set(names)
            if unknown:
                raise ParameterError(f"allowed_special names tokens that are not special tokens of this model: {sorted(unknown)!r}")
        if disallowed_special == "all":
            disallowed = set(names) - allowed
        else:
            if isinstance(disallowed_special, str):
                raise ParameterError("disallowed_special must be 'all' or a collection of special tokens")
            disallowed = set(disallowed_special)
        return sorted(names[t] for t in allowed), sorted(names[t] for t in disallowed if t in names)

    def encode(self, text: str, *, allowed_special: SpecialSet = (), disallowed_special: SpecialSet = "all") -> list[int]:
        """Encode ``text`` to ids.

        Special tokens follow tiktoken's safe default: special-token text in
        ``text`` raises :class:`bpeforge.SpecialTokenError` unless it is in
        ``allowed_special`` (then it becomes its id) or left out of
        ``disallowed_special`` (then it is encoded as ordinary text).

        Example:
            >>> tok = train_from_iterator(["ab ab ab"], vocab_size=258, special_tokens=["<s>"], progress=False)
            >>> tok.encode("<s>ab", allowed_special={"<s>"})[0]
            0
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        if not self._specials:
            return self._native.encode(text)
        allowed, disallowed = self._rules(allowed_special, disallowed_special)
        return self._native.encode(text, allowed, disallowed)

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special-token text as ordinary text."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        return self._native.encode(text)

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        threads: int | None = None,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = "all",
        as_numpy: bool = False,
    ) -> list[list[int]] | tuple[np.ndarray, np.ndarray]:
        """Encode many texts on ``threads`` threads (None: all cores), GIL released.

        Results are in input order and never depend on the thread count. With
        ``as_numpy=True`` the result is ``(ids, offsets)``: one flat uint32
        array and an int64 array of ``len(texts) + 1`` offsets, so text ``i``
        is ``ids[offsets[i]:offsets[i + 1]]`` (no Python object per token).
        """
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ParameterError(f"threads must be a positive integer or None, got {threads!r}")
        if isinstance(texts, str):
            raise ParameterError("texts must be an iterable of str, not a single string")
        if self._specials:
            allowed, disallowed = self._rules(allowed_special, disallowed_special)
        else:
            allowed, disallowed = None, None
        if as_numpy:
            import numpy as np

            ids, offsets = self._native.encode_batch_flat(texts, threads, allowed, disallowed)
            return np.frombuffer(ids, dtype="<u4"), np.frombuffer(offsets, dtype="<u8").astype(np.int64)
        return self._native.encode_batch(texts, threads, allowed, disallowed)

    # ---- decoding ---------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes that ``ids`` stand for (exact, even mid-character)."""
        return self._native.decode_bytes(_id_list(ids))

    def decode(self, ids: Iterable[int], errors: Literal["replace", "strict"] = "replace") -> str:
        """Decode ids to text. ``errors="strict"`` raises on bytes that are not
        valid UTF-8 (possible when a byte-level sequence is cut mid-character);
        ``"replace"`` substitutes U+FFFD."""
        if errors not in ("replace", "strict"):
            raise ParameterError(f"errors must be 'replace' or 'strict', got {errors!r}")
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_batch(self, batch: Iterable[Iterable[int]], errors: Literal["replace", "strict"] = "replace") -> list[str]:
        """Decode several id sequences."""
        if errors not in ("replace", "strict"):
            raise ParameterError(f"errors must be 'replace' or 'strict', got {errors!r}")
        return [b.decode("utf-8", errors=errors) for b in self._native.decode_batch_bytes([_id_list(x) for x in batch])]

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
        return cls(_native.NativeTokenizer.from_json(text))

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"Tokenizer(scheme={self.scheme!r}, pretokenizer={self.pretokenizer!r}, vocab_size={self.vocab_size})"


def _id_list(ids: Iterable[int]) -> list[int]:
    try:
        out = [int(i) for i in ids]
    except (TypeError, ValueError) as e:
        raise ParameterError(f"ids must be integers: {e}") from e
    for i in out:
        if i < 0 or i > 0xFFFFFFFF:
            raise ParameterError(f"token id {i} is outside the vocabulary")
    return out
