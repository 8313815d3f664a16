#!/usr/bin/env python3
"""Side-by-side BPE *encoding and decoding* benchmark: bpeforge against peers.

What it measures
----------------
Throughput in MB/s (10^6 bytes per second) of UTF-8 text, line terminators
excluded: for encoding, the bytes of the input lines; for decoding, the bytes
of the decoded text. Each (mode, thread count, tool) row is run ``--repeats``
times, each time in a fresh Python subprocess that imports the tool, loads its
model and the timed lines (see "Which text" below) into memory, makes warm-up
calls on a few short lines in several scripts that are in no corpus and on the
first timed line (so a tool's one-time initialisation on its first call is
not timed), and then times exactly one call (or one loop of calls) over all
the lines with ``time.perf_counter``, and its process's CPU time
(``resource.getrusage``, all threads). The table shows the median MB/s over
the repeats and

* **× bpeforge** -- the row's time divided by bpeforge's time for the same
  mode and thread count (= bpeforge MB/s / row MB/s; above 1 means that tool
  is slower than bpeforge), as in ``bench/train.py``;
* **bytes/token** -- input bytes per token produced (encoding rows).

Jobs run round-robin (repeat 1 of every row, then repeat 2, ...), in
alternating order (forward on odd repeats, backward on even ones), so that
slow drifts in the load of a shared machine spread over all tools. A failing,
missing or timed-out tool gets a row that says so; the benchmark carries on.

Side-by-side tables
-------------------
After each vocabulary and text, and over all of them at the end, two tables
put every tool side by side, one line per (vocabulary, text, mode, threads):
each cell is the tool's median MB/s with its min–max over the alternating
rounds (the repeats, each a fresh process, for the per-call and batch modes;
the fresh files, or the repeats of one file, for ``encode/files``), the first
table by wall-clock time, the second by CPU time (bytes over the process's
CPU seconds; on a shared virtual machine whose host takes the CPU away the
CPU figure is the steadier one). ``*`` marks a tool whose ids differ from
bpeforge's on some of the timed lines or files (the count is in the check's
report above the tables); ``–`` means not measured: the tool has no such API,
cannot load the vocabulary, failed or is not installed. The last column,
**bpeforge ÷ best peer**, is the better of bpeforge's rows (plain lists or
``as_numpy``) over the fastest peer's median, which it names.

Which text (``--lang``, ``--train-lines``)
-------------------------------------------
The timed text starts after the first ``--train-lines`` lines of the corpus
(default 0; 200,000 with ``encode/fresh``, and with ``encode/files`` on a
trained vocabulary): a trained vocabulary trains on those lines only, so no
timed line is one it saw. ``--lang en`` keeps only the lines the language
file marks ``en`` (``--langs``, one language code per corpus line; by default
the file next to the corpus, ``x.txt.xz`` -> ``x.langs.txt.xz``); ``--lang
all`` (the default) keeps every line, the multilingual text. A list
(``--lang en,all``) runs each in turn, with its own setup and tables.

Modes
-----
* ``encode/line`` (1 thread), one call per line: bpeforge ``tok.encode(line)``,
  tiktoken ``enc.encode_ordinary(line)``, HF ``tk.encode(line,
  add_special_tokens=False).ids``, SentencePiece ``sp.encode(line)``.
* ``encode/long`` (1 thread), one call on one long text: all the lines
  joined by ``\n`` (the warm-up calls encode the warm-up lines and the first
  line only).
* ``encode/batch`` (each ``--threads`` N), one call for all lines: bpeforge
  ``tok.encode_batch(lines, threads=N)`` and the same with ``as_numpy=True``;
  tiktoken ``enc.encode_ordinary_batch(lines, num_threads=N)``; HF
  ``[e.ids for e in tk.encode_batch(lines, add_special_tokens=False)]``;
  SentencePiece ``sp.encode(lines, num_threads=N)``.
  gigatoken ``encode_batch_list(lines, parallel=N > 1)``; quicktok
  ``encode_batch(lines, N)`` (``(ids, offsets)`` arrays); kitoken
  ``encode_all(lines)``; tokie ``[e.ids for e in tk.encode_batch(lines,
  add_special_tokens=False)]``.
* ``encode/files`` (each N; not in the default ``--modes``), a whole file
  to ids in one call, for every tool with a file API: bpeforge
  ``tok.encode_file(src, dst, format="npy", threads=N)`` (which writes the
  ``.npy`` file: that is part of its call); gigatoken
  ``tok.encode_files(gigatoken.TextFileSource([src], separator=b"\\n"),
  parallel=N > 1)``; tokie ``tk.encode_files([src], separator=b"\\n")``.
  The files are written (untimed) from the selected text: a warm-up file of
  ``--warmup-mb`` (default 0.25), then ``--file-rounds`` (default 5) files of
  ``--file-mb`` each (default 8), consecutive, disjoint and after the warm-up
  file's text. Each tool runs in one long-lived process per thread count; it
  loads its model and encodes the warm-up file (untimed: one-time
  initialisation is paid there, on text no timed file holds), then encodes
  one new file per round, the tools taking turns in alternating order: these
  are the **fresh files** figures (median, min–max). Then it encodes the last
  file ``--again-rounds`` more times (default 3): **same file again**, in a
  column of its own, never mixed into the fresh figure. A tool that keeps a
  cache across calls (gigatoken does) encodes a file it has already seen
  several times faster than a new one; the gap between the two columns is
  that cache. The warm-up call's seconds are shown too. Each fresh file's
  ids, as one flat array (gigatoken's rows flattened, tokie's ids), are
  compared with bpeforge's ``.npy`` for that file; a tool whose ids differ
  says on how many files and where first. MB/s counts the file's UTF-8
  bytes without line ends, as everywhere here.
* ``decode/line`` (1 thread), one call per line: ``tok.decode(ids)``,
  ``enc.decode(ids)``, ``tk.decode(ids)``, ``sp.decode(ids)``.
* ``decode/flat`` (1 call): the ids of every line in one flat sequence decoded
  to bytes at once: bpeforge ``decode_bytes(numpy array)``, tiktoken
  ``decode_bytes(list)``; the raw decode-table throughput (the call is
  repeated for at least half a second; its median is reported).
* ``decode/batch`` (each N): ``tok.decode_batch(ids_list)`` (it has no thread
  setting), ``enc.decode_batch(ids_list, num_threads=N)``,
  ``tk.decode_batch(ids_list)``, ``sp.decode(ids_list, num_threads=N)``.
  The id lists are made (untimed) by the same tool's batch encoder.

* ``encode/fresh`` (1 thread; not in the default ``--modes``), one call per
  line on text no tool has encoded before, the way users encode (see
  ``bench/_fresh_rounds.py``): ``--rounds`` rounds (default 7) of
  ``--round-lines`` lines (default 30,000), consecutive disjoint chunks of
  the corpus that start after the first ``--train-lines`` lines (default
  200,000 with this mode; a trained vocabulary trains on those only). Each
  tool runs in its own process for the whole run, so what it keeps between
  calls carries from round to round; the tools take turns in alternating
  order (forward, then backward). Its table gives each tool's first round on
  its own (cold), the median MB/s of the other rounds with min and max, and
  the memory its caches hold after the run (the growth of its process's RSS
  from after loading and one warm-up call to after the last round); then
  bpeforge's median against the fastest peer's (target 1.1x) and
  tiktoken's (target 3x). The corpus needs ``--train-lines + --rounds *
  --round-lines`` lines: use multi-1m, e.g.::

      python bench/encode.py --corpus /work/shared/corpora/multi-1m.txt.xz \\
          --vocab o200k_base,cl100k_base --modes encode/fresh \\
          --tools bpeforge,tiktoken,bpe-openai,fastokens,hf --markdown

Every child gets ``RAYON_NUM_THREADS=N``, ``FASTOKENS_BPE_THREADS=N`` and
``TOKENIZERS_PARALLELISM=true`` in its environment (HF tokenizers' and
gigatoken's thread pools follow the first; fastokens has its own worker
threads, which the second sizes: without it, fastokens encodes one long text
on every core even in a 1-thread row). kitoken and tokie have no thread
setting (tokie sizes its threads from the cores it may run on), so their
children are pinned to N of the usable cores (``os.sched_setaffinity``).
quicktok takes N as an argument. A row whose tool still used more than 1.3
cores per thread (CPU seconds over wall seconds, medians) says so in its note.

bpe-openai (``get_encoding(name).encode_ordinary``, batch
``encode_ordinary_batch(num_threads=N)``) and fastokens (``Tokenizer.from_file``
on bpeforge's own ``to_huggingface`` export; ``encode(line,
add_special_tokens=False).ids``, batch ``encode_batch``) take part in the
encode modes. fastokens keeps a cache of what it has encoded, so a job never
encodes a line twice before the timed call.

The other encoding peers (``pip install gigatoken quicktok-v1 kitoken tokie``;
all load offline) take part in the encode modes and ``decode/line``:

* gigatoken: for ``o200k_base`` / ``cl100k_base``
  ``gigatoken.Tokenizer.from_tiktoken(path)`` on the rank file, uncompressed
  and named ``NAME.tiktoken`` (gigatoken takes the pattern from the name); for
  a trained vocabulary ``gigatoken.Tokenizer(path)`` on bpeforge's
  ``tokenizer.json`` export. ``encode(line)`` (a numpy array); decode gives
  bytes, turned into text.
* quicktok (import name ``quicktok``): ``quicktok.get_encoding(NAME)`` from
  its bundled data, ``encode_ordinary(line)``. A trained vocabulary is
  offered to ``quicktok.import_tokenizer`` (bpeforge's export); quicktok
  refuses pre-tokenizer patterns it has no hand-written scanner for (GPT-2's
  among them), and its rows then say unsupported ("skipped").
* kitoken: ``Kitoken.from_tokenizers_file(export)``, ``encode(line)``.
* tokie: ``tokie.Tokenizer.from_json(export)``, ``encode(line,
  add_special_tokens=False).ids``.

Vocabularies (``--vocab``)
--------------------------
* ``trained`` (default): the models below, trained on the corpus.
* ``o200k_base`` / ``cl100k_base``: the real production rank files shipped
  in the ``bpe-openai`` wheel (``bpe_openai/data/NAME.tiktoken.gz``).
  bpeforge imports them with ``bpeforge.from_tiktoken(ranks, pattern=NAME)``;
  tiktoken gets ``Encoding(pat_str=tiktoken's pattern, mergeable_ranks=the
  same ranks)``; HF tokenizers and fastokens load bpeforge's
  ``to_huggingface`` export; bpe-openai uses its own copy of the file.
  SentencePiece has no such model and is left out.

After the table, the encoding targets for bpeforge are printed
with pass/miss: per call >= 2x tiktoken and >= 1.2x the fastest of
bpe-openai and fastokens, >= 8x HF tokenizers; one long text >= 2x tiktoken;
batch at 1 thread >= 2.5x tiktoken per call; batch at 2 threads >= 1.85x
batch at 1 thread; 0 lines with different ids in the check. A target
whose rows have no figure says "not measured" and why: the comparison with
the fastest peer needs both peers, unless one is skipped by design
(bpe-openai loads only its built-in vocabularies), so a peer that is not
installed, failed or was not asked for (``--tools``) is named there rather
than left out of the maximum.

Models for ``--vocab trained`` (setup, not timed, in one subprocess)
--------------------------------------------------------------------
A compressed corpus (.xz, .gz) is first decompressed to a temporary file.

* bpeforge: ``bpeforge.train([corpus], vocab_size=V, scheme="bytes",
  pretokenizer="gpt2", progress=False)`` on the whole corpus. No special
  tokens, so ids 0..255 are the bytes and merges follow.
* tiktoken: ``tiktoken.Encoding(name="bpeforge", pat_str=GPT-2's regex,
  mergeable_ranks={tok.id_to_token(i): i ...}, special_tokens={})`` -- the
  same vocabulary, saved as a base64 ``token rank`` file.
* HF tokenizers: ``models.BPE`` built from the same vocabulary and merges
  spelled in GPT-2's byte-to-unicode alphabet, with
  ``pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)`` and
  ``decoders.ByteLevel()``.
* SentencePiece: its own BPE model of the same size trained on the same
  corpus (``model_type="bpe", character_coverage=1.0, input_sentence_size=0,
  max_sentence_length=1<<20, normalization_rule_name="identity",
  byte_fallback=True``). Its ids differ: it is a speed comparison only.

The setup checks that bpeforge and every other tool whose ids should be the
same (tiktoken, bpe-openai, fastokens, HF, gigatoken, quicktok, kitoken,
tokie) give identical id lists on the first ``--check-lines`` timed lines
(default 2,000; 0: every timed line) and prints how many lines differ per
tool, with the first few differing lines; the differing tools are marked in
the side-by-side tables, not left out.

Reproduce
---------
::

    pip install tiktoken tokenizers sentencepiece numpy
    pip install -e .        # or maturin develop --release: bpeforge itself

    python bench/encode.py --corpus /work/shared/corpora/multi-200k.txt.xz \\
        --repeats 3 --threads 1,2 --markdown --json bench-encode-200k.json

    # the whole encoding table in one run: the trained 32k and the two real
    # vocabularies, each with its own tables, then one summary over all three
    # (per-call MB/s and x tiktoken of every tool; every target, pass/miss)
    pip install bpe-openai fastokens
    python bench/encode.py --corpus /work/shared/corpora/multi-200k.txt.xz \\
        --vocab trained,o200k_base,cl100k_base --lines 50000 \\
        --modes encode/line,encode/long,encode/batch \\
        --tools bpeforge,tiktoken,bpe-openai,fastokens,hf \\
        --repeats 3 --threads 1,2 --markdown --json bench-encode.json

    # every peer on the real vocabularies, English and multilingual text, 1
    # thread: per call, list batch and whole files (English text is scarcer:
    # multi-1m holds about 9 MB of it, hence smaller files)
    pip install bpe-openai fastokens gigatoken quicktok-v1 kitoken tokie
    T=bpeforge,bpeforge-numpy,tiktoken,bpe-openai,fastokens,hf,gigatoken,quicktok,kitoken,tokie
    python bench/encode.py --corpus /work/shared/corpora/multi-1m.txt.xz \\
        --vocab o200k_base,cl100k_base --lang en \\
        --modes encode/line,encode/batch,encode/files --threads 1 --lines 20000 \\
        --repeats 3 --check-lines 0 --file-mb 1.8 --file-rounds 4 --tools $T --markdown
    python bench/encode.py --corpus /work/shared/corpora/multi-1m.txt.xz \\
        --vocab o200k_base,cl100k_base --lang all \\
        --modes encode/line,encode/batch,encode/files --threads 1 --lines 20000 \\
        --repeats 3 --check-lines 0 --file-mb 8 --file-rounds 5 --tools $T --markdown

With several vocabularies (or ``--lang`` values), ``--json NAME.json`` writes
``NAME-VOCAB.json`` (``NAME-VOCAB-LANG.json``) per vocabulary (and text).

Batch results are held in memory: about 40 bytes per token as Python lists,
so the whole of a 1M-line corpus needs a few GB; use ``--lines`` to bound it.
Quote ratios from one run rather than absolute MB/s on a shared machine.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import _fresh_rounds as F
import _harness as H

#: GPT-2's published pre-tokenization regex, exactly as in docs/SEMANTICS.md
#: (bpeforge's ``gpt2`` preset, HF ByteLevel's regex).
GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+"
                r"| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")

#: The real production vocabularies: rank files shipped in the ``bpe-openai``
#: wheel (``bpe_openai/data/NAME.tiktoken.gz``), with tiktoken's patterns.
REAL_VOCABS = ("o200k_base", "cl100k_base")

#: ``--lang`` value that keeps every line (the multilingual text).
ALL_LANGS = "all"

#: Lines compared in the identical-ids check.
CHECK_LINES = 2_000

#: Differing lines listed (at most) per tool in the check's report.
CHECK_EXAMPLES = 3

#: Model and data file names inside the models directory.
LINES_FILE = "lines.json"  # the timed lines, exactly
FRESH_LINES_FILE = "fresh-lines.json"  # the lines of every fresh round, in order
TRAIN_FILE = "train-lines.txt"  # the lines a trained vocabulary trains on (with --train-lines)
BPEFORGE_FILE = "bpeforge.json"
TIKTOKEN_FILE = "bpeforge.tiktoken"
HF_FILE = "hf-tokenizer.json"
SPM_PREFIX = "spm"
EXPORT_FILE = "bpeforge-export-tokenizer.json"  # bpeforge's own HF export (fastokens loads it)
VOCAB_FILE = "vocab.json"  # which vocabulary and pattern the models use
SETUP_RESULT = "setup.json"
GIGATOKEN_DIR = "gigatoken"  # holds NAME.tiktoken, uncompressed (gigatoken reads the pattern off the name)
QUICKTOK_DIR = "quicktok"  # a trained vocabulary imported into quicktok, if it accepts it
QUICKTOK_NAME = "bpeforge_trained"
FILES_DIR = "files"  # encode/files: the warm-up file and the timed files
FILES_PLAN = "files.json"  # their names, lines and bytes
WARMUP_FILE = "warmup.txt"


# ==========================================================================
# Corpus lines
# ==========================================================================


def load_lines(path: Path, limit: int | None = None) -> list[str]:
    """The first ``limit`` lines of a UTF-8 file, without terminators.

    Lines are split at ``\\n`` only and a ``\\r`` right before it is dropped,
    as bpeforge reads files (docs/SEMANTICS.md, section 1).
    """
    lines = []
    with open(path, "rb") as f:
        for raw in f:
            if limit is not None and len(lines) >= limit:
                break
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            lines.append(raw.decode("utf-8"))
    return lines


def utf8_bytes(texts: list[str]) -> int:
    """Total UTF-8 size of ``texts``."""
    return sum(len(t.encode("utf-8")) for t in texts)


# ==========================================================================
# GPT-2 byte-to-unicode alphabet (for HF's ByteLevel vocabularies)
# ==========================================================================


def byte_alphabet() -> list[str]:
    """The character standing for each byte value in GPT-2's vocabularies.

    Printable Latin-1 bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) stand
    for themselves; the other 68 bytes, in byte order, take the characters
    U+0100, U+0101, ... in turn.
    """
    printable = set(range(ord("!"), ord("~") + 1))
    printable |= set(range(ord("¡"), ord("¬") + 1))
    printable |= set(range(ord("®"), ord("ÿ") + 1))
    chars, extra = [], 0
    for byte in range(256):
        if byte in printable:
            chars.append(chr(byte))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    return chars


def bytes_to_symbols(token: bytes, alphabet: list[str]) -> str:
    """A token's bytes spelled in the byte-level alphabet."""
    return "".join(alphabet[b] for b in token)


