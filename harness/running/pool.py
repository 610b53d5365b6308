"""Host side: the cells of many sessions and Paddle versions in one job pool.

``python -m harness pool --tag cpu`` (``nox -s matrix -- --tag cpu``) runs what ``nox -t cpu``
runs: every cell of every session the tags select, the hazard probes of their Paddle versions and
the portability loads, and records them exactly where and as ``nox -t cpu`` would. What differs
is how: ``nox -t cpu`` runs its sessions one after another, each a new interpreter that imports
Paddle, probes the version's hazards and runs its four cells with two jobs while a core waits
for the slowest (measured: 5 m 39 s for cells worth 269 s). Here one scheduler keeps ``--jobs``
busy across sessions and versions:

* **one environment per distinct requirement list** (``harness.running.envs``), and one fork server per
  environment, kept warm for the whole run (Paddle imported once per environment);
* **longest first**: each job's time is what the same job took before (the run's records, and
  ``.nox/pool-times.json`` across runs and results folders), else the mean of the same model's
  cells elsewhere;
* **the same weights as nox**: the run's shared checkpoint of a (mode, model) is trained by the
  cell ``nox -t`` would run first, and the other cells of that model wait for it; a portability
  load waits for the cell whose export it loads;
* **per-version work once**: the hazards of a Paddle version are probed once for all its
  sessions (``runner.probe_hazards``);
* one progress stream, and one merged report at the end (``report.md``, ``.html``, ``.xml``).

When to use which: ``nox -s matrix -- --tag cpu`` for the whole matrix on one machine (fastest,
one report); ``nox -t cpu`` (or ``nox -s <session>``) for one session, for sessions in containers
(``--runner docker``, GPU sessions) and for CI shards, which split the matrix by session.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .envs import ensure
from ..matrix import ZOO, Matrix
from ..matrix.sessions import (Environment, NoxSession, SessionKind, cell_environment, nox_sessions, select, zoo_modes,
                               zoo_modes_left_out)
from ..shared.backends import shared_step
from ..shared.errors import UserError
from .runner import Progress
from .scheduler import Job, JobKind, Scheduler, estimate, read_times, write_times
from ..shared.record_model import CellRecord
from ..shared.run_records import HazardProbe, PortabilityLoad

# What a job produced: a cell's record, a version's hazard probe, a load (None: its cell did not export).
Produced = Union[CellRecord, HazardProbe, PortabilityLoad, None]
from ..shared.records import cell_record_path, load_record
from ..shared.spec import CellSpec
from ..shared.runfolder import RunFolder

@dataclasses.dataclass
class Plan:
    """What a pool run will do: its jobs, the environment each needs, what it leaves to nox."""

    jobs: List[Job]
    environments: Dict[str, Environment]
    labels: Dict[str, str]  # key -> folder label (paddle version)
    cells: List[CellSpec]  # every selected cell, recorded or not, in nox's order
    recorded: Dict[str, CellRecord]
    left_out: List[str]  # one line per selected session the pool does not run, and why
    loaders: List[str]  # the Paddle versions whose portability loads were selected


def plan(matrix: Matrix, selected: List[NoxSession], results: Path, options: "PoolOptions",
         say: Callable[[str], Any] = print) -> Plan:
    from .hostenv import gpu_absence_reason
    from .runner import hazards_made_for, hazards_path, kept_probe, recorded_or_todo, session_cells

    environments: Dict[str, Environment] = {}
    labels: Dict[str, str] = {}
    cells: List[CellSpec] = []
    env_of: Dict[str, str] = {}  # cell id -> environment key
    left_out: List[str] = []
    loaders: Dict[str, str] = {}  # a portability session's Paddle version -> its environment
    versions: Dict[str, str] = {}  # version -> the environment its hazards are probed in
    for nox_session in selected:
        session = matrix.sessions.get(nox_session.session)
        if nox_session.kind is SessionKind.TIPC:
            left_out.append(f"{nox_session.name}: needs a repository and a config (`nox -s {nox_session.name} -- --repo ...`)")
            continue
        if session.device == "gpu":
            left_out.append(f"{nox_session.name}: {gpu_absence_reason() or 'runs in its container: nox -s ' + nox_session.name}")
            continue
        if session.runner != "venv":
            left_out.append(f"{nox_session.name}: its runner is {session.runner}; run `nox -s {nox_session.name}`")
            continue
        # The session's environment carries no mode's packages: a cell of a mode that needs some
        # (PACT's PaddleSlim, with its numpy<2) gets its own beside it (``_environment_of``).
        env = cell_environment(matrix, nox_session, None, options.models)
        environments[env.key], labels[env.key] = env, nox_session.version
        if nox_session.kind is SessionKind.PORTABILITY:
            loaders[nox_session.version] = env.key
            continue
        versions.setdefault(nox_session.version, env.key)
        left_out += zoo_modes_left_out(matrix, nox_session, options.modes)
        models = options.models or ([ZOO] if nox_session.zoo else None)  # a model asked for is the model run
        for spec in session_cells(matrix, nox_session.session, nox_session.version, results, options.root_cause,
                                  modes=zoo_modes(matrix, nox_session, options.modes), models=models):
            if spec.id not in env_of:
                cells.append(spec)
                env_of[spec.id] = _environment_of(matrix, nox_session, options, spec, env, environments, labels)
    recorded, todo = recorded_or_todo(cells, results, options.force, say)
    # A version's probe still made for this version and machine is no job (runner.probe_hazards).
    jobs = [Job(f"hazards/{version}/cpu", JobKind.HAZARDS, key, -1, version=version) for version, key in versions.items()
            if _made_for(kept_probe(hazards_path(results, version, "cpu"))) != hazards_made_for(matrix, version)]
    order = {spec.id: i for i, spec in enumerate(cells)}
    jobs += [Job(spec.id, JobKind.CELL, env_of[spec.id], order[spec.id], spec=spec, version=spec.paddle,
                 shared_step=shared_step(spec.session.device.value, spec.session.backend, spec.session.precision.value))
             for spec in todo]
    jobs += _loads(loaders, cells, results, options)
    return Plan(jobs, environments, labels, cells, recorded, left_out, list(loaders))


def _environment_of(matrix: Matrix, nox_session: NoxSession, options: "PoolOptions", spec: CellSpec,
                    session_env: Environment, environments: Dict[str, Environment], labels: Dict[str, str]) -> str:
    """The environment a cell runs in: its session's, or — its model's family ``apart`` (pins that
    fight the other families'), or its train mode needing packages — one made beside it, with that
    family alone and that mode's packages: a normal cell never runs beside PaddleSlim's pins."""
    apart = matrix.apart(matrix.family_of(spec.model_name))
    if not apart and not matrix.mode_packages([spec.mode]):
        return session_env.key
    own = cell_environment(matrix, nox_session, [spec.mode], options.models,
                           own_model=spec.model_name if apart else None)
    environments[own.key], labels[own.key] = own, nox_session.version
    return own.key


def _loads(loaders: Dict[str, str], cells: List[CellSpec], results: Path, options: "PoolOptions") -> List[Job]:
    """One job per (loader, cpu_fp32 export of another version) not loaded earlier: the run's
    cells, and the records already on disk that this run does not make (as ``nox -s portability``
    would load them)."""
    from ..artefacts.portability import load_path
    from ..shared.records import load_records

    exporters = {spec.id: spec.paddle for spec in cells if spec.session.name == "cpu_fp32"
                 and (not options.models or spec.model_name in options.models)}
    if loaders and results.is_dir():
        for record in load_records(results):
            if record.session == "cpu_fp32" and (not options.models or record.model in options.models):
                exporters.setdefault(record.id, record.version)
    jobs = []
    for loader, env_key in loaders.items():
        for cell_id, exporter in exporters.items():
            if exporter != loader and (options.force or not load_path(results, cell_id, loader).exists()):
                jobs.append(Job(f"portability/{loader}/{cell_id}", JobKind.LOAD, env_key, 10**6 + len(jobs),
                                after=cell_id, version=loader))
    return jobs


@dataclasses.dataclass(frozen=True)
class PoolOptions:
    jobs: int = 1
    force: bool = False
    root_cause: bool = True
    modes: Optional[List[str]] = None
    models: Optional[List[str]] = None


def run_job(job: Job, matrix: Matrix, results: Path, launcher: Any, force: bool,
            say: Callable[[str], Any]) -> Produced:
    """One job to its end; what it produced (a record, a load's result, a probe), or None for a
    load whose cell did not export."""
    from ..artefacts.portability import port_record, portable
    from .runner import probe_hazards, run_and_record

    if job.kind is JobKind.CELL:
        return run_and_record(job.spec, results, launcher)
    if job.kind is JobKind.HAZARDS:
        return probe_hazards(matrix, job.device, job.version, results, launcher, say)
    path = cell_record_path(results, job.after)
    record = load_record(path) if path.exists() else None
    if record is None or not portable(record, job.version):
        return None
    return port_record(record, results, job.version, launcher, force, say)


def default_envs_root() -> Path:
    return Path(__file__).resolve().parents[2] / ".nox"


def selection(matrix: Matrix, tags: List[str], names: List[str]) -> List[NoxSession]:
    every = nox_sessions(matrix)
    unknown = sorted(set(names) - {s.name for s in every})
    if unknown:
        raise UserError(f"--session {unknown[0]}: no such nox session of {matrix.path}; `nox -l` lists them.")
    chosen = select(every, tags, names)
    if not chosen:
        known = sorted({t for s in every for t in s.tags})
        raise UserError(f"--tag {' '.join(tags)}: selects no session of {matrix.path}; tags: {', '.join(known)}.")
    return chosen


def make_environments(the_plan: Plan, envs_root: Path, python: Optional[str], say: Callable[[str], Any]) -> Dict[str, str]:
    """The Python of every environment the plan needs (``--python``: one given interpreter for all,
    which then serves one Paddle version only)."""
    if python:
        if len(set(the_plan.labels.values())) > 1:
            raise UserError(f"--python {python}: one interpreter serves one Paddle version; the selection runs "
                            f"{', '.join(sorted(set(the_plan.labels.values())))}. Drop --python or select one version.")
        return {key: python for key in the_plan.environments}
    return {key: str(ensure(envs_root, env, the_plan.labels[key], say)) for key, env in the_plan.environments.items()}


def say_line(line: str) -> None:
    print(line, flush=True)


class OneLine(Progress):
    """The pool's progress on a terminal: one line rewritten in place (done/total, elapsed, the
    running jobs); a line stays only for a job that did not pass or skip, and for what jobs say.
    Elsewhere (a CI log, a pipe) ``runner.Progress`` keeps every line, as ``run`` prints them."""

    HEARTBEAT_SECONDS = 1.0

    def __init__(self, total: int, done: int, stream: Any = None):
        super().__init__(total, done, Path("."), self.note)
        self.stream = stream or sys.stdout
        self._lock = threading.RLock()  # a note renders the line again under the same lock

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        with self._lock:
            self._render()
            self.stream.write("\n")
            self.stream.flush()

    def _render(self) -> None:
        with self._lock:
            text = (f"[harness] [{self.done}/{self.total}, {time.monotonic() - self.started_at:.0f} s] running: "
                    f"{', '.join(self.running) or '-'}")
            self.stream.write("\r\033[K" + text[:max(20, shutil.get_terminal_size().columns - 1)])
            self.stream.flush()

    def note(self, line: str) -> None:
        with self._lock:
            self.stream.write("\r\033[K" + line + "\n")
            self._render()

    def started(self, key: str) -> None:
        with self._lock:
            self.running[key] = time.monotonic()
            self._render()

    def ended(self, key: str, said: str, remarkable: bool = True) -> None:
        with self._lock:
            self.running.pop(key, None)
            self.done += 1
            if remarkable:
                self.note(f"[harness] {key}: {said}")
            else:
                self._render()

    def _beat(self) -> None:
        while not self._stop.wait(self.HEARTBEAT_SECONDS):
            self._render()


def _made_for(probe: Optional[HazardProbe]) -> Optional[Mapping[str, object]]:
    return probe.made_for if probe is not None else None


def _remarkable(job: Job, result: Produced) -> bool:
    """Whether a one-line display keeps the job's line: a cell or load that did not pass or skip."""
    from ..shared.vocab import Status

    if isinstance(result, CellRecord):
        return result.verdict.status not in (Status.PASS, Status.SKIP)
    if isinstance(result, PortabilityLoad):
        return result.status not in (Status.PASS, Status.SKIP)
    return job.kind is JobKind.HAZARDS


def _said(job: Job, result: Produced) -> str:
    if isinstance(result, CellRecord):
        return f"{result.verdict.status} in {result.seconds:.1f} s"
    if isinstance(result, HazardProbe):
        raised = [h.id for h in result.hazards if h.raised]
        return f"probed once for every session of Paddle {job.version}: {', '.join(raised) or 'none raised'}"
    if isinstance(result, PortabilityLoad):
        return f"{result.status} in {result.seconds or 0:.1f} s"
    return "nothing to load (its cell did not export)"


def execute(the_plan: Plan, matrix: Matrix, results: Path, pythons: Dict[str, str], options: PoolOptions,
            envs_root: Path, say: Callable[[str], Any] = say_line) -> Dict[str, Produced]:
    """Every job of the plan, ``options.jobs`` at once, each in its environment's launcher (one
    fork server per environment, started on first use and kept to the end). Returns what each
    job produced, by key; every job's seconds go to the times file, even when interrupted."""
    from ..launch import INTERRUPT, LocalLauncher
    launchers = {key: LocalLauncher(python) for key, python in pythons.items()}
    scheduler = Scheduler(the_plan.jobs)
    produced: Dict[str, Produced] = {}
    seconds: Dict[str, float] = {}
    failures: List[BaseException] = []
    total, done = len(the_plan.jobs) + len(the_plan.recorded), len(the_plan.recorded)
    board = OneLine(total, done) if sys.stdout.isatty() else Progress(total, done, results, say)

    def worker() -> None:
        while True:
            job = scheduler.take()
            if job is None:
                return
            board.started(job.key)
            started = time.monotonic()
            try:
                result = run_job(job, matrix, results, launchers[job.env], options.force, board.say)
            except BaseException as exc:  # bad input or an interrupt: every slot stops
                failures.append(exc)
                INTERRUPT.set()
                scheduler.stop()
                return
            seconds[job.key] = time.monotonic() - started
            produced[job.key] = result
            board.ended(job.key, _said(job, result), _remarkable(job, result))
            scheduler.done(job)

    threads = [threading.Thread(target=worker, name=f"pool-{i}", daemon=True) for i in range(max(1, options.jobs))]
    try:
        with board:
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)  # short joins: Ctrl-C reaches the main thread
    except BaseException:
        INTERRUPT.set()
        scheduler.stop()
        for thread in threads:
            thread.join()
        raise
    finally:
        write_times(envs_root, seconds)
        INTERRUPT.clear()
    if failures:
        raise failures[0]
    return produced


