"""What the precision floor costs: its seconds against the stage it judges, per cell.

``python -m harness.bench.floor [--model M ...]`` (part of ``nox -s bench``): each model's
``cpu_onednn_bf16`` cell (no root cause) is run once; from its record, the floor's seconds (the
rounded model in a child, at every shape the stage runs) against the bf16 stage's own (its
build, its run and its other shapes). On a CPU without bf16 the stage is a skip and nothing is
measured: said, with the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from . import ROOT, timed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.floor")
    parser.add_argument("--model", action="append", default=None)
    args = parser.parse_args(argv)
    models = args.model or ["mobilenet_v3_small", "resnet18", "encoder"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            results = Path(tmp) / model
            timed([sys.executable, "-m", "harness", "run", "--session", "cpu_onednn_bf16", "--model", model,
                   "--results", str(results), "--force", "--no-root-cause"], env)
            record = json.loads(next(results.rglob(f"{model}.json")).read_text())
            stage = next(s for s in record["stages"] if s["name"] == "onednn_bf16")
            if "floor" not in stage:
                print(f"{model}: onednn_bf16 {stage['status']} ({str(stage.get('message'))[:100]}): no floor measured "
                      f"on {record['machine'].get('cpu', 'this CPU')}")
                continue
            timing = stage.get("timings") or {}
            own = timing.get("build", 0.0) + timing.get("run", 0.0) + timing.get("shapes", 0.0)
            floor = stage["floor"].get("seconds") or 0.0
            shapes = len(stage["floor"].get("floor") or {})
            verdict = (stage.get("floor_verdict") or {}).get("words", stage["floor"].get("why", ""))
            print(f"{model}: floor {floor:.2f} s at {shapes} shape(s) vs the stage's {own:.2f} s -> "
                  f"{floor / own:.2f}x; {verdict}" if own else f"{model}: floor {floor:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