# ==========================================================================
# Setup (one child): train, convert, save, check
# ==========================================================================


def _train_bpeforge(corpus: Path, vocab_size: int, models: Path) -> dict:
    """Train the byte-level bpeforge model and save it."""
    import bpeforge

    start = time.perf_counter()
    tok = bpeforge.train([str(corpus)], vocab_size=vocab_size, scheme="bytes",
                         pretokenizer="gpt2", progress=False)
    seconds = time.perf_counter() - start
    tok.save(str(models / BPEFORGE_FILE))
    return {"train_s": seconds, "vocab_size": tok.vocab_size,
            "merges": len(tok.merges)}


def real_rank_file(name: str) -> Path:
    """The gzipped ``.tiktoken`` rank file of ``name`` inside the bpe-openai wheel."""
    import bpe_openai

    path = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (pip install bpe-openai)")
    return path


def read_ranks(path: Path) -> dict[bytes, int]:
    """``{token bytes: rank}`` from a (gzipped) ``base64 rank`` file."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    ranks = {}
    with opener(path, "rt", encoding="ascii") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


def tiktoken_pattern(vocab: str) -> str:
    """The pre-tokenizer regex tiktoken uses for ``vocab``."""
    if vocab == "trained":
        return GPT2_PATTERN
    from bpeforge import interop
    return {"o200k_base": interop.O200K_PATTERN, "cl100k_base": interop.CL100K_PATTERN}[vocab]


def _import_real_vocab(vocab: str, models: Path) -> dict:
    """bpeforge's import of a real rank file (``from_tiktoken``), saved; the
    rank file itself is what tiktoken loads."""
    import bpeforge

    ranks = read_ranks(real_rank_file(vocab))
    start = time.perf_counter()
    tok = bpeforge.from_tiktoken(ranks, pattern=vocab)
    seconds = time.perf_counter() - start
    tok.save(str(models / BPEFORGE_FILE))
    with open(models / TIKTOKEN_FILE, "w", encoding="ascii") as f:
        for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
            f.write(f"{base64.b64encode(token).decode('ascii')} {rank}\n")
    return {"import_s": seconds, "vocab_size": tok.vocab_size, "merges": len(tok.merges)}


def _write_bpeforge_export(models: Path) -> dict:
    """bpeforge's own ``tokenizer.json`` export (what fastokens loads)."""
    import bpeforge

    bpeforge.load(str(models / BPEFORGE_FILE)).to_huggingface(str(models / EXPORT_FILE))
    return {}


def _bpeforge_tokens(models: Path) -> list[bytes]:
    """Every token's bytes by id, from the saved bpeforge model."""
    import bpeforge

    tok = bpeforge.load(str(models / BPEFORGE_FILE))
    return [tok.id_to_token(i) for i in range(tok.vocab_size)]


def _write_tiktoken_ranks(models: Path) -> dict:
    """Save bpeforge's vocabulary as tiktoken ranks (``base64 rank`` lines)."""
    tokens = _bpeforge_tokens(models)
    with open(models / TIKTOKEN_FILE, "w", encoding="ascii") as f:
        for rank, token in enumerate(tokens):
            f.write(f"{base64.b64encode(token).decode('ascii')} {rank}\n")
    return {"ranks": len(tokens)}


def _write_hf_tokenizer(models: Path) -> dict:
    """Build an HF ByteLevel BPE tokenizer from bpeforge's vocabulary and merges."""
    import bpeforge
    from tokenizers import Tokenizer, decoders, models as hf_models, pre_tokenizers

    tok = bpeforge.load(str(models / BPEFORGE_FILE))
    alphabet = byte_alphabet()
    vocab = {bytes_to_symbols(tok.id_to_token(i), alphabet): i
             for i in range(tok.vocab_size)}
    merges = [(bytes_to_symbols(a, alphabet), bytes_to_symbols(b, alphabet))
              for a, b in tok.merges]
    hf = Tokenizer(hf_models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.decoder = decoders.ByteLevel()
    hf.save(str(models / HF_FILE))
    return {"vocab": len(vocab), "merges": len(merges)}


def _train_sentencepiece(corpus: Path, vocab_size: int, models: Path) -> dict:
    """Train SentencePiece's own BPE model of the same size."""
    import sentencepiece as spm

    start = time.perf_counter()
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(models / SPM_PREFIX),
        vocab_size=vocab_size, model_type="bpe", character_coverage=1.0,
        input_sentence_size=0, max_sentence_length=1 << 20,
        normalization_rule_name="identity", byte_fallback=True,
        num_threads=os.cpu_count() or 1, minloglevel=2,
    )
    return {"train_s": time.perf_counter() - start}


