"""Naive pure-Python reference implementation of docs/SEMANTICS.md (the test oracle).

Deliberately slow and simple: every merge step recounts every adjacent pair in
every word type from scratch; encoding applies the whole merge list in order.
Nothing here is tuned for speed except that word types are deduplicated.

Symbols are ids (ints), as in the engine: a merge always creates a new id
(SEMANTICS §6.4), and ``vocab[id]`` holds the token's bytes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import chain
from typing import Iterable, Optional, Sequence, Union

import regex

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)

O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: The engine's default pre-tokenizer (bpeforge.DEFAULT_PRETOKENIZER), spelled
#: here as well so that the oracle stays independent of the code under test;
#: tests/test_pretok_default.py checks the two agree.
DEFAULT_PRESET = "o200k"

PATTERNS = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN}
REGEX_PRESETS = tuple(PATTERNS)
ALL_PRESETS = REGEX_PRESETS + ("whitespace", "none")

SPACE_MARK = "\u2581"  # ▁

# SuperBPE's stage-2 pattern (Liu et al., 2025), used as an *isolated* split:
# the matches and the text between them are all pieces.
SUPERWORD_PATTERN = r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"""


class AmbiguousTieError(Exception):
    """Two distinct candidate pairs have the same count and the same token bytes.

    SEMANTICS §6.2 breaks ties by token bytes only, so this (theoretical) case
    is not decided by the spec; the oracle refuses to guess.
    """


# --------------------------------------------------------------------------
# §2 special tokens
# --------------------------------------------------------------------------


def split_specials(text: str, specials: Sequence[str]) -> list[tuple[bool, str]]:
    """Split at specials: leftmost occurrence first, longest special at a tie.

    Returns (is_special, text) parts; non-special parts may be empty strings.
    """
    out: list[tuple[bool, str]] = []
    start = 0
    i = 0
    while i < len(text):
        hits = [s for s in specials if text.startswith(s, i)]
        if hits:
            best = max(hits, key=len)
            out.append((False, text[start:i]))
            out.append((True, best))
            i += len(best)
            start = i
        else:
            i += 1
    out.append((False, text[start:]))
    return out


# --------------------------------------------------------------------------
# §3 pre-tokenization
# --------------------------------------------------------------------------


def reference_pretokenize(text: str, preset: str = DEFAULT_PRESET) -> list[str]:
    """The pieces of one segment (no special-token handling, no boundary markers)."""
    if preset in PATTERNS:
        return [m.group() for m in regex.finditer(PATTERNS[preset], text)]
    if preset == "whitespace":
        return text.split()  # str.split(): maximal runs of non-whitespace (str.isspace)
    if preset == "none":
        return [text] if text else []
    if preset == "superword":
        pieces, gap = [], 0
        for m in regex.finditer(SUPERWORD_PATTERN, text):
            if m.start() > gap:
                pieces.append(text[gap : m.start()])
            if m.group():
                pieces.append(m.group())
            gap = m.end()
        if gap < len(text):
            pieces.append(text[gap:])
        return pieces
    # custom regex: every match, and the text between matches as pieces of its own
    pieces, done = [], 0
    for m in regex.finditer(preset, text):
        if m.end() > m.start():
            if m.start() > done:
                pieces.append(text[done:m.start()])
            pieces.append(m.group())
            done = m.end()
    if done < len(text):
        pieces.append(text[done:])
    return pieces


# --------------------------------------------------------------------------
# §4 schemes: pieces -> base symbols
# --------------------------------------------------------------------------


def _piece_symbols(piece: Union[str, bytes], scheme: str, preset: str, suffix: Optional[str]):
    """Base symbols of one piece: bytes objects (bytes scheme) or str (chars scheme).

    A ``bytes`` piece is a run of invalid UTF-8 (files only, bytes scheme only).
    With ``whitespace`` it is a word like any other, so it gets the space prefix
    too (SEMANTICS leaves this implicit; reading: "each word is prefixed").
    """
    if scheme == "bytes":
        if isinstance(piece, bytes):
            data = (b" " if preset == "whitespace" else b"") + piece
        elif preset == "whitespace":
            data = b" " + piece.encode("utf-8")
        else:
            data = piece.encode("utf-8")
        return [bytes([b]) for b in data]
    assert isinstance(piece, str)
    if preset == "whitespace":
        if suffix is not None:
            chars = list(piece)
            chars[-1] = chars[-1] + suffix
            return chars
        return [SPACE_MARK] + list(piece)
    return list(piece.replace(" ", SPACE_MARK))


