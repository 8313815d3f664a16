"""Headless Chromium for the tests that look at HTML pages (the report page,
the documentation site)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def find_chromium() -> str | None:
    """The first Chromium-like browser on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(browser: str, url: str, profile: Path, *extra: str, budget_ms: int = 5000) -> subprocess.CompletedProcess[str]:
    """Load ``url`` headless (``--virtual-time-budget`` lets its scripts run
    that long in virtual time) with the extra flags, e.g. ``--dump-dom``."""
    cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", f"--virtual-time-budget={budget_ms}",
           *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=180)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
