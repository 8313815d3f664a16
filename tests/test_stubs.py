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


#: Names of the compiled module that the package itself does not call: they
#: serve the tests, the fuzz targets and the benchmarks, which may import
#: ``bpeforge._native`` to test the binding itself.
NOT_USED_BY_THE_PACKAGE = {"_count_files", "_pretokenize_reference", "_pretokenize_count",
                           "train_option_names", "RESULT_OPTIONS"}


def test_the_engine_module_is_the_whole_seam() -> None:
    """``bpeforge._engine`` (the only importer of ``_native``, see
    tests/test_import_graph.py) reaches every name of the compiled module the
    package uses; a new native function either goes through it or is named
    above as one the package does not use."""
    import ast

    from bpeforge import _native

    source = Path(__file__).resolve().parents[1] / "python" / "bpeforge" / "_engine.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    reached = {n.attr for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "_native"}
    reached |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "_native"
                for a in n.names}
    assert reached <= set(_native.__all__), reached - set(_native.__all__)
    assert not reached & NOT_USED_BY_THE_PACKAGE, reached & NOT_USED_BY_THE_PACKAGE
    assert set(_native.__all__) - reached <= NOT_USED_BY_THE_PACKAGE, \
        set(_native.__all__) - reached - NOT_USED_BY_THE_PACKAGE
