"""``bpeforge report``: a model's report, with peers side by side."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


from .._input_formats import INPUT_HELP, compressions_text


def cmd_report(args: argparse.Namespace) -> int:
    from ..report import build_report, write_directory
    from ..report.output import check_output_directory

    t0 = time.perf_counter()
    check_output_directory(args.output)  # before any input is read (build_report checks the inputs first)
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
        text_column=args.text_column,
        per_language=args.lines_per_language,
        premium_reference=args.premium_reference,
        **_parallel_report_args(args),
    )
    files = write_directory(rep, args.output)
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
                    "lengths, scripts, and with --langs premium (the measure of train --max-premium), bytes per token, "
                    "fertility and vocabulary share per language, and with --compare the languages whose "
                    "tokens changed most.",
    )
    r.add_argument("--model", "-m", required=True,
                   help="bpeforge model (or a SentencePiece .model, Hugging Face tokenizer.json, .tiktoken)")
    r.add_argument("--input", "-i", required=True, help=INPUT_HELP)
    r.add_argument("--text-field", metavar="FIELD", default=None,
                   help="JSON lines: each record's text field (needed for JSON lines)")
    r.add_argument("--text-column", metavar="COLUMN", default=None,
                   help="Parquet/Arrow: the text column (needed for those)")
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
    r.add_argument("--lines-per-language", type=int, default=500, metavar="N",
                   help="with --langs: the per-language figures measure up to N lines of each language, sampled "
                        "at random (0: every line; default 500)")
    r.add_argument("--premium-reference", default=None, metavar="LANG",
                   help="with --langs: the language premiums are measured against (default: a parity model's "
                        "reference, else the language with the most bytes)")
    r.add_argument("--label", default=None, help="name of --model in the figures (default: its file name)")
    r.add_argument("--compare-label", default=None, help="name of --compare in the figures")
    r.add_argument("--threads", type=int, default=None, help="encoding threads (default: all cores)")
    r.add_argument("--quiet", "-q", action="store_true")
    _add_parallel_report_arguments(r)
    r.set_defaults(func=cmd_report)


def _add_parallel_report_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--parallel", default=None, metavar="TSV",
                   help=f"a parallel set, key<TAB>language<TAB>text lines ({compressions_text()} ok): "
                        "adds each language's premium "
                        "against --parallel-reference (a figure and a table)")
    r.add_argument("--parallel-reference", default="en", metavar="LANG",
                   help="with --parallel: the language premiums are measured against (default en)")


def _parallel_report_args(args: argparse.Namespace) -> dict[str, Any]:
    if args.parallel is None:
        return {}
    return {"parallel": args.parallel, "parallel_reference": args.parallel_reference}