def _split_invalid(segment: str) -> list[Union[str, bytes]]:
    """Split a surrogateescape-decoded segment into valid str runs and invalid byte runs."""
    parts: list[Union[str, bytes]] = []
    for m in regex.finditer(r"[\udc80-\udcff]+|[^\udc80-\udcff]+", segment):
        s = m.group()
        if "\udc80" <= s[0] <= "\udcff":
            parts.append(s.encode("utf-8", "surrogateescape"))
        else:
            parts.append(s)
    return parts


def text_pieces(text: Union[str, bytes], preset: str, specials: Sequence[str], scheme: str):
    """Yield ("special", str) or ("piece", str|bytes) for one text, in order.

    ``text`` may be ``bytes`` (a line read from a file): invalid UTF-8 is then
    kept as maximal runs of invalid bytes, each its own piece (bytes scheme).
    """
    if isinstance(text, bytes):
        if scheme != "bytes":
            text.decode("utf-8")  # §4: invalid UTF-8 is an error in the chars scheme
        decoded = text.decode("utf-8", "surrogateescape")
    else:
        decoded = text
    for is_special, seg in split_specials(decoded, specials):
        if is_special:
            yield ("special", seg)
            continue
        for part in _split_invalid(seg):
            if isinstance(part, bytes):
                yield ("piece", part)
            else:
                for piece in reference_pretokenize(part, preset):
                    yield ("piece", piece)