def _first_difference(a: list[int], b: list[int]) -> int:
    """Index of the first position where two id lists differ."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_identical_ids(models: Path, lines: list[str], available: set[str]) -> dict:
    """Compare tiktoken's and HF's ids with bpeforge's, line by line.

    The models are loaded from their saved files, as the timed jobs load them.
    """
    reference = ADAPTERS["bpeforge"].load(models)
    expected = [as_id_list(reference.encode(line)) for line in lines]
    report: dict = {"lines": len(lines)}
    for key in CHECKED_TOOLS:
        if not (models / VOCAB_FILE).exists() or key not in available:
            continue
        try:
            adapter = ADAPTERS[key].load(models)
            got = [as_id_list(adapter.encode(line)) for line in lines]
        except Exception as exc:
            traceback.print_exc()
            report[key] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        differing = [i for i, (e, g) in enumerate(zip(expected, got)) if e != g]
        examples = [{"line": i, "at_token": _first_difference(expected[i], got[i]),
                     "bpeforge_tokens": len(expected[i]), "tool_tokens": len(got[i]),
                     "text": lines[i][:120]}
                    for i in differing[:CHECK_EXAMPLES]]
        report[key] = {"differing_lines": len(differing), "examples": examples,
                       "tokens": count_tokens(got)}
    report["bpeforge_tokens"] = count_tokens(expected)
    return report


def _write_first_lines(corpus: Path, dest: Path, count: int) -> None:
    """Copy the first ``count`` lines of ``corpus`` to ``dest``."""
    with open(corpus, "rb") as src, open(dest, "wb") as out:
        for i, raw in enumerate(src):
            if i >= count:
                break
            out.write(raw)


def _setup_step(name: str, steps: dict, fn: Callable[[], dict]) -> None:
    """Run one setup step; record its result or its failure."""
    try:
        steps[name] = {"status": "ok", **fn()}  # a step may say "skipped" itself
    except Exception as exc:
        traceback.print_exc()
        steps[name] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}


def held_out_lines(corpus: Path, langs: Path | None, lang: str, start: int,
                   max_lines: int | None = None, max_bytes: float | None = None) -> list[str]:
    """The corpus's lines from line ``start`` on (what no trained vocabulary
    saw), those whose language code in ``langs`` (one code a line, aligned with
    the corpus) is ``lang`` (``all``: every line), until ``max_lines`` lines or
    ``max_bytes`` UTF-8 bytes are collected. Terminators as in :func:`load_lines`."""
    out: list[str] = []
    size = 0
    codes = H.open_text(langs) if lang != ALL_LANGS else None
    try:
        with open(corpus, "rb") as f:
            for i, raw in enumerate(f):
                code = codes.readline().strip() if codes is not None else ALL_LANGS
                if i < start or code != lang:
                    continue
                if (max_lines is not None and len(out) >= max_lines) or \
                        (max_bytes is not None and size >= max_bytes):
                    break
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                raw = raw[:-1] if raw.endswith(b"\r") else raw
                out.append(raw.decode("utf-8"))
                size += len(raw)
    finally:
        if codes is not None:
            codes.close()
    return out


def _write_text_file(path: Path, lines: list[str]) -> dict:
    """``lines`` as a UTF-8 file, each ended by ``\\n``; its size."""
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    path.write_bytes(data)
    return {"name": path.name, "lines": len(lines), "bytes": len(data),
            "text_bytes": len(data) - len(lines)}


def _write_files(lines: list[str], models: Path, args) -> dict:
    """encode/files: a warm-up file of ``--warmup-mb`` (text no timed file
    holds), then ``--file-rounds`` files of ``--file-mb`` each, consecutive and
    disjoint, from ``lines``."""
    folder = models / FILES_DIR
    folder.mkdir(exist_ok=True)
    chunks, current, size = [], [], 0
    limits = [args.warmup_mb * 1e6] + [args.file_mb * 1e6] * args.file_rounds
    for line in lines:
        if len(chunks) == len(limits):
            break
        current.append(line)
        size += len(line.encode("utf-8")) + 1
        if size >= limits[len(chunks)]:
            chunks.append(current)
            current, size = [], 0
    if len(chunks) < len(limits):
        raise SystemExit(f"{FILES}: the held-out text ({args.lang}) has {utf8_bytes(lines) / 1e6:.1f} MB; "
                         f"--warmup-mb, --file-rounds and --file-mb need {sum(limits) / 1e6:.1f} MB")
    plan = {"warmup": _write_text_file(folder / WARMUP_FILE, chunks[0]),
            "files": [_write_text_file(folder / f"file-{i}.txt", chunk)
                      for i, chunk in enumerate(chunks[1:])]}
    (models / FILES_PLAN).write_text(json.dumps(plan), encoding="utf-8")
    return plan


def _write_gigatoken_ranks(vocab: str, models: Path) -> dict:
    """The real rank file, uncompressed and named after its encoding (gigatoken
    takes the pattern from the name)."""
    import gzip
    import shutil

    folder = models / GIGATOKEN_DIR
    folder.mkdir(exist_ok=True)
    with gzip.open(real_rank_file(vocab), "rb") as src, open(folder / f"{vocab}.tiktoken", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return {}


def _import_quicktok(models: Path) -> dict:
    """Try to import a trained vocabulary into quicktok (``import_tokenizer`` on
    bpeforge's export, into the models directory); quicktok refuses patterns it
    has no scanner for, which makes the rows unsupported, not failed."""
    import contextlib
    import io
    import quicktok

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            quicktok.import_tokenizer(str(models / EXPORT_FILE), QUICKTOK_NAME,
                                      data_dir=str(models / QUICKTOK_DIR))
    except Exception as exc:
        if type(exc).__name__ == "ImportRefused":
            first = " ".join(str(exc).split())[:160]
            return {"status": "skipped", "error": f"quicktok cannot load this vocabulary: {first}"}
        raise
    return {}


def setup_main(args: argparse.Namespace) -> int:
    """Child: write the timed lines (and files), build every model, run the check."""
    corpus, models = Path(args.corpus), Path(args.workdir)
    langs = Path(args.langs) if args.langs else None
    start = args.train_lines or 0
    fresh = FRESH in args.modes
    per_call = set(args.modes) - {FRESH, FILES}
    lines = held_out_lines(corpus, langs, args.lang, start, max_lines=args.lines) if per_call else []
    (models / LINES_FILE).write_text(json.dumps(lines), encoding="utf-8")
    train_corpus = corpus
    if args.train_lines:
        train_corpus = models.parent / TRAIN_FILE
        _write_first_lines(corpus, train_corpus, args.train_lines)
    if fresh:
        wanted = args.rounds * args.round_lines
        fresh_lines = held_out_lines(corpus, langs, args.lang, start, max_lines=wanted)
        if len(fresh_lines) < wanted:
            raise SystemExit(f"--corpus has {len(fresh_lines):,} lines ({args.lang}) after line {start:,}: "
                             f"--rounds and --round-lines need {wanted:,}")
        (models / FRESH_LINES_FILE).write_text(json.dumps(fresh_lines), encoding="utf-8")
        lines = lines or fresh_lines  # what the identical-ids check compares
    files_plan = None
    if FILES in args.modes:
        wanted_bytes = (args.warmup_mb + args.file_rounds * args.file_mb) * 1e6
        file_lines = held_out_lines(corpus, langs, args.lang, start, max_bytes=wanted_bytes)
        files_plan = _write_files(file_lines, models, args)
        lines = lines or file_lines[:CHECK_LINES]
    (models / VOCAB_FILE).write_text(json.dumps({"vocab": args.vocab}), encoding="utf-8")
    steps: dict = {}
    if args.vocab == "trained":
        _setup_step("bpeforge", steps, lambda: _train_bpeforge(train_corpus, args.vocab_size, models))
        if steps["bpeforge"]["status"] == "ok":
            _setup_step("tiktoken", steps, lambda: _write_tiktoken_ranks(models))
            _setup_step("hf", steps, lambda: _write_hf_tokenizer(models))
        _setup_step("sentencepiece", steps,
                    lambda: _train_sentencepiece(train_corpus, args.vocab_size, models))
        steps["bpe-openai"] = {"status": "skipped",
                               "error": "bpe-openai loads only its built-in vocabularies"}
    else:
        _setup_step("bpeforge", steps, lambda: _import_real_vocab(args.vocab, models))
        steps["bpe-openai"] = {"status": "ok"}
        steps["quicktok"] = {"status": "ok"}  # its bundled copy of the vocabulary
        # tiktoken reads the rank file written by the import step; HF loads
        # bpeforge's export, as fastokens does.
        steps["tiktoken"] = steps["bpeforge"]
        _setup_step("gigatoken", steps, lambda: _write_gigatoken_ranks(args.vocab, models))
    if steps["bpeforge"]["status"] == "ok":
        _setup_step("export", steps, lambda: _write_bpeforge_export(models))
        if args.vocab != "trained" and steps["export"]["status"] == "ok":
            (models / HF_FILE).write_bytes((models / EXPORT_FILE).read_bytes())
            steps["hf"] = steps["export"]
        if args.vocab == "trained" and steps["export"]["status"] == "ok":
            steps["gigatoken"] = steps["export"]  # gigatoken loads the export too
            if "quicktok" in args.tools:
                _setup_step("quicktok", steps, lambda: _import_quicktok(models))
    result: dict = {"status": "ok", "steps": steps, "lines": len(lines), "text_bytes": utf8_bytes(lines),
                    "lang": args.lang, "first_line": start, "files": files_plan}
    if steps["bpeforge"]["status"] == "ok":
        available = {tool for tool, step in MODEL_STEP.items()
                     if steps.get(step, {}).get("status") == "ok" and tool in args.tools}
        _setup_step("check", steps, lambda: check_identical_ids(models, lines[:args.check_lines or None], available))
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")
    return 0


# ==========================================================================
# Tool adapters (used inside the children)
# ==========================================================================


def count_tokens(batch: list[list[int]]) -> int:
    """Number of ids in a list of id lists."""
    return sum(map(len, batch))


class BpeforgeAdapter:
    """bpeforge's ``Tokenizer``."""

    def __init__(self, tok) -> None:
        self.tok = tok

    @classmethod
    def load(cls, models: Path) -> "BpeforgeAdapter":
        import bpeforge
        return cls(bpeforge.load(str(models / BPEFORGE_FILE)))

    def encode(self, line: str) -> list[int]:
        return self.tok.encode(line)

    def encode_batch(self, lines: list[str], threads: int):
        return self.tok.encode_batch(lines, threads=threads)

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids)

    def decode_batch(self, ids_list: list[list[int]], threads: int) -> list[str]:
        return self.tok.decode_batch(ids_list, threads=threads)

    def decode_flat(self, flat: list[int]) -> bytes:
        return self.tok.decode_bytes(flat)

    def encode_file(self, src: Path, dst: Path, threads: int):
        return self.tok.encode_file(str(src), str(dst), format="npy", threads=threads)

    @staticmethod
    def file_ids(out, dst: Path):
        import numpy as np
        return np.load(dst).astype(np.uint32)

    count = staticmethod(count_tokens)


class BpeforgeNumpyAdapter(BpeforgeAdapter):
    """bpeforge with numpy arrays in and out: ``encode_batch(as_numpy=True)``
    gives ``(ids, offsets)``; decoding takes that pair (or one flat array)
    through a raw buffer, without a Python int per token."""

    def encode_batch(self, lines: list[str], threads: int):
        return self.tok.encode_batch(lines, threads=threads, as_numpy=True)

    def ids_lists(self, lines: list[str], threads: int):
        return self.tok.encode_batch(lines, threads=threads, as_numpy=True)

    def decode_batch(self, batch, threads: int) -> list[str]:
        return self.tok.decode_batch(batch, threads=threads)

    def flatten(self, batch):
        return batch[0]

    @staticmethod
    def count(out) -> int:
        return len(out[0]) if isinstance(out, tuple) else count_tokens(out)


class TiktokenAdapter:
    """A ``tiktoken.Encoding`` over bpeforge's vocabulary."""

    def __init__(self, enc) -> None:
        self.enc = enc

    @classmethod
    def load(cls, models: Path) -> "TiktokenAdapter":
        import tiktoken
        ranks = {}
        with open(models / TIKTOKEN_FILE, encoding="ascii") as f:
            for line in f:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        vocab = json.loads((models / VOCAB_FILE).read_text(encoding="utf-8"))["vocab"]
        return cls(tiktoken.Encoding(name="bpeforge", pat_str=tiktoken_pattern(vocab),
                                     mergeable_ranks=ranks, special_tokens={}))

    def encode(self, line: str) -> list[int]:
        return self.enc.encode_ordinary(line)

    def encode_batch(self, lines: list[str], threads: int):
        return self.enc.encode_ordinary_batch(lines, num_threads=threads)

    def decode(self, ids: list[int]) -> str:
        return self.enc.decode(ids)

    def decode_batch(self, ids_list: list[list[int]], threads: int) -> list[str]:
        return self.enc.decode_batch(ids_list, num_threads=threads)

    def decode_flat(self, flat: list[int]) -> bytes:
        return self.enc.decode_bytes(flat)

    count = staticmethod(count_tokens)


class HfAdapter:
    """An HF ``tokenizers.Tokenizer`` over bpeforge's vocabulary and merges."""

    def __init__(self, tk) -> None:
        self.tk = tk

    @classmethod
    def load(cls, models: Path) -> "HfAdapter":
        from tokenizers import Tokenizer
        return cls(Tokenizer.from_file(str(models / HF_FILE)))

    def encode(self, line: str) -> list[int]:
        return self.tk.encode(line, add_special_tokens=False).ids

    def encode_batch(self, lines: list[str], threads: int):
        return [e.ids for e in self.tk.encode_batch(lines, add_special_tokens=False)]

    def decode(self, ids: list[int]) -> str:
        return self.tk.decode(ids)

    def decode_batch(self, ids_list: list[list[int]], threads: int) -> list[str]:
        return self.tk.decode_batch(ids_list)

    count = staticmethod(count_tokens)


class BpeOpenAiAdapter:
    """bpe-openai (github/rust-gems ``bpe``): only its built-in vocabularies."""

    def __init__(self, enc) -> None:
        self.enc = enc

    @classmethod
    def load(cls, models: Path) -> "BpeOpenAiAdapter":
        import bpe_openai
        vocab = json.loads((models / VOCAB_FILE).read_text(encoding="utf-8"))["vocab"]
        if vocab not in REAL_VOCABS:
            raise ValueError("bpe-openai loads only its built-in vocabularies (o200k_base, cl100k_base)")
        return cls(bpe_openai.get_encoding(vocab))

    def encode(self, line: str) -> list[int]:
        return self.enc.encode_ordinary(line)

    def encode_batch(self, lines: list[str], threads: int):
        return self.enc.encode_ordinary_batch(lines, num_threads=threads)

    count = staticmethod(count_tokens)


class FastokensAdapter(HfAdapter):
    """fastokens over bpeforge's own ``tokenizer.json`` export (HF's API)."""

    @classmethod
    def load(cls, models: Path) -> "FastokensAdapter":
        import fastokens
        return cls(fastokens.Tokenizer.from_file(str(models / EXPORT_FILE)))


def _vocab_name(models: Path) -> str:
    """Which vocabulary the models directory holds (``trained`` or a real one)."""
    return json.loads((models / VOCAB_FILE).read_text(encoding="utf-8"))["vocab"]


def as_id_list(ids) -> list[int]:
    """Ids as a list of Python ints (a tool may return a numpy array)."""
    return ids.tolist() if hasattr(ids, "tolist") else list(ids)


def _text(decoded) -> str:
    """Decoded text as ``str`` (a tool may return UTF-8 bytes)."""
    return decoded.decode("utf-8", "replace") if isinstance(decoded, bytes) else decoded


class GigatokenAdapter:
    """gigatoken: a real vocabulary from its rank file (``from_tiktoken`` on the
    uncompressed file named after the encoding, which is how it knows the
    pattern), a trained one from bpeforge's ``tokenizer.json`` export.
    ``encode`` gives a numpy array; the batch is ``encode_batch_list`` (lists,
    ``parallel`` only with more than one thread; its pool follows
    ``RAYON_NUM_THREADS``); the file API is ``encode_files(TextFileSource)``."""

    def __init__(self, tk) -> None:
        self.tk = tk

    @classmethod
    def load(cls, models: Path) -> "GigatokenAdapter":
        import gigatoken
        vocab = _vocab_name(models)
        if vocab in REAL_VOCABS:
            return cls(gigatoken.Tokenizer.from_tiktoken(str(models / GIGATOKEN_DIR / f"{vocab}.tiktoken")))
        return cls(gigatoken.Tokenizer(str(models / EXPORT_FILE)))

    def encode(self, line: str):
        return self.tk.encode(line)

    def encode_batch(self, lines: list[str], threads: int):
        return self.tk.encode_batch_list(lines, parallel=threads > 1)

    def decode(self, ids) -> str:
        return self.tk.decode(ids).decode("utf-8", "replace")

    def encode_file(self, src: Path, dst: Path, threads: int):
        import gigatoken
        return self.tk.encode_files(gigatoken.TextFileSource([str(src)], separator=b"\n"),
                                    parallel=threads > 1)

    @staticmethod
    def file_ids(out, dst: Path):
        import awkward as ak
        import numpy as np
        return np.asarray(ak.flatten(out), dtype=np.uint32)

    count = staticmethod(count_tokens)


