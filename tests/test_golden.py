"""The golden cases (tests/data/golden/<case>/, shared with the core's
crates/core/tests/golden.rs): each case's corpus trained with its settings
must give exactly the expected merges, merge counts, vocabulary size and ids.
A difference is a behaviour change; see tests/data/golden/regenerate.py."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "golden")
CASES = sorted(d for d in os.listdir(GOLDEN) if os.path.isfile(os.path.join(GOLDEN, d, "settings.json")))


def _regenerate():
    """The script that wrote the expected files: the same training and encoding."""
    spec = importlib.util.spec_from_file_location("golden_regenerate", os.path.join(GOLDEN, "regenerate.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_golden_cases() -> None:
    assert len(CASES) >= 6


@pytest.mark.parametrize("case", CASES)
def test_golden_case(case: str) -> None:
    case_dir = os.path.join(GOLDEN, case)
    with open(os.path.join(case_dir, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    got = _regenerate().expected(case_dir)
    assert got["vocab_size"] == expected["vocab_size"]
    assert got["merges"] == expected["merges"]
    assert got["merge_counts"] == expected["merge_counts"]
    assert got["ids"] == expected["ids"]
