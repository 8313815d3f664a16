"""Writing a report directory atomically: its page, PNGs and JSON files."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Union

from ..errors import OutputError
from .data import Report, json_default
from .draw import png as figure_png
from .page import html_page

PathLike = Union[str, "os.PathLike[str]"]


def check_output_directory(output: PathLike, *, overwrite: bool = True) -> None:
    """Refuse an ``output`` :func:`write_directory` would refuse (a file, a
    directory that holds more than an earlier report, a parent that is not
    a directory): callers check it before reading any input."""
    output = os.path.abspath(os.fspath(output))
    parent = os.path.dirname(output) or "."
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise OutputError(f"cannot write {output}: {parent} is not a directory")
    if os.path.exists(output):
        if not os.path.isdir(output):
            raise OutputError(f"{output} exists and is not a directory")
        entries = os.listdir(output)
        if entries and not (overwrite and "report.json" in entries):
            raise OutputError(f"{output} is not empty and holds no earlier report (no report.json): "
                              "refusing to replace it; pick a new or empty directory")
        # Replacing an earlier report must not take anything else with it
        # (an input kept in the folder, notes): only a report's own files.
        others = sorted(e for e in entries if not (e == "index.html" or e.endswith((".png", ".json"))))
        if others:
            raise OutputError(f"{output} holds files a report does not write ({', '.join(others[:3])}): "
                              "refusing to replace it; pick a new or empty directory")


def write_directory(rep: Report, output: PathLike, *, overwrite: bool = True) -> dict[str, str]:
    """Write ``index.html``, ``<figure>.png``, ``<figure>.json`` and
    ``report.json`` of ``rep`` into the directory ``output``, atomically: they
    are written to a temporary directory beside it, which then replaces it.
    An existing ``output`` is replaced only if it is empty or an earlier
    report (it has ``report.json``; :func:`check_output_directory`).
    Returns {name: path} of the files."""
    check_output_directory(output, overwrite=overwrite)
    output = os.path.abspath(os.fspath(output))
    parent = os.path.dirname(output) or "."
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.tmp-", dir=parent)
    except OSError as e:
        raise OutputError(f"cannot write {output}: {e.strerror or e}") from e
    files: dict[str, str] = {}
    try:
        pngs: dict[str, bytes] = {}
        for fid, f in rep.figures.items():
            png = figure_png(f)
            pngs[fid] = png
            with open(os.path.join(tmp, f"{fid}.png"), "wb") as fh:
                fh.write(png)
            with open(os.path.join(tmp, f"{fid}.json"), "w", encoding="utf-8") as fh:
                json.dump(f.to_dict(), fh, ensure_ascii=False, default=json_default)
            files[f"{fid}.png"] = f"{fid}.png"
            files[f"{fid}.json"] = f"{fid}.json"
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as fh:
            fh.write(rep.to_json())
        with open(os.path.join(tmp, "index.html"), "w", encoding="utf-8") as fh:
            fh.write(html_page(rep, pngs))
        files["report.json"] = "report.json"
        files["index.html"] = "index.html"
        os.chmod(tmp, 0o755)
        old = None
        if os.path.exists(output):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.old-", dir=parent)
            os.rmdir(old)
            os.rename(output, old)
        try:
            os.rename(tmp, output)
        except OSError:
            if old is not None:
                os.rename(old, output)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write {output}: {e.strerror or e}") from e
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {name: os.path.join(output, rel) for name, rel in files.items()}
