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


# ---- what the rendered reference shows: readable types, nothing private ----------

#: The documented objects: every ``::: NAME`` of the API page and the members it lists.
def _documented() -> list[str]:
    names: list[str] = []
    for line in API_PAGE.read_text(encoding="utf-8").splitlines():
        if m := re.fullmatch(r"::: ([\w.]+)\s*", line):
            names.append(m.group(1))
        elif (m := re.fullmatch(r"\s+members: \[([^\]]*)\]\s*", line)) and names:
            names += [f"{names[-1]}.{member.strip()}" for member in m.group(1).split(",") if member.strip()]
    return names


def _griffe_package():
    griffe = pytest.importorskip("griffe", reason="griffe (the docs extra) renders the API reference")
    extension = Path(__file__).resolve().parents[1] / "tools" / "docs_docstrings.py"
    return griffe, griffe.load("bpeforge", force_inspection=True,
                               extensions=griffe.load_extensions(f"{extension}:ReadableTypes"))


def _signatures(griffe, obj):
    """(where, annotation text) of every annotation of ``obj`` and its members."""
    objects = [obj, *(m for m in obj.all_members.values() if not m.is_alias and not m.name.startswith("_")
                      or m.name == "__init__")] if obj.is_class else [obj]
    for o in objects:
        if o.is_function:
            for p in o.parameters:
                if p.annotation is not None:
                    yield f"{o.path}({p.name})", str(p.annotation)
            if o.returns is not None:
                yield f"{o.path} ->", str(o.returns)
        elif o.is_attribute and o.annotation is not None:
            yield o.path, str(o.annotation)


def test_api_reference_types_are_written_out() -> None:
    """The package's type aliases appear as what they stand for
    (``str | os.PathLike[str]``), never as a bare ``Union`` or as a name a
    reader cannot look up."""
    griffe, package = _griffe_package()
    aliases = {"PathLike", "Progress", "SpecialSet", "ProgressCallback", "Union", "Optional"}
    seen, bad = 0, []
    for name in _documented():
        obj = package
        for part in name.split(".")[1:]:
            obj = obj[part]
            obj = obj.final_target if obj.is_alias else obj
        for where, text in _signatures(griffe, obj):
            seen += 1
            words = set(re.findall(r"(?<![.\w])[A-Za-z_]\w*", text))
            if words & aliases:
                bad.append(f"{where}: {text}")
    assert seen > 100 and not bad, bad[:10]
    train = package["train"]
    assert str(train.parameters["files"].annotation) == "str | os.PathLike[str] | Sequence[str | os.PathLike[str]]"
    assert str(train.parameters["progress"].annotation).startswith("bool | str | Callable[[ProgressEvent]")


def test_api_reference_names_no_private_module() -> None:
    """No documented docstring sends the reader to a private module
    (``bpeforge._input_formats``...): it says what it means instead."""
    import importlib

    bad = []
    for name in _documented():
        obj = importlib.import_module("bpeforge")
        for k, part in enumerate(name.split(".")[1:], 2):
            obj = getattr(obj, part, None) or importlib.import_module(".".join(name.split(".")[:k]))
        members = [obj, *(v for k, v in vars(obj).items() if not k.startswith("_"))] if inspect.isclass(obj) else [obj]
        for member in members:
            doc = inspect.getdoc(member) if callable(member) or inspect.ismodule(member) or member is obj else None
            for hit in re.findall(r"bpeforge\._[a-z]\w*", doc or ""):
                bad.append(f"{name}: {hit}")
    assert not bad, bad
