"""Wall time of one harness cell against the hand-written script making the same Paddle calls.

``python -m harness.bench.cell [--repeat N]`` (``nox -s bench``): runs the harness on
``resnet18`` in ``cpu_fp32`` once to learn the stage configs, then alternates harness and
plain-script runs N times each and prints both medians and their ratio (target <= 1.2x).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from . import ROOT, timed

PLAIN = Path(__file__).resolve().parents[1] / "cell" / "worker" / "plain_cell.py"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.cell")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--session", default="cpu_fp32")
    parser.add_argument("--mode", default="normal", help="train mode (normal, qat, pact, amp_o1...)")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        harness_cmd = [sys.executable, "-m", "harness", "run", "--session", args.session, "--model", "resnet18",
                       "--mode", args.mode, "--results", str(tmp / "results"), "--force", "--no-root-cause"]
        # Warm-up, the record whose stage configs the plain script replays, and the session's
        # hazard probe (once per Paddle version and session, kept: the timed runs measure cells).
        timed(harness_cmd, env)
        record = next((tmp / "results").rglob("resnet18.json"))
        harness_times, plain_times = [], []
        for i in range(args.repeat):
            # Without its checkpoint the harness trains again, as the plain script does.
            shutil.rmtree(tmp / "results" / "default" / "checkpoints", ignore_errors=True)
            harness_times.append(timed(harness_cmd, env))
            work = tmp / f"plain{i}"
            work.mkdir()
            plain_times.append(timed([sys.executable, str(PLAIN), str(record), str(work)], env))
        h, p = statistics.median(harness_times), statistics.median(plain_times)
        stages = [s["name"] for s in json.loads(record.read_text())["stages"]]
    print(f"cell {args.session}/{args.mode}/resnet18, stages {stages}, {args.repeat} runs each, interleaved")
    print(f"harness: median {h:.2f} s  ({', '.join(f'{t:.2f}' for t in harness_times)})")
    print(f"plain:   median {p:.2f} s  ({', '.join(f'{t:.2f}' for t in plain_times)})")
    print(f"ratio harness/plain: {h / p:.2f}x  (target <= 1.20x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
