"""The repository speaks to its users: no labels of numbered development
rounds and no issue-tracker numbers in any tracked file or file name (docs,
code comments, bench names, result files). History belongs in git and in
CHANGELOG.md. Real text the tests use as data (corpora) is exempt."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Real-world text used as data, quoted as it is.
EXEMPT = ("tests/data/", "python/bpeforge/data/", "Cargo.lock")
_SKIP_DIRS = {".git", "target", "site", "node_modules", "__pycache__", ".hypothesis", ".pytest_cache", "dist", "build"}

# The patterns are assembled so that this file does not match them itself.
S, I = "sess" + "ion", "iss" + "ue"
IN_TEXT = [
    (re.compile(rf"\b{S}s?\s+\d+", re.I), "a development-round label"),
    (re.compile(rf"\b(?:{I}s?|bugs?|tickets?|PRs?)\s*#?\s*\d+", re.I), "an issue number"),
    (re.compile(r"(?<![\w&#/])#\d{1,4}\b(?![\w-])"), "an issue number"),
]
IN_NAMES = re.compile(rf"(?:^|[-_/.])(?:s\d{{1,2}}(?:-\w+)?|{S}[-_]?\d+|{I}[-_]?\d+|round[-_]?\d+)(?=[-_./]|$)", re.I)


def _files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode("utf-8", "replace").split("\0") if n]
        if names:
            return [n for n in names if (ROOT / n).is_file()]
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".venv")]
        found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files]
    return found


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def test_no_round_labels_or_issue_numbers_in_text() -> None:
    hits = []
    for name in _files():
        if name.startswith(EXEMPT):
            continue
        text = _text(ROOT / name)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for pattern, what in IN_TEXT:
                m = pattern.search(line)
                if m:
                    hits.append(f"{name}:{number}: {what}: {m.group(0)!r}")
    assert not hits, "\n".join(hits[:50])


def test_no_round_labels_or_issue_numbers_in_file_names() -> None:
    bad = [n for n in _files() if not n.startswith(EXEMPT) and IN_NAMES.search(n)]
    assert not bad, bad


def test_the_patterns_catch_what_they_are_for() -> None:
    """The check above must be able to fail."""
    hash_ = "#"
    caught = [f"measured in {S} 25", f"{I} {hash_}14's table", f"fixed ({hash_}13)", f"see {I} 8",
              f"{S.title()}s 11 and 12"]
    for line in caught:
        assert any(p.search(line) for p, _ in IN_TEXT), line
    fine = ["color: #1f6fb4", "#[derive(Debug)]", "fixture(scope='session')", "4 rounds of 5.7 s", "s10 corpus",
            "Unicode 14", "x = y  # 2 threads"]
    for line in fine:
        assert not any(p.search(line) for p, _ in IN_TEXT), line
    assert IN_NAMES.search("bench/results/train-1m-s25.txt") and IN_NAMES.search(f"encode-{I}14.txt")
    assert not IN_NAMES.search("docs/performance/results/train-multi-1m-vocab32k.txt")
