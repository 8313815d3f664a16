"""What every command shares: the parser class, the wording of errors in
CLI terms (flags, not Python parameters), text input and output helpers."""

from __future__ import annotations

import argparse
import contextlib
import re
import io
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import IO, Any


from .._io import open_text, write_atomic
from ..errors import ParameterError


BATCH_LINES = 8192


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (``bpeforge train: error:
    argument --vocab-size: ...``) instead of the whole usage block first:
    the usage is what ``--help`` is for. Flags are never abbreviated
    (``--vocab`` is not ``--vocab-size``): a prefix that argparse would
    complete is an error, so a typo or a flag added later never changes what
    a command means. Sub-commands' parsers are this class too
    (``add_subparsers`` makes its parsers of the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    _argv: list[str] = []

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_args(args, namespace)

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}{self._full_names(message)} (see {self.prog} --help)\n")

    def _full_names(self, message: str) -> str:
        """For an unrecognized abbreviation (``--vocab``), the flags it
        begins: ``; flags are not abbreviated: did you mean --vocab-size?``."""
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        parsers: list[argparse.ArgumentParser] = [self]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):  # the command given, as parse_args saw it
                parsers += [action.choices[w] for w in self._argv[:1] if w in action.choices]
        known = {flag for parser in parsers for flag in parser._option_string_actions}
        words = [w.partition("=")[0] for w in message[len(prefix):].split() if w.startswith("--")]
        meant = sorted({flag for w in words for flag in known if flag.startswith(w) and flag != w})
        return f"; flags are not abbreviated: did you mean {' or '.join(meant)}?" if meant else ""


# ---- error messages in the command line's words --------------------------------
# The library's errors name Python parameters (``text_field=``); the command
# line says the flags (``--text-field``). One table, from the option list.


def _flag_table() -> dict[str, str]:
    from ..interop.huggingface_export import ROLES
    from ..options import _records

    flags: dict[str, str] = {}
    for name, record in _records():
        specs = record.cli if isinstance(record.cli, list) else [record.cli] if record.cli else []
        if specs:
            flags[name] = specs[0].get("flags", ["--" + name.replace("_", "-")])[0]
    flags.update({"allowed_special": "--allowed-special", "disallowed_special": "--disallowed-special",
                  "text_field": "--text-field", "checkpoint_path": "--output", "overwrite": "--force",
                  "whitespace": "--sp-whitespace", "threads": "--threads", "chat_template": "--chat-template",
                  "vocab_sizes": "--vocab-sizes"})
    flags.update({role: "--" + role.replace("_", "-") for role in ROLES})  # export's; unk_token's is train's too
    return flags


_FLAGS = _flag_table()
_ASSIGNMENT = re.compile(r"\b([a-z][a-z0-9_]*)=(\{[^}]*\}|\(\)|\[[^\]]*\]|\"[^\"]*\"|'[^']*'|True\b|[\w.-]+)?")
# A custom pre-tokenizer: Python's pretokenizer=bpeforge.Regex(P) is --pattern P.
_REGEX_ASSIGNMENT = re.compile(r"\bpretokenizer=(?:bpeforge\.)?Regex\(('[^']*'|\"[^\"]*\")\)")
_BARE_NAME = re.compile(r"(?<![-\w./])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b(?!\(|\.\w)")
# A one-word option opening a rule ("columns must be ..."); elsewhere such a
# word is ordinary English ("counting threads").
_LEADING_NAME = re.compile(r"^([a-z]+)(?= must | needs | cannot )")


def cli_wording(message: str) -> str:
    """``message`` with Python parameters turned into the CLI's flags:
    ``allowed_special={'<s>'}`` becomes ``--allowed-special '<s>'``,
    ``text_field=`` ``--text-field``, ``disallowed_special=()``
    ``--disallowed-special none``, ``pretokenizer=bpeforge.Regex('x')``
    ``--pattern 'x'``, a bare ``vocab_size`` ``--vocab-size``, a
    one-word option opening the message (``columns must be``) its flag."""

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
    message = _REGEX_ASSIGNMENT.sub(r"--pattern \1", message)
    message = _ASSIGNMENT.sub(assignment, message)
    message = _LEADING_NAME.sub(lambda m: _FLAGS.get(m.group(1), m.group(1)), message)
    return _BARE_NAME.sub(lambda m: _FLAGS.get(m.group(1), m.group(1)), message)


@contextlib.contextmanager
def warnings_on_stderr() -> Iterator[None]:
    """An older spelling of a parameter (the library's
    ``RenamedParameterWarning``) is one ``bpeforge: warning:`` line on
    stderr, in the flags' words; other warnings are shown as Python shows
    them."""
    from .._text_names import RenamedParameterWarning

    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if issubclass(category, RenamedParameterWarning):
            print(f"bpeforge: warning: {cli_wording(str(message))}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("default", RenamedParameterWarning)
        warnings.showwarning = show
        yield


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


def _map_lines(path: str | None, output: str | None, emit: Callable[[Iterator[str], IO[Any]], None], *,
               binary: bool = False) -> None:
    """Run ``emit(lines, out)`` over the text lines of ``path`` ('-' or None:
    stdin), writing ``output`` as ``_write_output`` does (``binary``: ``out``
    takes bytes); the input is closed whatever happens."""
    handle = _open_text(path)
    try:
        _write_output(output, lambda out: emit(_lines(handle, path or "<stdin>"), out), binary=binary)
    finally:
        handle.close()


def _write_output(path: str | None, emit: Callable[[IO[Any]], None], *, binary: bool = False) -> None:
    """Run ``emit`` on stdout ('-' or None), or on a file written atomically:
    it appears only if ``emit`` finishes. ``emit`` writes text (UTF-8,
    ``"\\n"`` line ends), or bytes when ``binary``."""
    if path is None or path == "-":
        out: IO[Any] = sys.stdout.buffer if binary else sys.stdout
        emit(out)
        out.flush()
        return
    write_atomic(path, emit, text=not binary)