def file_texts(data: bytes) -> list[bytes]:
    """§1: the texts of a file read as bytes, one per line, without \\n / \\r\\n."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final newline does not start another (empty) text
    return [l[:-1] if l.endswith(b"\r") else l for l in lines]


# --------------------------------------------------------------------------
# §5, §6 training
# --------------------------------------------------------------------------


@dataclass
class RefModel:
    merges: list  # list[tuple[bytes, bytes]]
    merge_counts: list  # list[int]
    vocab: list  # list[bytes], id -> token bytes
    scheme: str
    pretokenizer: str
    special_tokens: tuple  # all special tokens in id order (chars: unk_token first)
    end_of_word_suffix: Optional[str]
    unk_id: Optional[int]
    base_ids: dict  # base symbol (bytes or str) -> id
    merge_ids: list = field(default_factory=list)  # (left id, right id, new id)
    n_symbols: int = 0  # trainable symbol occurrences in the corpus (0: nothing to train on)

    def __repr__(self) -> str:
        return (f"RefModel({self.scheme}/{self.pretokenizer}, vocab={len(self.vocab)}, "
                f"merges={len(self.merges)}, alphabet={len(self.base_ids)})")

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def special_id(self, s: str) -> int:
        return self.special_tokens.index(s)


def _apply_merge(word: Sequence[int], a: int, b: int, new: int) -> tuple:
    """Replace occurrences of (a, b) left to right without overlap."""
    out = []
    i = 0
    n = len(word)
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _count_pairs(groups: dict) -> Counter:
    """Every adjacent pair in every word type, weighted by the type's count.

    ``groups`` maps a count to the word types with that count, so the inner
    counting runs in Counter's C loop; the result is the plain weighted sum.
    """
    pairs: Counter = Counter()
    for c, ws in groups.items():
        for p, n in Counter(chain.from_iterable(zip(w, w[1:]) for w in ws)).items():
            pairs[p] += n * c
    return pairs


def reference_alphabet(
    texts: Iterable[Union[str, bytes]],
    scheme: str = "chars",
    pretokenizer: str = DEFAULT_PRESET,
    special_tokens: Sequence[str] = (),
    character_coverage: float = 1.0,
    end_of_word_suffix: Optional[str] = None,
    unk_token: str = "<unk>",
) -> list[str]:
    """The kept alphabet (chars scheme) in id order; 256 bytes for the bytes scheme."""
    specials = _all_specials(scheme, special_tokens, unk_token)
    words = _word_counts(texts, scheme, pretokenizer, specials, end_of_word_suffix)
    return _alphabet(words, scheme, character_coverage)


def _all_specials(scheme: str, special_tokens: Sequence[str], unk_token: str) -> tuple:
    """§5: the special tokens in id order; in the chars scheme unk_token is the first.

    §2 splits texts at every special token, so in the chars scheme literal
    unk_token text is split out too (and never trained on).
    """
    specials = ((unk_token,) if scheme == "chars" else ()) + tuple(special_tokens)
    if any(s == "" for s in specials):
        raise ValueError("empty special token")
    if len(set(specials)) != len(specials):
        raise ValueError("duplicate special token (the spec does not define this)")
    return specials


def _word_counts(texts, scheme, pretokenizer, specials, suffix) -> Counter:
    words: Counter = Counter()
    for text in texts:
        for kind, piece in text_pieces(text, pretokenizer, specials, scheme):
            if kind == "piece":
                syms = tuple(_piece_symbols(piece, scheme, pretokenizer, suffix))
                if syms:
                    words[syms] += 1
    return words


def _alphabet(words: Counter, scheme: str, coverage: float) -> list:
    if scheme == "bytes":
        return [bytes([b]) for b in range(256)]
    freq: Counter = Counter()
    for w, c in words.items():
        for s in w:
            freq[s] += c
    order = sorted(freq, key=lambda s: (-freq[s], s.encode("utf-8")))
    total = sum(freq.values())
    # "covers at least c": exact comparison, c read as the decimal the user wrote
    # (0.28 means 28/100; cum/total == 0.28 exactly is enough). The binary value
    # of the float would be Fraction(coverage) instead.
    need = Fraction(repr(float(coverage))) * total
    kept = []
    cum = 0
    for s in order:
        if cum >= need:
            break
        kept.append(s)
        cum += freq[s]
    return kept


def reference_train(
    texts: Iterable[Union[str, bytes]],
    vocab_size: int,
    scheme: str = "bytes",
    pretokenizer: str = DEFAULT_PRESET,
    special_tokens: Sequence[str] = (),
    min_frequency: int = 2,
    max_token_length: Optional[int] = None,
    character_coverage: float = 1.0,
    end_of_word_suffix: Optional[str] = None,
    unk_token: str = "<unk>",
) -> RefModel:
    if scheme not in ("bytes", "chars"):
        raise ValueError(f"unknown scheme {scheme!r}")
    if end_of_word_suffix is not None and (scheme != "chars" or pretokenizer != "whitespace"):
        raise ValueError("end_of_word_suffix needs scheme='chars' and pretokenizer='whitespace'")
    specials = _all_specials(scheme, special_tokens, unk_token)
    words = _word_counts(texts, scheme, pretokenizer, specials, end_of_word_suffix)

    # §5 ids: specials (chars: <unk> first), alphabet, merges
    vocab: list[bytes] = [s.encode("utf-8") for s in specials]
    unk_id = 0 if scheme == "chars" else None
    alphabet = _alphabet(words, scheme, character_coverage)
    base_ids = {}
    for sym in alphabet:
        base_ids[sym] = len(vocab)
        vocab.append(sym if isinstance(sym, bytes) else sym.encode("utf-8"))
    if vocab_size < len(vocab):
        raise ValueError(f"vocab_size {vocab_size} < specials + alphabet = {len(vocab)}")

    # word types grouped by count; a merge maps distinct types to distinct
    # types (the new id occurs nowhere yet), so the groups never need merging
    # (types that differ only in dropped symbols become one type of <unk>s)
    wids: Counter = Counter()
    for w, c in words.items():
        wids[tuple(base_ids.get(s, unk_id) for s in w)] += c
    groups: dict[int, list] = {}
    for w, c in wids.items():
        groups.setdefault(c, []).append(w)

    model = RefModel(
        merges=[], merge_counts=[], vocab=vocab, scheme=scheme, pretokenizer=pretokenizer,
        special_tokens=specials, end_of_word_suffix=end_of_word_suffix, unk_id=unk_id,
        base_ids=base_ids, n_symbols=sum(len(w) * c for w, c in words.items()),
    )

    def is_candidate(a: int, b: int) -> bool:
        if a == unk_id or b == unk_id:
            return False
        return max_token_length is None or len(vocab[a]) + len(vocab[b]) <= max_token_length

    # §6 the merge loop, recounting everything at every step
    while len(vocab) < vocab_size:
        pairs = _count_pairs(groups)
        cands = {p: n for p, n in pairs.items() if is_candidate(*p)}
        if not cands:
            break
        count = max(cands.values())
        # tie-break: min over (-count, left bytes, right bytes)
        tied = sorted((vocab[a], vocab[b], a, b) for (a, b), n in cands.items() if n == count)
        if len(tied) > 1 and tied[0][:2] == tied[1][:2]:
            raise AmbiguousTieError(tied[0][:2])
        if count < min_frequency:
            break
        a, b = tied[0][2], tied[0][3]
        new = len(vocab)
        vocab.append(vocab[a] + vocab[b])
        model.merges.append((vocab[a], vocab[b]))
        model.merge_counts.append(count)
        model.merge_ids.append((a, b, new))
        for ws in groups.values():
            for k, w in enumerate(ws):
                if a in w and b in w:
                    ws[k] = _apply_merge(w, a, b, new)
    return model


# --------------------------------------------------------------------------
# §7 encoding / decoding
# --------------------------------------------------------------------------


def _piece_base_ids(model: RefModel, piece) -> list[int]:
    syms = _piece_symbols(piece, model.scheme, model.pretokenizer, model.end_of_word_suffix)
    return [model.base_ids.get(s, model.unk_id) for s in syms]


def reference_encode(model: RefModel, text: Union[str, bytes], *, ordinary: bool = False) -> list[int]:
    """Encode with all of the model's special tokens allowed; merges applied in list order.

    ``ordinary=True``: no special token is recognised (special text is plain text).
    """
    ids: list[int] = []
    specials = () if ordinary else model.special_tokens
    for kind, piece in text_pieces(text, model.pretokenizer, specials, model.scheme):
        if kind == "special":
            ids.append(model.special_id(piece))
            continue
        word = tuple(_piece_base_ids(model, piece))
        for a, b, new in model.merge_ids:
            if a in word:
                word = _apply_merge(word, a, b, new)
        ids.extend(word)
    return ids


def reference_encode_by_rank(model: RefModel, text: str) -> list[int]:
    """§7's other formulation: repeatedly apply the lowest-rank applicable merge."""
    rank = {(a, b): (r, new) for r, (a, b, new) in enumerate(model.merge_ids)}
    ids: list[int] = []
    for kind, piece in text_pieces(text, model.pretokenizer, model.special_tokens, model.scheme):
        if kind == "special":
            ids.append(model.special_id(piece))
            continue
        word = tuple(_piece_base_ids(model, piece))
        while True:
            found = [rank[p] for p in zip(word, word[1:]) if p in rank]
            if not found:
                break
            a, b, new = model.merge_ids[min(found)[0]]
            word = _apply_merge(word, a, b, new)
        ids.extend(word)
    return ids


