"""The zoo's qualification pool, done once against done per cell (``nox -s bench``).

``python -m harness.bench.zoo_pool [--model M ...] [--envs DIR]``: the pool over the four fp32 CPU
sessions on a slice of the zoo (four models of three families by default), run side by
side two ways on the same machine, alternated after a warm-up that makes the environments:

* **once**: as the harness runs now — a family's suite imported once per environment (the fork
  server preloads what its first build imported) and one setup per program (the sessions' cells
  reuse the first cell's export, inputs and dygraph outputs, and the stages and analyses every
  session runs alike);
* **per cell**: as before (``HARNESS_PRELOAD=0 HARNESS_SHARED_SETUP=0``): every cell imports its
  suite, builds, loads the weights, exports, runs dygraph and its whole ladder itself.

Printed: each side's wall time (medians), their ratio, and each side against its **work floor** —
the cells' own recorded seconds over the pool's two slots, the cost of the work itself with a perfect
scheduler and nothing waiting (for *once* that is one import per family and environment, one setup
per program, and every session's stages and analyses). Where the seconds of a cell go (setup, stages,
analyses) is summed per side from the records, so a change of either shows where it came from.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

from . import ROOT, timed

SESSIONS = ("cpu_fp32", "cpu_onednn_fp32", "cpu_ort_fp32", "cpu_openvino_fp32")
# Two models of one family (the second is what the preload serves; it fails in a session's own
# stage), a model whose baseline fails in every session alike (its analysis is what sharing saves
# most), and one of a third family; eight minutes a pair on two cores.
SLICE = ("clas_mobilenetv3_large", "clas_resnet50_vd", "rt_detr", "sci_ns_pinn")
SLOTS = 2
PER_CELL = {"HARNESS_PRELOAD": "0", "HARNESS_SHARED_SETUP": "0"}


def spent(run: Path) -> Dict[str, float]:
    """Seconds of the run's cells: in all, in setups (and of those, reused ones), and their count."""
    out = {"cells": 0.0, "seconds": 0.0, "setup": 0.0, "reused": 0.0}
    for path in run.rglob("*.json"):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not (isinstance(record, dict) and "verdict" in record and "cell" in record):
            continue
        timings = (record.get("setup") or {}).get("timings") or {}
        out["cells"] += 1
        out["seconds"] += float(record.get("seconds") or 0.0)
        out["setup"] += sum(float(v) for v in timings.values() if isinstance(v, (int, float)))
        out["reused"] += 1 if "reused" in timings else 0
    return out


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.zoo_pool")
    parser.add_argument("--model", action="append", default=[], help=f"the slice (default: {', '.join(SLICE)})")
    parser.add_argument("--envs", default=str(ROOT / ".nox"))
    parser.add_argument("--repeat", type=int, default=1, help="pairs of alternated runs after the warm-up")
    args = parser.parse_args(argv)
    models = tuple(args.model) or SLICE
    base = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def pool(name: str, env: Dict[str, str], *extra: str) -> float:
            return timed([sys.executable, "-m", "harness", "pool", "--results", str(root / name), "--run", "zoo",
                          "--envs", args.envs, "--jobs", str(SLOTS), *[a for s in SESSIONS for a in ("--session", s)],
                          *[a for m in models for a in ("--model", m)], *extra], env)

        pool("warm-up", base, "--envs-only")  # not counted: makes the environments, compiles their bytecode
        walls: Dict[str, List[float]] = {"once": [], "per cell": []}
        for k in range(args.repeat):  # alternated, so neither side always runs on what the other warmed
            walls["per cell"].append(pool(f"per-cell{k}", dict(base, **PER_CELL)))
            walls["once"].append(pool(f"once{k}", base))
        print(f"zoo slice: {', '.join(models)} over {len(SESSIONS)} sessions, {SLOTS} slots, after a warm-up run")
        for side, folder in (("per cell", "per-cell0"), ("once", "once0")):
            wall = statistics.median(walls[side])
            work = spent(root / folder / "zoo")
            floor = work["seconds"] / SLOTS
            print(f"  {side:8}: pool {wall:.0f} s; {work['cells']:.0f} cells, {work['seconds']:.0f} cell-seconds "
                  f"(setups {work['setup']:.0f} s, {work['reused']:.0f} reused); work floor {floor:.0f} s; "
                  f"pool / floor {wall / floor:.2f}")
        once, per_cell = statistics.median(walls["once"]), statistics.median(walls["per cell"])
        print(f"once against per cell: {once:.0f} s / {per_cell:.0f} s = {once / per_cell:.2f} "
              f"(per cell's floor against once's: "
              f"{spent(root / 'per-cell0' / 'zoo')['seconds'] / max(spent(root / 'once0' / 'zoo')['seconds'], 1):.2f}x the work)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
