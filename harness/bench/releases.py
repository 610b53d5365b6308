"""What placing a cause among the releases costs (``nox -s bench``).

``python -m harness.bench.releases [--releases 2.6.2,3.0.0,...] [--envs DIR]``: two cells that fail at
the default Paddle (the built-in ``upsample`` under ``cpu_onednn_fp32``: oneDNN's interpolate error;
``gated`` under ``cpu_fp32``: an ``if`` on a Parameter that ``constant_folding_pass`` breaks) and one
whose reproducer needs its suite at every release (the zoo's ``uvdoc`` under ``cpu_fp32``: PaddleX's
model dies in its lite training at 3.3; its script builds PaddleX's classes, so each release's
environment holds the family's packages too), then ``python -m harness releases`` on their run twice.
Printed: the environments each run made (the second must make none), the source reproducer's runs per
cause against the bound ⌈log2 R⌉ + 8 for the R releases it was placed among (bisection and its
confirmations, not every release), each run's seconds and their ratio (second / first), and where each
cause was placed. Exit 1 when the second run made an environment or a cause ran over the bound."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List

from . import ROOT, timed

CELLS = (("cpu_onednn_fp32", "upsample"), ("cpu_fp32", "gated"), ("cpu_fp32", "uvdoc"))


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.releases")
    parser.add_argument("--releases", default="", help="comma-separated (default: every release the index serves)")
    parser.add_argument("--envs", default=str(ROOT / ".nox"), help="where release environments are kept")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        for session, model in CELLS:
            timed([sys.executable, "-m", "harness", "run", "--session", session, "--model", model,
                   "--results", str(results)], env)
        command = [sys.executable, "-m", "harness", "releases", "--results", str(results), "--envs", args.envs,
                   *(["--releases", args.releases] if args.releases else [])]
        seconds, made = [], []
        for _ in range(2):
            started = time.perf_counter()
            proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
            seconds.append(time.perf_counter() - started)
            if proc.returncode != 0:
                raise SystemExit(f"releases failed ({proc.returncode}): {proc.stderr[-2000:]}")
            made.append(proc.stdout.count("making the environment"))
        over = _spans(results)
    print(f"releases: first run {seconds[0]:.1f} s, {made[0]} environment(s) made; second run {seconds[1]:.1f} s, "
          f"{made[1]} made -> {seconds[1] / seconds[0]:.2f}x")
    return 0 if made[1] == 0 and not over else 1


def _spans(results: Path) -> int:
    """Each placed cause's reproducer runs against ⌈log2 R⌉ + 8; how many ran over."""
    over = 0
    for path in sorted((results / "default").rglob("*.json")):
        record = json.loads(path.read_text())
        span = (record.get("analysis") or {}).get("releases") if isinstance(record, dict) else None
        if not span:
            continue
        runs = sum(t["runs"] for t in span["tried"])
        bound = math.ceil(math.log2(max(len(span["releases"]), 1))) + 8
        over += runs > bound
        print(f"{record['id']}: {span['outcome']}: first bad {span['first_bad']}, last good {span['last_good']}, "
              f"fixed in {span['fixed_in']}; {runs} reproducer runs (bound {bound}) at {len(span['tried'])} of "
              f"{len(span['releases'])} releases (bisection, {span['confirmations']} runs each side)")
    return over


if __name__ == "__main__":
    sys.exit(main())
