"""The hand-written stubs of the compiled module match it (mypy's stubtest)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_native_stubs_match_runtime() -> None:
    pytest.importorskip("mypy", reason="mypy (a test extra) is needed for stubtest")
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bpeforge._native"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_package_type_checks() -> None:
    """Every public name is typed: mypy passes on the package itself."""
    pytest.importorskip("mypy", reason="mypy (a test extra) is needed")
    # The source tree (mypy refuses a package path inside site-packages).
    package = Path(__file__).resolve().parents[1] / "python" / "bpeforge"
    proc = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", str(package)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_encode_batch_is_typed_by_as_numpy(tmp_path) -> None:
    pytest.importorskip("mypy", reason="mypy (a test extra) is needed")
    snippet = tmp_path / "use.py"
    snippet.write_text(
        "import bpeforge\n"
        "tok = bpeforge.load('m.json')\n"
        "reveal_type(tok.encode_batch(['x']))\n"
        "reveal_type(tok.encode_batch(['x'], as_numpy=True))\n",
        encoding="utf-8",
    )
    proc = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", str(snippet)],
                          capture_output=True, text=True, timeout=600)
    assert 'Revealed type is "builtins.list[builtins.list[builtins.int]]"' in proc.stdout \
        or 'Revealed type is "list[list[int]]"' in proc.stdout, proc.stdout
    assert "tuple[numpy.ndarray" in proc.stdout, proc.stdout
