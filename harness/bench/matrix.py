"""The full CPU matrix three ways side by side: its compute floor, the one job pool, and nox.

``python -m harness.bench.matrix [--tag cpu] [--jobs N]`` (or ``nox -s bench_matrix``) first makes
every environment both ways (``nox --install-only -t cpu`` and ``nox -s matrix -- --tag cpu
--envs-only``: installing wheels measures the registry, not us), then runs, cold (results
folders that do not exist yet):

1. ``nox -s matrix -- --tag cpu``: every session's cells, probes and loads in one job pool;
2. ``nox -t cpu``: the sessions one after another, as before;
3. ``nox -s matrix -- --tag cpu`` again, with nothing changed: every cell recorded earlier.

and prints, side by side: the **compute floor** (the CPU seconds of every cell, portability load
and hazard probe the pool ran, from the fork server's ``wait4``, divided by the cores: no
schedule of that work on these cores can end sooner), the pool's wall time, nox's, their ratios
to the floor, the rerun's wall time, and whether the two cold runs recorded the same thing cell by
cell (verdict, every stage's status, every output's max abs and max rel, op digest, dtypes;
each portability load's status). Targets (issue 31): the pool within 1.3x the floor, the rerun
under 15 s, records identical. Takes about 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

from . import ROOT

RUN = "bench"
POOL_TARGET = 1.3  # the pool's wall time over the compute floor
RERUN_TARGET = 15.0  # seconds


def _nox(args: List[str], log: Path) -> Tuple[float, str]:
    """Wall seconds and stdout of one nox command; exit 1 (a failing finding) is a result."""
    cmd = [sys.executable, "-m", "nox", *args]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout + proc.stderr


def fingerprint(folder: Path) -> Dict[str, Any]:
    """What must not depend on how the matrix was scheduled: every record's verdict, ladder and
    numbers, and every portability load's status."""
    from ..shared.records import load_records

    prints: Dict[str, Any] = {}
    for record in load_records(folder):
        stages = []
        for stage in record.stages:
            outputs = {name: (o.max_abs, o.max_rel, str(o.status)) for name, o in stage.outputs.items()}
            stages.append((stage.name, str(stage.status), outputs, stage.evidence.get("op_sequence_sha1"),
                           stage.evidence.get("output_dtypes")))
        prints[record.id] = (str(record.verdict.status), record.verdict.first_failing_stage, stages)
    for path in sorted(folder.rglob("portability/**/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") == "portability":
            prints[str(path.relative_to(folder))] = data["status"]
    return prints


def compare(a: Dict[str, Any], b: Dict[str, Any]) -> list:
    differences = [f"only in one run: {key}" for key in sorted(set(a) ^ set(b))]
    differences += [f"differs: {key}" for key in sorted(set(a) & set(b)) if a[key] != b[key]]
    return differences


def cpu_seconds(folder: Path) -> Tuple[float, int, int]:
    """The CPU seconds of every cell, load and hazard probe of a run folder; how many there were,
    and how many had no CPU figure (a fresh interpreter: their wall time is counted instead)."""
    from ..shared.records import load_records

    total, count, unknown = 0.0, 0, 0
    items = [(r.cpu_seconds, r.seconds) for r in load_records(folder)]
    for path in [*folder.rglob("portability/**/*.json"), *folder.glob("versions/*/hazards-*.json")]:
        data = json.loads(path.read_text(encoding="utf-8"))
        items.append((data.get("cpu_seconds"), data.get("seconds")))
    for cpu, wall in items:
        count += 1
        if cpu is None:
            unknown += 1
            cpu = wall or 0.0
        total += cpu
    return total, count, unknown


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.matrix")
    parser.add_argument("--tag", default="cpu", help="the matrix: the sessions `nox -t TAG` selects (default: cpu)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="jobs at once, both ways (default: cores)")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/harness-bench-matrix"))
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"),
                        help="only compare two run folders made elsewhere, record by record")
    args = parser.parse_args(argv)
    if args.compare:
        a, b = (fingerprint(folder) for folder in args.compare)
        differences = compare(a, b) if a else ["no records in the first folder"]
        print(f"{len(a)} and {len(b)} entries (records and portability loads)")
        print("identical record by record" if not differences else "\n".join(differences[:40]))
        return 0 if not differences else 1
    shutil.rmtree(args.scratch, ignore_errors=True)
    args.scratch.mkdir(parents=True)
    log = args.scratch / "bench.log"
    pool_results, nox_results = args.scratch / "pool", args.scratch / "nox"
    common = ["--jobs", str(args.jobs), "--run", RUN]
    made, _ = _nox(["--install-only", "-t", args.tag], log)
    made_pool, _ = _nox(["-s", "matrix", "--", "--tag", args.tag, "--envs-only", "--results", str(pool_results)], log)
    print(f"environments made (not timed below): nox's {made:.0f} s, the pool's {made_pool:.0f} s", flush=True)
    pool, _ = _nox(["-s", "matrix", "--", "--tag", args.tag, *common, "--results", str(pool_results)], log)
    print(f"nox -s matrix -- --tag {args.tag}: {pool:.1f} s", flush=True)
    sessions, _ = _nox(["-t", args.tag, "--", *common, "--results", str(nox_results)], log)
    print(f"nox -t {args.tag}: {sessions:.1f} s", flush=True)
    rerun, said = _nox(["-s", "matrix", "--", "--tag", args.tag, *common, "--results", str(pool_results)], log)
    started = said.count(": running")
    cpu, count, unknown = cpu_seconds(pool_results / RUN)
    cores = os.cpu_count() or 1
    floor = cpu / cores
    print(f"\n{count} jobs (cells, portability loads, hazard probes); {cores} cores; "
          f"{unknown} without a CPU figure (their wall time counted)")
    rows = [("compute floor (sum of CPU / cores)", floor, 1.0), (f"nox -s matrix -- --tag {args.tag}", pool, pool / floor),
            (f"nox -t {args.tag}", sessions, sessions / floor)]
    for label, seconds, ratio in rows:
        print(f"  {label:<40} {seconds:8.1f} s   {ratio:5.2f}x the floor")
    print(f"  {'rerun, nothing changed':<40} {rerun:8.1f} s   ({started} job(s) started)")
    differences = compare(fingerprint(pool_results / RUN), fingerprint(nox_results / RUN))
    print(f"pool within {POOL_TARGET}x the floor: {'met' if pool <= POOL_TARGET * floor else 'missed'}; "
          f"rerun under {RERUN_TARGET:g} s with no job started: {'met' if rerun < RERUN_TARGET and not started else 'missed'}")
    print("records identical cell by cell (pool vs nox -t)" if not differences else "\n".join(differences[:40]))
    return 0 if not differences else 1


if __name__ == "__main__":
    sys.exit(main())
