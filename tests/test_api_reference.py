"""Every public name of ``bpeforge`` is documented: it is in ``__all__``, it
has a docstring of its own (so do the public methods and properties of its
classes), and docs/reference/api.md renders it (``::: bpeforge.NAME``).
tests/test_docs_site.py checks the built page holds an entry for each."""

from __future__ import annotations

import __future__
import dataclasses
import inspect
import re
import types
from pathlib import Path

import pytest

import bpeforge

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "api.md"
PUBLIC = [n for n in bpeforge.__all__ if n != "__version__"]


def _own_doc(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and doc.startswith(obj.__name__ + "("):
        return ""  # the signature dataclasses write when there is no docstring
    return doc.strip()


def test_every_public_attribute_is_in_all() -> None:
    public = {n for n, v in vars(bpeforge).items() if not n.startswith("_")
              and not isinstance(v, (types.ModuleType, __future__._Feature))}
    assert public <= set(bpeforge.__all__), sorted(public - set(bpeforge.__all__))


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_has_a_docstring(name: str) -> None:
    assert len(_own_doc(getattr(bpeforge, name))) >= 20, f"bpeforge.{name} has no docstring"


@pytest.mark.parametrize("name", [n for n in PUBLIC if inspect.isclass(getattr(bpeforge, n))
                                  and not issubclass(getattr(bpeforge, n), Exception)])
def test_public_members_have_docstrings(name: str) -> None:
    cls = getattr(bpeforge, name)
    undocumented = []
    for member, value in inspect.getmembers(cls):
        if member.startswith("_") or not (callable(value) or isinstance(inspect.getattr_static(cls, member), property)):
            continue
        if not (inspect.getdoc(getattr(cls, member)) or "").strip():
            undocumented.append(member)
    assert not undocumented, f"{name}: {undocumented}"


def test_api_page_renders_every_public_name() -> None:
    page = API_PAGE.read_text(encoding="utf-8")
    rendered = set(re.findall(r"^::: bpeforge\.(\w+)\s*$", page, flags=re.M))
    assert [n for n in PUBLIC if n not in rendered] == []
    assert "bpeforge.__version__" in page