def reference_decode_bytes(model: RefModel, ids: Sequence[int]) -> bytes:
    """Concatenated token bytes (bytes scheme: exactly the input for regex presets)."""
    return b"".join(model.vocab[i] for i in ids)


def reference_model_from_merges(
    merges: Sequence[tuple],
    scheme: str = "bytes",
    pretokenizer: str = DEFAULT_PRESET,
    special_tokens: Sequence[str] = (),
    alphabet: Optional[Sequence[str]] = None,
    end_of_word_suffix: Optional[str] = None,
    unk_token: str = "<unk>",
) -> RefModel:
    """A RefModel for *encoding* built from a given merge list (e.g. the engine's).

    Lets encoding be checked independently of training. Ids follow §5; for the
    chars scheme pass the alphabet (base symbols as str, in id order).
    """
    specials = _all_specials(scheme, special_tokens, unk_token)
    vocab: list[bytes] = [s.encode("utf-8") for s in specials]
    unk_id = 0 if scheme == "chars" else None
    base = [bytes([b]) for b in range(256)] if scheme == "bytes" else list(alphabet)
    base_ids = {}
    for sym in base:
        base_ids[sym] = len(vocab)
        vocab.append(sym if isinstance(sym, bytes) else sym.encode("utf-8"))
    by_bytes = {}
    for i, tok in enumerate(vocab):
        if i != unk_id and i >= len(vocab) - len(base):
            by_bytes[tok] = i
    model = RefModel(
        merges=[tuple(m) for m in merges], merge_counts=[], vocab=vocab, scheme=scheme,
        pretokenizer=pretokenizer, special_tokens=specials, end_of_word_suffix=end_of_word_suffix,
        unk_id=unk_id, base_ids=base_ids,
    )
    for left, right in merges:
        a, b = by_bytes[left], by_bytes[right]
        new = len(vocab)
        vocab.append(left + right)
        if left + right in by_bytes:
            raise ValueError(f"duplicate token {left + right!r}")
        by_bytes[left + right] = new
        model.merge_ids.append((a, b, new))
    return model
