"""Optional dependencies: every extra is listed with what it brings, a missing
package is one line naming the extra to install, and the command line reads
back what it writes with nothing but bpeforge installed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge
from bpeforge import _extras
from bpeforge.errors import MissingDependencyError

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
TEXTS = [f"the quick brown fox {i % 17} jumps over the lazy dog {i % 5}" for i in range(300)]


def _extras_in_pyproject() -> dict[str, str]:
    """extra -> the comment lines just above it."""
    text = PYPROJECT.read_text(encoding="utf-8")
    section = text[text.index("[project.optional-dependencies]"):text.index("[project.scripts]")]
    out, comment = {}, []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            comment.append(line)
        elif m := re.match(r"([a-z-]+) = ", line):
            out[m.group(1)] = " ".join(comment)
            comment = []
    return out


def test_every_extra_is_listed_with_what_it_brings() -> None:
    extras = _extras_in_pyproject()
    assert {"numpy", "arrow", "plot", "zstd", "tqdm", "ray", "sentencepiece", "tiktoken", "all", "test"} <= set(extras)
    for name, comment in extras.items():
        assert f"# {name}:" in comment, f"extra {name!r} has no '# {name}: what it brings' comment"
    assert set(_extras.EXTRA_OF.values()) <= set(extras)


def _requirements(key: str) -> list[str]:
    """The requirement strings of a ``KEY = [...]`` list in pyproject.toml
    (an extra, or ``dependencies``); none if there is no such list."""
    text = re.sub(r"#[^\n]*", "", PYPROJECT.read_text(encoding="utf-8"))
    m = re.search(rf"^{re.escape(key)} = \[(.*?)\][ \t]*$", text, flags=re.M | re.S)
    return re.findall(r'"([^"]+)"', m.group(1)) if m else []


def _brought_by(extra: str) -> set[str]:
    """The distributions ``pip install '.[EXTRA]'`` installs, as far as this
    environment can tell: the extra's requirements (``bpeforge[...]`` ones
    expanded from pyproject.toml) and, for those installed here, theirs."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    extras = {name: _requirements(name) for name in _extras_in_pyproject()}
    todo = [Requirement(r) for r in [*_requirements("dependencies"), *extras[extra]]]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name == "bpeforge":
            todo += [Requirement(r) for e in req.extras for r in extras[e]]
            continue
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for sub in map(Requirement, requires):
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ["", *req.extras]):
                todo.append(sub)
    return {name for name, _ in seen}


def test_the_test_extra_brings_every_package_a_test_skips_without() -> None:
    """Every module a test or benchmark test ``importorskip``s comes with
    ``pip install '.[test]'`` (checked for the modules installed here), so
    the extra gives the whole suite; Chromium, which pip cannot install, is
    the only other thing a test skips without."""
    import importlib.metadata

    from packaging.utils import canonicalize_name

    root = PYPROJECT.parent
    modules = {m for f in [*root.glob("tests/*.py"), *root.glob("bench/*.py")]
               for m in re.findall(r"importorskip\(\s*[\"']([\w.]+)[\"']", f.read_text(encoding="utf-8"))}
    assert {"tokenizers", "ray", "mkdocs", "griffe"} <= modules  # the scan finds them
    owners = importlib.metadata.packages_distributions()
    brought = _brought_by("test")
    missing = {}
    for module in sorted(modules - {"bpeforge"}):
        dists = {canonicalize_name(d) for d in owners.get(module.split(".")[0], [])}
        if dists and not dists & brought:
            missing[module] = sorted(dists)
    assert not missing, f"tests skip without these, which '.[test]' does not install: {missing}"


def _without(monkeypatch, *modules: str) -> None:
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)  # import then raises ImportError


