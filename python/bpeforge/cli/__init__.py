"""The `bpeforge` command line: train, encode, decode, inspect, truncate,
export, import, report; one module per command (``train``, ``encode``,
``inspect``, ``truncate``, ``interop``, ``report``) and what they share
(``_common``).

Errors are one line on stderr (``bpeforge: error: ...``) and a non-zero exit
status, never a traceback: 1 for bad input or settings, 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence


from .. import __version__
from ..errors import BpeforgeError
from . import encode as _encode
from . import inspect as _inspect
from . import train as _train
from . import truncate as _truncate
from ._clock import command_started
from ._common import _Parser, cli_wording, warnings_on_stderr
from .interop import _add_interop_commands
from .report import _add_report_command
from .train import DEFAULT_MODEL_SUFFIX, _interrupted, default_model_path

__all__ = ["main", "build_parser", "cli_wording", "default_model_path", "DEFAULT_MODEL_SUFFIX"]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bpeforge", description="Train and apply BPE vocabularies, fast.")
    p.add_argument("--version", action="version", version=f"bpeforge {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    _train.add_command(sub)
    _train.add_count_command(sub)
    _encode.add_commands(sub)
    _inspect.add_command(sub)
    _truncate.add_command(sub)
    _add_interop_commands(sub)
    _add_report_command(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    entered = time.perf_counter()
    started = command_started(argv)  # a summary's time counts from here
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command_started, args.command_entered = started, entered
    try:
        with warnings_on_stderr():
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
