"""Host side: run a TIPC plan without a shell, write ``results_python.log`` as TIPC does, and put
every intercepted ``jit.save`` through the harness's ladder.

Each command runs as its argv in its folder, its output in its own log, with
``harness/tipc/hook`` first on ``PYTHONPATH`` (the ``jit.save`` interception, nothing written into
the repository) and ``HARNESS_TIPC_CAPTURE`` naming the command's capture folder. A failing
command is recorded as TIPC records it and the chain goes on, as TIPC's does. When the chain is
over, each capture becomes one cell per requested session (model
``<model_name>.<trainer>_gpus_<gpu>_autocast_<x>``, mode from the trainer), run by the same
runner as the matrix's cells, so ``report``, ``regress`` and ``qualify`` read them like any other.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..matrix import Matrix
from ..running.runner import CellRuns, run_cells
from ..shared.vocab import QUANTIZED_MODES
from ..shared.records import atomic_write_json
from ..shared.spec import CellSpec
from ..shared.logs import log_tail
from ..shared.vocab import SETUP, Status
from .plan import DIFFERENCES, Command, CommandKind, Plan

HOOK = Path(__file__).resolve().parent / "hook"


@dataclasses.dataclass
class CommandResult:
    index: int
    command: Command
    status: Status        # pass (exit 0), fail (exit != 0) or skip
    returncode: Optional[int] = None
    seconds: float = 0.0
    captures: List[Path] = dataclasses.field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        return {"index": self.index, **self.command.as_dict(), "status": self.status.value,
                "returncode": self.returncode, "seconds": round(self.seconds, 3),
                "captures": [str(c) for c in self.captures]}


def describe(plan: Plan) -> str:
    """The dry-run text: where the plan comes from, what differs from TIPC, every argv in order."""
    lines = [
        f"TIPC plan: {plan.config.path} ({plan.config.layout} layout), mode {plan.mode}",
        f"  driver: {plan.driver} — mirrors {plan.driver.script}",
        f"  model_name: {plan.model_name}; python: config says {plan.config_python!r}, runs {plan.python}",
        f"  LOG_PATH: {plan.log_path} (results_python.log there)",
        "  deliberate differences from the bash driver:",
        *(f"    - {d}" for d in DIFFERENCES),
        "",
    ]
    for i, command in enumerate(plan.commands, 1):
        head = f"[{i}] {command.kind}" + (f" ({command.trainer})" if command.trainer else "")
        if command.env:
            head += " " + " ".join(f"{k}={v}" for k, v in command.env.items())
        head += f"  cwd={command.cwd}"
        lines.append(head)
        lines.append(f"    argv: {json.dumps(command.argv)}")
        lines.append(f"    log: {command.log}")
        if command.skip:
            lines.append(f"    skipped: {command.skip}")
        if command.literal:
            lines.append(f"    passed literally (bash's eval would interpret them): {json.dumps(command.literal)}")
    return "\n".join(lines)


def run_chain(plan: Plan, *, seed: int, shapes: Dict[str, List[int]], say=print) -> List[CommandResult]:
    """Every command of the plan in order; the chain goes on after a failure, as TIPC's does."""
    plan.log_path.mkdir(parents=True, exist_ok=True)
    status_log = plan.log_path / "results_python.log"
    status_log.write_text("", encoding="utf-8")
    captures = plan.log_path / "captures"
    base = dict(os.environ)
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HOOK), os.environ.get("PYTHONPATH")]))
    base["HARNESS_TIPC_SEED"] = str(seed)
    base["HARNESS_TIPC_SHAPES"] = json.dumps(shapes)
    results = []
    for index, command in enumerate(plan.commands, 1):
        if command.skip:
            say(f"[tipc] [{index}/{len(plan.commands)}] {command.kind} skipped: {command.skip}")
            results.append(CommandResult(index, command, Status.SKIP))
            continue
        folder = captures / f"{index:03d}-{command.kind}"
        env = dict(base, HARNESS_TIPC_CAPTURE=str(folder), **command.env)
        command.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        with open(command.log, "w", encoding="utf-8") as log:
            try:
                returncode = subprocess.run(command.argv, cwd=command.cwd, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
            except OSError as exc:  # no such program or folder: bash would say so and go on (127)
                log.write(f"{exc}\n")
                returncode = 127
        result = CommandResult(index, command, Status.PASS if returncode == 0 else Status.FAIL, returncode,
                               time.perf_counter() - started,
                               sorted(p.parent for p in folder.glob("*/meta.json")) if folder.exists() else [])
        line = plan.status_line(returncode == 0, command)
        with open(status_log, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        say(f"[tipc] [{index}/{len(plan.commands)}] {line}")
        results.append(result)
    return results


def capture_mode(command: Command, meta: Dict[str, Any]) -> "tuple[str, str]":
    """The cell's mode and why. The trainer's name (``pact_train``) claims a quantization-aware
    training, which loosens the consistency check to int8 tolerances; the claim holds only when the
    saved layer has quantizing sublayers. Without them the export is checked as ``normal``."""
    claimed = command.train_mode or "normal"
    quant_layers = meta.get("quant_layers") or []
    if claimed in QUANTIZED_MODES and not quant_layers and "quant_layers" in meta:
        return "normal", (f"trainer {command.trainer} names a quantization-aware training ({claimed}), but the saved "
                          f"layer has no quantizing sublayer: checked as normal, at fp32 tolerances")
    evidence = f"; quantizing sublayers: {', '.join(quant_layers)}" if quant_layers else ""
    return claimed, f"from trainer {command.trainer or '(none: whole_infer export)'}{evidence}"


def capture_cells(plan: Plan, results: List[CommandResult], matrix: Any, sessions: List[str]) -> List[CellSpec]:
    """One cell per (capture, session): the export's consistency check and staged alignment."""
    specs = []
    for result in results:
        for k, capture in enumerate(result.captures, 1):
            meta = json.loads((capture / "meta.json").read_text(encoding="utf-8"))
            name = f"{plan.model_name}.{result.command.stem or result.command.kind}"
            if len(result.captures) > 1:
                name += f".{k}"
            mode, mode_note = capture_mode(result.command, meta)
            for session in sessions:
                specs.append(matrix.capture_cell(session, meta["paddle"], mode, name, capture).replace(
                    tipc={"command": result.index, "kind": result.command.kind.value,
                          "text": result.command.text, "saved_to": meta.get("saved_to"),
                          "trainer": result.command.trainer, "mode_note": mode_note}))
    return specs


def run_tipc(plan: Plan, *, matrix: Matrix, sessions: List[str], results: Path, python: str,
             shapes: Dict[str, List[int]], runs: CellRuns) -> Dict[str, Any]:
    """The plan's command chain as TIPC runs it, then every export it intercepted as cells of
    ``sessions`` (redone always: a rerun of the chain made new exports)."""
    started = time.perf_counter()
    chain = run_chain(plan, seed=matrix.run["seed"], shapes=shapes, say=runs.progress)
    chain_s = time.perf_counter() - started
    specs = [spec.replace(root_cause=runs.root_cause) for spec in capture_cells(plan, chain, matrix, sessions)]
    t = time.perf_counter()
    records = run_cells(specs, results=results, runs=dataclasses.replace(runs, force=True)) if specs else []
    verify_s = time.perf_counter() - t
    summary = {
        "kind": "tipc",
        "config": str(plan.config.path), "layout": str(plan.config.layout), "driver": plan.driver.value,
        "mirrors": plan.driver.script, "mode": plan.mode, "model_name": plan.model_name,
        "python": python, "config_python": plan.config_python, "differences": list(DIFFERENCES),
        "commands": [r.as_dict() for r in chain],
        "cells": [{"id": r.id, "verdict": r.verdict.to_dict(), "tipc": r.cell.tipc} for r in records],
        "seconds": {"chain": round(chain_s, 3), "verification": round(verify_s, 3)},
    }
    atomic_write_json(plan.log_path / "tipc.json", summary)
    return summary


def unverified_exports(summary: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Export commands that succeeded without a ``jit.save`` the interception saw (e.g. an export
    through ``paddle.static.save_inference_model``): their model was not verified."""
    return [c for c in summary["commands"]
            if c["kind"] == CommandKind.EXPORT.value and c["status"] == Status.PASS.value and not c["captures"]]


def not_ok(summary: Dict[str, Any]) -> List[str]:
    """Why the chain is not a success, one line each (empty: it is). Every command that ran must
    have succeeded, every successful export must have been intercepted, every export's cells must
    pass (or skip a stage this machine cannot run) — and something must have been verified: a chain
    whose commands were all skipped, or that captured no export, verified nothing."""
    reasons: List[str] = []
    commands = summary["commands"]
    if commands and all(c["status"] == Status.SKIP.value for c in commands):
        why = sorted({c["skip"] for c in commands if c["skip"]})
        reasons.append(f"every command was skipped ({len(commands)}): nothing ran ({'; '.join(why)[:300]})")
    elif not summary["cells"]:
        reasons.append("no jit.save was intercepted: nothing verified")
    for c in commands:
        if c["status"] == Status.FAIL.value:
            tail = log_tail(Path(c["log"]), lines=4, max_chars=600) if c.get("log") else ""
            reasons.append(f"command {c['index']} ({c['kind']}) failed with exit {c['returncode']}"
                           + (f"; its log ends:\n      " + tail.replace("\n", "\n      ") if tail else ""))
    for command in unverified_exports(summary):
        reasons.append(f"export command {command['index']} succeeded but saved nothing through paddle.jit.save: "
                       f"not verified")

    for cell in summary["cells"]:
        verdict = cell["verdict"]
        status = Status.of(verdict["status"])
        if not (status is Status.PASS or (status is Status.SKIP and verdict.get("first_failing_stage") != SETUP)):
            reasons.append(f"export cell {cell['id']}: {status.value}"
                           + (f" at {verdict['first_failing_stage']}" if verdict.get("first_failing_stage") else ""))
    return reasons


def ok(summary: Dict[str, Any]) -> bool:
    return not not_ok(summary)


def table(summary: Dict[str, Any]) -> str:
    from tabulate import tabulate

    rows = [[c["index"], c["kind"], c["status"], c["returncode"] if c["returncode"] is not None else "",
             f"{c['seconds']:.1f}", len(c["captures"]), c["skip"] or c["log"]] for c in summary["commands"]]
    text = tabulate(rows, headers=["#", "command", "status", "exit", "s", "jit.save", "log / reason"])
    if summary["cells"]:
        cells = [[c["id"], c["verdict"]["status"], c["verdict"].get("first_failing_stage") or "",
                  (c["verdict"].get("message") or "")[:90]] for c in summary["cells"]]
        text += "\n\n" + tabulate(cells, headers=["export cell", "verdict", "first failing", "note"])
    reasons = not_ok(summary)
    if reasons:
        text += "\n\nnot a success:\n" + "\n".join(f"  - {r}" for r in reasons)
    seconds = summary["seconds"]
    text += f"\n\nchain {seconds['chain']:.1f} s, verification {seconds['verification']:.1f} s"
    return text
