"""``bpeforge export`` and ``bpeforge import``: models to and from Hugging Face,
tiktoken and SentencePiece."""

from __future__ import annotations

import argparse
import pathlib
import sys
import warnings
from collections.abc import Iterable
from typing import Any


from .._io import same_file
from .._load import load
from ..errors import OutputError, ParameterError
from ..interop import _formats


def _report_warnings(caught: list[warnings.WarningMessage]) -> None:
    for w in caught:
        print(f"bpeforge: warning: {w.message}", file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    fmt = _formats.by_name(args.to)
    if fmt.export is None or fmt.outputs is None:
        raise ParameterError(f"--to {fmt.name}: bpeforge does not export {fmt.title} files")
    options = {**_huggingface_options(args, fmt), "overwrite": args.force, "whitespace": args.sp_whitespace}
    _refuse_inputs_as_outputs(fmt.outputs(args.output), [args.model])
    tok = load(args.model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = fmt.export(tok, args.output, **{k: v for k, v in options.items() if k in fmt.export_options})
    _report_warnings(caught)
    if not args.quiet:
        print(f"exported {tok!r} as {args.to}: {', '.join(written)}", file=sys.stderr)
    return 0


def _huggingface_options(args: argparse.Namespace, fmt: _formats.ModelFormat) -> dict[str, Any]:
    """The role flags and --chat-template as ``to_huggingface`` keywords;
    refused, naming them, for a format that takes none (never ignored)."""
    from ..interop.chat_templates import BUILTIN_TEMPLATES
    from ..interop.huggingface_export import AUTO, ROLES

    options: dict[str, Any] = {role: getattr(args, role) for role in ROLES}
    if args.chat_template is not None:
        # A built-in by its name; anything else is a template file.
        options["chat_template"] = (args.chat_template if args.chat_template in BUILTIN_TEMPLATES
                                    else pathlib.Path(args.chat_template))
    given = [_role_flags(r)[v is None] for r, v in options.items() if r in ROLES and v != AUTO]
    if args.chat_template is not None:
        given.append("--chat-template")
    if given and not set(options) <= fmt.export_options:
        takers = " or ".join(f"--to {f.name}" for f in _formats.exportable() if set(options) <= f.export_options)
        raise ParameterError(f"{', '.join(given)}: only for {takers} (a {fmt.name} export has no "
                             "special-token roles or chat template)")
    return options


def _role_flags(role: str) -> tuple[str, str]:
    """A role's two flags: ``--eos-token TOKEN`` and ``--no-eos-token``."""
    name = role.replace("_", "-")
    return f"--{name}", f"--no-{name}"


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


#: ``bpeforge import``'s options: each flag and the importer keyword it sets.
_IMPORT_FLAGS = {"ignore_normalizer": "--ignore-normalizer", "pattern": "--pattern", "special_tokens": "--special-token"}


def cmd_import(args: argparse.Namespace) -> int:
    fmt = _formats.importer(args.source_format)
    given = {"ignore_normalizer": args.ignore_normalizer or None, "pattern": args.pattern,
             "special_tokens": _special_ids(args.special_token)}
    for key, flag in _IMPORT_FLAGS.items():  # never ignored
        if given[key] is not None and key not in fmt.load_options:
            takers = " or ".join(f"--from {f.name}" for f in _formats.importable() if key in f.load_options)
            raise ParameterError(f"{flag}: only for {takers} (a {fmt.name} import does not take it)")
    _refuse_inputs_as_outputs([args.output], [args.input])
    assert fmt.load is not None  # _formats.importer refuses a format without one
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = fmt.load(args.input, **{k: v for k, v in given.items() if v is not None})
    _report_warnings(caught)
    tok.save(args.output)
    if not args.quiet:
        print(f"imported {args.input} ({args.source_format}) as {tok!r}; saved to {args.output}", file=sys.stderr)
    return 0


def _add_interop_commands(sub: Any) -> None:
    exports, imports = _formats.exportable(), _formats.importable()
    x = sub.add_parser("export", help=f"write a model as a {_or(f.title for f in exports)} file")
    x.add_argument("--model", "-m", required=True, help="bpeforge model file")
    x.add_argument("--to", required=True, choices=[f.name for f in exports])
    x.add_argument("--output", "-o", required=True, help="; ".join(f"{f.name}: {f.output}" for f in exports))
    x.add_argument("--force", action="store_true",
                   help="huggingface: replace a tokenizer_config.json / special_tokens_map.json that holds "
                        "something else (your own), instead of refusing")
    _add_huggingface_flags(x)
    x.add_argument("--sp-whitespace", choices=["all", "space"], default="all",
                   help="sentencepiece: map all whitespace to spaces like bpeforge (all), or split at spaces only")
    x.add_argument("--quiet", "-q", action="store_true")
    x.set_defaults(func=cmd_export)

    m = sub.add_parser("import", help=f"turn a {_or(f.title for f in imports)} BPE vocabulary into a bpeforge model")
    m.add_argument("--from", dest="source_format", required=True, choices=[f.name for f in imports])
    m.add_argument("input", help=_or((f.source for f in imports), ", or "))
    m.add_argument("--output", "-o", required=True, help="bpeforge model file to write (.json or .json.gz)")
    m.add_argument("--pattern", default=None,
                   help="tiktoken: the pre-tokenizer regex or gpt2/cl100k_base/o200k_base (default: FILE.tiktoken.json)")
    m.add_argument("--special-token", action="append", metavar="TOKEN=ID", help="tiktoken: a special token and its id (repeatable)")
    m.add_argument("--ignore-normalizer", action="store_true",
                   help="import despite a normalizer bpeforge cannot apply (ids then differ where it changes text)")
    m.add_argument("--quiet", "-q", action="store_true")
    m.set_defaults(func=cmd_import)


def _or(items: Iterable[str], last: str = " or ") -> str:
    """``a, b or c``."""
    words = list(items)
    return ", ".join(words[:-1]) + last + words[-1] if len(words) > 1 else "".join(words)


def _add_huggingface_flags(x: argparse.ArgumentParser) -> None:
    """The special-token role flags (one pair per role of ``to_huggingface``)
    and --chat-template."""
    from ..interop.chat_templates import BUILTIN_TEMPLATES
    from ..interop.huggingface_export import AUTO, ROLE_CONVENTIONS

    for role, names in ROLE_CONVENTIONS.items():
        flag, no_flag = _role_flags(role)
        group = x.add_mutually_exclusive_group()
        default = f"the first of {', '.join(names)} that the model has" if len(names) > 1 else \
            f"{names[0]} if the model has it"
        group.add_argument(flag, dest=role, metavar="TOKEN",
                           help=f"huggingface: the special token transformers takes as {role} (default: {default})")
        group.add_argument(no_flag, dest=role, action="store_const", const=None,
                           help=f"huggingface: no {role}, even where the model has a conventional one")
        x.set_defaults(**{role: AUTO})
    builtins = "; ".join(f"{name}: {t.about}" for name, t in BUILTIN_TEMPLATES.items())
    x.add_argument("--chat-template", metavar="NAME|FILE",
                   help=f"huggingface: the chat template written into tokenizer_config.json for transformers' "
                        f"apply_chat_template, a built-in ({builtins}; its special tokens must be the model's) or a "
                        "Jinja template file (./chatml for a file named like a built-in)")
