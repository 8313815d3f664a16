"""``bpeforge train``: the command line's training options made once
(:func:`bpeforge.options.from_cli`) and handed to the local or the Ray
training entry as they are."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from pathlib import Path

from .. import _engine, _text_names, sample_corpus
from .._io import check_output
from .._tokenizer import Tokenizer
from .._progress import FORMATS as PROGRESS_FORMATS
from .._progress import native_progress
from .._training import train_files
from ..errors import OutputError, ParameterError
from .._sizes import at_sizes, check_sizes, plan_sizes
from ..options import TrainOptions, parse_count
from ..options import add_cli_arguments as add_train_options
from ..options import from_cli as options_from_cli
from .._input_formats import INPUT_HELP


def _train_options(args: argparse.Namespace, demo: bool) -> TrainOptions:
    """The training options of a ``bpeforge train`` command line (one list:
    :mod:`bpeforge.options`); the CLI adds only what follows from its own
    flags: the sample's vocabulary size, the largest of --vocab-sizes, and
    checkpoints written to --output (with --vocab-sizes, to the largest
    size's model file, which the finished run then replaces)."""
    extra: dict[str, Any] = {}
    if demo and not hasattr(args, "vocab_size"):
        extra["vocab_size"] = 2000
    if args.vocab_sizes is not None:
        extra["vocab_size"] = args.vocab_sizes[-1]
    if hasattr(args, "checkpoint_every"):
        if not args.output:
            raise ParameterError("--checkpoint-every needs --output (the checkpoint is written there)")
        extra["checkpoint_path"] = args.checkpoint_file
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


#: What names each model file in a --vocab-sizes output pattern.
SIZE_FIELD = "{size}"


def size_outputs(output: str, sizes: list[int], first_input: str) -> dict[int, str]:
    """The model file of each size of ``--vocab-sizes``: ``output`` is a
    pattern holding ``{size}`` (``model-{size}.json``), or an existing
    folder, which gets the default names: the first input's stem, ``-SIZE``
    and ``.bpeforge.json`` (``corpus-8000.bpeforge.json``)."""
    if SIZE_FIELD in output:
        return {n: output.replace(SIZE_FIELD, str(n)) for n in sizes}
    if os.path.isdir(output):
        stem = default_model_path(first_input)[: -len(DEFAULT_MODEL_SUFFIX)]
        return {n: os.path.join(output, f"{stem}-{n}{DEFAULT_MODEL_SUFFIX}") for n in sizes}
    raise ParameterError(f"--vocab-sizes writes one model per size: give --output a pattern with {SIZE_FIELD} "
                         f"(e.g. model-{SIZE_FIELD}.json) or an existing folder, not the one file {output!r}")


def _plan_outputs(args: argparse.Namespace, inputs: list[str]) -> None:
    """``args.outputs``: the model file of each size (key None: the one
    --output without --vocab-sizes), and ``args.checkpoint_file``, where
    --checkpoint-every writes: the largest size's model file. Without
    --output, each size gets the default name with ``-SIZE``, and
    ``args.output`` becomes their pattern (the resume command repeats it)."""
    if args.vocab_sizes is None:
        args.outputs = {None: args.output} if args.output else {}
        args.checkpoint_file = args.output
        return
    first = inputs[0] if inputs else args.counts
    if args.default_output:
        stem = default_model_path(first)[: -len(DEFAULT_MODEL_SUFFIX)]
        args.output = f"{stem}-{SIZE_FIELD}{DEFAULT_MODEL_SUFFIX}"
    args.outputs = size_outputs(args.output, args.vocab_sizes, first)
    args.checkpoint_file = args.outputs[args.vocab_sizes[-1]]
    taken = [p for p in args.outputs.values() if os.path.lexists(p)]
    if args.default_output and taken:
        raise OutputError(f"no --output given, and the default output {taken[0]} already exists: give --output "
                          f"PATTERN (with {SIZE_FIELD}) or FOLDER (an existing file is replaced only when named "
                          "with --output)")


def cmd_train(args: argparse.Namespace) -> int:
    inputs: list[str] = args.inputs
    if args.vocab_sizes is not None and hasattr(args, "vocab_size"):
        raise ParameterError("give --vocab-sizes or --vocab-size, not both: with --vocab-sizes the run trains at "
                             "the largest size")
    if args.counts is not None:
        if inputs or args.ray is not None:
            raise ParameterError("--counts trains on a counts file instead of text: give no INPUT" +
                                 (" and no --ray" if args.ray is not None else ""))
        inputs = []
    demo = not inputs and args.counts is None
    if demo and (args.output or args.vocab_sizes is not None):
        # An unset variable ($CORPUS) must not train the demo into a real path.
        raise ParameterError("no INPUT files given: name the text to train on (the bundled demo runs only "
                             "without --output and --vocab-sizes)")
    args.default_output = False
    if not demo and not args.output:
        # A run never throws its model away: without --output it is saved
        # under a default name, which never replaces an existing file.
        args.output = default_model_path(inputs[0] if inputs else args.counts)
        args.default_output = True
        if os.path.lexists(args.output) and args.vocab_sizes is None:
            raise OutputError(f"no --output given, and the default output {args.output} already exists: give "
                              "--output MODEL (an existing file is replaced only when named with --output)")
    _plan_outputs(args, inputs)
    for path in args.outputs.values():
        # now, not after hours of training; never over a corpus or language file
        check_output(path, "model", inputs=inputs + list(getattr(args, "langs", None) or [])
                     + ([args.counts] if args.counts else []))
    if demo:
        inputs = [str(sample_corpus())]
        print(f"No input given: training on the bundled sample corpus ({inputs[0]}).", file=sys.stderr)
    options = _train_options(args, demo)
    check_sizes(options, args.vocab_sizes)
    args.train_options = options  # for the Ctrl-C message
    progress = "off" if args.quiet else args.progress
    # From the process's start (main() of its command line) or main()'s call.
    started = getattr(args, "command_started", None) or time.perf_counter()
    args.started = time.time()
    parts = {"Python start-up": getattr(args, "command_entered", started) - started}
    if args.ray is not None:  # --ray [ADDRESS]: count on a Ray cluster
        tok, shut_down = _train_on_ray(inputs, options, args, progress, parts)
    elif args.counts is not None:
        tok = Tokenizer(_engine.train_counts_file(args.counts, options.settings(), native_progress(progress)))
        shut_down = None
        inputs = list(tok.metadata.get("inputs") or [args.counts])
    else:
        tok, shut_down = train_files(inputs, options, native_progress(progress)), None
    timings = tok.metadata.get("timings", {})
    parts["counting"] = timings.get("count_seconds", 0)
    parts["merging"] = timings.get("merge_seconds", 0)
    if args.outputs:
        t = time.perf_counter()
        models: dict[Any, Tokenizer] = {None: tok} if args.vocab_sizes is None else at_sizes(tok, args.vocab_sizes)
        for size, path in args.outputs.items():
            models[size].save(path)
        parts["saving"] = time.perf_counter() - t
    if shut_down is not None:
        t = time.perf_counter()
        shut_down()
        parts["Ray shut-down"] = time.perf_counter() - t
    saved = list(args.outputs.values())
    if not args.quiet or demo:
        _print_summary(tok, inputs, time.perf_counter() - started, parts, saved, sample=demo,
                       default_output=args.default_output)
    else:
        # Quiet, but never silent about what the model was not trained on,
        # or about a file name that was not the user's.
        dropped = budget_dropped(tok)
        if dropped:
            print(dropped, file=sys.stderr)
        if args.default_output:
            print(f"saved to {', '.join(saved)} (no --output given)", file=sys.stderr)
    return 0


def _train_on_ray(inputs: list[str], options: TrainOptions, args: argparse.Namespace, progress: Any,
                  parts: dict[str, float]) -> tuple[Tokenizer, Callable[[], None] | None]:
    """``--ray``: the model, and how to shut down the Ray this command
    started (None when it joined one already running in the process).
    ``parts["Ray start-up"]`` is importing Ray and connecting to it."""
    t = time.perf_counter()
    from .. import distributed
    from .._ray_tasks import _connect, _ray

    ray = _ray()
    started_here = not ray.is_initialized()
    _connect(_ray_address(args.ray))
    parts["Ray start-up"] = time.perf_counter() - t
    tok = distributed.train_with(inputs, options, address=None, shard_bytes=_shard_bytes(args),
                                 num_cpus_per_task=1, progress=progress)
    return tok, (ray.shutdown if started_here else None)


def _seconds(value: float) -> str:
    """Seconds to two decimals, rounded up: a printed total is never less
    than the time it measured."""
    return f"{math.ceil(value * 100) / 100:.2f}s"


def _time_parts(wall: float, parts: dict[str, float]) -> str:
    """``Ray start-up 4.10s, counting 12.30s, ...`` and what the named parts
    leave of ``wall`` ("other": reading options, checks, building the
    model); parts under 5 ms are left to "other"."""
    named = [(k, v) for k, v in parts.items() if k in ("counting", "merging") or v >= 0.005]
    other = wall - sum(v for _, v in named)
    if other >= 0.005:
        named.append(("other", other))
    return ", ".join(f"{k} {v:.2f}s" for k, v in named)


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


def _print_summary(tok: Tokenizer, inputs: list[str], wall: float, parts: dict[str, float], saved: list[str],
                   sample: bool, default_output: bool = False) -> None:
    """``wall`` is the command's time from its start to now (after saving,
    and shutting down the Ray it started); ``parts`` name where it went;
    ``saved``: the model files written (one per size with --vocab-sizes)."""
    meta = tok.metadata
    corpus = meta.get("corpus", {})
    merges = len(tok.merge_counts)
    w = sys.stdout.write
    w(f"trained {tok!r} in {_seconds(wall)} ({_time_parts(wall, parts)})\n")
    w(f"  corpus: {corpus.get('bytes', 0) / 1e6:.2f} MB, {corpus.get('texts', 0)} texts, "
      f"{corpus.get('pretokens', 0)} pre-tokens, {meta.get('word_types', 0)} word types\n")
    w(f"  merges: {merges}" + (" (stopped early: no pair reached min_frequency)" if meta.get("stopped_early") else "") + "\n")
    if meta.get("resumed_merges"):
        w(f"  resumed: {meta['resumed_merges']} merges from the model resumed, {merges - meta['resumed_merges']} "
          "learned now\n")
    dropped = budget_dropped(tok)
    if dropped:
        w(f"  {dropped}\n")
    if merges:
        counts = tok.merge_counts
        w(f"  pair counts: first {counts[0]}, last {counts[-1]}\n")
    if saved:
        w(f"  saved to {', '.join(saved)}" + (" (no --output given: the default name; -o MODEL to choose one)"
                                             if default_output else "") + "\n")
    if sample:
        from .. import _demo

        w("\n".join(_demo.show(tok, Path(inputs[0]))) + "\n")


def budget_dropped(tok: Tokenizer) -> str | None:
    """What the memory budget left out of training, in one line (None when
    it left nothing out)."""
    mb = tok.metadata.get("memory_budget") or {}
    types = int(mb.get("word_types_dropped") or 0)
    if not types:
        return None
    counted = int(tok.metadata.get("word_types") or 0)
    share = f" ({types / counted:.0%} of {counted} counted)" if counted else ""
    pretokens = mb.get("pretoken_share_dropped")
    occurrences = f", {pretokens:.1%} of the pre-tokens" if isinstance(pretokens, (int, float)) else ""
    budget = mb.get("max_memory")
    limit = f" --max-memory {budget / (1 << 20):.0f} MiB" if isinstance(budget, int) else " the default memory budget"
    return (f"memory budget: dropped {types} word types{share}{occurrences}: those occurring fewer than "
            f"{mb.get('effective_min_word_count', '?')} times, to fit{limit}")


def add_command(sub: Any) -> None:
    t = sub.add_parser("train", help="train a vocabulary (no INPUT: the bundled sample corpus)")
    t.add_argument("inputs", nargs="*", metavar="INPUT", help=INPUT_HELP)
    t.add_argument("--output", "-o", help="model file to write (.json, or .json.gz); default: the first INPUT's "
                                          "name + .bpeforge.json in the current folder (never replacing a file); "
                                          "with --vocab-sizes a pattern with {size} (model-{size}.json) or an "
                                          "existing folder")
    add_train_options(t)  # every training option, from bpeforge.options
    t.add_argument("--vocab-sizes", type=_cli_sizes, metavar="N,N,...",
                   help="several sizes from one run, instead of --vocab-size (e.g. 8k,16k,32k): trains at the "
                        "largest and writes one model per size, each equal to a run at that size")
    t.add_argument("--progress", choices=PROGRESS_FORMATS, default="auto")
    t.add_argument("--quiet", "-q", action="store_true", help="no progress and no summary")
    t.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="count on a Ray cluster (alone: as ray.init(), else a local Ray; 'auto', HOST:PORT, ray://HOST:10001)")
    t.add_argument("--shard-mb", type=float, default=64, help="with --ray: plain files are cut into shards of this many MiB")
    t.add_argument("--counts", metavar="FILE", help="train on a counts file (bpeforge count, or FILE.counts a "
                                                    "checkpointed run saves beside its checkpoint) instead of INPUT text")
    t.set_defaults(func=cmd_train)


