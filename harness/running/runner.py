"""Host side: run the cells of one session at one Paddle version, crash-safe and resumable.

Each cell runs in a worker process (the cell side) started by a launcher (``harness.launch``):
the local Python of the session's environment, or a container. The worker reports through the
cell's journal; ``run_cell`` supervises it: a stage that outlives its timeout is killed and
recorded as ``timeout``, a dead worker is a ``crash`` of the stage the journal says it was in,
and the worker is restarted for the remaining stages. The cell's record is written atomically
once the cell is over, so a run killed at any moment loses no finished cell, and a rerun skips
cells that have a record.

Before the cells, the config hazards of the Paddle version are probed once for every session of
it (``harness.cell.worker.hazards``) and kept in ``versions/<paddle>/hazards-<device>.json``, with what the
probe was made for (the version's packages, the machine): findings about Paddle, not verdicts of
cells.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..shared.json_types import JsonObject
from .. import __version__
from . import provenance
from .prune import prune
from ..matrix import Matrix
from ..launch import INTERRUPT, Interrupted, Launcher, LocalLauncher, Outcome, run_child, supervise
from ..shared.protocol import ANALYSIS_PROGRESS, BUILD_IMPORTS
from ..shared.vocab import IMPORT_ORDER_MODES
from ..shared.errors import UserError
from ..shared.record_model import Analyses, CellRecord, StageRecord, Verdict
from ..shared.run_records import HazardProbe
from ..shared.tensor_diff import TensorDiff
from ..shared.spec import DEFAULTS, CellSpec
from ..shared.records import (Journal, atomic_write_json, cell_record_path, cell_work_dir,
                             load_record, write_record)
from ..shared.vocab import ANALYSIS_PREFIX, SETUP, Analysis, Status, verdict_status
from ..shared.runfolder import RunFolder

# A worker that keeps dying is restarted once per stage it could still be in, plus setup and the
# four analyses (diff, search, triage, reproducer); past that something outside the stages kills it, and
# the record says so.
EXTRA_LAUNCHES = 5
HAZARD_PROBE_TIMEOUT = DEFAULTS.hazard_probe_timeout


def _restart_cap(spec: CellSpec) -> int:
    return len(spec.stages) + EXTRA_LAUNCHES


def run_and_record(spec: CellSpec, results: Path, launcher: Launcher) -> CellRecord:
    """Run one cell, write its record, then free what its work folder no longer needs (``prune``)."""
    record = write_record(results, run_cell(spec, results, launcher))
    prune(results, spec.id, cell_work_dir(results, spec.id))
    return record


def run_cell(spec: CellSpec, results: Path, launcher: Launcher) -> CellRecord:
    """Run one cell to the end (through crashes and timeouts) and return its record."""
    started = time.time()
    work = cell_work_dir(results, spec.id)
    if work.exists():
        shutil.rmtree(work)  # a cell without a record is redone from scratch
    work.mkdir(parents=True)
    spec_path = work / "spec.json"
    atomic_write_json(spec_path, spec.to_dict())
    journal = Journal(work / "journal.jsonl")
    shared = [work] + [Path(path).parent for path in (spec.checkpoint, spec.program) if path]
    for folder in shared:
        folder.mkdir(parents=True, exist_ok=True)
        launcher.grant(folder)
    try:
        launches, cpu, preloaded = _supervise_cell(spec, work, spec_path, journal, launcher)
    finally:
        for folder in shared:
            launcher.reclaim(folder)
    return build_record(spec, journal.finished(), launches, time.time() - started, launcher, cpu, preloaded)


def _supervise_cell(spec: CellSpec, work: Path, spec_path: Path, journal: Journal,
                    launcher: Launcher) -> Tuple[int, Optional[float], bool]:
    """Start the worker, restart it after each crash or timeout; the number of launches, their
    CPU seconds (None when a launch's is unknown: a fresh interpreter, a container) and whether the
    first forked from a server that had imported the model's suite."""
    timeout = float(spec.stage_timeout)
    args = ["cell", "--spec", launcher.path(spec_path), "--work", launcher.path(work)]

    def overdue() -> bool:
        running = journal.running()
        return bool(running) and time.time() - running[1] > timeout

    launches, cpu, preloaded = 0, 0.0, False
    while True:
        launches += 1
        outcome = supervise(launcher, args, work / "worker.log", overdue, fresh=_imports_before_paddle(spec),
                            preload=spec.preload_key)
        preloaded = preloaded or (launches == 1 and outcome.preloaded is not None)
        _learn_imports(launcher, work)
        cpu = None if cpu is None or outcome.cpu_seconds is None else cpu + outcome.cpu_seconds
        if outcome.interrupted:
            raise Interrupted(spec.id)  # no record: the cell is redone from scratch next time
        if outcome.ok:
            break
        if outcome.user_error:
            raise UserError(outcome.user_error)
        running = journal.running()
        if running is None:
            if SETUP in journal.finished():
                break  # died outside any stage after setup: the record shows what finished
            stage = SETUP  # died before the journal said anything (interpreter start, imports)
            journal.start(stage)
        else:
            stage = running[0]
        ended = _ended_badly(outcome, stage, timeout, work)
        if stage == SETUP and journal.phase_of(SETUP):
            ended["phase"] = journal.phase_of(SETUP)  # where in the setup it died: lite training, export
        journal.finish(stage, ended)
        if (stage == SETUP and not _training_death_to_reproduce(spec, ended)) or launches >= _restart_cap(spec):
            break
        # Restart: the worker resumes after the stage that killed it, and exits at once when
        # nothing is left.
    return launches, (round(cpu, 3) if cpu is not None else None), preloaded


def _learn_imports(launcher: Launcher, work: Path) -> None:
    """What the worker's build imported (``BUILD_IMPORTS``), handed to a launcher that preloads."""
    learn = getattr(launcher, "learn_imports", None)
    path = work / BUILD_IMPORTS
    if learn is None or not path.is_file():
        return
    try:
        said = json.loads(path.read_text(encoding="utf-8"))
        learn(said.get("preload_key"), [str(m) for m in said.get("modules") or []])
    except (OSError, ValueError, AttributeError):
        pass


def _training_death_to_reproduce(spec: CellSpec, ended: JsonObject) -> bool:
    """A worker killed in the lite training of a plainly trained model is started once more: it
    writes and runs the training's reproducer (``reproducer.training_death``) and exits."""
    return (ended.get("status") is Status.CRASH and ended.get("phase") == "train" and spec.root_cause
            and spec.mode == "normal" and not spec.tipc)


def _ended_badly(outcome: Outcome, stage: str, timeout: float, work: Path) -> JsonObject:
    if outcome.timed_out:
        result: JsonObject = {"status": Status.TIMEOUT, "message": f"stage {stage} ran over {timeout:g} s and was killed"}
    else:
        result = outcome.describe()
    if stage.startswith(ANALYSIS_PREFIX):
        result.update(_progress_left(work, stage[len(ANALYSIS_PREFIX):]))
    return result


def _progress_left(work: Path, step: str) -> JsonObject:
    """What an analysis step that died with its worker had done (``cell/progress.py``): the stage it
    analysed and the trials that had ended, kept in its record; the stage unknown (None) without it."""
    lines = []
    try:
        lines = [json.loads(ln) for ln in (work / ANALYSIS_PROGRESS).read_text(encoding="utf-8").splitlines() if ln.strip()]
    except (OSError, ValueError):
        pass
    if not lines or lines[0].get("step") != step:
        return {"stage": None}
    trials = lines[1:]
    said: JsonObject = {"stage": lines[0].get("stage"), "trials_before": trials}
    if trials:
        last = trials[-1]
        said["ended_before"] = (f"{len(trials)} trial(s) had ended before it (kept in the record); the last: "
                                f"{' + '.join(last.get('members') or []) or 'the model'} ({last.get('note', '')[:120]})")
    return said


def build_record(spec: CellSpec, finished: Dict[str, JsonObject], launches: int,
                 seconds: float, launcher: Launcher, cpu_seconds: Optional[float] = None,
                 preloaded: bool = False) -> CellRecord:
    setup = finished.get(SETUP, {"status": Status.CRASH, "message": "the worker never reported"})
    stages = [dict(result, name=name) for name, result in finished.items()
              if name != SETUP and not name.startswith(ANALYSIS_PREFIX)]
    analysis = {name[len(ANALYSIS_PREFIX):]: result for name, result in finished.items()
                if name.startswith(ANALYSIS_PREFIX)}
    setup_status = Status.of(setup.get("status"))
    for name in spec.stages:
        if name not in finished:
            message = f"setup {setup_status}" if setup_status is not Status.PASS else "not reached"
            stages.append({"name": name, "status": Status.SKIP, "message": message})
    _render_tensor_report(analysis)
    setup_record = StageRecord.from_dict({k: v for k, v in setup.items() if k not in ("paddle", "machine")}, SETUP)
    stage_records = tuple(StageRecord.from_dict(s) for s in stages)
    return CellRecord(
        id=spec.id, cell=spec, setup=setup_record, stages=stage_records,
        verdict=verdict_of(setup_record, stage_records, spec.session_stage), analysis=Analyses.from_dict(analysis),
        # A setup whose worker died says no Paddle: the worker that wrote its reproducer does.
        paddle=setup.get("paddle") or analysis.get(Analysis.REPRODUCER.value, {}).get("paddle") or {},
        machine=_machine(setup, stages),
        inputs={"seed": spec.seed, "arrays": setup.get("inputs")}, harness=__version__, launches=launches,
        launcher=launcher.kind, runner=launcher.describe(fresh=_imports_before_paddle(spec), preload=spec.preload_key,
                                                                  preloaded=preloaded),
        seconds=round(seconds, 3), finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        cpu_seconds=cpu_seconds)


def _machine(setup: JsonObject, stages: List[JsonObject]) -> JsonObject:
    """The machine the cell side described (from inside its container); the host's own view,
    said so, when the worker died before describing it. With the math threads the stages used."""
    from ..shared.machine import describe

    machine = dict(setup.get("machine") or describe(None, seen_from="host (the worker never reported)"))
    machine["threads"] = sorted({s["config"]["threads"] for s in stages
                                 if isinstance((s.get("config") or {}).get("threads"), int)})
    return machine


def _render_tensor_report(analysis: Dict[str, JsonObject]) -> None:
    """The cell side leaves the per-tensor diff as JSON; its tables and plot render here."""
    diff = analysis.get(Analysis.DIFF.value)
    if not diff or not diff.get("result") or not Path(diff["result"]).exists():
        return
    from ..report import tensors as tensor_report

    result = TensorDiff.from_dict(json.loads(Path(diff["result"]).read_text(encoding="utf-8")))
    out = Path(diff["result"]).parent
    try:
        diff["files"] = tensor_report.write_all(out, result, diff.get("title", "per-tensor diff"))
    except ImportError as exc:  # openpyxl / matplotlib missing on this host: keep what renders
        diff["files"] = tensor_report.write_all(out, result, diff.get("title", ""), ["csv", "md"])
        diff["missing"] = str(exc)
    diff["summary"] = tensor_report.summary_line(result)


def verdict_of(setup: StageRecord, stages: Sequence[StageRecord], session_stage: Optional[str] = None) -> Verdict:
    """The first blocking stage in ladder order; else vacuous; else pass; else skip (noop and
    skip stages never make a pass). A cell whose session's own stage (``session_stage``: the
    backend at the session's precision) was skipped did not run its session: ``skip`` with that
    stage's reason, never ``pass`` on the strength of the stages before it."""
    from ..shared.notes import stage_note

    if not setup.passed:
        return Verdict(setup.status, SETUP, setup.message)
    status = verdict_status(s.status for s in stages)
    if status is None:
        return Verdict(Status.SKIP, None, next((s.message for s in stages if s.message), ""))
    own = next((s for s in stages if s.name == session_stage), None)
    if status is Status.PASS and own is not None and own.status is Status.SKIP:
        return Verdict(Status.SKIP, None, f"{own.name} skipped: {own.message}" if own.message else f"{own.name} skipped",
                       skipped_stage=own.name)
    if status is Status.PASS:
        # The stage's verdict in the model's terms (tokens, classes, detections): beside the status, never deciding it.
        return Verdict(Status.PASS, None, "", task=own.task if own is not None else None)
    first = next(s for s in stages if s.status is status)
    return Verdict(status, first.name, stage_note(first), task=first.task)


def hazards_path(results: Path, version: str, device: str) -> Path:
    return RunFolder(Path(results)).hazards(version, device)


def hazards_made_for(matrix: Matrix, version: str) -> JsonObject:
    """What a version's hazard probe depends on: the version's packages and the machine's numeric
    key and environment (``shared.machine``)."""
    from ..shared.machine import describe

    machine = describe(None, seen_from="host")
    return {"packages": matrix.version(version).get("packages"), "machine": machine["key"], "env": machine["env"]}


def kept_probe(path: Path) -> Optional[HazardProbe]:
    """The probe a run folder keeps, or None (none yet, or a file that is not one)."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        return HazardProbe.from_dict(kept) if isinstance(kept, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def probe_hazards(matrix: Matrix, device: str, version: str, results: Path, launcher: Launcher,
                  say: Callable[[str], Any] = print) -> HazardProbe:
    """The config hazards of one Paddle version on this machine, every backend's at once: probed
    by the first session of that version to need them, reused by the others. The probe says what
    it was made for (the version's packages, the machine's numeric key and environment) and is
    made again when that changes."""
    made_for = hazards_made_for(matrix, version)
    path = hazards_path(results, version, device)
    kept = kept_probe(path)
    if kept is not None and kept.made_for == made_for:
        return kept
    if kept is not None:
        say(f"[harness] hazards of Paddle {version}: probed again (made for {kept.made_for}, now {made_for})")
    path.parent.mkdir(parents=True, exist_ok=True)
    launcher.grant(path.parent)
    started = time.time()
    try:
        outcome = run_child(launcher, ["hazards", "--device", device, "--out", launcher.path(path)],
                            path.with_suffix(".log"), timeout=HAZARD_PROBE_TIMEOUT)
    finally:
        launcher.reclaim(path.parent)
    if outcome.interrupted:
        raise Interrupted("hazard probe")
    if outcome.ok and path.exists():
        probe = HazardProbe.from_dict(json.loads(path.read_text(encoding="utf-8")))
    else:
        probe = HazardProbe(paddle=version, device=device, ended=outcome.describe() if not outcome.timed_out else
                            {"status": Status.TIMEOUT, "message": f"the hazard probe ran over {HAZARD_PROBE_TIMEOUT} s"})
    probe = dataclasses.replace(probe, made_for=made_for, cpu_seconds=outcome.cpu_seconds,
                                seconds=round(time.time() - started, 3))
    atomic_write_json(path, probe.to_dict())
    return probe


def default_jobs(reference_threads: int) -> int:
    """As many cells at once as the cores allow at the cells' pinned thread count. Numbers do not
    depend on it: every predictor's math threads are set by its config, never by the machine."""
    return max(1, (os.cpu_count() or 1) // max(1, reference_threads))


def _imports_before_paddle(spec: CellSpec) -> bool:
    """The cell's worker must import a package before Paddle (its mode trains with PaddleSlim), so
    it needs an interpreter of its own, not a fork of one that imported Paddle. A captured export
    (TIPC) is not trained here: its mode only names how the repository trained it."""
    return spec.mode in IMPORT_ORDER_MODES and not spec.captured


@dataclasses.dataclass(frozen=True)
class CellRuns:
    """How a run's cells run: where (the launcher), how many at once, whether recorded cells are
    redone, whether failures get their root cause, and where progress lines go."""

    launcher: Optional[Launcher] = None
    jobs: int = 1
    force: bool = False
    root_cause: bool = True
    progress: Callable[[str], Any] = print
    # A folder of the run's shared weights made elsewhere (a first CI job), copied in where the run
    # has none yet: every shard then computes with the same weights.
    checkpoints: Optional[Path] = None


def run_session(matrix: Matrix, session: str, version: str, *, results: Path, runs: CellRuns = CellRuns(),
                modes: Optional[List[str]] = None, models: Optional[List[str]] = None) -> List[CellRecord]:
    """Every cell of one session at one Paddle version, up to ``runs.jobs`` at once; returns the
    records (old and new) in the matrix's order."""
    if runs.checkpoints is not None:
        seed_checkpoints(Path(runs.checkpoints), RunFolder(Path(results)).checkpoints, runs.progress)
    cells = session_cells(matrix, session, version, results, runs.root_cause, modes=modes, models=models)
    return run_cells(cells, results=results, runs=runs)


def session_cells(matrix: Matrix, session: str, version: str, results: Path, root_cause: bool = True, *,
                  modes: Optional[List[str]] = None, models: Optional[List[str]] = None) -> List[CellSpec]:
    """The specs of one session's cells at one Paddle version, as this run runs them."""
    # One version-neutral checkpoint per (mode, model) and run: every session and Paddle version
    # of the run computes with the same weights.
    # One setup per (version, mode, model): the sessions reading the same program share its export
    # (``HARNESS_SHARED_SETUP=0``: each cell makes its own, as before; the benchmark's baseline).
    folder = RunFolder(Path(results))
    share = os.environ.get("HARNESS_SHARED_SETUP", "1") != "0"
    return [spec.replace(checkpoint=str(folder.checkpoint(spec.mode, spec.model_name)),
                         program=str(folder.program(spec.paddle, spec.mode, spec.model_name)) if share else None,
                         root_cause=root_cause) for spec in matrix.expand(session, version, modes=modes, models=models)]


def seed_checkpoints(source: Path, target: Path, progress=print) -> int:
    """Copy ``<mode>/<model>.npz`` files from ``source`` into the run's checkpoint folder, never
    over one the run already has. A cell still retrains a checkpoint made for another factory,
    seed or shape (its meta says so), and then ``regress`` flags the weights as different."""
    copied = 0
    for path in sorted(source.glob("*/*.npz")):
        destination = target / path.relative_to(source)
        if destination.exists():
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        tmp = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
        shutil.copyfile(path, tmp)
        os.replace(tmp, destination)
        copied += 1
    progress(f"[harness] checkpoints: {copied} taken from {source}")
    return copied


def recorded_or_todo(cells: List[CellSpec], results: Path, force: bool,
                     progress: Callable[[str], Any] = print) -> Tuple[Dict[str, CellRecord], List[CellSpec]]:
    """The cells whose records still describe them (by id), and the specs of the others (with
    what produced them), each said in one line: recorded earlier, or redone and why."""
    records: Dict[str, CellRecord] = {}
    todo = []
    for spec in cells:
        spec = spec.replace(produced_by=provenance.digest(spec))
        path = cell_record_path(results, spec.id)
        record = load_record(path) if path.exists() and not force else None
        why = provenance.why_redo(record, spec.produced_by) if record is not None else None
        if record is not None and why is None:
            progress(f"[harness] {spec.id}: {record.verdict.status} (recorded earlier; --force reruns)")
            records[spec.id] = record
        else:
            if why:
                progress(f"[harness] {spec.id}: redone: {why}")
            if force and spec.program:  # redone means made anew: not read from the program's last making
                shutil.rmtree(spec.program, ignore_errors=True)
            todo.append(spec)
    return records, todo


def run_cells(cells: List[CellSpec], *, results: Path, runs: CellRuns = CellRuns()) -> List[CellRecord]:
    """Cells from their specs, up to ``runs.jobs`` at once, each record written as it ends; cells
    with a record are skipped unless ``runs.force``. The records (old and new) in the cells' order."""
    launcher = runs.launcher or LocalLauncher()
    jobs, progress = runs.jobs, runs.progress
    records, todo = recorded_or_todo(cells, results, runs.force, progress)
    board = Progress(len(cells), len(records), results, progress)

    def one(spec: CellSpec) -> CellRecord:
        board.started(spec.id)
        record = run_and_record(spec, results, launcher)
        board.finished(spec.id, record)
        return record

    with board, concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(one, spec) for spec in todo]
        try:
            for future in concurrent.futures.as_completed(futures):
                record = future.result()
                records[record.id] = record
        except BaseException:
            # Bad input or an interrupt: every running child is stopped (its cell writes no record:
            # it is redone next time), finished cells keep their records.
            INTERRUPT.set()
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)
            raise
        finally:
            INTERRUPT.clear()
    return [records[spec.id] for spec in cells if spec.id in records]