class QuicktokAdapter:
    """quicktok: ``get_encoding(NAME)`` from its bundled data for the real
    vocabularies; a trained one only if ``quicktok.import_tokenizer`` accepts
    bpeforge's export (it refuses pre-tokenizer patterns it has no hand-written
    scanner for, such as GPT-2's). ``encode_ordinary`` per line; the batch is
    ``encode_batch(lines, threads)``, which gives ``(ids, offsets)`` arrays."""

    def __init__(self, enc) -> None:
        self.enc = enc

    @classmethod
    def load(cls, models: Path) -> "QuicktokAdapter":
        import quicktok
        vocab = _vocab_name(models)
        if vocab in REAL_VOCABS:
            return cls(quicktok.get_encoding(vocab))
        return cls(quicktok.Tokenizer(QUICKTOK_NAME, str(models / QUICKTOK_DIR)))

    def encode(self, line: str) -> list[int]:
        return self.enc.encode_ordinary(line)

    def encode_batch(self, lines: list[str], threads: int):
        return self.enc.encode_batch(lines, threads)

    def decode(self, ids: list[int]) -> str:
        return self.enc.decode(ids)

    @staticmethod
    def count(out) -> int:
        return len(out[0]) if isinstance(out, tuple) else count_tokens(out)


class KitokenAdapter:
    """kitoken over bpeforge's ``tokenizer.json`` export
    (``Kitoken.from_tokenizers_file``); batch ``encode_all`` (no thread
    setting: its child is pinned to as many cores as the row's threads)."""

    def __init__(self, kt) -> None:
        self.kt = kt

    @classmethod
    def load(cls, models: Path) -> "KitokenAdapter":
        from kitoken import Kitoken
        return cls(Kitoken.from_tokenizers_file(str(models / EXPORT_FILE)))

    def encode(self, line: str) -> list[int]:
        return self.kt.encode(line)

    def encode_batch(self, lines: list[str], threads: int):
        return self.kt.encode_all(lines)

    def decode(self, ids: list[int]) -> str:
        return self.kt.decode(ids).decode("utf-8", "replace")

    count = staticmethod(count_tokens)


class TokieAdapter(HfAdapter):
    """tokie over bpeforge's ``tokenizer.json`` export (``Tokenizer.from_json``);
    ``encode(line, add_special_tokens=False).ids``, batch ``encode_batch``, file
    API ``encode_files([src], separator=b"\\n")``. It sizes its threads from the
    cores it may run on, so its child is pinned to as many cores as the row's
    threads."""

    @classmethod
    def load(cls, models: Path) -> "TokieAdapter":
        import tokie
        return cls(tokie.Tokenizer.from_json(str(models / EXPORT_FILE)))

    def encode_file(self, src: Path, dst: Path, threads: int):
        return self.tk.encode_files([str(src)], separator=b"\n", add_special_tokens=False)

    @staticmethod
    def file_ids(out, dst: Path):
        import numpy as np
        return np.asarray(out[0], dtype=np.uint32)


class SentencePieceAdapter:
    """SentencePiece's own BPE model (different ids: speed only)."""

    def __init__(self, sp) -> None:
        self.sp = sp

    @classmethod
    def load(cls, models: Path) -> "SentencePieceAdapter":
        import sentencepiece as spm
        model = models / f"{SPM_PREFIX}.model"
        return cls(spm.SentencePieceProcessor(model_file=str(model)))

    def encode(self, line: str) -> list[int]:
        return self.sp.encode(line)

    def encode_batch(self, lines: list[str], threads: int):
        return self.sp.encode(lines, num_threads=threads)

    def decode(self, ids: list[int]) -> str:
        return self.sp.decode(ids)

    def decode_batch(self, ids_list: list[list[int]], threads: int) -> list[str]:
        return self.sp.decode(ids_list, num_threads=threads)

    count = staticmethod(count_tokens)


@dataclasses.dataclass(frozen=True)
class Tool:
    """One tool column of the benchmark."""

    name: str  # shown in the table
    label: str  # shown after the version
    module: str  # import name
    dist: str  # distribution name, for the version
    modes: tuple[str, ...]  # the modes it takes part in


ALL_MODES = ("encode/line", "encode/long", "encode/batch", "decode/line", "decode/batch")
ENCODE_MODES = ("encode/line", "encode/long", "encode/batch")
#: One decode call over the whole corpus's ids (raw decode throughput).
FLAT = "decode/flat"
#: One call per line over fresh text, round after round (``_fresh_rounds``).
FRESH = "encode/fresh"
FRESH_ROUNDS = 7
FRESH_ROUND_LINES = 30_000
FRESH_TRAIN_LINES = 200_000
#: Seconds a fresh worker may take to load or to answer one command.
FRESH_REPLY_TIMEOUT = 600.0
#: The peers of the fresh-text targets, and the targets (bpeforge's median over
#: the fastest peer's, and over tiktoken's).
FRESH_PEERS = ("tiktoken", "bpe-openai", "fastokens", "hf")
FRESH_TARGETS = (("fastest peer", 1.1), ("tiktoken", 3.0))
FLAT_MIN_SECONDS = 0.5
#: A whole file to ids, one call per file, on a sequence of different files
#: in one process per tool (``run_files``).
FILES = "encode/files"
FILE_MB = 8.0
FILE_ROUNDS = 5
AGAIN_ROUNDS = 3
WARMUP_MB = 0.25

TOOLS: dict[str, Tool] = {
    "bpeforge": Tool("bpeforge", "", "bpeforge", "bpeforge", ALL_MODES + (FILES,)),
    "bpeforge-numpy": Tool("bpeforge", "as_numpy", "bpeforge", "bpeforge",
                           ("encode/batch", "decode/batch", FLAT)),
    "tiktoken": Tool("tiktoken", "", "tiktoken", "tiktoken", ALL_MODES + (FLAT,)),
    "bpe-openai": Tool("bpe-openai", "", "bpe_openai", "bpe-openai", ENCODE_MODES),
    "fastokens": Tool("fastokens", "bpeforge's tokenizer.json", "fastokens", "fastokens", ENCODE_MODES),
    "hf": Tool("HF tokenizers", "", "tokenizers", "tokenizers", ALL_MODES),
    "sentencepiece": Tool("SentencePiece", "own BPE model", "sentencepiece",
                          "sentencepiece", ALL_MODES),
    "gigatoken": Tool("gigatoken", "", "gigatoken", "gigatoken", ENCODE_MODES + ("decode/line", FILES)),
    "quicktok": Tool("quicktok", "", "quicktok", "quicktok-v1", ENCODE_MODES + ("decode/line",)),
    "kitoken": Tool("kitoken", "bpeforge's tokenizer.json", "kitoken", "kitoken",
                    ENCODE_MODES + ("decode/line",)),
    "tokie": Tool("tokie", "bpeforge's tokenizer.json", "tokie", "tokie",
                  ENCODE_MODES + ("decode/line", FILES)),
}

ADAPTERS: dict[str, Any] = {
    "bpeforge": BpeforgeAdapter,
    "bpeforge-numpy": BpeforgeNumpyAdapter,
    "tiktoken": TiktokenAdapter,
    "bpe-openai": BpeOpenAiAdapter,
    "fastokens": FastokensAdapter,
    "hf": HfAdapter,
    "sentencepiece": SentencePieceAdapter,
    "gigatoken": GigatokenAdapter,
    "quicktok": QuicktokAdapter,
    "kitoken": KitokenAdapter,
    "tokie": TokieAdapter,
}

#: Tools with a whole-file API (``encode/files``).
FILE_TOOLS = ("bpeforge", "gigatoken", "tokie")

#: Tools with no thread setting of their own: their children are pinned to as
#: many cores as the row's thread count (``os.sched_setaffinity``).
PINNED_TOOLS = ("kitoken", "tokie")

#: Tools whose ids must equal bpeforge's (the identical-ids check).
CHECKED_TOOLS = ("tiktoken", "bpe-openai", "fastokens", "hf", "gigatoken", "quicktok", "kitoken", "tokie")

#: Which setup step builds the model a tool loads.
MODEL_STEP = {"bpeforge": "bpeforge", "bpeforge-numpy": "bpeforge",
              "tiktoken": "tiktoken", "bpe-openai": "bpe-openai", "fastokens": "export",
              "hf": "hf", "sentencepiece": "sentencepiece", "gigatoken": "gigatoken",
              "quicktok": "quicktok", "kitoken": "export", "tokie": "export"}


# ==========================================================================
# Timed job (one child per repeat of a row)
# ==========================================================================


def _cpu_seconds() -> float:
    """User + system CPU time of this process so far (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(call: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``call`` once; return its result, wall seconds and CPU seconds."""
    cpu = _cpu_seconds()
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start, _cpu_seconds() - cpu


def _ids_for_decoding(adapter, lines: list[str], threads: int) -> list[list[int]]:
    """Id lists to decode, made by the tool's own batch encoder (untimed)."""
    if hasattr(adapter, "ids_lists"):
        return adapter.ids_lists(lines, threads)
    return [list(ids) for ids in adapter.encode_batch(lines, threads)]


def _encode_call(adapter, mode: str, lines: list[str], threads: int) -> Callable:
    """The timed encoding call of ``mode``."""
    if mode == "encode/line":
        encode = adapter.encode
        return lambda: [encode(line) for line in lines]
    return lambda: adapter.encode_batch(lines, threads)


def _decode_call(adapter, mode: str, ids_list: list[list[int]], threads: int) -> Callable:
    """The timed decoding call of ``mode``."""
    if mode == "decode/line":
        decode = adapter.decode
        return lambda: [decode(ids) for ids in ids_list]
    if mode == FLAT:
        return lambda: adapter.decode_flat(ids_list)
    return lambda: adapter.decode_batch(ids_list, threads)


#: Encoded once before any timed encoding call (with the first timed line):
#: a few scripts, so that a tool's one-time initialisation on its first call
#: (gigatoken's takes tenths of a second) is not timed. No corpus line.
WARMUP_LINES = ["Warm-up: one short line, outside every round.", "Ещё одна строка для разогрева.",
                "预热用的一行文字。", "سطر قصير للإحماء.", "ウォームアップ用の行です。", "1234 + 5678 = 6912"]


def _measure(adapter, mode: str, lines: list[str], threads: int) -> dict:
    """Warm up on a few lines of other text and the first line, then time
    ``mode`` over all lines once."""
    if mode.startswith("encode"):
        _encode_call(adapter, "encode/line", WARMUP_LINES, threads)()
    if mode == "encode/long":
        # One text: the lines joined by newlines. The warm-up encodes the
        # first line only, so no cache has seen the text before it is timed.
        _encode_call(adapter, "encode/line", lines[:1], threads)()
        text = ["\n".join(lines)]
        out, wall, cpu = _timed(_encode_call(adapter, "encode/line", text, threads))
        return {"wall_s": wall, "cpu_s": cpu, "bytes": utf8_bytes(text),
                "tokens": adapter.count(out)}
    if mode.startswith("encode"):
        _encode_call(adapter, mode, lines[:1], threads)()
        out, wall, cpu = _timed(_encode_call(adapter, mode, lines, threads))
        return {"wall_s": wall, "cpu_s": cpu, "bytes": utf8_bytes(lines),
                "tokens": adapter.count(out)}
    ids_list = _ids_for_decoding(adapter, lines, threads)
    if mode == FLAT:
        flat = adapter.flatten(ids_list) if hasattr(adapter, "flatten") else [i for ids in ids_list for i in ids]
        _decode_call(adapter, mode, flat[:10], threads)()
        # One call over the whole corpus takes milliseconds at GB/s: repeat it
        # for at least FLAT_MIN_SECONDS and keep the median call.
        call = _decode_call(adapter, mode, flat, threads)
        timings, spent = [], 0.0
        while len(timings) < 3 or spent < FLAT_MIN_SECONDS:
            out, wall, cpu = _timed(call)
            timings.append((wall, cpu))
            spent += wall
        wall, cpu = sorted(timings)[len(timings) // 2]
        expected = "".join(lines).encode("utf-8")
        return {"wall_s": wall, "cpu_s": cpu, "bytes": len(out), "tokens": len(flat),
                "roundtrip_mismatch": int(out != expected)}
    if isinstance(ids_list, tuple):
        _decode_call(adapter, mode, ids_list, threads)()
        texts, wall, cpu = _timed(_decode_call(adapter, mode, ids_list, threads))
        mismatched = sum(1 for t, line in zip(texts, lines) if t != line)
        return {"wall_s": wall, "cpu_s": cpu, "bytes": utf8_bytes(texts),
                "tokens": len(ids_list[0]), "roundtrip_mismatch": mismatched}
    _decode_call(adapter, mode, ids_list[:1], threads)()
    texts, wall, cpu = _timed(_decode_call(adapter, mode, ids_list, threads))
    mismatched = sum(1 for t, line in zip(texts, lines) if t != line)
    return {"wall_s": wall, "cpu_s": cpu, "bytes": utf8_bytes(texts),
            "tokens": count_tokens(ids_list), "roundtrip_mismatch": mismatched}


def _pin_cores(tool: str, threads: int) -> None:
    """Pin a tool with no thread setting to ``threads`` of the usable cores."""
    if tool in PINNED_TOOLS and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cores[:threads])


