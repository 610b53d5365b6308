"""Benchmarks, run side by side against a hand-written baseline (``nox -s bench``).

Never timed assertions in tests: each benchmark runs the harness and a minimal script that
makes the same Paddle calls, interleaved, and prints the ratio of their medians.
"""

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def timed(cmd, env) -> float:
    """Wall time of one command run from the repository; a failing command ends the benchmark."""
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return elapsed
