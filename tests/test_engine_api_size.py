"""The Rust side of the seam stays narrow: the names the core offers the
bindings in ``crates/core/src/api.rs`` (each name a ``pub use crate::...``
line of it re-exports, or an item it defines itself) number at most
``MOST_NAMES``. A module re-exported whole (a facade's group, such as its
progress types) counts as one name; glob re-exports (``*``) are refused,
since they would hide how many names cross.

Run as a script (``python tests/test_engine_api_size.py``) it prints the
names.
"""

from __future__ import annotations

import re
from pathlib import Path

API = Path(__file__).resolve().parent.parent / "crates" / "core" / "src" / "api.rs"
MOST_NAMES = 30

_ITEM = re.compile(r"^\s*pub\s+(?:fn|struct|enum|const|static|mod|type|trait|union)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def _code(text: str) -> str:
    """The source without `//` comments (api.rs has no string literals)."""
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def _leaves(tree: str) -> list[str]:
    """The names a use tree brings in: `a::{b, c::{d as e}}` gives b, e."""
    names = []
    depth = 0
    part = ""
    parts = []
    for ch in tree:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    parts.append(part)
    for p in (p.strip() for p in parts):
        if not p:
            continue
        brace = p.find("{")
        if brace >= 0:
            names += _leaves(p[brace + 1 : p.rindex("}")])
            continue
        if p.endswith("*"):
            raise AssertionError(f"api.rs re-exports a glob: {p}")
        alias = re.search(r"\bas\s+([A-Za-z_][A-Za-z0-9_]*)$", p)
        names.append(alias.group(1) if alias else p.split("::")[-1].strip())
    return names


def api_names(text: str) -> list[str]:
    code = _code(text)
    names = []
    for m in re.finditer(r"\bpub\s+use\s+crate::([^;]*);", code, re.S):
        names += _leaves(m.group(1))
    names += _ITEM.findall(code)
    return names


def test_the_counter_reads_groups_aliases_and_items() -> None:
    text = (
        "// pub use crate::commented::Out;\n"
        "pub use crate::a::{b, c::{d as e, f}};\n"
        "pub use crate::g::H;\n"
        "pub use crate::facade::progress;\n"
        "pub fn own() {}\n"
    )
    assert api_names(text) == ["b", "e", "f", "H", "progress", "own"]


def test_api_offers_at_most_the_most_names() -> None:
    names = api_names(API.read_text())
    assert len(names) == len(set(names)), f"a name is offered twice: {sorted(names)}"
    assert len(names) <= MOST_NAMES, f"api.rs offers {len(names)} names (at most {MOST_NAMES}): {', '.join(names)}"


if __name__ == "__main__":
    found = api_names(API.read_text())
    print(len(found), " ".join(found))
