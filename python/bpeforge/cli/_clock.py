"""When a command started, on the ``time.perf_counter`` clock, so that the
time a summary prints is the one its user waited."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence


def command_started(argv: Sequence[str] | None) -> float:
    """The start of the command ``main(argv)`` runs: the process's start
    when it runs the process's own command line (``argv`` None, as the
    ``bpeforge`` script and ``python -m bpeforge`` do) and the system says
    when that was, so Python's start-up and imports count too; otherwise now
    (a call from Python starts now)."""
    now = time.perf_counter()
    age = _process_age() if argv is None else None
    return now - age if age is not None else now


def _process_age() -> float | None:
    """Seconds since this process started (Linux: ``/proc/self/stat``, in
    clock ticks since boot; at most one tick too many), or None where the
    system does not say."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return age if 0 <= age < 24 * 3600 else None
