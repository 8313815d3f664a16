"""The engine lists the options it takes, and the facade hands over exactly those.

`_native.TrainSettings` reads the facade's `EngineOptions` record field by
field, by the names of the core's `TrainOptions` (listed by
`_native.train_option_names()`): a record without one of them is refused,
naming it, so an option cannot silently fail to reach the engine.
"""

from __future__ import annotations

from typing import Any

import pytest

from bpeforge import _native
from bpeforge.errors import ParameterError
from bpeforge.options import TrainOptions


def _engine_dict() -> dict[str, Any]:
    """The dict the facade hands the engine, with default options."""
    return dict(TrainOptions(vocab_size=300).engine_args())


def test_the_facade_sends_exactly_the_engines_options() -> None:
    names = _native.train_option_names()
    assert len(names) == len(set(names))
    assert set(_engine_dict()) == set(names)


def test_a_missing_option_is_refused() -> None:
    import types

    record = _engine_dict()
    del record["min_frequency"]
    with pytest.raises(ParameterError, match="min_frequency"):
        _native.TrainSettings(types.SimpleNamespace(**record))