def files_worker_loop(adapter, models: Path, threads: int, out_dir: Path,
                      commands=None, out=None) -> None:
    """A tool's process in ``encode/files``: one untimed call on the warm-up
    file (text no timed file holds, so one-time initialisation is paid there
    and nothing the tool keeps helps a timed file), then for each command
    ``file I`` one timed call on file I (its ids are saved as
    ``ids-file-I.npy`` for the parent's comparison), ``again I`` one timed call
    on file I once more (the same text a second time in this process), and
    ``done``. Replies as in ``_fresh_rounds``; the wall and CPU seconds are
    the tool's file call only (converting its output to one flat id array for
    the comparison is not timed)."""
    import hashlib
    import numpy as np

    commands = sys.stdin if commands is None else commands
    out = sys.stdout if out is None else out
    plan = json.loads((models / FILES_PLAN).read_text(encoding="utf-8"))
    folder, scratch = models / FILES_DIR, out_dir / "out"
    scratch.mkdir(parents=True, exist_ok=True)

    def encode(name: str) -> tuple[dict, Any]:
        dst = scratch / (Path(name).stem + ".npy")
        result, wall, cpu = _timed(lambda: adapter.encode_file(folder / name, dst, threads))
        ids = adapter.file_ids(result, dst)
        del result
        for leftover in scratch.iterdir():
            leftover.unlink()
        return {"wall_s": wall, "cpu_s": cpu, "tokens": int(len(ids)),
                "digest": hashlib.sha1(ids.tobytes()).hexdigest()}, ids

    warm, _ = encode(plan["warmup"]["name"])
    F._reply({"status": "ready", "warmup_wall_s": warm["wall_s"], "warmup_cpu_s": warm["cpu_s"]}, out)
    for command in commands:
        words = command.split()
        if words[:1] in (["file"], ["again"]):
            i = int(words[1])
            info = plan["files"][i]
            run, ids = encode(info["name"])
            if words[0] == "file":
                np.save(out_dir / f"ids-file-{i}.npy", ids)
            F._reply({"status": "ok", "kind": words[0], "file": i, "bytes": info["text_bytes"], **run}, out)
        elif words[:1] == ["done"]:
            F._reply({"status": "done"}, out)
            return


def worker_main(args: argparse.Namespace) -> int:
    """Child: load one tool's model and the lines, time one job, write JSON."""
    result: dict = {"status": "ok"}
    _pin_cores(args.worker, args.threads[0])
    try:
        importlib.import_module(TOOLS[args.worker].module)
    except Exception as exc:  # ImportError, or a broken native extension
        result.update(status="missing", error=f"{type(exc).__name__}: {exc}")
    else:
        try:
            models = Path(args.workdir)
            adapter = ADAPTERS[args.worker].load(models)
            if args.mode == FRESH:
                lines = json.loads((models / FRESH_LINES_FILE).read_text(encoding="utf-8"))
                F.worker_loop(adapter.encode, lines, args.round_lines)
                return 0
            if args.mode == FILES:
                files_worker_loop(adapter, models, args.threads[0], Path(args.result).parent)
                return 0
            lines = json.loads((models / LINES_FILE).read_text(encoding="utf-8"))
            result.update(_measure(adapter, args.mode, lines, args.threads[0]))
        except Exception as exc:
            traceback.print_exc()
            result.update(status="error", error=f"{type(exc).__name__}: {exc}")
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")
    return 0


# ==========================================================================
# Parent: scheduling
# ==========================================================================


@dataclasses.dataclass
class Row:
    """The accumulated runs of one (mode, threads, tool) triple."""

    mode: str
    threads: int
    tool: str
    runs: list = dataclasses.field(default_factory=list)
    note: str = ""  # why the row has no (more) numbers, in words
    status: str = ""  # what stopped it ("missing", "error", "skipped", ...); "" while it runs
    extra: dict = dataclasses.field(default_factory=dict)  # encode/files: warm-up call, ids comparisons

    def stop(self, status: str, why: str) -> None:
        """No more runs of this row: ``status`` says what stopped it."""
        self.status, self.note = status, f"{status}: {why}"

    @property
    def ok_runs(self) -> list:
        return [r for r in self.runs if r.get("status") == "ok"]


def make_rows(tools: list[str], thread_counts: list[int], modes: tuple[str, ...] = ALL_MODES + (FLAT,)) -> list[Row]:
    """Every row of the table, grouped by mode and thread count."""
    rows = []
    for mode in ALL_MODES + (FLAT,):
        if mode not in modes:
            continue
        counts = [1] if mode.endswith(("/line", "/long")) or mode == FLAT else thread_counts
        for threads in counts:
            rows += [Row(mode, threads, t) for t in tools if mode in TOOLS[t].modes]
    return rows


def _child_env(threads: int) -> dict:
    """The parent's environment with the thread count for rayon pools."""
    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = str(threads)
    env["FASTOKENS_BPE_THREADS"] = str(threads)
    env["TOKENIZERS_PARALLELISM"] = "true"
    return env


def _script_argv(*extra: str) -> list[str]:
    """Command line that runs this script in a child."""
    return [sys.executable, "-u", str(Path(__file__).resolve()), *extra]


def _read_result(child: H.ChildResult, result_path: Path, timeout: float) -> dict:
    """The child's JSON result, or a failure record."""
    run = {"job_wall_s": child.wall_s, "job_maxrss_bytes": child.maxrss_bytes,
           "returncode": child.returncode}
    if child.timed_out:
        return {**run, "status": "timeout", "error": f"timeout after {timeout:g} s"}
    try:
        return {**run, **json.loads(result_path.read_text(encoding="utf-8"))}
    except (OSError, ValueError):
        last = child.stderr_tail.splitlines()[-1:]
        error = f"exit code {child.returncode}" + (f"; {last[0]}" if last else "")
        return {**run, "status": "crash", "error": error, "stderr": child.stderr_tail}


def run_setup(corpus: Path, models: Path, args) -> dict:
    """Build all models and run the identical-ids check in one child."""
    result_path = models / SETUP_RESULT
    argv = _script_argv("--setup", "--corpus", str(corpus), "--vocab-size",
                        str(args.vocab_size), "--workdir", str(models),
                        "--result", str(result_path))
    argv += ["--lines", str(args.lines)] if args.lines else []
    argv += ["--vocab", args.vocab, "--check-lines", str(args.check_lines)]
    argv += ["--modes", ",".join(args.modes), "--rounds", str(args.rounds),
             "--round-lines", str(args.round_lines)]
    argv += ["--train-lines", str(args.train_lines)] if args.train_lines else []
    argv += ["--lang", args.lang, "--tools", ",".join(args.tools), "--file-mb", str(args.file_mb),
             "--file-rounds", str(args.file_rounds), "--warmup-mb", str(args.warmup_mb)]
    argv += ["--langs", args.langs] if args.langs else []
    child = H.run_child(argv, _child_env(max(args.threads)), args.timeout,
                        models.parent / "setup-logs")
    return _read_result(child, result_path, args.timeout)


def run_job(row: Row, repeat: int, models: Path, args, tmp: Path) -> dict:
    """Run one repeat of one row in a fresh child and record it."""
    workdir = tmp / "jobs" / f"{row.mode.replace('/', '-')}-t{row.threads}-{row.tool}-r{repeat}"
    result_path = workdir / "result.json"
    argv = _script_argv("--worker", row.tool, "--mode", row.mode,
                        "--threads", str(row.threads), "--workdir", str(models),
                        "--result", str(result_path))
    load_before = os.getloadavg()[0]
    child = H.run_child(argv, _child_env(row.threads), args.timeout, workdir)
    run = _read_result(child, result_path, args.timeout)
    run.update(repeat=repeat, loadavg_1min_before=load_before)
    row.runs.append(run)
    if run["status"] != "ok":
        row.stop(run["status"], run.get("error", ""))
    return run


def _log_run(row: Row, run: dict, done: int, total: int) -> None:
    """One progress line on stderr."""
    head = f"[{done}/{total}] {row.mode} threads={row.threads} {row.tool} r{run['repeat']}"
    if run["status"] == "ok":
        text = f"{run['bytes'] / run['wall_s'] / 1e6:.2f} MB/s ({run['wall_s']:.2f} s)"
    else:
        text = row.note
    print(f"{head}: {text}", file=sys.stderr, flush=True)


def run_all(rows: list[Row], models: Path, args, tmp: Path) -> None:
    """Run every repeat of every row, round-robin in alternating order
    (forward, then backward), skipping failed rows."""
    total = args.repeats * len(rows)
    done = 0
    for repeat in range(1, args.repeats + 1):
        for row in F.round_order(rows, repeat - 1):
            done += 1
            if row.status:
                continue
            _log_run(row, run_job(row, repeat, models, args, tmp), done, total)