def test_missing_numpy_is_one_line_naming_the_extra(monkeypatch) -> None:
    tok = bpeforge.train_from_iterator(TEXTS, vocab_size=300, progress=False)
    _without(monkeypatch, "numpy")
    with pytest.raises(MissingDependencyError) as e:
        tok.encode_batch(TEXTS, as_numpy=True)
    assert str(e.value) == ("encode_batch(as_numpy=True) needs numpy, which is not installed: "
                            "pip install 'bpeforge[numpy]'")
    assert isinstance(e.value, ImportError)


@pytest.mark.parametrize("module, extra, call", [
    ("pyarrow", "arrow", lambda p: bpeforge.train(p, text_column="text", progress=False)),
    ("tqdm.auto", "tqdm", lambda p: bpeforge.TqdmProgress()),
])
def test_each_missing_package_names_its_extra(module, extra, call, monkeypatch, tmp_path) -> None:
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 16)
    _without(monkeypatch, module, module.split(".")[0])
    with pytest.raises(MissingDependencyError, match=re.escape(f"pip install 'bpeforge[{extra}]'")) as e:
        call(path)
    assert "\n" not in str(e.value)


def test_cli_names_the_extra_in_one_line(tmp_path) -> None:
    script = ("import sys; sys.modules['matplotlib'] = None; sys.modules['numpy'] = None\n"
              "from bpeforge import cli; sys.exit(cli.main(sys.argv[1:]))")
    model = tmp_path / "m.json"
    bpeforge.train_from_iterator(TEXTS, vocab_size=300, progress=False).save(model)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    r = subprocess.run([sys.executable, "-c", script, "report", "-m", str(model), "-i", str(corpus),
                        "-o", str(tmp_path / "rep")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "bpeforge: error: bpeforge report needs numpy, which is not installed: pip install 'bpeforge[numpy]'"]


def test_cli_reads_back_the_npy_it_writes_without_numpy(tmp_path) -> None:
    """encode --format npy|bin and decode, in a process where numpy cannot be
    imported: the command line needs nothing beyond bpeforge."""
    script = "import sys; sys.modules['numpy'] = None\nfrom bpeforge import cli; sys.exit(cli.main(sys.argv[1:]))"
    model = tmp_path / "m.json"
    bpeforge.train_from_iterator(TEXTS, vocab_size=300, progress=False).save(model)
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(t + "\n" for t in TEXTS[:50]) + "\n" + "ünïcödé 文字\n", encoding="utf-8")
    for fmt in ("npy", "bin"):
        ids = tmp_path / f"ids.{fmt}"
        for argv in (["encode", "-m", str(model), str(corpus), "-o", str(ids), "--format", fmt, "-q"],
                     ["decode", "-m", str(model), str(ids), "-o", str(tmp_path / f"back.{fmt}.txt")]):
            r = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
        assert (tmp_path / f"back.{fmt}.txt").read_bytes() == corpus.read_bytes()


def test_one_id_type_for_one_model_everywhere(tmp_path) -> None:
    np = pytest.importorskip("numpy")
    from bpeforge import cli

    tok = bpeforge.train_from_iterator(TEXTS, vocab_size=300, progress=False)
    model, corpus = tmp_path / "m.json", tmp_path / "c.txt"
    tok.save(model)
    corpus.write_text("\n".join(TEXTS) + "\n")
    assert cli.main(["encode", "-m", str(model), str(corpus), "-o", str(tmp_path / "cli.npy"), "--format", "npy",
                     "-q"]) == 0
    tok.encode_file(corpus, tmp_path / "py.npy", format="npy")
    ids, _ = tok.encode_batch(TEXTS, as_numpy=True)
    cli_ids, py_ids = np.load(tmp_path / "cli.npy"), np.load(tmp_path / "py.npy")
    assert cli_ids.dtype == py_ids.dtype == ids.dtype == np.dtype(tok.id_dtype) == np.uint16
    assert cli_ids.tolist() == py_ids.tolist() == ids.tolist()
    from bpeforge._tokenizer import id_dtype

    assert (id_dtype(65536), id_dtype(65537)) == ("uint16", "uint32")
