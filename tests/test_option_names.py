"""The Python option list and the engine's (`TrainOptions`) are one list.

`_train_args` builds the dict the bindings deserialize into the core's
`TrainOptions`, which refuses unknown keys; this checks the two lists name
the same options, so an option cannot be added on one side only.
"""

from __future__ import annotations

from bpeforge import _native
from bpeforge._tokenizer import _train_args


def test_python_options_are_the_engines_options() -> None:
    args = _train_args(vocab_size=300, scheme="bytes", pretokenizer="gpt2", special_tokens=(), min_frequency=2,
                       max_token_length=None, threads=None, character_coverage=1.0, end_of_word_suffix=None,
                       unk_token="<unk>")
    assert set(args) == set(_native.train_option_names())
    assert len(_native.train_option_names()) == len(set(_native.train_option_names()))


def test_unknown_option_is_refused(tmp_path) -> None:
    import pytest

    from bpeforge.errors import ParameterError

    p = tmp_path / "t.txt"
    p.write_text("hello world\n" * 10)
    args = _train_args(vocab_size=300, scheme="bytes", pretokenizer="gpt2", special_tokens=(), min_frequency=2,
                       max_token_length=None, threads=None, character_coverage=1.0, end_of_word_suffix=None,
                       unk_token="<unk>")
    args["no_such_option"] = 1
    with pytest.raises(ParameterError, match="no_such_option"):
        _native.train_files([str(p)], args, "off")