def _ask_fresh(proc: subprocess.Popen, command: str | None, timeout: float) -> dict:
    """Send ``command`` (if any) to a fresh worker; its reply, or a timeout."""
    if command is not None:
        try:
            proc.stdin.write(command + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return {"status": "crash", "error": "worker ended"}
    box: list = []
    reader = threading.Thread(target=lambda: box.append(F.read_reply(proc.stdout)), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else {"status": "timeout", "error": f"no reply in {timeout:g} s"}


def _fresh_failure(row: Row, reply: dict, result_path: Path, log: Path) -> None:
    """Stop ``row`` with what its worker said (result file, else stderr)."""
    try:
        result = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result = {}
    if result.get("status") in ("missing", "error"):
        row.stop(result["status"], result.get("error", ""))
        return
    tail = H._tail(log)
    row.stop(reply.get("status", "error"), reply.get("error", "") + (f"; {tail.splitlines()[-1]}" if tail else ""))


def run_fresh(rows: list[Row], models: Path, args, tmp: Path) -> dict[str, dict]:
    """The fresh-text protocol (``_fresh_rounds``): one long-lived process per
    tool, ``--rounds`` rounds in alternating tool order; each round's run is
    appended to its row. Returns each tool's memory report."""
    procs: dict[str, tuple[subprocess.Popen, Path, Path]] = {}
    memory: dict[str, dict] = {}
    try:
        for row in rows:
            if row.status:
                continue
            workdir = tmp / "jobs" / f"fresh-{row.tool}"
            workdir.mkdir(parents=True, exist_ok=True)
            result_path, log = workdir / "result.json", workdir / "stderr.txt"
            argv = _script_argv("--worker", row.tool, "--mode", FRESH, "--threads", "1",
                                "--workdir", str(models), "--result", str(result_path),
                                "--round-lines", str(args.round_lines))
            proc = subprocess.Popen(argv, env=_child_env(1), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=open(log, "wb"),
                                    text=True, start_new_session=True)
            procs[row.tool] = (proc, result_path, log)
        by_tool = {row.tool: row for row in rows}
        for tool, (proc, result_path, log) in procs.items():
            reply = _ask_fresh(proc, None, FRESH_REPLY_TIMEOUT)
            if reply["status"] != "ready":
                _fresh_failure(by_tool[tool], reply, result_path, log)
            else:
                memory[tool] = {"baseline_rss_kib": reply["baseline_rss_kib"]}
        for r in range(args.rounds):
            for tool in F.round_order(list(procs), r):
                row = by_tool[tool]
                if row.status:
                    continue
                proc, result_path, log = procs[tool]
                load_before = os.getloadavg()[0]
                reply = _ask_fresh(proc, f"round {r}", FRESH_REPLY_TIMEOUT)
                if reply["status"] != "ok":
                    _fresh_failure(row, reply, result_path, log)
                    continue
                reply.update(repeat=r + 1, loadavg_1min_before=load_before)
                row.runs.append(reply)
                print(f"[fresh round {r + 1}/{args.rounds}] {tool}: "
                      f"{reply['bytes'] / reply['wall_s'] / 1e6:.2f} MB/s", file=sys.stderr, flush=True)
        for tool, (proc, result_path, log) in procs.items():
            if not by_tool[tool].status:
                reply = _ask_fresh(proc, "done", FRESH_REPLY_TIMEOUT)
                if reply["status"] == "done":
                    memory[tool].update(reply)
    finally:
        for proc, _, _ in procs.values():
            if proc.poll() is None:
                H._kill_group(proc.pid)
            proc.wait()
    return memory


def _compare_ids(reference: Path, path: Path) -> dict:
    """One file's flat ids against bpeforge's: equal, or where they part
    (``positions_differ`` counts positions, so one token more or less early in
    a file makes every later position differ: the first difference and the
    token counts are the figures to read)."""
    import numpy as np

    a, b = np.load(reference), np.load(path)
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    first = int(differ[0]) if len(differ) else (n if len(a) != len(b) else None)
    return {"same": first is None, "first_difference": first, "bpeforge_tokens": int(len(a)),
            "tokens": int(len(b)), "positions_differ": int(len(differ)) + abs(len(a) - len(b))}


def run_files(rows: list[Row], models: Path, args, tmp: Path) -> None:
    """encode/files: per thread count, one long-lived process per tool
    (``files_worker_loop``), warmed up on a file of other text; then
    ``--file-rounds`` rounds, each on a file no process has seen, the tools in
    alternating order; each file's ids compared with bpeforge's; then
    ``--again-rounds`` rounds on the last file once more (``again`` runs, a
    column of their own). Every run is appended to its row."""
    if all(row.status for row in rows):
        return
    plan = json.loads((models / FILES_PLAN).read_text(encoding="utf-8"))
    last = len(plan["files"]) - 1
    for threads in sorted({row.threads for row in rows}):
        group = {row.tool: row for row in rows if row.threads == threads and not row.status}
        procs: dict[str, tuple[subprocess.Popen, Path, Path]] = {}
        try:
            for tool, row in group.items():
                workdir = tmp / "jobs" / f"files-t{threads}-{tool}"
                workdir.mkdir(parents=True, exist_ok=True)
                result_path, log = workdir / "result.json", workdir / "stderr.txt"
                argv = _script_argv("--worker", tool, "--mode", FILES, "--threads", str(threads),
                                    "--workdir", str(models), "--result", str(result_path))
                procs[tool] = (subprocess.Popen(argv, env=_child_env(threads), stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=open(log, "wb"),
                                                text=True, start_new_session=True), result_path, log)
                # Load and warm up one tool at a time: no two heavy jobs at once.
                reply = _ask_fresh(procs[tool][0], None, FRESH_REPLY_TIMEOUT)
                if reply["status"] != "ready":
                    _fresh_failure(row, reply, result_path, log)
                else:
                    row.extra["warmup"] = reply
            live = [tool for tool in procs if not group[tool].status]
            ref_dir = procs["bpeforge"][1].parent if "bpeforge" in live else None

            def one_round(command: str, index: int, order_index: int) -> None:
                for tool in F.round_order(live, order_index):
                    row = group[tool]
                    if row.status:
                        continue
                    proc, result_path, log = procs[tool]
                    load_before = os.getloadavg()[0]
                    reply = _ask_fresh(proc, f"{command} {index}", FRESH_REPLY_TIMEOUT)
                    if reply["status"] != "ok":
                        _fresh_failure(row, reply, result_path, log)
                        continue
                    reply.update(loadavg_1min_before=load_before)
                    row.runs.append(reply)
                    print(f"[files t={threads} {command} {index}] {tool}: "
                          f"{reply['bytes'] / reply['wall_s'] / 1e6:.2f} MB/s wall, "
                          f"{reply['bytes'] / max(reply['cpu_s'], 1e-9) / 1e6:.2f} MB/s CPU",
                          file=sys.stderr, flush=True)

            for r in range(len(plan["files"])):
                one_round("file", r, r)
                ref = ref_dir / f"ids-file-{r}.npy" if ref_dir else None
                for tool in live:
                    path = procs[tool][1].parent / f"ids-file-{r}.npy"
                    if tool != "bpeforge" and path.exists():
                        group[tool].extra.setdefault("ids", []).append(
                            {"file": r, **_compare_ids(ref, path)} if ref and ref.exists()
                            else {"file": r, "same": None})
                        path.unlink()
                if ref and ref.exists():
                    ref.unlink()
            for a in range(args.again_rounds):
                one_round("again", last, a)
            for tool in live:
                if not group[tool].status:
                    _ask_fresh(procs[tool][0], "done", FRESH_REPLY_TIMEOUT)
        finally:
            for proc, _, _ in procs.values():
                if proc.poll() is None:
                    H._kill_group(proc.pid)
                proc.wait()


def _spread(values: list[float]) -> dict:
    """Median, min and max of ``values`` (empty: nothing)."""
    return {"median": H.median(values), "min": min(values), "max": max(values)} if values else {}


def summarize_files(rows: list[Row]) -> list[dict]:
    """Each encode/files row: fresh files and the same file again, each by
    wall and by CPU time (median, min, max), the warm-up call, the ids."""
    ref = {row.threads: row for row in rows if row.tool == "bpeforge"}
    out = []
    for row in rows:
        s: dict = {"mode": FILES, "threads": row.threads, "tool": row.tool,
                   "status": row.status or "ok", "note": row.note}
        for kind in ("file", "again"):
            runs = [run for run in row.ok_runs if run.get("kind") == kind]
            s[kind] = {"runs": len(runs),
                       "wall": _spread([run["bytes"] / run["wall_s"] / 1e6 for run in runs]),
                       "cpu": _spread([run["bytes"] / run["cpu_s"] / 1e6 for run in runs if run["cpu_s"] > 0]),
                       "cores": _spread([run["cpu_s"] / run["wall_s"] for run in runs if run["wall_s"] > 0])}
        fresh = [run for run in row.ok_runs if run.get("kind") == "file"]
        if fresh:
            s["bytes"] = sum(run["bytes"] for run in fresh)
            s["bytes_per_token"] = s["bytes"] / max(1, sum(run["tokens"] for run in fresh))
        if "warmup" in row.extra:
            s["warmup_s"] = row.extra["warmup"]["warmup_wall_s"]
        ids = row.extra.get("ids", [])
        if row.tool == "bpeforge":
            s["ids"] = "reference"
        elif ids and all(item["same"] is not None for item in ids):
            bad = [item for item in ids if not item["same"]]
            s["ids_differ"] = len(bad)
            s["ids"] = (f"same on {len(ids)} files" if not bad else
                        f"DIFFER on {len(bad)} of {len(ids)} files (first at token "
                        f"{bad[0]['first_difference']:,} of file {bad[0]['file'] + 1}; "
                        f"{sum(item.get('tokens', 0) for item in bad):,} tokens against bpeforge's "
                        f"{sum(item.get('bpeforge_tokens', 0) for item in bad):,} on those files)")
        else:
            s["ids"] = "not compared"
        # The again runs must give the ids of the same file's fresh run.
        digests = {run["file"]: run["digest"] for run in fresh}
        again_bad = [run for run in row.ok_runs if run.get("kind") == "again"
                     and digests.get(run["file"], run["digest"]) != run["digest"]]
        if again_bad:
            s["note"] = s["note"] or f"ids of the same file again differ from its first time ({len(again_bad)} runs)"
        cores = s["file"]["cores"].get("median", 0.0)
        if cores > CORES_NOTED * row.threads:
            s["note"] = s["note"] or f"used {cores:.1f} cores (CPU s / wall s) with {row.threads} thread(s) asked"
        out.append(s)
    return out


def _cell(spread: dict) -> str:
    """``median (min–max)`` in MB/s, or a dash."""
    if not spread:
        return "–"
    return f"{spread['median']:.1f} ({spread['min']:.1f}–{spread['max']:.1f})"


def build_files_table(summaries: list[dict], versions: dict, plan: dict, args, markdown: bool) -> str:
    """The encode/files table: fresh files and the same file again, as
    separate columns, by wall and by CPU time."""
    files = plan["files"]
    sizes = sorted(f["text_bytes"] for f in files)
    title = (f"{FILES}: one call per file, a whole file to ids; warm-up call on a "
             f"{plan['warmup']['text_bytes'] / 1e6:.2f} MB file of other text (not timed); then "
             f"{len(files)} different files of {sizes[0] / 1e6:.1f}–{sizes[-1] / 1e6:.1f} MB, "
             f"fresh text, in one process per tool, tools in alternating order: median (min–max) MB/s; "
             f"'same file again' = the last file encoded {args.again_rounds} more times in that process "
             f"(what a tool keeps across calls: never part of the fresh figure); CPU-time MB/s = bytes "
             f"over the process's CPU seconds (steadier on a shared machine)")
    rows = []
    for s in summaries:
        cells = [str(s["threads"]), _tool_title(s["tool"], versions),
                 _cell(s["file"]["wall"]), _cell(s["file"]["cpu"]),
                 _cell(s["again"]["wall"]), _cell(s["again"]["cpu"]),
                 _fmt(s.get("warmup_s"), ".2f"), _fmt(s.get("bytes_per_token"), ".3f"),
                 s.get("ids", ""), _shorten(s["note"]) if s["note"] else ""]
        rows.append(cells)
    table = H.format_table(["threads", "tool", "fresh files MB/s", "fresh, CPU-time MB/s",
                            "same file again MB/s", "again, CPU-time MB/s", "warm-up call s",
                            "bytes/token", "ids vs bpeforge", "note"], rows, markdown=markdown,
                           right=[True, False, True, True, True, True, True, True, False, False])
    return f"{title}\n{table}"


def summarize_fresh(rows: list[Row], memory: dict[str, dict]) -> list[dict]:
    """Each tool's fresh-round figures (``_fresh_rounds.summarize_rounds``),
    its cache memory (RSS growth over the run) and bytes per token; a tool
    whose token count differs from bpeforge's in some round says so."""
    ref = next((r for r in rows if r.tool == "bpeforge"), None)
    ref_tokens = {run["round"]: run["tokens"] for run in ref.runs} if ref else {}
    out = []
    for row in rows:
        runs = row.ok_runs
        s = {"tool": row.tool, "status": row.status or "ok", "note": row.note,
             **F.summarize_rounds([run["bytes"] / run["wall_s"] / 1e6 for run in runs])}
        cpu = F.summarize_rounds([run["bytes"] / run["cpu_s"] / 1e6 for run in runs if run["cpu_s"] > 0])
        s.update({f"cpu_{k}": v for k, v in cpu.items() if k in ("median", "min", "max")})
        mem = memory.get(row.tool, {})
        if "rss_growth_kib" in mem:
            s["cache_mib"] = mem["rss_growth_kib"] / 1024
            s["rss_mib"] = mem["rss_kib"] / 1024
            s["peak_mib"] = mem["hwm_kib"] / 1024
        if runs:
            s["bytes_per_token"] = sum(r["bytes"] for r in runs) / max(1, sum(r["tokens"] for r in runs))
            differ = [run["round"] + 1 for run in runs
                      if ref_tokens.get(run["round"], run["tokens"]) != run["tokens"]]
            if differ:
                s["note"] = s["note"] or f"token count differs from bpeforge's in round(s) {differ}"
        out.append(s)
    return out


def build_fresh_table(summaries: list[dict], versions: dict, args, markdown: bool) -> str:
    """The fresh-text table: per tool, cold round, median (min-max) of the
    other rounds, ratio to bpeforge, cache memory; then the targets."""
    ref = next((s for s in summaries if s["tool"] == "bpeforge"), {})
    rows = []
    for s in summaries:
        ratio = (f"{ref['median'] / s['median']:.2f}×" if "median" in s and "median" in ref else "–")
        spread = (f"{s['min']:.2f}–{s['max']:.2f}" if "median" in s else "–")
        cpu = (f"{s['cpu_median']:.1f} ({s['cpu_min']:.1f}–{s['cpu_max']:.1f})" if "cpu_median" in s else "–")
        cells = [_tool_title(s["tool"], versions), _fmt(s.get("cold"), ".2f"),
                 _fmt(s.get("median"), ".2f"), spread, ratio, cpu,
                 _fmt(s.get("cache_mib"), ".1f"), _fmt(s.get("peak_mib"), ".0f"),
                 _fmt(s.get("bytes_per_token"), ".3f"),
                 _shorten(s["note"]) if s["note"] else ""]
        rows.append(cells)
    title = (f"{FRESH}: {args.rounds} rounds of {args.round_lines:,} fresh lines each, one call per "
             f"line, 1 thread; cold = round 1; median (min–max) over rounds 2..{args.rounds}; "
             f"cache MiB = RSS growth of the tool's own process over the rounds (from after loading "
             f"and one warm-up call); peak MiB = its process's peak RSS (model and lines included); "
             f"CPU-time MB/s = bytes over the process's CPU seconds, median (min–max) of the same "
             f"rounds (steadier where the host takes the CPU away)")
    table = H.format_table(["tool", "cold MB/s", "median MB/s", "min–max", "× bpeforge",
                            "CPU-time MB/s (min–max)", "cache MiB", "peak MiB", "bytes/token", "note"],
                           rows, markdown=markdown,
                           right=[False, True, True, True, True, True, True, True, True, False])
    peers = {s["tool"]: s["median"] for s in summaries if s["tool"] in FRESH_PEERS and "median" in s}
    target_rows = []
    for name, need in FRESH_TARGETS:
        if name == "tiktoken":
            base, who = peers.get("tiktoken"), "tiktoken"
        else:
            who = max(peers, key=peers.get) if peers else None
            base = peers.get(who)
        value = ref["median"] / base if base and "median" in ref else None
        target_rows.append([f"median / {name}" + (f" ({who})" if who and name != "tiktoken" else ""),
                            _fmt(value, ".2f") + ("×" if value else ""), f">= {need:.2f}×",
                            "not measured" if value is None else ("pass" if value >= need else
                                                                   f"MISS by {(need / value - 1) * 100:.0f}%")])
    targets = H.format_table(["target (bpeforge, fresh text)", "measured", "required", "result"],
                             target_rows, markdown=markdown, right=[False, True, True, False])
    return f"{title}\n{table}\n\n{targets}"


def mark_unbuilt(rows: list[Row], setup: dict) -> None:
    """Give rows whose model could not be built a note instead of jobs."""
    steps = setup.get("steps", {})
    for row in rows:
        step = steps.get(MODEL_STEP[row.tool])
        if setup.get("status") != "ok":
            row.stop("setup failed", setup.get("error", ""))
        elif step is None:
            row.stop("skipped", "no model of this vocabulary (or bpeforge failed)")
        elif step["status"] == "skipped":
            row.stop("skipped", step.get("error", ""))
        elif step["status"] != "ok":
            row.stop("model build failed", step.get("error", ""))


# ==========================================================================
# Parent: report
# ==========================================================================


# A row that used more cores than this per thread asked for is noted.
CORES_NOTED = 1.3


def summarize(row: Row) -> dict:
    """Median figures of a row's successful runs."""
    ok = row.ok_runs
    out: dict = {"mode": row.mode, "threads": row.threads, "tool": row.tool,
                 "note": row.note, "status": row.status or "ok", "repeats_ok": len(ok)}
    if not ok:
        return out
    out["mb_s"] = H.median([r["bytes"] / r["wall_s"] / 1e6 for r in ok])
    out["wall"] = _spread([r["bytes"] / r["wall_s"] / 1e6 for r in ok])
    out["cpu"] = _spread([r["bytes"] / r["cpu_s"] / 1e6 for r in ok if r["cpu_s"] > 0])
    out["cpu_s"] = H.median([r["cpu_s"] for r in ok])
    out["tokens"] = ok[0]["tokens"]
    out["bytes"] = ok[0]["bytes"]
    if row.mode.startswith("encode") and out["tokens"]:
        out["bytes_per_token"] = out["bytes"] / out["tokens"]
    cores = H.median([r["cpu_s"] / r["wall_s"] for r in ok if r["wall_s"] > 0] or [0.0])
    if cores > CORES_NOTED * row.threads:
        out["note"] = out["note"] or f"used {cores:.1f} cores (CPU s / wall s) with {row.threads} thread(s) asked"
    mismatch = ok[0].get("roundtrip_mismatch")
    if mismatch:
        out["note"] = out["note"] or f"decoded text differs from the input on {mismatch:,} lines"
    return out


def _ratio(summary: dict, reference: dict | None) -> str:
    """Row time over bpeforge time (= bpeforge MB/s over row MB/s)."""
    if not reference or "mb_s" not in reference or "mb_s" not in summary:
        return "–"
    return f"{reference['mb_s'] / summary['mb_s']:.2f}×"


def _tool_title(key: str, versions: dict) -> str:
    """Table name of a tool: name, version and label."""
    tool = TOOLS[key]
    title = f"{tool.name} {versions.get(tool.dist) or ''}".strip()
    return f"{title} ({tool.label})" if tool.label else title


def _short_title(key: str, versions: dict) -> str:
    """A tool's name and version (and the label of bpeforge's variants only)."""
    tool = TOOLS[key]
    title = f"{tool.name} {versions.get(tool.dist) or ''}".strip()
    return f"{title} ({tool.label})" if tool.label and key.startswith("bpeforge") else title


def _shorten(text: str, limit: int = 90) -> str:
    """One line of at most ``limit`` characters (full text is in the JSON)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _fmt(value: float | None, spec: str) -> str:
    """Format a number, or a dash when it is missing."""
    return "–" if value is None else format(value, spec)


def build_table(summaries: list[dict], versions: dict, markdown: bool) -> str:
    """The side-by-side table (plain text or Markdown)."""
    refs = {(s["mode"], s["threads"]): s for s in summaries if s["tool"] == "bpeforge"}
    headers = ["mode", "threads", "tool", "MB/s", "× bpeforge", "bytes/token"]
    with_notes = any(s["note"] for s in summaries)
    headers += ["note"] if with_notes else []
    rows = []
    for s in summaries:
        cells = [s["mode"], str(s["threads"]), _tool_title(s["tool"], versions),
                 _fmt(s.get("mb_s"), ".2f"), _ratio(s, refs.get((s["mode"], s["threads"]))),
                 _fmt(s.get("bytes_per_token"), ".3f")]
        cells += [_shorten(s["note"])] if with_notes else []
        rows.append(cells)
    right = [False, True, False, True, True, True] + ([False] if with_notes else [])
    return H.format_table(headers, rows, markdown=markdown, right=right)


#: Row labels of the side-by-side tables, in order.
SIDE_MODES = {"encode/line": "per call", "encode/long": "one long text", "encode/batch": "list batch",
              "decode/line": "decode per call", "decode/batch": "decode batch", FLAT: "decode flat",
              (FILES, "file"): "whole file, fresh files", (FILES, "again"): "whole file, same file again"}


def side_by_side_entries(summaries: list[dict], file_summaries: list[dict], setup: dict) -> list[dict]:
    """One entry per (mode, threads, tool) with its wall and CPU spread and
    whether its ids differ from bpeforge's (the line check, or the files')."""
    check = setup.get("steps", {}).get("check", {})
    line_differ = {key: item["differing_lines"] for key in CHECKED_TOOLS
                   if isinstance(item := check.get(key), dict) and "differing_lines" in item}
    entries = []
    for s in summaries:
        if s["mode"].startswith("decode"):
            continue
        entries.append({"mode": s["mode"], "threads": s["threads"], "tool": s["tool"],
                        "wall": s.get("wall", {}), "cpu": s.get("cpu", {}),
                        "differ": line_differ.get(s["tool"], 0), "status": s["status"]})
    for s in file_summaries:
        for kind in ("file", "again"):
            entries.append({"mode": (FILES, kind), "threads": s["threads"], "tool": s["tool"],
                            "wall": s[kind]["wall"], "cpu": s[kind]["cpu"],
                            "differ": s.get("ids_differ", 0), "status": s["status"]})
    return entries


def _best(entries: list[dict], clock: str, ours: bool) -> tuple[float, str] | None:
    """The highest median among bpeforge's variants (``ours``) or the peers."""
    cands = [(e[clock]["median"], e["tool"]) for e in entries
             if e[clock] and e["tool"].startswith("bpeforge") == ours]
    return max(cands) if cands else None


def build_side_by_side(groups: list[tuple[list[str], list[dict]]], key_headers: list[str],
                       versions: dict, clock: str, markdown: bool) -> str:
    """All tools side by side: one line per (key..., mode, threads), each tool's
    median (min–max) MB/s by ``clock`` (``wall`` or ``cpu``), then bpeforge's
    best over the best peer's. ``groups`` pairs the key cells (vocabulary,
    text) with their entries. A tool whose ids differ from bpeforge's is
    marked ``*`` and a dash says "not measured" (unsupported, failed, absent)."""
    order = list(TOOLS)
    tools = sorted(dict.fromkeys(e["tool"] for _, entries in groups for e in entries), key=order.index)
    rows = []
    for keys, entries in groups:
        modes = list(dict.fromkeys((e["mode"], e["threads"]) for e in entries))
        for mode, threads in modes:
            here = [e for e in entries if (e["mode"], e["threads"]) == (mode, threads)]
            by_tool = {e["tool"]: e for e in here}
            cells = list(keys) + [SIDE_MODES.get(mode, str(mode)), str(threads)]
            for tool in tools:
                e = by_tool.get(tool)
                cells.append("–" if e is None or not e[clock] else
                             _cell(e[clock]) + ("*" if e["differ"] else ""))
            ours, peer = _best(here, clock, True), _best(here, clock, False)
            cells.append(f"{ours[0] / peer[0]:.2f}× ({TOOLS[peer[1]].name})" if ours and peer else "–")
            rows.append(cells)
    headers = key_headers + ["mode", "threads"] + [_short_title(t, versions) for t in tools] + \
        ["bpeforge ÷ best peer"]
    n = len(key_headers) + 2
    return H.format_table(headers, rows, markdown=markdown,
                          right=[False] * (n - 1) + [True] * (len(tools) + 2))


def side_by_side_title(clock: str, repeats: int) -> str:
    """What the cells of a side-by-side table are."""
    what = "wall-clock" if clock == "wall" else "CPU-time (bytes over the process's CPU seconds)"
    return (f"All tools side by side, {what} MB/s: median (min–max) over the alternating rounds "
            f"({repeats} fresh processes per row for the per-call and batch modes; the fresh files, or the "
            f"repeats of one file, for whole files); * = ids differ from bpeforge's on some lines or files; "
            f"– = not measured (no such API, unsupported vocabulary, failed or not installed); "
            f"bpeforge ÷ best peer = the better of bpeforge's rows over the fastest peer's median")


# The peers of the per-call target "fastest of bpe-openai, fastokens".
PER_CALL_PEERS = ("bpe-openai", "fastokens")


def _unmeasured_peers(summaries: list[dict], setup: dict) -> list[str]:
    """The per-call peers the fastest-peer target lacks, each with why (not
    run, missing, failed). A peer skipped by design (bpe-openai on a
    vocabulary it cannot load) is not lacking."""
    steps = setup.get("steps", {})
    rows = {s["tool"]: s for s in summaries if (s["mode"], s["threads"]) == ("encode/line", 1)}
    lacking = []
    for tool in PER_CALL_PEERS:
        row = rows.get(tool)
        if steps.get(MODEL_STEP[tool], {}).get("status") == "skipped":
            continue
        if row is None:
            lacking.append(f"{tool} not run")
        elif "mb_s" not in row:
            lacking.append(f"{tool} {row.get('status') or 'failed'}")
    return lacking


def _target_rows(summaries: list[dict], setup: dict) -> list[list[str]]:
    """The encoding targets: measured ratio, required ratio, pass/miss
    (or "not measured", with why where a peer is lacking)."""
    mb = {(s["mode"], s["threads"], s["tool"]): s.get("mb_s") for s in summaries}

    def ratio(num: float | None, den: float | None) -> float | None:
        return num / den if num and den else None

    line = mb.get(("encode/line", 1, "bpeforge"))
    tiktoken_line = mb.get(("encode/line", 1, "tiktoken"))
    lacking = _unmeasured_peers(summaries, setup)
    peers = [v for t in PER_CALL_PEERS if (v := mb.get(("encode/line", 1, t)))]
    fastest_peer = max(peers) if peers and not lacking else None
    batch1, batch2 = mb.get(("encode/batch", 1, "bpeforge")), mb.get(("encode/batch", 2, "bpeforge"))
    unmeasured = "not measured"
    # (name, measured ratio or None, required ratio, what to say without a ratio)
    targets = [
        ("per call / tiktoken per call", ratio(line, tiktoken_line), 2.0, unmeasured),
        ("per call / fastest of bpe-openai, fastokens", ratio(line, fastest_peer), 1.2,
         f"{unmeasured}: {', '.join(lacking)}" if lacking else unmeasured),
        ("per call / HF tokenizers per call", ratio(line, mb.get(("encode/line", 1, "hf"))), 8.0, unmeasured),
        ("one long text / tiktoken's", ratio(mb.get(("encode/long", 1, "bpeforge")),
                                            mb.get(("encode/long", 1, "tiktoken"))), 2.0, unmeasured),
        ("batch, 1 thread / tiktoken per call", ratio(batch1, tiktoken_line), 2.5, unmeasured),
        ("batch, 2 threads / batch, 1 thread", ratio(batch2, batch1), 1.85, unmeasured),
    ]
    rows = [[name, _fmt(value, ".2f") + ("×" if value is not None else ""), f">= {need:.2f}×",
             why_not if value is None else ("pass" if value >= need else "MISS")]
            for name, value, need, why_not in targets]
    check = setup.get("steps", {}).get("check", {})
    differing = [item["differing_lines"] for key in CHECKED_TOOLS
                 if isinstance(item := check.get(key), dict) and "differing_lines" in item]
    rows.append(["same ids as every other tool (check)", f"{sum(differing):,} lines differ",
                 "0", unmeasured if not differing else ("pass" if sum(differing) == 0 else "MISS")])
    return rows


def build_targets(summaries: list[dict], setup: dict, markdown: bool) -> str:
    """The targets table (bpeforge's encoding)."""
    return H.format_table(["target (bpeforge)", "measured", "required", "result"],
                          _target_rows(summaries, setup), markdown=markdown,
                          right=[False, True, True, False])


def describe_check(setup: dict) -> str:
    """Text block: the identical-ids check, one line per tool."""
    check = setup.get("steps", {}).get("check")
    if not check:
        return "identical-ids check: not run (bpeforge model missing)"
    if check["status"] != "ok":
        return f"identical-ids check: failed: {check.get('error', '')}"
    out = [f"identical-ids check on the first {check['lines']:,} lines "
           f"(bpeforge: {check['bpeforge_tokens']:,} tokens):"]
    for key in CHECKED_TOOLS:
        item = check.get(key)
        if item is None:
            continue
        if "error" in item:
            out.append(f"  {TOOLS[key].name}: failed: {item['error']}")
            continue
        out.append(f"  {TOOLS[key].name}: {item['differing_lines']:,} lines differ "
                   f"from bpeforge ({item['tokens']:,} tokens)")
        for ex in item["examples"]:
            out.append(f"    line {ex['line']}: first difference at token {ex['at_token']} "
                       f"({ex['bpeforge_tokens']} vs {ex['tool_tokens']} tokens): "
                       f"{ex['text'][:60]!r}")
    return "\n".join(out)


def _describe_step(name: str, step: dict) -> str:
    """``name: ok (1.2 s)`` or ``name: error: ...`` for one setup step."""
    if step["status"] != "ok":
        return f"{name}: {step['status']}: {step.get('error', '')}"
    if "import_s" in step:
        return f"{name}: ok (imported in {step['import_s']:.1f} s)"
    return f"{name}: ok" + (f" (trained in {step['train_s']:.1f} s)" if "train_s" in step else "")


def describe_setup(machine: dict, versions: dict, corpus: dict, setup: dict, args) -> str:
    """Text block: machine, tool versions, corpus, models and settings."""
    mem = f", {machine['memory_gib']} GiB" if machine["memory_gib"] else ""
    load = ", ".join(f"{x:.2f}" for x in machine["loadavg"])
    tools = ", ".join(f"{name} {v or 'not installed'}" for name, v in versions.items())
    steps = setup.get("steps", {})
    trained = "; ".join(_describe_step(name, step) for name, step in steps.items()
                        if name != "check")
    return "\n".join([
        f"machine: {machine['nproc']} usable cores ({machine['cpu_count']} online), "
        f"{machine['cpu_model']}{mem}; load average {load}",
        f"python {machine['python']} on {machine['platform']}",
        f"versions: {tools}",
        f"corpus: {corpus['path']}: {corpus['lines']:,} lines, "
        f"{corpus['text_bytes']:,} UTF-8 bytes (without line ends)",
        f"timed input: {setup.get('lines', 0):,} lines, "
        f"{setup.get('text_bytes', 0):,} UTF-8 bytes; text: {text_label(args.lang)}, "
        f"from corpus line {setup.get('first_line', 0):,} on"
        + (" (after the training lines)" if setup.get("first_line") else "")
        + (f"; {FILES}: warm-up file {setup['files']['warmup']['text_bytes']:,} bytes, "
           f"{len(setup['files']['files'])} timed files of "
           + ", ".join(f"{f['text_bytes']:,}" for f in setup["files"]["files"]) + " bytes"
           if setup.get("files") else ""),
        f"models (setup, not timed): {trained or 'none'}"
        + (f"\nsetup failed: {setup.get('error', '')}\n{setup.get('stderr', '')}"
           if setup.get("status") != "ok" else ""),
        f"settings: vocab={args.vocab}, vocab_size={args.vocab_size}, repeats={args.repeats}, "
        f"threads={args.threads}, timeout={args.timeout:g} s"
        + (f"; {FRESH}: rounds={args.rounds}, round_lines={args.round_lines:,}, first round at line "
           f"{args.train_lines or 0:,} (after the training lines)" if FRESH in args.modes else ""),
    ])


# ==========================================================================
# Command line
# ==========================================================================


def _int_list(text: str) -> list[int]:
    """Parse ``"1,2"`` into ``[1, 2]``."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("thread counts must be >= 1")
    return list(dict.fromkeys(values))


def _mode_list(text: str) -> list[str]:
    """Parse and validate a comma-separated list of modes."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    known = ALL_MODES + (FLAT, FRESH, FILES)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown mode(s) {unknown}; choose from {', '.join(known)}")
    return list(dict.fromkeys(names))


