"""Every fenced example in the README and the documentation runs.

Each Markdown file's ``python`` blocks run in order in one namespace, and its
``bash`` blocks in order in one shell per block, all in one fresh folder per
file holding small files cut from the bundled sample corpus (see
tests/doc_examples.py for the names and the skip convention). An example
that stops working fails here, naming its file and line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from doc_examples import ROOT, blocks, documents, write_example_files

DOCS = documents()
#: Blocks that may be marked as not runnable. Few, and each with its reason.
MAX_SKIPPED = 12


def _run_python(block, namespace: dict) -> None:
    try:
        exec(compile(block.code, block.where, "exec"), namespace)
    except Exception:
        pytest.fail(f"the example at {block.where} failed:\n{block.code}\n{traceback.format_exc()}", pytrace=False)


def _run_bash(block, folder: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["TMPDIR"] = str(folder)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"the example at {block.where} exited with {proc.returncode}:\n{block.code}\n"
                    f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}", pytrace=False)


@pytest.mark.parametrize("doc", [d for d in DOCS if any(not b.skip for b in blocks(d))],
                         ids=lambda d: str(d.relative_to(ROOT)))
def test_examples_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_example_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    namespace: dict = {"__name__": "__main__"}
    for block in blocks(doc):
        if block.skip:
            continue
        if block.lang == "python":
            _run_python(block, namespace)
        else:
            _run_bash(block, tmp_path)


def test_skipped_examples_are_few_and_say_why() -> None:
    skipped = [b for d in DOCS for b in blocks(d) if b.skip]
    assert all(len(b.skip) >= 10 for b in skipped), [b.where for b in skipped if len(b.skip) < 10]
    assert len(skipped) <= MAX_SKIPPED, "\n".join(f"{b.where}: {b.skip}" for b in skipped)


def test_the_documents_have_examples() -> None:
    """The extractor must find the examples, or the tests above pass on nothing."""
    found = {d.name: len([b for b in blocks(d) if not b.skip]) for d in DOCS}
    assert found["README.md"] >= 2 and found["getting-started.md"] >= 2, found
    assert sum(found.values()) >= 40, found


def test_extractor_reads_markers_and_indented_fences(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n\n<!-- skip: needs a cluster to run -->\n```bash\nray start\n```\n\n"
                    "1. item\n\n    ```python\n    x = 1\n    ```\n\n```text\nnot run\n```\n", encoding="utf-8")
    found = blocks(page)
    assert [(b.lang, b.code, b.skip) for b in found] == [("bash", "ray start\n", "needs a cluster to run"),
                                                        ("python", "x = 1\n", None)]


def test_readme_is_a_front_page() -> None:
    """The README is also the package's PyPI page: short; the rest is in docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs what the README tells a contributor to run."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install '.[test]' && python -m pytest" in readme
    assert "pip install . && bpeforge train" in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet '.[test]'" in ci and "-m pytest" in ci
    assert "mkdocs build --strict" in ci
