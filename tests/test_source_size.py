"""Large source files and long functions say why they are large.

The rule (crates/ and python/, Rust and Python): a file over
:data:`FILE_LINES` lines has a line containing ``Why this file is long:``
among its first :data:`HEAD_LINES` lines (its module doc comment or
docstring); a function over :data:`FUNCTION_LINES` lines has
``Why this function is long:`` in its doc comment (Rust: the ``///`` lines
above it) or docstring (Python), or in a comment among its first lines.
A reason, not a waiver: split the file or function where it holds several
concerns, and say why where it holds one."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILE_LINES = 600
FUNCTION_LINES = 80
HEAD_LINES = 40
#: How far into a function's body a ``#``/``//`` comment may give the reason.
BODY_LINES = 12
FILE_MARK = "Why this file is long:"
FUNCTION_MARK = "Why this function is long:"


def _sources() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--", "crates", "python"], cwd=ROOT, capture_output=True,
                         check=True).stdout.decode()
    return [ROOT / n for n in out.split("\0") if n.endswith((".rs", ".py")) and (ROOT / n).is_file()]


def _python_functions(text: str) -> list[tuple[str, int, int, bool]]:
    """(name, first line, line count, states why) of every function."""
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            doc = ast.get_docstring(node) or ""
            # Comments count from the end of the docstring (a reason for
            # readers of the code, kept out of the API reference).
            start = node.body[0].end_lineno if doc else node.lineno
            head = lines[node.lineno - 1:start + BODY_LINES]  # type: ignore[operator]
            says = FUNCTION_MARK in doc or any(FUNCTION_MARK in line for line in head if "#" in line)
            found.append((node.name, node.lineno, length, says))
    return found


_RUST_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
                      r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def _rust_code_only(text: str) -> str:
    """``text`` with comments, strings and char literals blanked (newlines
    kept), so that braces can be counted."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'" and (m := re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'").match(text, i)):
            out.append(" " * (m.end() - i))
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _rust_functions(text: str) -> list[tuple[str, int, int, bool]]:
    """(name, first line, line count, states why) of every function with a body."""
    lines = text.splitlines()
    code = _rust_code_only(text)
    starts = [0]
    for k, ch in enumerate(code):
        if ch == "\n":
            starts.append(k + 1)
    found = []
    for number, line in enumerate(code.splitlines()):
        m = _RUST_FN.match(line)
        if not m:
            continue
        # The body: the first `{` before any `;` (a declaration has none), to its match.
        pos = starts[number] + m.end()
        while pos < len(code) and code[pos] not in "{;":
            pos += 1
        if pos >= len(code) or code[pos] == ";":
            continue
        depth = 0
        for end in range(pos, len(code)):
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            if depth == 0:
                break
        last = code.count("\n", 0, end)
        doc = []
        k = number - 1
        while k >= 0 and lines[k].strip().startswith(("///", "#[", "//")):
            doc.append(lines[k])
            k -= 1
        head = lines[number:number + BODY_LINES]
        says = any(FUNCTION_MARK in d for d in doc) or any(FUNCTION_MARK in h for h in head if "//" in h)
        found.append((m.group(1), number + 1, last - number + 1, says))
    return found


def _violations() -> list[str]:
    bad = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        lines = text.splitlines()
        if len(lines) > FILE_LINES and not any(FILE_MARK in line for line in lines[:HEAD_LINES]):
            bad.append(f"{name}: {len(lines)} lines, and no '{FILE_MARK}' in its first {HEAD_LINES} lines")
        functions = _python_functions(text) if name.endswith(".py") else _rust_functions(text)
        for fn, first, length, says in functions:
            if length > FUNCTION_LINES and not says:
                bad.append(f"{name}:{first}: function {fn} is {length} lines, and its doc does not say "
                           f"'{FUNCTION_MARK}'")
    return bad


def test_large_files_and_long_functions_say_why() -> None:
    bad = _violations()
    assert not bad, (f"{len(bad)} without a reason (split them, or say why where they hold one concern):\n"
                     + "\n".join(bad))


def test_the_size_check_measures_what_it_says() -> None:
    """The check must be able to fail, and count what a reader counts."""
    body = "\n".join(f"    x{k} = {k}" for k in range(FUNCTION_LINES))
    py = f"def long():\n    '''Doc.'''\n{body}\n\ndef short():\n    return 1\n"
    assert [(n, first, length, says) for n, first, length, says in _python_functions(py)] == [
        ("long", 1, FUNCTION_LINES + 2, False), ("short", FUNCTION_LINES + 4, 2, False)]
    assert _python_functions(py.replace("'''Doc.'''", f"'''{FUNCTION_MARK} one table.'''"))[0][3]
    assert _python_functions(py.replace("'''Doc.'''", f"'''Doc.'''\n    # {FUNCTION_MARK} one table."))[0][3]
    rust_body = "\n".join(f'    let s{k} = "{{ not a brace"; // }} nor this' for k in range(FUNCTION_LINES))
    rust = (f"/// Doc.\n#[inline]\npub(crate) fn long<'a>(x: &'a str) -> char {{\n{rust_body}\n    '{{'\n}}\n"
            "fn decl();\nfn short() { let r = r#\"}\"#; }\n")
    assert _rust_functions(rust) == [("long", 3, FUNCTION_LINES + 3, False), ("short", FUNCTION_LINES + 7, 1, False)]
    assert _rust_functions(rust.replace("/// Doc.", f"/// {FUNCTION_MARK} one table."))[0][3]
