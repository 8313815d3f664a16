"""``bpeforge truncate``: a model cut to a smaller vocabulary
(:meth:`bpeforge.Tokenizer.truncated`), equal to a run at that size."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._io import check_output
from .._load import load
from ..options import _cli_count


def cmd_truncate(args: argparse.Namespace) -> int:
    check_output(args.output, "model", inputs=[args.model])
    tok = load(args.model)
    small = tok.truncated(args.vocab_size)
    small.save(args.output)
    if not args.quiet:
        print(f"truncated {tok!r} to {small!r}; saved to {args.output}", file=sys.stderr)
    return 0


def add_command(sub: Any) -> None:
    t = sub.add_parser("truncate", help="cut a model to a smaller vocabulary: its first merges, equal to a run "
                                        "at that size (special tokens, byte fallback and settings kept)")
    t.add_argument("model", metavar="MODEL", help="bpeforge model file")
    t.add_argument("--vocab-size", required=True, type=_cli_count, metavar="N",
                   help="the vocabulary size to keep, counting every id: 16000, 16k (= 16,000), 32Ki (= 32,768)")
    t.add_argument("--output", "-o", required=True, help="model file to write (.json, or .json.gz)")
    t.add_argument("--quiet", "-q", action="store_true", help="no summary")
    t.set_defaults(func=cmd_truncate)
