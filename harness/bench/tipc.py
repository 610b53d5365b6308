"""Wall time of a TIPC chain through the harness against a bash driver running the same commands.

``python -m harness.bench.tipc [--repeat N] [--repo R --config C]`` (``nox -s bench``): plans the
chain once (by default the tests' tiny repository, Step6 layout, ``lite_train_lite_infer``), then
alternates, N times each:

* **bash**: one bash script doing what TIPC's driver does for every command that runs here —
  ``eval "<TIPC's command string>"`` (so the shell redirects into the command's log), then
  ``status_check``'s ``echo -e ... | tee -a results_python.log``;
* **harness**: ``harness.tipc.run.run_chain``: the same argv lists without a shell, the same
  logs and status lines, with the ``jit.save`` interception on every command.

It prints both medians and their ratio (target <= 1.1x), and, separately, the verification's own
time: the capture inside the export (dygraph reference, copy; from the captures' records) and the
cells that check each export (predictor builds and runs), which TIPC never did.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import ROOT


def bash_driver(plan, status_log: Path) -> str:
    """A bash script running the plan's commands as TIPC's driver runs them."""
    lines = ["#!/bin/bash", f"status_log={shlex.quote(str(status_log))}"]
    for command in plan.commands:
        if command.skip:
            continue
        lines.append(f"cd {shlex.quote(str(command.cwd))}")
        lines.append(f"mkdir -p {shlex.quote(str(command.log.parent))}")
        if command.text.rstrip().endswith("2>&1"):
            lines.append(f"eval {shlex.quote(command.text)}")
        else:  # TIPC lets training print to the terminal; the harness logs it: log it here too
            lines.append(f"eval {shlex.quote(command.text)} > {shlex.quote(str(command.log))} 2>&1")
        ok = plan.status_line(True, command)
        failed = plan.status_line(False, command)
        lines.append(f"if [ $? -eq 0 ]; then echo {shlex.quote(ok)} | tee -a \"$status_log\"; "
                     f"else echo {shlex.quote(failed)} | tee -a \"$status_log\"; fi")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from ..running.hostenv import gpu_absence_reason
    from ..matrix import load
    from ..tipc import config as tipc_config
    from ..tipc import plan as tipc_plan
    from ..tipc import run as tipc_run

    parser = argparse.ArgumentParser(prog="python -m harness.bench.tipc")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=ROOT / "tests" / "data" / "tipc_repo")
    parser.add_argument("--config", default="test_tipc/configs/tiny/train_infer_python.txt")
    parser.add_argument("--mode", default="lite_train_lite_infer")
    args = parser.parse_args(argv)
    config = tipc_config.read(args.repo / args.config)
    matrix = load(ROOT / "matrix" / "default.toml")
    bash_times, harness_times, capture_s, verify_s = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for i in range(args.repeat):
            def fresh(name):
                return tipc_plan.plan(config, args.mode, repo=args.repo.resolve(), python=sys.executable,
                                      log_root=tmp / f"{name}{i}", gpu_missing=gpu_absence_reason())
            script = tmp / f"driver{i}.sh"
            plan = fresh("bash")
            plan.log_path.mkdir(parents=True)
            script.write_text(bash_driver(plan, plan.log_path / "results_python.log"))
            started = time.perf_counter()
            subprocess.run(["bash", str(script)], check=True, capture_output=True)
            bash_times.append(time.perf_counter() - started)

            plan = fresh("harness")
            started = time.perf_counter()
            results = tipc_run.run_chain(plan, seed=matrix.run["seed"], shapes={}, say=lambda _: None)
            harness_times.append(time.perf_counter() - started)
            assert all(r.status.value != "fail" for r in results), [r.as_dict() for r in results if r.status.value == "fail"]
            captures = [c for r in results for c in r.captures]
            capture_s.append(sum(json.loads((c / "meta.json").read_text())["seconds"] for c in captures))
            specs = tipc_run.capture_cells(plan, results, matrix, ["cpu_fp32"])
            started = time.perf_counter()
            from ..launch import LocalLauncher
            from ..running.runner import CellRuns, run_cells

            run_cells(specs, results=tmp / f"cells{i}",
                      runs=CellRuns(launcher=LocalLauncher(sys.executable), force=True, progress=lambda _: None))
            verify_s.append(time.perf_counter() - started)
    b, h = statistics.median(bash_times), statistics.median(harness_times)
    ran = sum(1 for c in plan.commands if not c.skip)
    print(f"TIPC chain {args.config} {args.mode}: {ran} commands, {args.repeat} runs each, interleaved")
    print(f"bash driver:   median {b:.2f} s  ({', '.join(f'{t:.2f}' for t in bash_times)})")
    print(f"harness chain: median {h:.2f} s  ({', '.join(f'{t:.2f}' for t in harness_times)})")
    print(f"ratio harness/bash: {h / b:.2f}x  (target <= 1.10x)")
    print(f"verification, separately: capture inside the exports median {statistics.median(capture_s):.2f} s "
          f"(included in the harness chain), export cells median {statistics.median(verify_s):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