def add_parser(sub: Any, matrix_default: Path) -> None:
    from .pathargs import at_least_one, folder_to_write, python_interpreter, run_name

    pool = sub.add_parser("pool", help="the cells of every session nox -t TAG selects, in one job pool (host side)")
    pool.add_argument("--tag", action="append", default=[], help="sessions with this nox tag (repeatable: any of them)")
    pool.add_argument("--session", action="append", default=[], help="this nox session too (repeatable), e.g. cpu_fp32@3.2.2")
    pool.add_argument("--matrix", type=Path, default=matrix_default)
    pool.add_argument("--model", action="append", help="only this model (repeatable)")
    pool.add_argument("--mode", action="append", help="only this train mode (repeatable)")
    pool.add_argument("--results", type=folder_to_write, default=Path("results"))
    pool.add_argument("--run", dest="run_name", type=run_name, default="default")
    pool.add_argument("--force", action="store_true", help="redo cells and loads that already have a record")
    pool.add_argument("--jobs", type=at_least_one, default=None,
                      help="jobs at once across every session (default: the cores at the cells' pinned threads)")
    pool.add_argument("--no-root-cause", dest="root_cause", action="store_false")
    pool.add_argument("--envs", type=Path, default=None, help="where the environments are made (default: <repo>/.nox)")
    pool.add_argument("--python", type=python_interpreter,
                      help="run every cell with this Paddle environment's Python (one Paddle version only)")
    pool.add_argument("--envs-only", action="store_true", help="make the environments, run nothing")


