"""Run the atheris fuzz targets in this directory, one after the other.

    python fuzz/run.py                          # every target, 30 s each
    python fuzz/run.py model_json encode --seconds 120
    FUZZ_STRICT=1 python fuzz/run.py            # also re-find the known bugs
    python fuzz/run.py interop --collect DIR    # record every distinct finding, keep going

Each target gets a corpus directory under ``--workdir`` (seeded on first use
from valid files the target writes itself) and libFuzzer flags: a per-input
timeout, an RSS limit, and its own address-space limit (``FUZZ_MEM_MB``).
A crash, a hang or an out-of-memory input is saved as
``WORKDIR/artifacts/<target>-crash-*`` (re-run one with
``python fuzz/fuzz_<target>.py FILE``). Exit status 1 when any target failed.
Prints one line per target: executions, seconds, executions per second.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = {
    # name: libFuzzer -max_len
    "model_json": 40_000,
    "pretokenize": 4096,
    "scanners": 4096,
    "encode": 4096,
    "interop": 80_000,
    "jsonl": 8192,
}


def run_target(name: str, seconds: int, workdir: Path, strict: bool, collect: str | None) -> dict:
    script = HERE / f"fuzz_{name}.py"
    corpus = workdir / "corpus" / name
    artifacts = workdir / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, RUST_BACKTRACE="0", FUZZ_TMP=str(workdir / "tmp"))
    if strict:
        env["FUZZ_STRICT"] = "1"
    if collect:
        env["FUZZ_COLLECT"] = str(Path(collect).resolve() / name)
    if not corpus.exists() or not any(corpus.iterdir()):
        corpus.mkdir(parents=True, exist_ok=True)
        seeded = subprocess.run([sys.executable, str(script), "--seeds", str(corpus)], env=env, capture_output=True, text=True)
        if seeded.returncode != 0:
            return {"target": name, "status": "seed-error", "detail": seeded.stderr.strip()[-500:]}
    cmd = [
        sys.executable, str(script), str(corpus),
        f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=3072", "-print_final_stats=1",
        f"-max_len={TARGETS[name]}", f"-artifact_prefix={artifacts}/{name}-",
    ]
    t = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 300)
    elapsed = time.monotonic() - t
    out = proc.stdout + proc.stderr
    if "not available: nothing to fuzz" in out:
        return {"target": name, "status": "skipped (bpeforge.interop importers absent)", "execs": 0, "seconds": elapsed}
    execs = re.search(r"stat::number_of_executed_units:\s*(\d+)", out)
    artifact = re.search(r"Test unit written to (\S+)", out)
    known = sorted(set(re.findall(r"known-bug input skipped: (BUG-\d+)", out)))
    status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
    detail = ""
    if proc.returncode != 0:
        lines = [line for line in out.splitlines() if not re.match(r"#\d+\s|INFO:|\s+at |\s*\d+: ", line)]
        detail = "\n".join(lines[-25:])
    return {
        "target": name, "status": status, "execs": int(execs.group(1)) if execs else 0, "seconds": elapsed,
        "artifact": artifact.group(1) if artifact else "", "known": ", ".join(known), "detail": detail,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("targets", nargs="*", help=f"some of {', '.join(TARGETS)} (default: all)")
    ap.add_argument("--seconds", type=int, default=30, help="fuzzing time per target (default 30)")
    ap.add_argument("--workdir", default=str(HERE / ".work"), help="corpora and crash artifacts (default fuzz/.work)")
    ap.add_argument("--strict", action="store_true", help="do not skip inputs that hit known, reported bugs")
    ap.add_argument("--collect", metavar="DIR", help="record each distinct finding in DIR and keep fuzzing")
    args = ap.parse_args()
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("atheris is not installed: pip install atheris", file=sys.stderr)
        return 2
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        ap.error(f"unknown target(s) {unknown}; choose from {list(TARGETS)}")
    workdir = Path(args.workdir)
    failed = False
    for name in args.targets or list(TARGETS):
        r = run_target(name, args.seconds, workdir, args.strict, args.collect)
        secs = r.get("seconds", 0.0)
        rate = r.get("execs", 0) / secs if secs else 0.0
        line = f"{name:12s} {r['status']:10s} {r.get('execs', 0):>9,d} execs in {secs:6.1f} s ({rate:,.0f}/s)"
        if r.get("known"):
            line += f"; inputs hitting known bugs skipped: {r['known']}"
        print(line, flush=True)
        if r.get("artifact"):
            print(f"    input saved: {r['artifact']}  (re-run: python {HERE / ('fuzz_' + name + '.py')} {r['artifact']})")
        if r["status"] not in ("ok",) and not r["status"].startswith("skipped"):
            failed = True
            if r.get("detail"):
                print("    " + r["detail"].replace("\n", "\n    "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
