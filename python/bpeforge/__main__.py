"""`python -m bpeforge` runs the command-line interface."""

from .cli import main

if __name__ == "__main__":  # importing this module (e.g. to document it) runs nothing
    raise SystemExit(main())