def command(args: Any) -> int:
    from .. import matrix as matrix_mod
    from .runner import default_jobs

    if not args.tag and not args.session:
        raise UserError("pool: give --tag TAG (any tag `nox -t` takes, e.g. cpu) or --session NAME.")
    matrix = matrix_mod.load(args.matrix)
    selected = selection(matrix, args.tag, args.session)
    results = args.results / args.run_name
    options = PoolOptions(jobs=args.jobs or default_jobs(matrix.run["reference_threads"]), force=args.force,
                          root_cause=args.root_cause, modes=args.mode, models=args.model)
    for nox_session in selected:  # bad input (an unknown model or mode) before any work
        if nox_session.kind is SessionKind.CELLS:
            matrix.expand(nox_session.session, nox_session.version, modes=args.mode, models=args.model)
    from .runlock import owned

    with owned(results):
        the_plan = plan(matrix, selected, results, options, say_line)
        for line in the_plan.left_out:
            say_line(f"[harness] not in the pool: {line}")
        started = time.monotonic()
        envs_root = args.envs or default_envs_root()
        pythons = make_environments(the_plan, envs_root, args.python, say_line)
        say_line(f"[harness] {len(pythons)} environment(s) ready in {time.monotonic() - started:.1f} s; "
                 f"{len({(c.session.name, c.paddle) for c in the_plan.cells})} session(s), {len(the_plan.cells)} cell(s) "
                 f"({len(the_plan.recorded)} recorded earlier), {len(the_plan.jobs)} job(s) on {options.jobs} slot(s)")
        if args.envs_only:
            return 0
        estimate(the_plan.jobs, read_times(envs_root, results))
        produced = execute(the_plan, matrix, results, pythons, options, envs_root)
    return report(results, args.run_name, the_plan, produced)


