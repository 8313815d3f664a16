"""The documentation's generated reference pages, from the code itself.

``mkdocs build`` runs :func:`on_page_markdown` (a MkDocs hook, named in
``mkdocs.yml``): a page holding the line ``<!-- generated: cli -->`` gets the
command-line reference built from ``bpeforge.cli.build_parser()``, and one
holding ``<!-- generated: train-options -->`` gets every field of
``bpeforge.TrainOptions``; ``<!-- generated: presets -->`` gets the table of
pre-tokenizer presets (the engine's ``PRESETS``) and
``<!-- generated: compressions -->`` the compression suffixes the readers
take (the engine's ``COMPRESSIONS``). None of these lists is written by hand,
so none can drift from the code. ``python tools/docs_reference.py NAME``
prints a page's generated part.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from typing import Any

MARKERS = {"cli": "<!-- generated: cli -->", "train-options": "<!-- generated: train-options -->",
           "presets": "<!-- generated: presets -->", "compressions": "<!-- generated: compressions -->"}


def markdown_from_docstring(text: str) -> str:
    """Docstring markup (reST roles, double backquotes) as Markdown."""
    text = re.sub(r":(?:func|class|meth|mod|attr|data|exc):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return markdown_from_docstring(" ".join(text.split())).replace("|", "\\|")


def _help(action: argparse.Action, prog: str) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    try:
        return action.help % {"default": action.default, "prog": prog}
    except (KeyError, TypeError, ValueError):
        return action.help


def _value(action: argparse.Action) -> str:
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return " \\| ".join(f"`{c}`" for c in action.choices)
    if action.nargs == 0:
        return ""
    meta = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    if isinstance(meta, tuple):
        meta = " ".join(meta)
    return f"`{meta}`"


def _default(action: argparse.Action) -> str:
    if action.default in (None, argparse.SUPPRESS, False) or action.nargs == 0 and action.default is False:
        return ""
    if isinstance(action, argparse._VersionAction):
        return ""
    return f"`{action.default}`"


def _command_section(name: str, parser: argparse.ArgumentParser, summary: str) -> list[str]:
    out = [f"## bpeforge {name}", "", _cell(summary or parser.description or ""), ""]
    usage = parser.format_usage().replace("usage: ", "", 1).strip()
    out += ["```text", usage, "```", ""]
    out += ["| argument | value | default | what it does |", "| --- | --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"
        if action.option_strings and isinstance(action, argparse.BooleanOptionalAction):
            names = ", ".join(f"`{s}`" for s in action.option_strings)
        out.append(f"| {names} | {_value(action)} | {_default(action)} | {_cell(_help(action, parser.prog))} |")
    return out + [""]


def cli_markdown() -> str:
    """Every ``bpeforge`` subcommand: its usage line and a table of its arguments."""
    from bpeforge.cli import build_parser

    os.environ["COLUMNS"] = "80"  # argparse wraps usage lines to the terminal; the page must not depend on it
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    out = ["```text", parser.format_usage().replace("usage: ", "", 1).strip(), "```", ""]
    out += ["| command | what it does |", "| --- | --- |"]
    out += [f"| [`bpeforge {n}`](#bpeforge-{n}) | {_cell(helps.get(n, ''))} |" for n in sub.choices]
    out.append("")
    for name, p in sub.choices.items():
        out += _command_section(name, p, helps.get(name, ""))
    return "\n".join(out)


def _type_name(f: dataclasses.Field) -> str:
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return t.replace("PathLike", "path")


def _flags(name: str, cli: Any) -> str:
    if not cli:
        return "Python only"
    specs = cli if isinstance(cli, list) else [cli]
    return ", ".join(f"`{flag}`" for spec in specs for flag in spec.get("flags", ["--" + name.replace("_", "-")]))


def train_options_markdown() -> str:
    """One section per field of ``bpeforge.TrainOptions``: type, default, CLI flag, what it does."""
    from bpeforge import TrainOptions

    out = ["| option | default | command line |", "| --- | --- | --- |"]
    fields = dataclasses.fields(TrainOptions)
    for f in fields:
        rec = f.metadata["opt"]
        out.append(f"| [`{f.name}`](#{f.name}) | `{f.default!r}` | {_flags(f.name, rec.cli)} |")
    out.append("")
    for f in fields:
        rec = f.metadata["opt"]
        out += [f"### {f.name}", ""]
        facts = [f"type `{_type_name(f)}`", f"default `{f.default!r}`", f"command line {_flags(f.name, rec.cli)}"]
        if rec.files_only:
            facts.append("file input only (not `train_from_iterator`)")
        out += ["*" + "; ".join(facts) + "*", "", markdown_from_docstring(" ".join(rec.doc.split())), ""]
    return "\n".join(out)


def presets_markdown() -> str:
    """The pre-tokenizer presets: name and what each is, from the engine's table."""
    from bpeforge._engine import PRESETS
    from bpeforge.options import DEFAULT_PRETOKENIZER

    out = ["| preset | also named | what it is |", "| --- | --- | --- |"]
    for p in PRESETS:
        name = f"`{p['name']}`" + (" (default)" if p["name"] == DEFAULT_PRETOKENIZER else "")
        aliases = ", ".join(f"`{a}`" for a in p["aliases"])
        out.append(f"| {name} | {aliases} | {_cell(p['about'])} |")
    out.append("| `bpeforge.Regex(pattern)` | | your own regex (CLI `--pattern`) |")
    return "\n".join(out)


def compressions_markdown() -> str:
    """The compression suffixes every reader takes, from the engine's list: "`.gz`, `.xz`, ..."."""
    from bpeforge._input_formats import COMPRESSIONS

    return ", ".join(f"`{c}`" for c in COMPRESSIONS)


GENERATORS = {"cli": cli_markdown, "train-options": train_options_markdown, "presets": presets_markdown,
              "compressions": compressions_markdown}


#: ``<!-- skip: REASON -->`` before an example that the tests do not run
#: (tests/doc_examples.py); the site shows the reason.
SKIP_MARKER = re.compile(r"^(?P<indent>[ \t]*)<!--\s*skip:\s*(?P<reason>\S.*?)\s*-->[ \t]*$", re.M)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: replace each generation marker with its generated
    Markdown, and make each example's skip marker a visible note."""
    for key, marker in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, GENERATORS[key]())
    return SKIP_MARKER.sub(lambda m: f"{m['indent']}*Not run by the documentation tests: {m['reason']}.*\n",
                           markdown)


if __name__ == "__main__":
    print(GENERATORS[sys.argv[1]]())
