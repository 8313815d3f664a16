"""``bpeforge encode`` and ``bpeforge decode``: text to ids and back, locally
or on a Ray cluster."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any


from .._flat_ids import flat_blocks, offsets_path
from .. import _text_names
from .._io import check_output
from .._load import load
from .._progress import FORMATS as PROGRESS_FORMATS
from .._tokenizer import Tokenizer, id_dtype
from ..errors import BpeforgeError, ParameterError
from .._input_formats import INPUT_HELP
from ._common import BATCH_LINES, _batches, _map_lines, _write_output
from .train import _ray_address, _shard_bytes


def _special_rules(args: argparse.Namespace) -> dict[str, Any]:
    """``--allowed-special``/``--disallowed-special`` as tiktoken's and
    ``Tokenizer.encode``'s keywords: special-token text is an error unless
    allowed (then it is its id) or not disallowed (then it is plain text)."""
    allowed = args.allowed_special or []
    disallowed = args.disallowed_special or ["all"]
    return {"allowed_special": "all" if "all" in allowed else allowed,
            "disallowed_special": "all" if "all" in disallowed else [] if disallowed == ["none"] else disallowed}


def cmd_encode(args: argparse.Namespace) -> int:
    for flag, value in (("--text-field", args.text_field), ("--text-column", args.text_column)):
        if value is not None and args.dropout:
            raise ParameterError(f"{flag} is read by the file encoder: not with --dropout")
    if args.ray is not None:  # --ray [ADDRESS]: bpeforge.distributed
        return _encode_on_ray(args)
    if getattr(args, "more_inputs", None):
        raise ParameterError("several INPUT files need --ray (or encode them one at a time)")
    to_stdout = not args.output or args.output == "-"
    sources = [args.input] if args.input and args.input != "-" else []
    if not to_stdout:
        check_output(args.output, inputs=sources + [args.model])
        if args.format != "ids":
            check_output(offsets_path(args.output), "offsets", inputs=sources + [args.model])
    if args.format != "ids" and to_stdout:
        raise ParameterError("--format npy/bin needs an --output file (the offsets go beside it)")
    text_field, text_column = args.text_field, args.text_column
    if sources:  # structured input needs --text-field or --text-column
        names = _text_names.resolve(sources, text_field=text_field, text_column=text_column)
        text_field, text_column = names.text_field, names.text_column
    tok = load(args.model)
    kw = _special_rules(args)
    if text_field is not None:
        kw["text_field"] = text_field
    if text_column is not None:
        kw["text_column"] = text_column
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

    def emit(lines: Iterator[str], out: IO[str]) -> None:
        for batch in _batches(lines, BATCH_LINES):
            for ids in tok.encode_batch(batch, threads=args.threads, dropout=args.dropout, seed=args.seed, **kw):
                out.write(" ".join(map(str, ids)))
                out.write("\n")

    _map_lines(args.input, args.output, emit)
    return 0


def _encode_on_ray(args: argparse.Namespace) -> int:
    """``bpeforge encode --model M INPUT... --ray [ADDRESS] --output DIR``."""
    from .. import distributed

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
                                  progress="off" if args.quiet else args.progress, text_field=args.text_field,
                                  text_column=args.text_column, **kw)
    wall = time.perf_counter() - t0
    if not args.quiet:
        print(f"encoded {manifest['lines']} lines, {manifest['bytes'] / 1e6:.1f} MB -> {manifest['tokens']} tokens "
              f"in {len(manifest['shards'])} shards in {wall:.2f}s; manifest: "
              f"{os.path.join(args.output, distributed.MANIFEST_NAME)}", file=sys.stderr)
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    if args.output and args.output != "-":
        flat = args.input and args.input.endswith((".npy", ".bin"))
        check_output(args.output, inputs=[args.input, args.model] + ([offsets_path(args.input)] if flat else [])
                     if args.input and args.input != "-" else [args.model])
    tok = load(args.model)
    name = args.input or "<stdin>"
    line_bytes = _line_bytes(name, args.errors)
    if name.endswith((".npy", ".bin")):
        bin_dtype = "<u2" if id_dtype(tok.vocab_size) == "uint16" else "<u4"

        def emit_flat(out: IO[bytes]) -> None:
            for block in flat_blocks(name, bin_dtype):
                try:
                    lines = tok._native.decode_batch_raw(block.ids, block.offsets)
                except BpeforgeError as e:
                    last = block.first_line + len(block.offsets) // 8 - 2
                    raise ParameterError(f"{name}, lines {block.first_line}-{last}: {e}") from e
                for k, raw in enumerate(lines):
                    out.write(line_bytes(raw, block.first_line + k))

        _write_output(args.output, emit_flat, binary=True)
        return 0

    def emit(lines: Iterator[str], out: IO[bytes]) -> None:
        for lineno, line in enumerate(lines, 1):
            try:
                ids = [int(x) for x in line.split()]
            except ValueError as e:
                raise ParameterError(f"{name}, line {lineno}: not a list of integer ids ({e})") from e
            try:
                raw = tok.decode_bytes(ids)
            except BpeforgeError as e:
                raise ParameterError(f"{name}, line {lineno}: {e}") from e
            out.write(line_bytes(raw, lineno))

    _map_lines(args.input, args.output, emit, binary=True)
    return 0


def _line_bytes(name: str, errors: str) -> Callable[[bytes, int], bytes]:
    """How ``decode --errors`` writes one line's bytes (with its ``"\\n"``):
    ``bytes`` as they are, ``replace`` with U+FFFD for what is not UTF-8,
    ``strict`` refusing such a line, naming it."""
    if errors == "bytes":
        return lambda raw, lineno: raw + b"\n"
    if errors == "replace":
        return lambda raw, lineno: raw.decode("utf-8", "replace").encode("utf-8") + b"\n"

    def strict(raw: bytes, lineno: int) -> bytes:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ParameterError(
                f"{name}, line {lineno}: the ids decode to bytes that are not UTF-8 (byte 0x{raw[e.start]:02x} "
                f"at byte {e.start + 1}); --errors bytes writes them as they are, --errors replace as U+FFFD"
            ) from None
        return raw + b"\n"

    return strict


def add_commands(sub: Any) -> None:
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
                   help="JSON lines: each line's text is this field (dotted path for nested fields); needed "
                        "for JSON lines")
    e.add_argument("--text-column", metavar="COLUMN", default=None,
                   help="Parquet/Arrow: the text column; needed for those formats")
    e.add_argument("--dropout", type=float, default=0.0, help="BPE-dropout probability (default 0: exact)")
    e.add_argument("--seed", type=int, default=None, help="seed for --dropout")
    e.add_argument("--progress", choices=PROGRESS_FORMATS, default="auto")
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
    d.add_argument("--errors", choices=["bytes", "strict", "replace"], default="bytes",
                   help="what to write where a line's ids stand for bytes that are not UTF-8 (a bytes-scheme model "
                        "encodes any bytes): bytes (default) writes them as they are, so decoding what encode "
                        "wrote gives back the input's bytes; strict refuses such a line, naming it; replace "
                        "writes U+FFFD for them")
    d.set_defaults(func=cmd_decode)
