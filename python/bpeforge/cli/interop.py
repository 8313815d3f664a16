"""``bpeforge export`` and ``bpeforge import``: models to and from Hugging Face,
tiktoken and SentencePiece."""

from __future__ import annotations

import argparse
import pathlib
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

    hf_options = _huggingface_options(args)
    targets = {"huggingface": lambda p: [huggingface_paths(p)[0], *huggingface_paths(p)[1]],
               "tiktoken": lambda p: [p, p + ".json"], "sentencepiece": lambda p: [p]}[args.to](args.output)
    _refuse_inputs_as_outputs(targets, [args.model])
    tok = load(args.model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.to == "huggingface":
            tok.to_huggingface(args.output, overwrite=args.force, **hf_options)
            written = targets
        elif args.to == "tiktoken":
            written = list(tok.to_tiktoken(args.output))
        else:
            written = [tok.to_sentencepiece(args.output, whitespace=args.sp_whitespace)]
    _report_warnings(caught)
    if not args.quiet:
        print(f"exported {tok!r} as {args.to}: {', '.join(written)}", file=sys.stderr)
    return 0


def _huggingface_options(args: argparse.Namespace) -> dict[str, Any]:
    """The role flags and --chat-template as ``to_huggingface`` keywords;
    refused, naming them, for the other formats (never ignored)."""
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
    if args.to != "huggingface" and given:
        raise ParameterError(f"{', '.join(given)}: only for --to huggingface (a {args.to} export has no "
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
    _add_huggingface_flags(x)
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


# ---- end of the interoperability block ------------------------------------


# ---- report: `bpeforge report` (bpeforge.report) ---------------------------
# Kept in one block: the subcommand, its parser and its output.
