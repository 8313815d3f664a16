"""Finding the fenced examples of the README and the documentation, and the
small files they run on. Used by tests/test_doc_examples.py.

Convention (docs/design.md, CONTRIBUTING.md): every fenced block tagged
``python`` or ``bash`` (``sh``, ``shell``) is an example that runs. A block
that cannot run here (it installs packages, needs a cluster, takes minutes)
is preceded by the line ``<!-- skip: REASON -->``. Blocks tagged ``text``,
``console`` or anything else are displays and never run.
"""

from __future__ import annotations

import json
import lzma
import re
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNABLE = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
SKIP = re.compile(r"^\s*<!--\s*skip:\s*(?P<reason>\S.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, counted from 1
    lang: str  # "python" or "bash"
    code: str
    skip: str | None  # the reason, when marked

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    """The Markdown the examples are read from: the README, CHANGELOG,
    CONTRIBUTING and every page under docs/."""
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md") if "results" not in p.parts)
    return [p for p in (ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "CONTRIBUTING.md") if p.exists()] + pages


def blocks(path: Path) -> list[Block]:
    """The runnable fenced blocks of one Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1
        if info not in RUNNABLE:
            continue
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP.match(before)
        out.append(Block(path, start + 1, RUNNABLE[info], "\n".join(body) + "\n", skip["reason"] if skip else None))
    return out


def _language(line: str) -> str:
    """A stand-in language tag for a sample line: the Unicode script of its
    first letter (LATIN, GREEK, CJK, ...), lower-cased."""
    for ch in line:
        if ch.isalpha():
            return unicodedata.name(ch, "OTHER UNKNOWN").split()[0].lower()
    return "zxx"


def write_example_files(folder: Path) -> None:
    """The files the examples name, cut from the bundled sample corpus:
    corpus.txt, corpus.txt.xz, corpus.jsonl (``text``, ``lang``),
    corpus.langs.txt (one tag per line of corpus.txt) and bitext.tsv; and
    parallel.tsv, the parallel sample of tests/data (key, language, text)."""
    import bpeforge

    lines = [line for line in bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = [line.replace("\t", " ") for line in lines]
    text = "\n".join(lines) + "\n"
    (folder / "corpus.txt").write_text(text, encoding="utf-8")
    (folder / "corpus.txt.xz").write_bytes(lzma.compress(text.encode("utf-8")))
    langs = [_language(line) for line in lines]
    (folder / "corpus.langs.txt").write_text("\n".join(langs) + "\n", encoding="utf-8")
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for line, lang in zip(lines, langs):
            f.write(json.dumps({"text": line, "lang": lang}, ensure_ascii=False) + "\n")
    pairs = [f"{a}\t{b}" for a, b in zip(lines[0::2], lines[1::2])]
    (folder / "bitext.tsv").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    shutil.copyfile(Path(__file__).parent / "data" / "parallel-sample.tsv", folder / "parallel.tsv")
