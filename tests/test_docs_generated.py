"""The generated reference pages (tools/docs_reference.py) list everything
the code has: every field of TrainOptions with its flags, and every
subcommand and flag of the command line."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pytest

import bpeforge
from bpeforge.cli import build_parser

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import docs_reference  # noqa: E402


def test_every_training_option_has_its_section() -> None:
    page = docs_reference.train_options_markdown()
    for f in dataclasses.fields(bpeforge.TrainOptions):
        assert f"\n### {f.name}\n" in page, f.name
        assert f"[`{f.name}`](#{f.name})" in page, f.name
    assert "`--max-memory`" in page and "memory budget" in page


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", list(_subparsers(build_parser())))
def test_every_command_and_flag_is_listed(command: str) -> None:
    page = docs_reference.cli_markdown()
    assert f"\n## bpeforge {command}\n" in page
    section = page.split(f"\n## bpeforge {command}\n", 1)[1].split("\n## bpeforge ", 1)[0]
    for action in _subparsers(build_parser())[command]._actions:
        for flag in action.option_strings:
            if flag not in ("-h", "--help"):
                assert f"`{flag}`" in section, (command, flag)


def test_markers_are_replaced_by_the_hook() -> None:
    page = "# Options\n\n" + docs_reference.MARKERS["train-options"] + "\n"
    out = docs_reference.on_page_markdown(page)
    assert docs_reference.MARKERS["train-options"] not in out and "### vocab_size" in out


def test_skip_markers_become_visible_notes() -> None:
    page = "Text.\n\n<!-- skip: needs a Ray cluster -->\n```bash\nray start\n```\n"
    out = docs_reference.on_page_markdown(page)
    assert "*Not run by the documentation tests: needs a Ray cluster.*" in out and "<!--" not in out


def test_preset_table_and_compressions_come_from_the_engine() -> None:
    from bpeforge import _native

    table = docs_reference.presets_markdown()
    for p in _native.PRESETS:
        assert f"| `{p['name']}`" in table and p["about"].split(":")[0] in table, p["name"]
    assert f"`{bpeforge.options.DEFAULT_PRETOKENIZER}` (default)" in table
    assert docs_reference.compressions_markdown() == ", ".join(f"`{c}`" for c in _native.COMPRESSIONS)
    guide = Path(__file__).resolve().parents[1] / "docs" / "guide"
    for page, key in (("pretokenizers.md", "presets"), ("input-formats.md", "compressions")):
        text = (guide / page).read_text(encoding="utf-8")
        assert docs_reference.MARKERS[key] in text, page
        assert docs_reference.MARKERS[key] not in docs_reference.on_page_markdown(text)
