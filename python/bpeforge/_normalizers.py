"""The text normalizers training can apply (chars scheme): the identity
(default) and SentencePiece's ``nmt_nfkc``, whose precompiled table ships as
package data (``data/nmt_nfkc.charsmap``, made by
``tools/make_nmt_nfkc_charsmap.py`` from sentencepiece, Apache-2.0), so that
sentencepiece is not needed at run time. Imported models keep whatever
precompiled table their source had."""

from __future__ import annotations

import base64
import functools
from importlib import resources
from typing import Any

from .errors import ParameterError

NAMES = ("identity", "nmt_nfkc")


@functools.lru_cache(maxsize=None)
def _charsmap(name: str) -> bytes:
    return resources.files("bpeforge").joinpath("data", f"{name}.charsmap").read_bytes()


def spec(name: str, charsmap: bytes) -> dict[str, str]:
    """The normalizer as the model file stores it."""
    return {"name": name, "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")}


def check_normalizer(v: Any) -> dict[str, str] | None:
    """``"identity"`` is no normalizer; ``"nmt_nfkc"`` its stored form."""
    if v == "identity":
        return None
    if v in NAMES:
        return spec(v, _charsmap(v))
    raise ParameterError(f"normalizer must be one of {', '.join(repr(n) for n in NAMES)}, got {v!r}")


def known_name(charsmap: bytes) -> str | None:
    """The name of a table bpeforge ships, if ``charsmap`` is one of them."""
    return next((n for n in NAMES[1:] if _charsmap(n) == charsmap), None)


def name_of(scheme: dict[str, Any]) -> str:
    """The normalizer's name in a model's scheme (``identity`` without one)."""
    norm = scheme.get("normalizer")
    return str(norm["name"]) if norm else "identity"


def charsmap_of(scheme: dict[str, Any]) -> bytes | None:
    norm = scheme.get("normalizer")
    return base64.b64decode(norm["precompiled_charsmap"]) if norm else None
