"""The exception hierarchy of bpeforge, declared once.

Every error the Rust engine reports arrives as one of these classes (the
native module binds them by name once, when it is imported; a class missing
here fails that import), and every message says what was wrong
and where: the file and line, or the parameter.

    BpeforgeError
    ├── ParameterError (ValueError)      a setting is out of range or inconsistent
    ├── InputError (OSError)             an input file or text cannot be read or decoded
    ├── ModelFormatError (ValueError)    a model file is malformed, truncated or hostile
    ├── SpecialTokenError (ValueError)   special-token text where it is not allowed
    ├── TrainingError                    training could not proceed
    ├── OutputError (OSError)            an output could not be written
    └── MissingDependencyError (ImportError)  an optional package is missing (names the extra to install)
"""

from __future__ import annotations

__all__ = [
    "BpeforgeError",
    "ParameterError",
    "InputError",
    "ModelFormatError",
    "SpecialTokenError",
    "TrainingError",
    "OutputError",
    "MissingDependencyError",
]


class BpeforgeError(Exception):
    """Base class of every error raised by bpeforge."""


class ParameterError(BpeforgeError, ValueError):
    """A parameter is out of range or inconsistent with the others."""


class InputError(BpeforgeError, OSError):
    """An input file or text cannot be read or decoded (names file and line)."""


class ModelFormatError(BpeforgeError, ValueError):
    """A model file is not a valid bpeforge model (wrong, truncated or hostile)."""


class SpecialTokenError(BpeforgeError, ValueError):
    """Special-token text appeared in a text where it is not allowed."""


class TrainingError(BpeforgeError):
    """Training could not proceed."""


class OutputError(BpeforgeError, OSError):
    """An output file could not be written; earlier outputs are left intact."""


class MissingDependencyError(BpeforgeError, ImportError):
    """An optional package is not installed; the message names the extra
    that brings it (``pip install 'bpeforge[numpy]'``)."""
