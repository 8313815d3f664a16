"""The `bpeforge` command line: train, encode, decode, inspect.

Errors are one line on stderr (``bpeforge: error: ...``) and a non-zero exit
status, never a traceback: 1 for bad input or settings, 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import io
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from pathlib import Path

from . import __version__, sample_corpus
from ._display import show_token
from ._normalizers import name_of as normalizer_name
from ._extras import require
from ._input_formats import plan as input_plan
from ._io import check_output, open_text, same_file, write_atomic
from ._tokenizer import Tokenizer, id_dtype, load
from ._progress import native_progress
from ._training import _progress_arg, train_files
from .errors import BpeforgeError, OutputError, ParameterError
from .options import NAMES as OPTION_NAMES
from .options import TrainOptions
from .options import add_cli_arguments as add_train_options
from .options import from_cli as options_from_cli

BATCH_LINES = 8192


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (``bpeforge train: error:
    argument --vocab-size: ...``) instead of the whole usage block first:
    the usage is what ``--help`` is for."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ---- error messages in the command line's words --------------------------------
# The library's errors name Python parameters (``text_field=``); the command
# line says the flags (``--text-field``). One table, from the option list.


def _flag_table() -> dict[str, str]:
    from .options import _records

    flags: dict[str, str] = {}
    for name, record in _records():
        specs = record.cli if isinstance(record.cli, list) else [record.cli] if record.cli else []
        if specs:
            flags[name] = specs[0].get("flags", ["--" + name.replace("_", "-")])[0]
    flags.update({"allowed_special": "--allowed-special", "disallowed_special": "--disallowed-special",
                  "text_field": "--text-field", "checkpoint_path": "--output", "overwrite": "--force",
                  "whitespace": "--sp-whitespace", "threads": "--threads"})
    return flags


_FLAGS = _flag_table()
_ASSIGNMENT = re.compile(r"\b([a-z][a-z0-9_]*)=(\{[^}]*\}|\(\)|\[[^\]]*\]|\"[^\"]*\"|'[^']*'|True\b|[\w.-]+)?")
_BARE_NAME = re.compile(r"(?<![-\w./])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b(?!\(|\.\w)")


def cli_wording(message: str) -> str:
    """``message`` with Python parameters turned into the CLI's flags:
    ``allowed_special={'<s>'}`` becomes ``--allowed-special '<s>'``,
    ``text_field=`` ``--text-field``, ``disallowed_special=()``
    ``--disallowed-special none``, a bare ``vocab_size`` ``--vocab-size``."""

    def assignment(m: re.Match[str]) -> str:
        name, value = m.group(1), m.group(2)
        if name not in _FLAGS:
            return m.group(0)
        flag = _FLAGS[name]
        if value is None or value == "True":
            return flag
        if value == "()":
            return f"{flag} none"
        if value[0] in "{[":
            items = [v.strip() for v in value[1:-1].split(",") if v.strip()]
            return " ".join(f"{flag} {v}" for v in items) or f"{flag} none"
        return f"{flag} {value}"

    message = message.replace(" or use encode_ordinary()", "").replace('separator="\\n"', "--separator $'\\n'")
    message = _ASSIGNMENT.sub(assignment, message)
    return _BARE_NAME.sub(lambda m: _FLAGS.get(m.group(1), m.group(1)), message)


def _open_text(path: str | None) -> IO[str]:
    """Open an input for reading text lines; '-' or None is stdin."""
    if path is None or path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="strict", newline="\n")
    return open_text(path)


def _lines(handle: IO[str], name: str) -> Iterator[str]:
    lineno = 0
    try:
        for line in handle:
            lineno += 1
            if line.endswith("\n"):
                line = line[:-1]
                if line.endswith("\r"):
                    line = line[:-1]
            yield line
    except UnicodeDecodeError as e:
        raise ParameterError(f"{name}, line {lineno + 1}: invalid UTF-8 ({e.reason})") from e


def _batches(it: Iterator[str], n: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for x in it:
        batch.append(x)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_output(path: str | None, emit: Callable[[IO[str]], None]) -> None:
    """Run ``emit`` on stdout ('-' or None), or on a file written atomically:
    it appears only if ``emit`` finishes."""
    if path is None or path == "-":
        emit(sys.stdout)
        sys.stdout.flush()
        return
    write_atomic(path, emit, text=True)


def _train_options(args: argparse.Namespace, demo: bool) -> TrainOptions:
    """The training options of a ``bpeforge train`` command line (one list:
    :mod:`bpeforge.options`); the CLI adds only what follows from its own
    flags: the sample's vocabulary size, and checkpoints written to --output."""
    extra: dict[str, Any] = {}
    if demo and not hasattr(args, "vocab_size"):
        extra["vocab_size"] = 2000
    if hasattr(args, "checkpoint_every"):
        if not args.output:
            raise ParameterError("--checkpoint-every needs --output (the checkpoint is written there)")
        extra["checkpoint_path"] = args.output
    return options_from_cli(args, **extra)


