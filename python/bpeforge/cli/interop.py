"""``bpeforge export`` and ``bpeforge import``: models to and from Hugging Face,
tiktoken and SentencePiece."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any


from .._io import same_file
from .._load import load
from ..errors import OutputError, ParameterError



EXPORT_FORMATS = ("huggingface", "tiktoken", "sentencepiece")


def _report_warnings(caught: list[warnings.WarningMessage]) -> None:
    for w in caught:
        print(f"bpeforge: warning: {w.message}", file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    from ..interop.huggingface_export import huggingface_paths

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
    from .. import interop

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
    m.add_argument("input", help="tokenizer.json (or its directory), FILE.tiktoken (also compressed: FILE.tiktoken.gz...), or FILE.model")
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