def cmd_count(args: argparse.Namespace) -> int:
    """``bpeforge count``: the word counts of the inputs, saved for
    ``bpeforge train --counts``."""
    check_output(args.output, "counts file", inputs=args.inputs)
    options = options_from_cli(args)
    _text_names.for_counting(args.inputs, options)
    progress = "off" if args.quiet else args.progress
    started = time.perf_counter()
    header = _engine.count_to_file(args.inputs, options.settings(), native_progress(progress), args.output)
    if not args.quiet:
        import json

        head = json.loads(header)
        size = os.path.getsize(args.output)
        print(f"counted {len(head['inputs'])} file(s) in {_seconds(time.perf_counter() - started)}; "
              f"saved the counts to {args.output} ({size / 1e6:.1f} MB); train on them with: "
              f"bpeforge train --counts {args.output} -o MODEL --vocab-size N")
    return 0


def add_count_command(sub: Any) -> None:
    c = sub.add_parser("count", help="count the word types of text files into a counts file, to train on "
                                     "(bpeforge train --counts) as often as needed without counting again")
    c.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUT_HELP)
    c.add_argument("--output", "-o", required=True, help="counts file to write")
    add_train_options(c)  # the same flags as train: those that decide the counts are recorded
    c.add_argument("--progress", choices=PROGRESS_FORMATS, default="auto")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress and no summary")
    c.set_defaults(func=cmd_count)


