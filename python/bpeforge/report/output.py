"""Writing a report directory atomically, and the JSON encoding of its numbers."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from ..errors import OutputError

if TYPE_CHECKING:  # pragma: no cover
    from .data import Report


def json_default(o: Any) -> Any:
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def write_directory(rep: Report, output: str, overwrite: bool) -> dict[str, str]:
    output = os.path.abspath(output)
    parent = os.path.dirname(output) or "."
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
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.tmp-", dir=parent)
    except OSError as e:
        raise OutputError(f"cannot write {output}: {e.strerror or e}") from e
    files: dict[str, str] = {}
    try:
        pngs: dict[str, bytes] = {}
        for fid, f in rep.figures.items():
            png = f.png()
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
            fh.write(rep.html(pngs))
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
