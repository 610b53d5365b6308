"""The full CPU matrix (``nox -t cpu``) with ``--jobs N`` against one job, cold and warm, side by side.

``python -m harness.bench.matrix [--jobs N] [--scratch DIR]`` (or ``nox -s bench_matrix``) runs,
in this order: one job cold, N jobs cold, one job warm, N jobs warm, then N jobs resumed. *Cold*
is a results folder that does not exist yet (the run trains its checkpoints, then runs every cell
and portability load); *warm* is the same command with ``--force`` into the folder its cold run
left (every cell and load runs again; the run's checkpoints and the PACT import probes are
reused); *resumed* is the command again without ``--force`` (every recorded cell is kept: the
cost of rerunning a finished run). The virtualenvs are installed beforehand by nox in every
case: installing wheels measures the registry, not us.

It prints the wall time of each, the ratio of N jobs to one job, and whether the verdicts and
numbers are identical record by record (status, per-stage status, every output's max abs and
max rel, op sequence digest and output dtypes; portability status). Target (issue 13): cold with
the default jobs in 5 minutes or less on 2 cores, verdicts identical either way. Takes ~10 min.
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
from typing import Any, Dict

from . import ROOT

RUN = "bench"
TARGET_SECONDS = 300


def run_matrix(results: Path, jobs: int, *extra: str) -> float:
    """Wall seconds of ``nox -t cpu`` into ``results``; exit 1 (a failing finding) is a result, not an error."""
    cmd = [sys.executable, "-m", "nox", "-t", "cpu", "--", "--jobs", str(jobs), "--results", str(results), "--run", RUN, *extra]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    with open(results.parent / f"{results.name}.log", "a", encoding="utf-8") as log:
        log.write(proc.stdout + proc.stderr)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return elapsed


def fingerprint(folder: Path) -> Dict[str, Any]:
    """What must not depend on --jobs: every record's verdict, ladder and numbers."""
    from ..shared.records import load_records

    prints: Dict[str, Any] = {}
    for record in load_records(folder):
        stages = []
        for stage in record["stages"]:
            outputs = {name: (o.get("max_abs"), o.get("max_rel"), o.get("status")) for name, o in (stage.get("outputs") or {}).items()}
            evidence = stage.get("evidence") or {}
            stages.append((stage["name"], stage["status"], outputs, evidence.get("op_sequence_sha1"), evidence.get("output_dtypes")))
        prints[record["id"]] = (record["verdict"]["status"], record["verdict"].get("first_failing_stage"), stages)
    for path in sorted(folder.rglob("portability/**/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") == "portability":
            prints[str(path.relative_to(folder))] = data["status"]
    return prints


def compare(a: Dict[str, Any], b: Dict[str, Any]) -> list:
    differences = [f"only in one run: {key}" for key in sorted(set(a) ^ set(b))]
    differences += [f"differs: {key}" for key in sorted(set(a) & set(b)) if a[key] != b[key]]
    return differences


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.matrix")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="the N run against one job (default: cores)")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/harness-bench-matrix"))
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"),
                        help="only compare two run folders made elsewhere (e.g. `nox -t cpu` before and after a "
                             "change): every record's verdict, ladder, numbers, op digests and dtypes")
    args = parser.parse_args(argv)
    if args.compare:
        a, b = (fingerprint(folder) for folder in args.compare)
        differences = compare(a, b) if a else ["no records in the first folder"]
        print(f"{len(a)} and {len(b)} entries (records and portability loads)")
        print("identical record by record" if not differences else "\n".join(differences[:40]))
        return 0 if not differences else 1
    shutil.rmtree(args.scratch, ignore_errors=True)
    args.scratch.mkdir(parents=True)
    folders = {1: args.scratch / "jobs1", args.jobs: args.scratch / f"jobs{args.jobs}"}
    seconds: Dict[str, float] = {}
    prints: Dict[str, Dict[str, Any]] = {}
    for warmth in ("cold", "warm"):
        for jobs, folder in folders.items():
            label = f"{warmth} jobs {jobs}"
            seconds[label] = run_matrix(folder, jobs, *(("--force",) if warmth == "warm" else ()))
            prints[label] = fingerprint(folder / RUN)  # a warm run overwrites its cold run's records
            print(f"{label}: {seconds[label]:.1f} s", flush=True)
    resumed = run_matrix(folders[args.jobs], args.jobs)
    print(f"resumed jobs {args.jobs} (every cell recorded already): {resumed:.1f} s", flush=True)
    first = prints["cold jobs 1"]
    cells = sum(1 for key in first if not key.startswith("portability"))
    print(f"{cells} cells + {len(first) - cells} portability loads per run")
    for warmth in ("cold", "warm"):
        one, many = seconds[f"{warmth} jobs 1"], seconds[f"{warmth} jobs {args.jobs}"]
        print(f"{warmth}: jobs {args.jobs} {many:.1f} s vs jobs 1 {one:.1f} s -> {many / one:.2f}x")
    met = seconds[f"cold jobs {args.jobs}"] <= TARGET_SECONDS
    print(f"target: cold with jobs {args.jobs} <= {TARGET_SECONDS} s: {'met' if met else 'missed'}")
    differences = [] if first else ["no records: the runs produced nothing to compare"]
    for label, other in prints.items():
        differences += [f"{label} vs cold jobs 1: {line}" for line in compare(first, other)]
    print("verdicts and numbers identical record by record in all four runs" if not differences else "\n".join(differences[:40]))
    return 0 if not differences else 1

if __name__ == "__main__":
    sys.exit(main())
