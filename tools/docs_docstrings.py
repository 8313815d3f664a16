"""A griffe extension for the API reference (named in ``mkdocs.yml``).

The package's docstrings use reST roles (``:func:`train```) and double
backquotes, which Markdown would print as they are; the API reference shows
them as code spans, as the generated reference pages do."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import griffe

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_reference import markdown_from_docstring  # noqa: E402


class ReSTRoles(griffe.Extension):
    def on_instance(self, *, obj: Any, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_from_docstring(obj.docstring.value)
