"""What shape variants cost: one cell with its shapes against the same cell at one shape.

``python -m harness.bench.shapes [--repeat N] [--model M]`` (part of ``nox -s bench``): the same
harness cell (``cpu_onednn_fp32``, no root cause) run with ``derive_shapes`` on (the primary shape
plus k−1 variants) and off, interleaved, medians compared. Each stage builds its predictor once
and runs it per shape, so the target is at most 1 + 0.3·(k−1) times the one-shape cell.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from . import ROOT, timed
from ..shared.vocab import Status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.shapes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--session", default="cpu_onednn_fp32")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    matrix_text = (ROOT / "matrix" / "default.toml").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        matrices = {}
        for name, derive in (("shapes", "true"), ("one", "false")):
            path = tmp / f"{name}.toml"
            path.write_text(matrix_text.replace("derive_shapes = true", f"derive_shapes = {derive}"), encoding="utf-8")
            matrices[name] = path

        def command(name: str):
            return [sys.executable, "-m", "harness", "run", "--matrix", str(matrices[name]), "--session", args.session,
                    "--model", args.model, "--results", str(tmp / name), "--force", "--no-root-cause"]

        for name in matrices:
            timed(command(name), env)  # warm-up: checkpoint, hazard probe, fork server's caches
        times = {name: [] for name in matrices}
        for _ in range(args.repeat):
            for name in matrices:
                times[name].append(timed(command(name), env))
        record = json.loads(next((tmp / "shapes").rglob(f"{args.model}.json")).read_text())
        k = 1 + sum(1 for v in record["setup"].get("shape_variants") or [] if Status.of(v["status"]) is Status.PASS)
    many, one = statistics.median(times["shapes"]), statistics.median(times["one"])
    target = 1 + 0.3 * (k - 1)
    print(f"cell {args.session}/{args.model}: {k} shapes {many:.2f} s vs 1 shape {one:.2f} s -> {many / one:.2f}x "
          f"(target <= {target:.2f}x: {'met' if many / one <= target else 'missed'})")
    # Per stage, from the record: the predictor's build and first run against the other shapes' runs.
    for stage in record["stages"]:
        timing = stage.get("timings") or {}
        if "shapes" in timing:
            base = timing["build"] + timing["run"]
            print(f"  {stage['name']}: build {timing['build']:.3f} s + run {timing['run']:.3f} s, other shapes "
                  f"{timing['shapes']:.3f} s -> {(base + timing['shapes']) / base:.2f}x of one shape")
    return 0


if __name__ == "__main__":
    sys.exit(main())
