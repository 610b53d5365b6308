"""Host side: run the cells of one session at one Paddle version, crash-safe and resumable.

Each cell runs in a worker process (the cell side) started by a *launcher*: the local
Python of the session's environment, or a container. The worker reports through the
cell's journal; this module watches it, kills a stage that outlives its timeout, records
a dead worker as ``crash`` of the stage it was in, and restarts the worker for the
remaining stages. The cell's record is written atomically once the cell is over, so a run
killed at any moment loses no finished cell, and a rerun skips cells that have a record.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from . import __version__
from .errors import UserError
from .records import RECORD_SCHEMA, WORKAROUND_SEP, Journal, workaround_label, atomic_write_json, cell_record_path, cell_work_dir, load_record
from .report import worst_output_note

SETUP = "setup"
ANALYSIS = "analysis:"  # root-cause entries of the journal: shown, never part of the verdict
REPO_ROOT = Path(__file__).resolve().parent.parent
POLL_SECONDS = 0.05


class LocalLauncher:
    """Runs the cell side with a Python of this machine (the session's venv by default)."""

    kind = "local"

    def __init__(self, python: Optional[str] = None):
        self.python = python or sys.executable

    def command(self, spec_path: Path, work: Path) -> List[str]:
        return [self.python, "-m", "harness", "cell", "--spec", str(spec_path), "--work", str(work)]

    def start(self, spec_path: Path, work: Path, log) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        # Paddle reads this at import; the predictor's own thread count is set per stage.
        env.setdefault("OMP_NUM_THREADS", "1")
        return subprocess.Popen(
            self.command(spec_path, work),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # so a timeout kills the worker's whole process group
        )


def signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def log_tail(path: Path, lines: int = 12, max_chars: int = 2000) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept)[-max_chars:]


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def run_cell(spec: Dict[str, Any], results: Path, launcher: Any) -> Dict[str, Any]:
    """Run one cell to the end (through crashes and timeouts) and return its record."""
    started = time.time()
    work = cell_work_dir(results, spec["id"])
    if work.exists():
        shutil.rmtree(work)  # a cell without a record is redone from scratch
    work.mkdir(parents=True)
    spec_path = work / "spec.json"
    atomic_write_json(spec_path, spec)
    journal = Journal(work / "journal.jsonl")
    timeout = float(spec["stage_timeout"])
    launches = 0
    with open(work / "worker.log", "ab") as log:
        while True:
            launches += 1
            proc = launcher.start(spec_path, work, log)
            timed_out = None
            while proc.poll() is None:
                running = journal.running()
                if running and time.time() - running[1] > timeout:
                    timed_out = running[0]
                    _kill_group(proc)
                    break
                time.sleep(POLL_SECONDS)
            code = proc.returncode
            if code == 0 and not timed_out:
                break
            finished = journal.finished()
            user_error = finished.get(SETUP, {}).get("user_error")
            if user_error:
                raise UserError(user_error)
            running = journal.running()
            if running is None:
                # Died outside any stage (interpreter start-up, import of the harness...).
                if SETUP in finished:
                    break  # nothing to blame a stage for; the record shows what finished
                stage = SETUP
                journal.start(stage)
            else:
                stage = running[0]
            log.flush()
            if timed_out:
                result = {"status": "timeout", "message": f"stage {stage} ran over {timeout:g} s and was killed"}
            else:
                result = {
                    "status": "crash",
                    "message": f"worker died with {signal_name(code)}",
                    "signal": signal_name(code),
                    "returncode": code,
                    "stderr_tail": log_tail(work / "worker.log"),
                }
            journal.finish(stage, result)
            if WORKAROUND_SEP in stage:
                result["workaround"] = workaround_label(stage)
            if stage.startswith(ANALYSIS):
                result["stage"] = "?"
            if stage == SETUP or launches > 3 * len(spec["stages"]) + 2:
                break
            # Restart the worker: it resumes after the stage that killed it, and exits
            # at once when nothing is left.
    return build_record(spec, journal.finished(), launches, time.time() - started, launcher)


def build_record(spec: Dict[str, Any], finished: Dict[str, Dict[str, Any]], launches: int,
                 seconds: float, launcher: Any) -> Dict[str, Any]:
    setup = finished.get(SETUP, {"status": "crash", "message": "the worker never reported"})
    # Journal order: each stage followed by its workaround variant, if one ran.
    stages = [dict(result, name=name) for name, result in finished.items()
              if name != SETUP and not name.startswith(ANALYSIS)]
    analysis = {name[len(ANALYSIS):]: result for name, result in finished.items() if name.startswith(ANALYSIS)}
    for name in spec["stages"]:
        if name in finished:
            continue
        if setup.get("status") != "pass":
            stages.append({"name": name, "status": "skip", "message": f"setup {setup.get('status')}"})
        else:
            stages.append({"name": name, "status": "skip", "message": "not reached"})
    verdict = verdict_of(setup, stages)
    return {
        "schema": RECORD_SCHEMA,
        "harness": __version__,
        "id": spec["id"],
        "cell": spec,
        "paddle": setup.get("paddle"),
        "inputs": {"seed": spec["seed"], "arrays": setup.get("inputs")},
        "setup": {k: v for k, v in setup.items() if k != "paddle"},
        "stages": stages,
        "verdict": verdict,
        "analysis": analysis,
        "launches": launches,
        "launcher": launcher.kind,
        "seconds": round(seconds, 3),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def verdict_of(setup: Dict[str, Any], stages: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    if setup.get("status") != "pass":
        return {"status": setup.get("status", "crash"), "first_failing_stage": SETUP,
                "message": setup.get("message", "")}
    for stage in stages:
        if stage.get("workaround"):
            continue  # shown beside the finding, never counted
        if stage["status"] not in ("pass", "skip"):
            return {"status": stage["status"], "first_failing_stage": stage["name"],
                    "message": stage.get("message") or worst_output_note(stage.get("worst") or {})}
    if any(s["status"] == "pass" for s in stages):
        return {"status": "pass", "first_failing_stage": None, "message": ""}
    return {"status": "skip", "first_failing_stage": None,
            "message": next((s.get("message", "") for s in stages if s.get("message")), "")}


def run_session(matrix: Any, session: str, version: str, *, results: Path,
                modes: Optional[List[str]] = None, models: Optional[List[str]] = None,
                force: bool = False, launcher: Any = None,
                progress=print) -> List[Dict[str, Any]]:
    """Every cell of one session at one Paddle version; returns the records (old and new)."""
    cells = matrix.expand(session, version, modes=modes, models=models)
    launcher = launcher or LocalLauncher()
    records = []
    for spec in cells:
        # One version-neutral checkpoint per (mode, model) and run: every session and
        # Paddle version of the run computes with the same weights.
        spec["checkpoint"] = str(Path(results) / "checkpoints" / spec["mode"] / f"{spec['model']['name']}.npz")
        path = cell_record_path(results, spec["id"])
        if path.exists() and not force:
            record = load_record(path)
            if record is not None:
                progress(f"[harness] {spec['id']}: {record['verdict']['status']} (recorded earlier; --force reruns)")
                records.append(record)
                continue
        progress(f"[harness] {spec['id']}: running")
        record = run_cell(spec, results, launcher)
        atomic_write_json(path, record)
        progress(f"[harness] {spec['id']}: {record['verdict']['status']} in {record['seconds']:.1f} s")
        records.append(record)
    return records