def _cli_sizes(text: str) -> list[int]:
    """``--vocab-sizes 8k,16k,32000``: the sizes, checked as vocab_sizes=
    is (ascending, none twice)."""
    try:
        sizes = plan_sizes([parse_count(t) for t in text.split(",")], False)
    except (ValueError, ParameterError) as e:
        raise argparse.ArgumentTypeError(str(e).replace("vocab_sizes", "--vocab-sizes")) from None
    assert sizes is not None
    return sizes


def _interrupted(args: argparse.Namespace) -> str:
    """The Ctrl-C message: on its own line (a live progress line may be
    open), and for training what was kept and how to go on."""
    msg = "\nbpeforge: interrupted"
    if args.func is not cmd_train:
        return msg
    out: str | None = getattr(args, "checkpoint_file", None) or getattr(args, "output", None)

    def written(path: str) -> bool:
        return os.path.exists(path) and os.path.getmtime(path) >= getattr(args, "started", float("inf")) - 1

    if out and hasattr(args, "checkpoint_every") and hasattr(args, "train_options"):
        counts = out + ".counts"
        if written(out):
            return (f"{msg}: the merges learned so far are saved in the checkpoint {out}"
                    + (f" (and the counts in {counts}, so resuming does not count again)" if written(counts) else "")
                    + "; resume with:\n  " + resume_command(args))
        if written(counts):
            return (f"{msg} before the first checkpoint: the counts are saved in {counts}; train on them without "
                    "counting again with:\n  " + resume_command(args, counts=counts))
        return (f"{msg} while counting: nothing was saved (a run with --checkpoint-every saves its counts to "
                f"{counts} once counting finishes, then the model to {out} every "
                f"{args.train_options.checkpoint_every} merges and on Ctrl-C; counting itself starts over)")
    return (f"{msg}: nothing was saved" + (f" to {out}" if out else "") + " (with --checkpoint-every N, the counts "
            "are saved once counting finishes and the model every N merges and on Ctrl-C, and --resume continues "
            "it without counting again)")


def resume_command(args: argparse.Namespace, counts: str | None = None) -> str:
    """The command that continues an interrupted run from its checkpoint
    (--output), or trains on the counts it saved: its inputs and every
    option given, so that it reads as the run it continues (resuming takes
    the result-changing ones from the checkpoint anyway, and refuses a
    different one)."""
    import shlex

    from ..options import NAMES, cli_flags

    options: TrainOptions = args.train_options
    out = args.output
    checkpoint = getattr(args, "checkpoint_file", None) or out
    source = ["--counts", counts] if counts else [*args.inputs, "--resume", checkpoint]
    given = [n for n in NAMES if n not in ("vocab_size", "checkpoint_path", "checkpoint_every", "resume_from")]
    size = (["--vocab-size", str(options.vocab_size)] if getattr(args, "vocab_sizes", None) is None
            else ["--vocab-sizes", ",".join(map(str, args.vocab_sizes))])
    words = ["bpeforge", "train", *source, "-o", out, *size,
             *cli_flags(options, given), "--checkpoint-every", str(options.checkpoint_every)]
    return " ".join(shlex.quote(w) for w in words)
