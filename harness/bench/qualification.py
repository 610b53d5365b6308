"""What qualifying a release over the zoo costs on this machine (``nox -s bench``).

``python -m harness.bench.qualification [--model M ...] [--run DIR]``: the one command
(``python -m harness qualification`` over the four CPU sessions) on a slice of the zoo, side by side
with the same chain typed step by step (``pool``, ``releases``, ``workarounds``, ``report``,
``qualify``) on the same slice into another run folder: the ratio of their wall times is what the one
command adds. Printed too: the pool's wall time against its compute floor (the cells' own recorded
seconds over the pool's slots: what a perfect scheduler would take), and — with ``--run`` naming a
whole-zoo run folder — that run's pool floor, so the slice's measured ratio gives the whole zoo's time
on this machine's cores without running it again (a fresh whole zoo takes more than two hours on two).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

from . import ROOT, timed

SESSIONS = ("cpu_fp32", "cpu_onednn_fp32", "cpu_ort_fp32", "cpu_openvino_fp32")
# Two of the zoo's lighter models from two families: their cells finish in a minute or two each.
SLICE = ("sci_ns_pinn", "clas_mobilenetv3_large")
SLOTS = 2


def default_paddle() -> str:
    """The Paddle the one command qualifies (the matrix's default)."""
    from ..matrix import load

    return load(ROOT / "matrix" / "default.toml").run["default_paddle"]


def cell_seconds(run: Path) -> List[float]:
    """Each recorded cell's own seconds (its setup, stages and analysis), from the run's records."""
    found: List[float] = []
    for path in run.rglob("*.json"):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and "verdict" in record and "cell" in record:
            seconds = record.get("seconds")
            if isinstance(seconds, (int, float)):
                found.append(float(seconds))
    return found


def _chain(models: Tuple[str, ...], results: Path, envs: str, version: str) -> List[Tuple[str, List[str]]]:
    common = ["--results", str(results), "--run", "zoo"]
    pool = ["pool", *common, "--envs", envs, *[a for s in SESSIONS for a in ("--session", s)],
            *[a for m in models for a in ("--model", m)]]
    return [("pool", pool), ("releases", ["releases", *common, "--envs", envs]),
            ("workarounds", ["workarounds", *common, "--envs", envs]), ("report", ["report", *common]),
            ("qualify", ["qualify", *common, *[a for s in SESSIONS for a in ("--scope", f"{s}@{version}")],
                         *[a for m in models for a in ("--model", m)]])]


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.qualification")
    parser.add_argument("--model", action="append", default=[], help=f"the slice (default: {', '.join(SLICE)})")
    parser.add_argument("--run", type=Path, help="a whole-zoo run folder whose cells' seconds give the zoo's floor")
    parser.add_argument("--envs", default=str(ROOT / ".nox"))
    args = parser.parse_args(argv)
    models = tuple(args.model) or SLICE
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    harness = [sys.executable, "-m", "harness"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def one_command(k: int) -> float:
            return timed([*harness, "qualification", "--results", str(root / f"one{k}"), "--run", "zoo", "--envs",
                          args.envs, "--out", str(root / f"pub{k}"), *[a for s in SESSIONS for a in ("--session", s)],
                          *[a for m in models for a in ("--model", m)]], env)

        def typed(k: int) -> List[Tuple[str, float]]:
            steps = []
            for name, step in _chain(models, root / f"steps{k}", args.envs, default_paddle()):
                started = time.perf_counter()
                timed([*harness, *step], env)
                steps.append((name, time.perf_counter() - started))
            return steps

        typed(0)  # warm-up, not counted: the first pool makes its environments and compiles their bytecode
        wholes, chains = [], []
        for k in (1, 2):  # alternated, so neither side always runs on what the other warmed
            wholes.append(one_command(k))
            chains.append(typed(k))
        whole = statistics.median(wholes)
        typed_total = statistics.median(sum(s for _, s in c) for c in chains)
        cells = cell_seconds(root / "one1" / "zoo")
        pool = statistics.median(c[0][1] for c in chains)
        print(f"slice: {', '.join(models)} over {len(SESSIONS)} sessions ({len(cells)} cells), after a warm-up run")
        for k, chain in enumerate(chains, 1):
            print(f"  run {k}: one command {wholes[k - 1]:.0f} s; typed {', '.join(f'{n} {s:.0f} s' for n, s in chain)}")
        print(f"one command {whole:.0f} s, the steps typed {typed_total:.0f} s (medians of 2 alternated): "
              f"ratio {whole / typed_total:.2f}")
        if cells:
            floor = sum(cells) / SLOTS
            print(f"pool {pool:.0f} s against its compute floor {floor:.0f} s ({sum(cells):.0f} cell-seconds over "
                  f"{SLOTS} slots): ratio {pool / floor:.2f}")
    if args.run:
        zoo = cell_seconds(args.run)
        if zoo:
            print(f"the whole zoo ({args.run}, {len(zoo)} cells): {sum(zoo):.0f} cell-seconds, a pool floor of "
                  f"{sum(zoo) / SLOTS / 60:.0f} min on {SLOTS} slots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
