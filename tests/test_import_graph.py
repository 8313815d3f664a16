"""The Python package imports one way: no module needs, directly or through
others, a module that needs it back (read from the source with ``ast``).

Module-level imports count with the packages they run (importing
``bpeforge.interop.x`` runs ``bpeforge/interop/__init__.py``), except the
importer's own packages, which are already loading. An import inside a
function runs when it is called, after the package has loaded: it counts as
a use of the module it names. Imports under ``if TYPE_CHECKING:`` never
run and do not count there; the graph with them too (what a type checker
follows) has no cycle either.

The compiled engine, ``bpeforge._native``, has one door: ``bpeforge._engine``
is the only module that imports it, by any kind of import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "bpeforge"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyi")]):  # .pyi: the native module
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.setdefault(".".join(parts), path)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, type_checking: bool = False) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """The import statements that run (``type_checking``: and those under
    ``if TYPE_CHECKING:``), each with whether it is inside a function."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, in_function))
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return found


def _targets(name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The package's modules that an import statement in module ``name`` names."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in modules}
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        stem = ".".join(base + ([node.module] if node.module else []))
    else:
        stem = node.module or ""
    # `from . import x` names the module x; other names come from `stem` itself.
    out = {f"{stem}.{a.name}" for a in node.names if f"{stem}.{a.name}" in modules}
    if stem in modules and len(out) < len(node.names):
        out.add(stem)
    return out


def import_graph(call_time: bool = True, type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports; ``call_time=False``: only the imports
    that run when it is imported (not those inside functions);
    ``type_checking``: with the imports only type checkers read."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
        if path.suffix == ".pyi":
            continue
        for node, in_function in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path)), type_checking):
            if in_function and not call_time:
                continue
            for target in _targets(name, is_package, node, modules):
                graph[name].add(target)
                if not in_function:
                    parts = target.split(".")
                    for i in range(1, len(parts)):
                        package = ".".join(parts[:i])
                        if package not in own and package in modules:
                            graph[name].add(package)
    for name in graph:
        graph[name].discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_the_graph_is_read():
    # What the test reads is the package's real structure, not an empty graph.
    graph = import_graph()
    assert "bpeforge._tokenizer" in graph["bpeforge._load"]
    assert "bpeforge.interop" in graph["bpeforge._load"]
    assert "bpeforge._tokenizer" in graph["bpeforge.interop._builder"]
    # A function-level import counts as a use of its module.
    assert "bpeforge.interop.huggingface_export" in graph["bpeforge._tokenizer"]


def test_importing_runs_no_cycle():
    found = cycles(import_graph(call_time=False))
    assert not found, "modules that import each other (directly or through others):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_imports_inside_functions_make_no_cycle_either():
    found = cycles(import_graph())
    assert not found, "modules that use each other at call time:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_type_checking_imports_make_no_cycle_either():
    # What mypy follows: an annotation that needs a module importing this one
    # is a circle too (the exporters take a Protocol, not the Tokenizer).
    found = cycles(import_graph(type_checking=True))
    assert not found, "modules that need each other's types:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_type_checking_imports_are_read():
    # An import under `if TYPE_CHECKING:` is read only when asked for.
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import B\n")
    assert [n.module for n, _ in _imports(tree)] == ["typing"]
    assert [n.module for n, _ in _imports(tree, type_checking=True)] == ["typing", "a"]


def test_only_the_engine_module_imports_the_native_one():
    # bpeforge._engine is the one door to the compiled core: every other
    # module imports it, never bpeforge._native (type-only imports included).
    graph = import_graph(type_checking=True)
    importers = sorted(m for m, targets in graph.items() if "bpeforge._native" in targets)
    assert importers == ["bpeforge._engine"], importers


@pytest.mark.parametrize("lower, higher", [
    ("bpeforge._tokenizer", "bpeforge._load"),
    ("bpeforge._tokenizer", "bpeforge.interop"),
    ("bpeforge.report.data", "bpeforge.report.draw"),
    ("bpeforge.report.data", "bpeforge.report.page"),
    ("bpeforge.report.data", "bpeforge.report.output"),
])
def test_lower_modules_do_not_import_higher_ones(lower, higher):
    # The Tokenizer does not import load() or the importers' package; the
    # report's data does not import what draws, pages or writes it.
    graph = import_graph()
    seen, todo = set(), [lower]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    assert higher not in seen, f"{lower} imports {higher} (directly or through others)"


def test_a_cycle_is_found():
    # The checker itself fails on a circle.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
