"""The hand-written stubs of the compiled module match it (mypy's stubtest)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_native_stubs_match_runtime() -> None:
    pytest.importorskip("mypy", reason="mypy (a test extra) is needed for stubtest")
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bpeforge._native"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