class Progress:
    """Where a run is, in lines that read well in a CI log: one per finished cell (done/total,
    elapsed), and every ``HEARTBEAT_SECONDS`` one naming the running cells and their stages (read
    from their journals)."""

    HEARTBEAT_SECONDS = 30.0

    def __init__(self, total: int, done: int, results: Path, say=print):
        self.total, self.done, self.results, self.say = total, done, results, say
        self.started_at = time.monotonic()
        self.running: Dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=1)

    def started(self, cell_id: str) -> None:
        with self._lock:
            self.running[cell_id] = time.monotonic()
        self.say(f"[harness] {cell_id}: running")

    def finished(self, cell_id: str, record: CellRecord) -> None:
        self.ended(cell_id, f"{record.verdict.status} in {record.seconds:.1f} s")

    def ended(self, key: str, said: str, remarkable: bool = True) -> None:
        """One finished job (a cell, or the pool's probes and loads) and what it came to; every
        line is kept here (``remarkable``: whether a one-line display would keep it too)."""
        with self._lock:
            self.running.pop(key, None)
            self.done += 1
            done = self.done
        self.say(f"[harness] [{done}/{self.total}, {time.monotonic() - self.started_at:.0f} s] {key}: {said}")

    def _beat(self) -> None:
        while not self._stop.wait(self.HEARTBEAT_SECONDS):
            with self._lock:
                running = dict(self.running)
                done = self.done
            stages = []
            for cell_id in running:
                current = Journal(cell_work_dir(self.results, cell_id) / "journal.jsonl").running()
                stages.append(f"{cell_id} at {current[0] if current else 'start'}")
            self.say(f"[harness] [{done}/{self.total}, {time.monotonic() - self.started_at:.0f} s] running: "
                     + ("; ".join(stages) or "-"))