def _vocab_list(text: str) -> list[str]:
    """Parse and validate a comma-separated list of vocabularies."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    known = ("trained",) + REAL_VOCABS
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown vocabularies {unknown}; choose from {', '.join(known)}")
    return list(dict.fromkeys(names))


def _lang_list(text: str) -> list[str]:
    """Parse a comma-separated list of language codes (``all``: every line)."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no language given")
    return list(dict.fromkeys(names))


def text_label(lang: str) -> str:
    """How a table names the text of ``--lang``."""
    return "all languages" if lang == ALL_LANGS else f"lang {lang}"


def _tool_list(text: str) -> list[str]:
    """Parse and validate a comma-separated list of tool keys."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [n for n in names if n not in TOOLS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown tool(s) {unknown}; choose from {', '.join(TOOLS)}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--setup`` and ``--worker`` ones are internal)."""
    p = argparse.ArgumentParser(
        description="Benchmark BPE encoding and decoding throughput: bpeforge "
                    "vs tiktoken, HF tokenizers and SentencePiece.")
    p.add_argument("--corpus", help="corpus file (.xz, .gz or plain), one text per line")
    p.add_argument("--vocab", type=_vocab_list, default=["trained"],
                   help="comma-separated, each benchmarked in turn (default trained). trained: train a "
                        "byte-level gpt2 model of --vocab-size on the corpus; o200k_base / cl100k_base: "
                        "import the real rank file from the bpe-openai wheel")
    p.add_argument("--vocab-size", type=int, default=32_000)
    p.add_argument("--modes", type=_mode_list, default=list(ALL_MODES + (FLAT,)),
                   help=f"comma-separated, from {', '.join(ALL_MODES + (FLAT, FRESH, FILES))} "
                        f"(default all but {FRESH} and {FILES})")
    p.add_argument("--lang", type=_lang_list, default=[ALL_LANGS],
                   help="comma-separated language codes of the timed text, each run in turn (default all): "
                        "'en' keeps the lines the --langs file marks en; 'all' keeps every line")
    p.add_argument("--langs", help="language file, one code per corpus line (default: next to the corpus, "
                                   "x.txt.xz -> x.langs.txt.xz)")
    p.add_argument("--file-mb", type=float, default=FILE_MB,
                   help=f"{FILES}: MB of text per timed file (default {FILE_MB:g})")
    p.add_argument("--file-rounds", type=int, default=FILE_ROUNDS,
                   help=f"{FILES}: different files timed, one per round (default {FILE_ROUNDS})")
    p.add_argument("--again-rounds", type=int, default=AGAIN_ROUNDS,
                   help=f"{FILES}: times the last file is encoded once more (default {AGAIN_ROUNDS})")
    p.add_argument("--warmup-mb", type=float, default=WARMUP_MB,
                   help=f"{FILES}: MB of the untimed warm-up file (default {WARMUP_MB:g})")
    p.add_argument("--train-lines", type=int,
                   help=f"a trained vocabulary trains on the corpus's first N lines (default all; "
                        f"{FRESH_TRAIN_LINES:,} with {FRESH}); {FRESH}'s rounds start after them")
    p.add_argument("--rounds", type=int, default=FRESH_ROUNDS,
                   help=f"{FRESH}: rounds (default {FRESH_ROUNDS}: one cold, the rest give the median)")
    p.add_argument("--round-lines", type=int, default=FRESH_ROUND_LINES,
                   help=f"{FRESH}: fresh lines per round (default {FRESH_ROUND_LINES:,})")
    p.add_argument("--check-lines", type=int, default=CHECK_LINES,
                   help=f"lines in the identical-ids check (default {CHECK_LINES:,}; 0: all timed lines)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=_int_list, default=[1, 2],
                   help="comma-separated thread counts of the batch modes (default 1,2)")
    p.add_argument("--lines", type=int, help="time only the first N lines (default all)")
    p.add_argument("--tools", type=_tool_list, default=list(TOOLS),
                   help=f"comma-separated, from {', '.join(TOOLS)} (default all)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per job")
    p.add_argument("--json", type=Path, help="write all runs and the summary here")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    # Internal: the setup child and the timed children.
    p.add_argument("--setup", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker", choices=list(TOOLS), help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=ALL_MODES + (FLAT, FRESH, FILES), help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.worker and not args.corpus:
        p.error("--corpus is required")
    if args.repeats < 1 or (args.lines is not None and args.lines < 1):
        p.error("--repeats and --lines must be >= 1")
    if args.rounds < 2 or args.round_lines < 1 or (args.train_lines is not None and args.train_lines < 1):
        p.error("--rounds must be >= 2, --round-lines and --train-lines >= 1")
    if FRESH in args.modes and args.train_lines is None and not args.worker:
        args.train_lines = FRESH_TRAIN_LINES
    if (FILES in args.modes and "trained" in args.vocab and args.train_lines is None
            and not args.worker):
        args.train_lines = FRESH_TRAIN_LINES  # the files are text the vocabulary never saw
    if args.file_rounds < 1 or args.again_rounds < 0 or args.file_mb <= 0 or args.warmup_mb <= 0:
        p.error("--file-rounds must be >= 1, --again-rounds >= 0, --file-mb and --warmup-mb > 0")
    if args.corpus and not args.langs and set(args.lang) - {ALL_LANGS}:
        args.langs = str(H.default_langs(Path(args.corpus)))
    if "bpeforge" not in args.tools:
        args.tools.insert(0, "bpeforge")  # the reference of every ratio
    if args.setup:
        if len(args.vocab) != 1 or len(args.lang) != 1:
            p.error("the setup child takes one vocabulary and one language")
        args.vocab, args.lang = args.vocab[0], args.lang[0]
    return args


def _versions(tool_keys: list[str]) -> dict:
    """Installed versions of the selected tools' distributions."""
    dists = dict.fromkeys(TOOLS[k].dist for k in tool_keys)
    return {d: H.package_version(d) for d in dists}


def vocab_report(vocab: str, machine: dict, versions: dict, corpus: dict,
                 setup: dict, rows: list[Row], args) -> dict:
    """All settings, the setup's results and every run of one vocabulary."""
    settings = {k: getattr(args, k) for k in
                ("vocab_size", "repeats", "threads", "lines", "tools", "timeout")}
    return {"vocab": vocab, "machine": machine, "versions": versions, "corpus": corpus,
            "settings": settings, "setup": setup,
            "rows": [{**summarize(r), "runs": r.runs} for r in rows]}


def run_vocab(vocab: str, lang: str, args, machine: dict, versions: dict) -> tuple[dict, list[dict], list[dict]]:
    """Build the models of one vocabulary, time the text of one language, run
    every row, print its tables; returns the setup's result, the row summaries
    and the side-by-side entries."""
    vargs = argparse.Namespace(**{**vars(args), "vocab": vocab, "lang": lang})
    rows = make_rows(args.tools, args.threads, tuple(args.modes))
    fresh_rows = ([Row(FRESH, 1, t) for t in args.tools if "encode/line" in TOOLS[t].modes]
                  if FRESH in args.modes else [])
    file_rows = ([Row(FILES, n, t) for n in args.threads for t in args.tools if FILES in TOOLS[t].modes]
                 if FILES in args.modes else [])
    fresh_memory: dict = {}
    with tempfile.TemporaryDirectory(prefix="bpeforge-bench-encode-") as tmp_name:
        tmp = Path(tmp_name)
        models = tmp / "models"
        models.mkdir()
        corpus = H.materialize_corpus(Path(args.corpus), tmp)
        stats = {"path": str(args.corpus), **H.corpus_stats(corpus)}
        setup = run_setup(corpus, models, vargs)
        print(f"\n=== vocabulary: {vocab}; text: {text_label(lang)} ===", flush=True)
        print(describe_setup(machine, versions, stats, setup, vargs), flush=True)
        print(describe_check(setup), flush=True)
        mark_unbuilt(rows + fresh_rows + file_rows, setup)
        run_all(rows, models, vargs, tmp)
        if fresh_rows:
            fresh_memory = run_fresh(fresh_rows, models, vargs, tmp)
        if file_rows:
            run_files(file_rows, models, vargs, tmp)
    summaries = [summarize(r) for r in rows]
    if rows:
        print()
        print(build_table(summaries, versions, args.markdown))
        print()
        print(build_targets(summaries, setup, args.markdown))
    fresh_summaries = summarize_fresh(fresh_rows, fresh_memory)
    if fresh_rows:
        print()
        print(build_fresh_table(fresh_summaries, versions, vargs, args.markdown))
    file_summaries = summarize_files(file_rows)
    if file_rows and setup.get("files"):
        print()
        print(build_files_table(file_summaries, versions, setup["files"], vargs, args.markdown))
    entries = side_by_side_entries(summaries, file_summaries, setup)
    if entries:
        for clock in ("wall", "cpu"):
            print()
            print(side_by_side_title(clock, args.repeats))
            print(build_side_by_side([([], entries)], [], versions, clock, args.markdown))
    if args.json:
        report = vocab_report(vocab, machine, versions, stats, setup, rows, vargs)
        report["lang"] = lang
        report["fresh"] = [{**s, "runs": r.runs} for s, r in zip(fresh_summaries, fresh_rows)]
        report["files"] = [{**s, "runs": r.runs, **r.extra} for s, r in zip(file_summaries, file_rows)]
        _vocab_json_path(args.json, vocab, len(args.vocab), lang, len(args.lang)).write_text(
            json.dumps(report, indent=2, default=str), encoding="utf-8")
    return setup, summaries, entries


def _vocab_json_path(path: Path, vocab: str, n_vocabs: int, lang: str = ALL_LANGS, n_langs: int = 1) -> Path:
    """``--json`` as given for one vocabulary and text; ``NAME-VOCAB[-LANG].json`` for several."""
    if n_vocabs == 1 and n_langs == 1:
        return path
    tail = f"-{vocab}" + (f"-{lang}" if n_langs > 1 else "")
    return path.with_name(f"{path.stem}{tail}{path.suffix}")


def build_summary(results: dict[str, tuple[dict, list[dict]]], markdown: bool) -> str:
    """The table over all vocabularies: per-call MB/s of every tool
    with its ratio to tiktoken, then every target with pass/miss."""
    vocabs = list(results)
    tools = list(dict.fromkeys(s["tool"] for _, sums in results.values() for s in sums
                               if s["mode"] == "encode/line"))
    rows = []
    for tool in tools:
        cells = [TOOLS[tool].name + (f" ({TOOLS[tool].label})" if TOOLS[tool].label else "")]
        for vocab in vocabs:
            mb = {s["tool"]: s.get("mb_s") for s in results[vocab][1]
                  if s["mode"] == "encode/line" and s["threads"] == 1}
            value, base = mb.get(tool), mb.get("tiktoken")
            cells.append("–" if value is None else
                         f"{value:.2f} MB/s" + (f" ({value / base:.2f}×)" if base else ""))
        rows.append(cells)
    per_call = H.format_table(["encode per call, 1 thread"] + vocabs, rows, markdown=markdown,
                              right=[False] + [True] * len(vocabs))
    target_rows: list[list[str]] = []
    for vocab in vocabs:
        setup, sums = results[vocab]
        for name, measured, need, verdict in _target_rows(sums, setup):
            target_rows.append([vocab, name, measured, need, verdict])
    targets = H.format_table(["vocabulary", "target (bpeforge)", "measured", "required", "result"],
                             target_rows, markdown=markdown, right=[False, False, True, True, False])
    return per_call + "\n\n" + targets


def main(argv: list[str] | None = None) -> int:
    """Entry point of the parent (or, internally, of a child)."""
    args = parse_args(argv)
    if args.setup:
        return setup_main(args)
    if args.worker:
        return worker_main(args)
    started = time.perf_counter()
    machine, versions = H.machine_info(), _versions(args.tools)
    results, groups = {}, []
    for vocab in args.vocab:
        for lang in args.lang:
            label = vocab if len(args.lang) == 1 else f"{vocab}, {text_label(lang)}"
            setup, summaries, entries = run_vocab(vocab, lang, args, machine, versions)
            results[label] = (setup, summaries)
            groups.append(([vocab, text_label(lang)], entries))
    if len(results) > 1 and set(args.modes) - {FRESH, FILES}:
        print("\n=== all vocabularies ===\n")
        print(build_summary(results, args.markdown))
    if len(groups) > 1 and any(entries for _, entries in groups):
        for clock in ("wall", "cpu"):
            print()
            print(side_by_side_title(clock, args.repeats))
            print(build_side_by_side(groups, ["vocabulary", "text"], versions, clock, args.markdown))
    elapsed = time.perf_counter() - started
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    if set(args.modes) - {FRESH, FILES}:
        print(f"\n(MB/s = median over {args.repeats} run(s) of UTF-8 bytes per second; "
              f"× bpeforge = row time / bpeforge time, same mode and threads)")
    print(f"(total benchmark time {elapsed:.0f} s; load average at the end {load})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