#: The model file ``bpeforge train INPUT...`` writes when no --output is given.
DEFAULT_MODEL_SUFFIX = ".bpeforge.json"


def default_model_path(first_input: str) -> str:
    """The model file a training run without --output writes: the first
    input's name without its directory and its extensions (``.txt``,
    ``.jsonl``, ``.zst``...) plus ``.bpeforge.json``, in the current
    directory: ``data/corpus.txt.xz`` gives ``corpus.bpeforge.json``."""
    name = os.path.basename(first_input.rstrip("/" + os.sep)) or "model"
    stem = name.split(".")[0] or name
    return stem + DEFAULT_MODEL_SUFFIX


def cmd_train(args: argparse.Namespace) -> int:
    inputs: list[str] = args.inputs
    demo = not inputs
    if demo and args.output:
        # An unset variable ($CORPUS) must not train the demo into a real path.
        raise ParameterError("no INPUT files given: name the text to train on (the bundled demo runs only "
                             "without --output)")
    args.default_output = False
    if not demo and not args.output:
        # A run never throws its model away: without --output it is saved
        # under a default name, which never replaces an existing file.
        args.output = default_model_path(inputs[0])
        args.default_output = True
        if os.path.lexists(args.output):
            raise OutputError(f"no --output given, and the default output {args.output} already exists: give "
                              "--output MODEL (an existing file is replaced only when named with --output)")
    if args.output:
        # now, not after hours of training; never over a corpus or language file
        check_output(args.output, "model", inputs=inputs + list(getattr(args, "langs", None) or []))
    if demo:
        inputs = [str(sample_corpus())]
        print(f"No input given: training on the bundled sample corpus ({inputs[0]}).", file=sys.stderr)
    options = _train_options(args, demo)
    progress = "off" if args.quiet else args.progress
    t0 = time.perf_counter()
    args.started = time.time()
    if args.ray is not None:  # --ray [ADDRESS]: count on a Ray cluster
        from . import distributed

        tok = distributed.train_with(inputs, options, address=_ray_address(args.ray),
                                     shard_bytes=_shard_bytes(args), num_cpus_per_task=1,
                                     progress=_progress_arg(progress))
    else:
        tok = train_files(inputs, options, native_progress(progress))
    wall = time.perf_counter() - t0
    if args.output:
        tok.save(args.output)
    if not args.quiet or demo:
        _print_summary(tok, inputs, wall, args.output, sample=demo, default_output=args.default_output)
    elif args.default_output:  # quiet, but the file name was not the user's: say it
        print(f"saved to {args.output} (no --output given)", file=sys.stderr)
    return 0


def _ray_address(value: str) -> str | None:
    """``--ray`` alone is None; an existing file is an input given after
    ``--ray`` by mistake."""
    if value == "":
        return None
    if os.path.isfile(value) and ":" not in value and value not in ("auto", "local"):
        raise ParameterError(
            f"--ray took {value!r} as the Ray address, but it is a file: put --ray after the "
            "inputs, or write --ray=ADDRESS (e.g. --ray=auto)"
        )
    return value


def _shard_bytes(args: argparse.Namespace) -> int:
    return max(1, int(args.shard_mb * (1 << 20)))


def _print_summary(tok: Tokenizer, inputs: list[str], wall: float, output: str | None, sample: bool,
                   default_output: bool = False) -> None:
    meta = tok.metadata
    corpus = meta.get("corpus", {})
    timings = meta.get("timings", {})
    merges = len(tok.merge_counts)
    w = sys.stdout.write
    w(f"trained {tok!r} in {wall:.2f}s "
      f"(counting {timings.get('count_seconds', 0):.2f}s, merging {timings.get('merge_seconds', 0):.2f}s)\n")
    w(f"  corpus: {corpus.get('bytes', 0) / 1e6:.2f} MB, {corpus.get('texts', 0)} texts, "
      f"{corpus.get('pretokens', 0)} pre-tokens, {meta.get('word_types', 0)} word types\n")
    w(f"  merges: {merges}" + (" (stopped early: no pair reached min_frequency)" if meta.get("stopped_early") else "") + "\n")
    if merges:
        counts = tok.merge_counts
        w(f"  pair counts: first {counts[0]}, last {counts[-1]}\n")
    if output:
        w(f"  saved to {output}" + (" (no --output given: the default name; -o MODEL to choose one)"
                                    if default_output else "") + "\n")
    if sample:
        from . import _demo

        w("\n".join(_demo.show(tok, Path(inputs[0]))) + "\n")


