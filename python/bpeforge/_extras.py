"""Optional dependencies: one helper that imports one, or says in one line
which extra to install (``pip install 'bpeforge[numpy]'``).

Every optional import in the package goes through :func:`require`, so the
message is the same everywhere and names the extra of ``pyproject.toml``
that brings the package (:data:`EXTRA_OF`; a test checks each extra exists).
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import MissingDependencyError

#: Top-level package -> the bpeforge extra that installs it.
EXTRA_OF = {
    "numpy": "numpy",
    "pyarrow": "arrow",
    "matplotlib": "plot",
    "zstandard": "zstd",
    "tqdm": "tqdm",
    "ray": "ray",
    "sentencepiece": "sentencepiece",
    "google": "sentencepiece",  # protobuf's package (google.protobuf)
    "tiktoken": "tiktoken",
}


def install_hint(package: str) -> str:
    """``pip install 'bpeforge[EXTRA]'`` for ``package`` (or ``pip install PACKAGE``)."""
    top = package.split(".")[0]
    extra = EXTRA_OF.get(top)
    return f"pip install 'bpeforge[{extra}]'" if extra else f"pip install {top}"


def require(module: str, purpose: str) -> Any:
    """Import ``module``, or raise :class:`bpeforge.MissingDependencyError`
    (an ``ImportError``) with one line: what needs it and what to install,
    e.g. ``encode_batch(as_numpy=True) needs numpy, which is not installed:
    pip install 'bpeforge[numpy]'``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        shown = "protobuf" if top == "google" else top
        raise MissingDependencyError(
            f"{purpose} needs {shown}, which is not installed: {install_hint(top)}", name=top) from e
