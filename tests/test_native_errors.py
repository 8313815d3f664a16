"""The engine's errors arrive as the classes of ``bpeforge.errors``: the
native module binds those classes once, when it is imported, so a class
missing there fails the import itself, naming it, rather than turning
every later error into a bare ``RuntimeError``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import bpeforge
from bpeforge import errors


@pytest.fixture(scope="module")
def tok() -> bpeforge.Tokenizer:
    return bpeforge.train_from_iterator(["hello world, hello there"] * 20, vocab_size=270,
                                        special_tokens=["<s>"], progress=False)


def test_each_error_kind_arrives_as_its_own_class(tok, tmp_path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    bad_model = tmp_path / "bad.json"
    bad_model.write_text('{"not": "a model"}', encoding="utf-8")
    cases = [
        (errors.ParameterError, lambda: tok.encode_batch(["a"], threads=0)),
        (errors.InputError, lambda: bpeforge.train(tmp_path, vocab_size=300, progress=False)),
        (errors.ModelFormatError, lambda: bpeforge.load(bad_model)),
        (errors.SpecialTokenError, lambda: tok.encode("<s>")),
        (errors.TrainingError, lambda: bpeforge.train(empty, vocab_size=300, progress=False)),
        (errors.OutputError, lambda: tok.save(tmp_path / "no" / "such" / "m.json")),
    ]
    for cls, call in cases:
        with pytest.raises(errors.BpeforgeError) as raised:
            call()
        assert type(raised.value) is cls, (cls, type(raised.value), raised.value)


def test_a_missing_error_class_fails_the_import_naming_it() -> None:
    """``bpeforge.errors`` without ``InputError``: importing the package
    (whose native module binds the classes) raises ImportError naming it."""
    script = textwrap.dedent("""
        import importlib.util, pathlib, sys
        package = pathlib.Path(importlib.util.find_spec("bpeforge").origin).parent
        spec = importlib.util.spec_from_file_location("bpeforge.errors", package / "errors.py")
        errors = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(errors)
        del errors.InputError
        sys.modules["bpeforge.errors"] = errors
        try:
            import bpeforge
        except ImportError as e:
            print("ImportError:", e)
        else:
            print("imported")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "ImportError: bpeforge._native:" in r.stdout and "InputError" in r.stdout, (r.stdout, r.stderr)


def test_errors_keep_the_classes_bound_at_import(tmp_path) -> None:
    """The classes are looked up once: an error raised after
    ``bpeforge.errors`` lost a name is still that class, not a fallback."""
    script = textwrap.dedent(f"""
        import bpeforge
        from bpeforge import errors
        bound = errors.InputError
        del errors.InputError
        try:
            bpeforge.train({str(tmp_path)!r}, vocab_size=300, progress=False)
        except Exception as e:
            print(type(e) is bound, type(e).__name__)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "InputError"], (r.stdout, r.stderr)