def _special_rules(args: argparse.Namespace) -> dict[str, Any]:
    """``--allowed-special``/``--disallowed-special`` as tiktoken's and
    ``Tokenizer.encode``'s keywords: special-token text is an error unless
    allowed (then it is its id) or not disallowed (then it is plain text)."""
    allowed = args.allowed_special or []
    disallowed = args.disallowed_special or ["all"]
    return {"allowed_special": "all" if "all" in allowed else allowed,
            "disallowed_special": "all" if "all" in disallowed else [] if disallowed == ["none"] else disallowed}


def cmd_encode(args: argparse.Namespace) -> int:
    if args.text_field is not None and args.dropout:
        raise ParameterError("--text-field is read by the file encoder: not with --dropout")
    if args.ray is not None:  # --ray [ADDRESS]: bpeforge.distributed
        return _encode_on_ray(args)
    if getattr(args, "more_inputs", None):
        raise ParameterError("several INPUT files need --ray (or encode them one at a time)")
    to_stdout = not args.output or args.output == "-"
    sources = [args.input] if args.input and args.input != "-" else []
    if not to_stdout:
        check_output(args.output, inputs=sources + [args.model])
        if args.format != "ids":
            check_output(args.output + ".offsets.npy", "offsets", inputs=sources + [args.model])
    if args.format != "ids" and to_stdout:
        raise ParameterError("--format npy/bin needs an --output file (the offsets go beside it)")
    if sources:
        input_plan(sources, text_field=args.text_field)  # structured input needs --text-field
    tok = load(args.model)
    kw = _special_rules(args)
    if args.text_field is not None:
        kw["text_field"] = args.text_field
    if args.dropout:
        return _encode_with_dropout(tok, args, kw)
    # Every other path runs the engine's file encoder, so line numbers,
    # invalid UTF-8 and special tokens are handled one way: stdin and stdout
    # go through temporary files.
    with tempfile.TemporaryDirectory(prefix="bpeforge-encode-") as tmp:
        src = args.input if args.input and args.input != "-" else _stdin_to_file(tmp)
        dst = os.path.join(tmp, "ids.txt") if to_stdout else args.output
        try:
            stats = tok.encode_file(src, dst, format=args.format, threads=args.threads,
                                    progress="off" if args.quiet or to_stdout else args.progress, **kw)
        except BpeforgeError as e:  # name what the user gave, not our temporary files
            raise type(e)(str(e).replace(src, args.input or "<stdin>").replace(dst, args.output or "<stdout>")) from None
        if to_stdout:
            with open(dst, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.flush()
    # One summary: the progress printer's own human line, or else this one.
    human = args.progress == "human" or (args.progress == "auto" and sys.stderr.isatty())
    if not args.quiet and not to_stdout and not human:
        print(f"encoded {stats['lines']} lines, {stats['bytes'] / 1e6:.1f} MB -> {stats['tokens']} tokens "
              f"in {stats['seconds']:.2f}s ({stats['bytes'] / 1e6 / max(stats['seconds'], 1e-9):.1f} MB/s)",
              file=sys.stderr)
    return 0


def _stdin_to_file(folder: str) -> str:
    path = os.path.join(folder, "stdin.txt")
    with open(path, "wb") as f:
        shutil.copyfileobj(sys.stdin.buffer, f)
    return path


def _encode_with_dropout(tok: Tokenizer, args: argparse.Namespace, kw: dict[str, Any]) -> int:
    """BPE-dropout samples a new split per call, in Python batches (the file
    encoder is exact only)."""
    if args.format != "ids":
        raise ParameterError("--dropout writes the ids format only")
    name = args.input or "<stdin>"
    handle = _open_text(args.input)

    def emit(out: IO[str]) -> None:
        for batch in _batches(_lines(handle, name), BATCH_LINES):
            for ids in tok.encode_batch(batch, threads=args.threads, dropout=args.dropout, seed=args.seed, **kw):
                out.write(" ".join(map(str, ids)))
                out.write("\n")

    try:
        _write_output(args.output, emit)
    finally:
        handle.close()
    return 0


def _encode_on_ray(args: argparse.Namespace) -> int:
    """``bpeforge encode --model M INPUT... --ray [ADDRESS] --output DIR``."""
    from . import distributed

    address = _ray_address(args.ray)
    inputs = ([args.input] if args.input else []) + list(args.more_inputs or [])
    if not inputs or "-" in inputs:
        raise ParameterError("--ray needs INPUT files (not stdin)")
    if not args.output or args.output == "-":
        raise ParameterError("--ray needs --output DIR: the folder for the shards and manifest.json")
    if args.dropout:
        raise ParameterError("--dropout is not supported with --ray")
    tok = load(args.model)
    kw = _special_rules(args)  # as the local path
    t0 = time.perf_counter()
    manifest = distributed.encode(tok, inputs, args.output, format=args.format, address=address,
                                  num_cpus_per_task=args.threads or 1, shard_bytes=_shard_bytes(args),
                                  progress="off" if args.quiet else args.progress, text_field=args.text_field, **kw)
    wall = time.perf_counter() - t0
    if not args.quiet:
        print(f"encoded {manifest['lines']} lines, {manifest['bytes'] / 1e6:.1f} MB -> {manifest['tokens']} tokens "
              f"in {len(manifest['shards'])} shards in {wall:.2f}s; manifest: "
              f"{os.path.join(args.output, distributed.MANIFEST_NAME)}", file=sys.stderr)
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    if args.output and args.output != "-":
        flat = args.input and args.input.endswith((".npy", ".bin"))
        check_output(args.output, inputs=[args.input, args.model] + ([args.input + ".offsets.npy"] if flat else [])
                     if args.input and args.input != "-" else [args.model])
    tok = load(args.model)
    name = args.input or "<stdin>"
    if name.endswith((".npy", ".bin")):
        texts = _decode_flat(tok, name)
        _write_output(args.output, lambda out: out.writelines(t + "\n" for t in texts))
        return 0
    handle = _open_text(args.input)

    def emit(out: IO[str]) -> None:
        for lineno, line in enumerate(_lines(handle, name), 1):
            try:
                ids = [int(x) for x in line.split()]
            except ValueError as e:
                raise ParameterError(f"{name}, line {lineno}: not a list of integer ids ({e})") from e
            try:
                text = tok.decode(ids)
            except BpeforgeError as e:
                raise ParameterError(f"{name}, line {lineno}: {e}") from e
            out.write(text)
            out.write("\n")

    try:
        _write_output(args.output, emit)
    finally:
        handle.close()
    return 0


def _decode_flat(tok: Tokenizer, path: str) -> list[str]:
    """The lines of an ``encode --format npy|bin`` output (with its
    ``.offsets.npy``), read without numpy: the CLI reads back whatever it
    writes, with nothing but bpeforge installed."""
    from ._npy import read_npy

    offsets_path = path + ".offsets.npy"
    if not os.path.exists(offsets_path):
        raise ParameterError(f"{path}: its offsets file {offsets_path} is missing (encode writes both)")
    try:
        if path.endswith(".npy"):
            ids = read_npy(path, ("<u2", "<u4"))
        else:
            with open(path, "rb") as f:
                ids = _flat_ints(f.read(), "<u2" if id_dtype(tok.vocab_size) == "uint16" else "<u4", path)
        offsets = read_npy(offsets_path, ("<i8",))
    except (OSError, ValueError) as e:
        raise ParameterError(f"{path}: not an encoded ids file ({e})") from e
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(ids) \
            or any(offsets[k] > offsets[k + 1] for k in range(len(offsets) - 1)):
        raise ParameterError(f"{offsets_path}: the offsets do not fit {path} ({len(ids)} ids)")
    return tok.decode_batch([ids[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)])


def _flat_ints(data: bytes, dtype: str, path: str) -> Any:
    from ._npy import from_bytes

    return from_bytes(data, dtype, path)


def _inspect_balance(bal: Any, w: Any) -> None:
    """Language balance in a few lines: method, rounds, the most lifted languages."""
    if not isinstance(bal, dict) or not isinstance(bal.get("languages"), dict):
        return
    langs = bal["languages"]
    if bal.get("method") == "parity":
        w(f"  language balance: parity, max_premium {bal.get('max_premium')}, reference {bal.get('reference')}, "
          f"temperature {bal.get('temperature')}, {len(langs)} languages\n")
        for r in bal.get("rounds", []):
            # Older models recorded bytes per token; newer ones text units per token.
            upt = r.get("reference_units_per_token", r.get("reference_bytes_per_token"))
            unit = "text units/token" if "reference_units_per_token" in r else "bytes/token"
            w(f"    round {r.get('round', 0) + 1}: {bal.get('reference')} {upt} {unit}, "
              f"worst premium {r.get('worst_premium')} ({r.get('worst_language')}), {r.get('above_band')} above\n")
    else:
        w(f"  language balance: temperature {bal.get('temperature')}, {len(langs)} languages\n")
    top = sorted(langs.items(), key=lambda kv: -float(kv[1].get("weight", 1.0)))[:8]
    w("    largest weights: " + ", ".join(f"{k} {v.get('weight')}" for k, v in top) + "\n")


def cmd_inspect(args: argparse.Namespace) -> int:
    tok = load(args.model)
    meta = tok.metadata
    w = sys.stdout.write
    w(f"model: {args.model}\n")
    w(f"  {tok!r}\n")
    scheme = tok._scheme_settings()
    byte_tokens = {f"<0x{b:02X}>" for b in range(256)} if scheme.get("byte_fallback") else set()
    w(f"  special tokens: {[t for t in tok.special_tokens if t not in byte_tokens]}\n")
    if byte_tokens:
        low, high = (tok.token_to_id(t) for t in ("<0x00>", "<0xFF>"))
        w(f"  byte fallback: <0x00>..<0xFF> (ids {low}..{high})\n")
    for flag in ("fuse_unk", "dummy_prefix"):
        if scheme.get(flag):
            w(f"  {flag}: true\n")
    if tok.scheme == "chars":
        w(f"  normalizer: {normalizer_name(scheme)}\n")
    if tok.alphabet is not None:
        w(f"  alphabet: {len(tok.alphabet)} symbols\n")
    w(f"  merges: {len(tok.merge_counts)}\n")
    for key in ("library", "settings", "corpus", "timings", "inputs", "word_types", "stopped_early"):
        if key in meta:
            w(f"  {key}: {json.dumps(meta[key], ensure_ascii=False)}\n")
    _inspect_balance(meta.get("language_balance"), w)
    merges = tok.merges
    counts = tok.merge_counts or [0] * len(merges)
    limit = len(merges) if args.all else min(args.merges, len(merges))
    first_merge = tok.vocab_size - len(merges)
    w(f"\nmerges (rank, new id, left + right -> token, pair count){'' if args.all else f' — first {limit}'}:\n")
    for k in range(limit):
        a, b = merges[k]
        w(f"  {k:>6} {first_merge + k:>7}  {show_token(a)} + {show_token(b)} -> {show_token(a + b)}  {counts[k]}\n")
    vlimit = tok.vocab_size if args.all else min(args.vocab, tok.vocab_size)
    w(f"\nvocabulary (id, token){'' if args.all else f' — first {vlimit} and last {min(vlimit, tok.vocab_size)}'}:\n")
    tokens = tok.tokens()
    ids = list(range(vlimit))
    if not args.all:
        ids += [i for i in range(max(vlimit, tok.vocab_size - vlimit), tok.vocab_size)]
    for i in ids:
        w(f"  {i:>7}  {show_token(tokens[i])}\n")
    return 0


# ---- interoperability: `export` and `import` (bpeforge.interop) ----------
# Kept in one block: the subcommands, their parser and their warning output.

EXPORT_FORMATS = ("huggingface", "tiktoken", "sentencepiece")


def _report_warnings(caught: list[warnings.WarningMessage]) -> None:
    for w in caught:
        print(f"bpeforge: warning: {w.message}", file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    from .interop.huggingface_export import huggingface_paths

    targets = {"huggingface": lambda p: [huggingface_paths(p)[0], *huggingface_paths(p)[1]],
               "tiktoken": lambda p: [p, p + ".json"], "sentencepiece": lambda p: [p]}[args.to](args.output)
    _refuse_inputs_as_outputs(targets, [args.model])
    tok = load(args.model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.to == "huggingface":
            tok.to_huggingface(args.output, overwrite=args.force)
            written = targets
        elif args.to == "tiktoken":
            written = list(tok.to_tiktoken(args.output))
        else:
            written = [tok.to_sentencepiece(args.output, whitespace=args.sp_whitespace)]
    _report_warnings(caught)
    if not args.quiet:
        print(f"exported {tok!r} as {args.to}: {', '.join(written)}", file=sys.stderr)
    return 0


def _refuse_inputs_as_outputs(outputs: list[str], inputs: list[str]) -> None:
    """An output never replaces an input (same file by any spelling or link)."""
    for out in outputs:
        for source in inputs:
            if same_file(out, source):
                raise OutputError(f"cannot write {out}: it is the input {source}; give another output name")


def _special_ids(items: list[str] | None) -> dict[str, int] | None:
    if not items:
        return None
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        if not sep or not name:
            raise ParameterError(f"--special-token expects TOKEN=ID, got {item!r}")
        try:
            out[name] = int(value)
        except ValueError as e:
            raise ParameterError(f"--special-token {item!r}: {value!r} is not an integer id") from e
    return out


def cmd_import(args: argparse.Namespace) -> int:
    from . import interop

    _refuse_inputs_as_outputs([args.output], [args.input])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.source_format == "huggingface":
            tok = interop.from_huggingface(args.input, ignore_normalizer=args.ignore_normalizer)
        elif args.source_format == "tiktoken":
            tok = interop.from_tiktoken(args.input, pattern=args.pattern, special_tokens=_special_ids(args.special_token))
        else:
            tok = interop.from_sentencepiece(args.input, ignore_normalizer=args.ignore_normalizer)
    _report_warnings(caught)
    tok.save(args.output)
    if not args.quiet:
        print(f"imported {args.input} ({args.source_format}) as {tok!r}; saved to {args.output}", file=sys.stderr)
    return 0


def _add_interop_commands(sub: Any) -> None:
    x = sub.add_parser("export", help="write a model as a Hugging Face tokenizer.json, tiktoken or SentencePiece file")
    x.add_argument("--model", "-m", required=True, help="bpeforge model file")
    x.add_argument("--to", required=True, choices=EXPORT_FORMATS)
    x.add_argument("--output", "-o", required=True,
                   help="huggingface: a folder (an existing one, a name ending in /, or any name not ending in "
                        ".json: created, gets tokenizer.json, tokenizer_config.json, special_tokens_map.json) or "
                        "FILE.json; tiktoken: FILE.tiktoken (+ FILE.tiktoken.json); sentencepiece: FILE.model")
    x.add_argument("--force", action="store_true",
                   help="huggingface: replace a tokenizer_config.json / special_tokens_map.json that holds "
                        "something else (your own), instead of refusing")
    x.add_argument("--sp-whitespace", choices=["all", "space"], default="all",
                   help="sentencepiece: map all whitespace to spaces like bpeforge (all), or split at spaces only")
    x.add_argument("--quiet", "-q", action="store_true")
    x.set_defaults(func=cmd_export)

    m = sub.add_parser("import", help="turn a Hugging Face, tiktoken or SentencePiece BPE vocabulary into a bpeforge model")
    m.add_argument("--from", dest="source_format", required=True, choices=EXPORT_FORMATS)
    m.add_argument("input", help="tokenizer.json (or its directory), FILE.tiktoken, or FILE.model")
    m.add_argument("--output", "-o", required=True, help="bpeforge model file to write (.json or .json.gz)")
    m.add_argument("--pattern", default=None,
                   help="tiktoken: the pre-tokenizer regex or gpt2/cl100k_base/o200k_base (default: FILE.tiktoken.json)")
    m.add_argument("--special-token", action="append", metavar="TOKEN=ID", help="tiktoken: a special token and its id (repeatable)")
    m.add_argument("--ignore-normalizer", action="store_true",
                   help="import despite a normalizer bpeforge cannot apply (ids then differ where it changes text)")
    m.add_argument("--quiet", "-q", action="store_true")
    m.set_defaults(func=cmd_import)


# ---- end of the interoperability block ------------------------------------


# ---- report: `bpeforge report` (bpeforge.report) ---------------------------
# Kept in one block: the subcommand, its parser and its output.


def cmd_report(args: argparse.Namespace) -> int:
    from .report import build_report

    t0 = time.perf_counter()
    rep = build_report(
        args.model,
        args.input,
        langs=args.langs,
        compare=args.compare,
        progress_csv=args.progress_csv or None,
        sample=args.sample,
        seed=args.seed,
        curve_points=args.curve_points,
        curve_lines=args.curve_lines,
        top_langs=args.top_langs,
        labels=[args.label or "", args.compare_label or ""],
        threads=args.threads,
        text_field=args.text_field,
        **_parallel_report_args(args),
    )
    files = rep.write(args.output)
    if not args.quiet:
        for note in rep.notes:
            print(f"bpeforge: note: {note}", file=sys.stderr)
        if "parallel_premium" in rep.figures:
            for note in rep.figures["parallel_premium"].notes[1:]:
                print(f"bpeforge: parallel premiums: {note}", file=sys.stderr)
        print(f"wrote {files['index.html']} ({len(rep.figures)} figures: {', '.join(rep.figures)}; PNG and JSON "
              f"beside it) in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return 0


def _add_report_command(sub: Any) -> None:
    r = sub.add_parser(
        "report",
        help="figures about a vocabulary on a corpus: an HTML page, PNGs and JSON",
        description="Encode a random sample of the corpus and write DIR/index.html (self-contained), one PNG and "
                    "one JSON per figure, and DIR/report.json: pair frequency by merge, compression curve, token "
                    "lengths, scripts, and with --langs bytes per token, fertility and vocabulary share per language.",
    )
    r.add_argument("--model", "-m", required=True,
                   help="bpeforge model (or a SentencePiece .model, Hugging Face tokenizer.json, .tiktoken)")
    r.add_argument("--input", "-i", required=True, help=INPUT_HELP)
    r.add_argument("--text-field", metavar="FIELD", default=None,
                   help="JSON lines: each record's text field; Parquet/Arrow: the text column (needed for those)")
    r.add_argument("--langs", default=None, metavar="LANGFILE",
                   help="language tag of each corpus line (line-aligned): adds the per-language figures")
    r.add_argument("--compare", default=None, metavar="MODEL", help="a second model, drawn beside the first")
    r.add_argument("--progress-csv", action="append", default=None, metavar="CSV",
                   help="training progress CSV (train --progress-csv) to draw; repeat for --compare's")
    r.add_argument("--output", "-o", required=True, metavar="DIR",
                   help="directory to write (replaced atomically if it holds an earlier report)")
    r.add_argument("--sample", type=int, default=20000, metavar="N", help="lines sampled at random (0: all; default 20000)")
    r.add_argument("--seed", type=int, default=0, help="seed of the sample")
    r.add_argument("--curve-points", type=int, default=16, metavar="K", help="truncated models on the compression curve")
    r.add_argument("--curve-lines", type=int, default=5000, metavar="N", help="sampled lines the compression curve encodes")
    r.add_argument("--top-langs", type=int, default=20, metavar="N", help="languages shown in the per-language figures")
    r.add_argument("--label", default=None, help="name of --model in the figures (default: its file name)")
    r.add_argument("--compare-label", default=None, help="name of --compare in the figures")
    r.add_argument("--threads", type=int, default=None, help="encoding threads (default: all cores)")
    r.add_argument("--quiet", "-q", action="store_true")
    _add_parallel_report_arguments(r)
    r.set_defaults(func=cmd_report)


def _add_parallel_report_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--parallel", default=None, metavar="TSV",
                   help="a parallel set, key<TAB>language<TAB>text lines (.xz .gz ok): adds each language's premium "
                        "against --parallel-reference (a figure and a table)")
    r.add_argument("--parallel-reference", default="en", metavar="LANG",
                   help="with --parallel: the language premiums are measured against (default en)")


def _parallel_report_args(args: argparse.Namespace) -> dict[str, Any]:
    if args.parallel is None:
        return {}
    return {"parallel": args.parallel, "parallel_reference": args.parallel_reference}


# ---- end of the report block -----------------------------------------------


#: INPUT in every command's --help: the formats one place reads (bpeforge._input_formats).
INPUT_HELP = ("text file, one text per line; or JSON lines (.jsonl, .ndjson), Parquet (.parquet) or Arrow (.arrow, "
              ".feather) with --text-field; .gz .xz .bz2 .zst compression ok. A file whose name or content says "
              "JSON lines, Parquet or Arrow is never read as plain text")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bpeforge", description="Train and apply BPE vocabularies, fast.")
    p.add_argument("--version", action="version", version=f"bpeforge {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a vocabulary (no INPUT: the bundled sample corpus)")
    t.add_argument("inputs", nargs="*", metavar="INPUT", help=INPUT_HELP)
    t.add_argument("--output", "-o", help="model file to write (.json, or .json.gz); default: the first INPUT's "
                                          "name + .bpeforge.json in the current folder (never replacing a file)")
    add_train_options(t)  # every training option, from bpeforge.options
    t.add_argument("--progress", choices=["auto", "human", "json", "off"], default="auto")
    t.add_argument("--quiet", "-q", action="store_true", help="no progress and no summary")
    t.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="count on a Ray cluster (alone: as ray.init(), else a local Ray; 'auto', HOST:PORT, ray://HOST:10001)")
    t.add_argument("--shard-mb", type=float, default=64, help="with --ray: plain files are cut into shards of this many MiB")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("encode", help="encode text lines to id lines")
    e.add_argument("--model", "-m", required=True)
    e.add_argument("input", nargs="?", help=INPUT_HELP + " (default: stdin, text lines)")
    e.add_argument("more_inputs", nargs="*", metavar="INPUT", help="with --ray: more input files")
    e.add_argument("--output", "-o", help="output file (default: stdout)")
    e.add_argument("--threads", type=int, default=None)
    e.add_argument("--allowed-special", action="append", metavar="TOKEN",
                   help="special-token text that becomes its id ('all', or a token; repeatable). As in Python and "
                        "tiktoken, other special-token text is an error unless --disallowed-special leaves it out")
    e.add_argument("--disallowed-special", action="append", metavar="TOKEN",
                   help="special-token text that is an error (default 'all' but the allowed ones; 'none': encode "
                        "it as plain text)")
    e.add_argument("--format", choices=["ids", "npy", "bin"], default="ids",
                   help="ids: a line of ids per line; npy/bin: flat ids (uint16 up to 65,536 ids, else uint32: "
                        "the model's id_dtype, as in Python) + OUTPUT.offsets.npy")
    e.add_argument("--text-field", metavar="FIELD", default=None,
                   help="JSON lines: each line's text is this field (dotted path for nested fields); "
                        "Parquet/Arrow: the text column. Needed for those formats")
    e.add_argument("--dropout", type=float, default=0.0, help="BPE-dropout probability (default 0: exact)")
    e.add_argument("--seed", type=int, default=None, help="seed for --dropout")
    e.add_argument("--progress", choices=["auto", "human", "json", "off"], default="auto")
    e.add_argument("--quiet", "-q", action="store_true")
    e.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="encode on a Ray cluster into --output DIR: shards + manifest.json (see bpeforge train --ray)")
    e.add_argument("--shard-mb", type=float, default=64, help="with --ray: plain files are cut into shards of this many MiB")
    e.set_defaults(func=cmd_encode)

    d = sub.add_parser("decode", help="decode id lines to text lines")
    d.add_argument("--model", "-m", required=True)
    d.add_argument("input", nargs="?", help="what encode wrote: ids lines (default: stdin), or an .npy/.bin file "
                                            "with its .offsets.npy beside it")
    d.add_argument("--output", "-o", help="output file (default: stdout)")
    d.set_defaults(func=cmd_decode)

    i = sub.add_parser("inspect", help="show a model: settings, merges with counts, vocabulary")
    i.add_argument("model")
    i.add_argument("--merges", type=int, default=50, help="how many merges to list")
    i.add_argument("--vocab", type=int, default=30, help="how many ids to list at each end")
    i.add_argument("--all", action="store_true", help="list every merge and every token")
    i.set_defaults(func=cmd_inspect)
    _add_interop_commands(sub)
    _add_report_command(sub)
    return p


def _interrupted(args: argparse.Namespace) -> str:
    """The Ctrl-C message: on its own line (a live progress line may be
    open), and for training what was kept and how to go on."""
    msg = "\nbpeforge: interrupted"
    if args.func is not cmd_train:
        return msg
    out = getattr(args, "output", None)
    saved = out and os.path.exists(out) and os.path.getmtime(out) >= getattr(args, "started", float("inf")) - 1
    if saved and hasattr(args, "checkpoint_every"):
        inputs = " ".join(args.inputs)
        return (f"{msg}: the merges learned so far are saved in the checkpoint {out}; resume with: "
                f"bpeforge train {inputs} --resume {out} -o {out} (and the same options)")
    return (f"{msg}: nothing was saved" + (f" to {out}" if out else "") + " (with --checkpoint-every N, "
            "the model so far is saved every N merges and on Ctrl-C, and --resume continues it)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(_interrupted(args), file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output closed early (e.g. piped to head): not an error.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except (BpeforgeError, OSError, ValueError, TypeError, ImportError) as e:
        msg = str(e) or type(e).__name__
        if isinstance(e, OSError) and not isinstance(e, BpeforgeError) and e.filename:
            msg = f"{e.filename}: {e.strerror or msg}"
        print(f"bpeforge: error: {cli_wording(msg)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
