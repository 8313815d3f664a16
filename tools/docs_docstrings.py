"""Griffe extensions for the API reference (named in ``mkdocs.yml``).

* :class:`ReSTRoles`: the package's docstrings use reST roles
  (``:func:`train```) and double backquotes, which Markdown would print as
  they are; the API reference shows them as code spans, as the generated
  reference pages do.
* :class:`ReadableTypes`: the package's type aliases (``PathLike``,
  ``Progress``, ``SpecialSet``...) are written out in signatures as what
  they stand for (``str | os.PathLike[str]``), since a reader cannot look up
  a private alias, and griffe would show a ``typing.Union`` alias as a bare
  ``Union``; ``Optional[X]`` is written ``X | None``, and private base
  classes are left out.
"""

from __future__ import annotations

import ast
import collections.abc
import importlib
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

import griffe

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_reference import markdown_from_docstring  # noqa: E402


class ReSTRoles(griffe.Extension):
    def on_instance(self, *, obj: Any, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_from_docstring(obj.docstring.value)


#: Modules whose names a signature shows bare (they are imported by name).
_BARE_MODULES = {"builtins", "typing", "collections.abc", "typing_extensions"}


def readable_type(tp: Any) -> str:
    """``tp`` as Python 3.10 annotations write it: unions with ``|``,
    ``None`` for NoneType, forward references as their text, the package's
    classes by their public name, ``os.PathLike`` with its module."""
    if tp is None or tp is type(None):
        return "None"
    if tp is Ellipsis:
        return "..."
    if isinstance(tp, str):
        return tp
    if isinstance(tp, typing.ForwardRef):
        return tp.__forward_arg__
    if isinstance(tp, (list, tuple)):
        return "[" + ", ".join(readable_type(a) for a in tp) + "]"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_unique(readable_type(a) for a in args))
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is not None:
        return f"{readable_type(origin)}[{', '.join(readable_type(a) for a in args)}]"
    name, module = getattr(tp, "__qualname__", None), getattr(tp, "__module__", None)
    if not isinstance(name, str) or not isinstance(module, str):
        return repr(tp)
    if module in _BARE_MODULES or module.split(".")[0] == "bpeforge":
        return name
    return f"{module}.{name}"


def _unique(items: collections.abc.Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _top_level_union(text: str) -> list[str]:
    """The members of a union written with ``|``, outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        if c == "|" and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


_NAME = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\b")


def expand_aliases(annotation: str, namespace: dict[str, Any]) -> str:
    """``annotation`` with every name that ``namespace`` binds to a typing
    construct (an alias such as ``PathLike = Union[...]``) written out, and
    repeated union members dropped (``Progress | None``)."""

    def expand(m: re.Match[str]) -> str:
        value = namespace.get(m.group(1))
        return readable_type(value) if typing.get_origin(value) is not None else m.group(0)

    return " | ".join(_unique(_top_level_union(_pep604(_NAME.sub(expand, annotation)))))


class _Pep604(ast.NodeTransformer):
    """``Optional[X]`` as ``X | None``, ``Union[A, B]`` as ``A | B``."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        name = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
        if name not in ("Optional", "Union"):
            return node
        members = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if name == "Optional":
            members.append(ast.Constant(None))
        union = members[0]
        for member in members[1:]:
            union = ast.BinOp(union, ast.BitOr(), member)
        return union


def _pep604(annotation: str) -> str:
    if not {"Optional", "Union"} & set(_NAME.findall(annotation)):
        return annotation
    try:
        return ast.unparse(_Pep604().visit(ast.parse(annotation, mode="eval")))
    except SyntaxError:
        return annotation


class ReadableTypes(griffe.Extension):
    def on_function_instance(self, *, func: griffe.Function, **_: Any) -> None:
        for parameter in func.parameters:
            parameter.annotation = self._readable(parameter.annotation, func)
        func.returns = self._readable(func.returns, func)

    def on_class_instance(self, *, cls: griffe.Class, **_: Any) -> None:
        # A private base (the engine's TokenizerBase) is no page a reader can open;
        # its public members are shown as the class's own.
        cls.bases = [b for b in cls.bases if not re.search(r"(^|\.)_[a-z]", str(b))]

    def on_attribute_instance(self, *, attr: griffe.Attribute, **_: Any) -> None:
        attr.annotation = self._readable(attr.annotation, attr)

    @staticmethod
    def _readable(annotation: Any, obj: griffe.Object) -> Any:
        if annotation is None:
            return None
        try:
            namespace = vars(importlib.import_module(obj.module.path))
        except ImportError:
            return annotation
        text = str(annotation)
        expanded = expand_aliases(text, namespace)
        if expanded == text:
            return annotation
        try:
            node = ast.parse(expanded, mode="eval").body
        except SyntaxError:
            return expanded
        return griffe.safe_get_annotation(node, obj.parent or obj.module, member=obj.name) or expanded