def report(results: Path, run_name: str, the_plan: Plan, produced: Dict[str, Produced]) -> int:
    """One merged report of the run folder (every record in it, as ``nox -s report`` writes it)
    and the exit code: 0 when every selected cell passed or skipped and no load failed."""
    from ..report import drafts, html, junit
    from ..report.model import RunModel
    from ..report.tables import short_summary, write_markdown
    from ..shared.vocab import Status

    model = RunModel.load(results)
    drafts.write_all(model)
    title = f"Qualification report · run {run_name}"
    folder = RunFolder(results)
    out = write_markdown(folder.report("md"), model, title)
    junit.write(folder.report("xml"), model)
    page = html.write(folder.report("html"), model, title)
    print()
    print(short_summary(model, f"Paddle qualification · run {run_name}"))
    print(f"report: {out}   html: {page}   junit: {folder.report('xml')}")
    records = dict(the_plan.recorded)
    records.update({k: v for k, v in produced.items() if isinstance(v, CellRecord)})
    cells_ok = all(records[spec.id].verdict.status in (Status.PASS, Status.SKIP)
                   for spec in the_plan.cells if spec.id in records)
    loads = [json.loads(path.read_text(encoding="utf-8")) for loader in the_plan.loaders
             for path in results.glob(f"portability/*/{loader}/*/*/*.json")]
    loads_ok = not any(Status.of(load.get("status")).blocks for load in loads)
    return 0 if cells_ok and loads_ok and len(records) == len(the_plan.cells) else 1
