"""The engine refuses options it does not know, and lists the ones it takes.

The bindings deserialize the facade's option dict into the core's
`TrainOptions` (unknown keys refused, so an option cannot silently fail to
reach the engine); `_native.train_option_names()` lists its fields.
"""

from __future__ import annotations

from typing import Any

import pytest

from bpeforge import _native
from bpeforge.errors import ParameterError


def _engine_dict() -> dict[str, Any]:
    """The dict the facade hands the engine, with default options."""
    try:
        from bpeforge.options import TrainOptions  # the Python option list
    except ImportError:
        from bpeforge._tokenizer import _train_args

        return _train_args(vocab_size=300, scheme="bytes", pretokenizer="gpt2", special_tokens=(), min_frequency=2,
                           max_token_length=None, threads=None, character_coverage=1.0, end_of_word_suffix=None,
                           unk_token="<unk>")
    return dict(TrainOptions(vocab_size=300).engine_args())


def test_the_facade_sends_exactly_the_engines_options() -> None:
    names = _native.train_option_names()
    assert len(names) == len(set(names))
    assert set(_engine_dict()) == set(names)


def test_an_unknown_option_is_refused(tmp_path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("hello world\n" * 10)
    args = _engine_dict()
    args["no_such_option"] = 1
    with pytest.raises(ParameterError, match="no_such_option"):
        _native.train_files([str(p)], args, "off")
