"""Host side: the pool's jobs and the order they start in (pure logic, no process started here).

A job is a cell, a Paddle version's hazard probe or a portability load. The scheduler hands each
free slot the longest job that may start; a job's length is what the same job took before on
this machine (``pool-times.json`` beside the environments), else the mean of the same model's
cells elsewhere, else the mean of its kind.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import threading
from pathlib import Path
from typing import Dict, List, Optional, Set

from ..shared.records import atomic_write_json
from ..shared.runfolder import PROGRAM_WORK
from ..shared.spec import CellSpec

# Every job's last seconds on this machine, across runs and results folders, kept beside the
# environments (the machine's cache, like them): a cold run into a new folder still knows them.
TIMES = "pool-times.json"
DEFAULT_SECONDS = {"cell": 30.0, "load": 4.0, "hazards": 5.0}


class JobKind(str, enum.Enum):
    HAZARDS = "hazards"
    CELL = "cell"
    LOAD = "load"


@dataclasses.dataclass
class Job:
    key: str  # a cell id, "hazards/<paddle>/<device>" or "portability/<exporter>/<loader>/<cell id>"
    kind: JobKind
    env: str  # the key of the environment it runs in
    order: int  # nox's order: which cell of a checkpoint trains it, and ties
    estimate: float = 0.0
    spec: Optional[CellSpec] = None
    after: Optional[str] = None  # a load: the cell whose export it loads
    version: str = ""
    device: str = "cpu"
    # A step of its program other sessions run alike (the ONNX conversion: ``shared.backends.shared_step``):
    # the first of the program's cells that run it goes before the others, which take its analyses
    # of a failure there (``cell.shared_setup``).
    shared_step: Optional[str] = None

    @property
    def checkpoint(self) -> Optional[str]:
        return self.spec.checkpoint if self.spec is not None else None

    @property
    def program(self) -> Optional[str]:
        """What the maker of its program wrote when it ended (``cell.shared_setup``): the setup and the
        stages every session runs alike are made by one cell, the others read them."""
        return str(Path(self.spec.program) / PROGRAM_WORK) if self.spec is not None and self.spec.program else None

    @property
    def step(self) -> Optional[str]:
        """Its program's shared step, as the key the pool orders the step's cells by (never a file)."""
        return f"{self.spec.program}#{self.shared_step}" if self.shared_step and self.spec and self.spec.program else None


class Scheduler:
    """Hands each free slot the longest job that may start: its cell (a load's) has finished, its
    model's weights exist or it is the cell ``nox -t`` would train them with, and its program's
    maker has ended or it is the maker (the other sessions' cells of the program reuse its setup and
    the stages they run alike instead of making them again; when the maker ended without writing
    what it made, the next cell in nox's order makes it), and the first cell of its program's shared
    step (the conversion) has ended or it is that cell."""

    def __init__(self, jobs: List[Job]):
        self.pending = sorted(jobs, key=lambda j: (-j.estimate, j.order))
        self.running: Dict[str, Job] = {}
        self.finished: Set[str] = set()
        self.ended: Set[str] = set()  # programs and shared steps whose first cell ended
        self._cond = threading.Condition()
        self.stopped = False

    def _may_start(self, job: Job) -> bool:
        if job.after and job.after not in self.finished and any(j.key == job.after for j in self.pending + list(self.running.values())):
            return False
        for made_once in ("checkpoint", "program", "step"):
            path = getattr(job, made_once)
            if path and not Path(path).exists():
                if made_once != "checkpoint" and path in self.ended:
                    continue  # its first cell ended (without writing what it made: each of the others makes its own)
                if any(getattr(j, made_once) == path for j in self.running.values()):
                    return False  # its weights are being trained, its program made
                if job.order != min(j.order for j in self.pending if getattr(j, made_once) == path):
                    return False
        return True

    def take(self) -> Optional[Job]:
        with self._cond:
            while self.pending and not self.stopped:
                job = next((j for j in self.pending if self._may_start(j)), None)
                if job is not None:
                    self.pending.remove(job)
                    self.running[job.key] = job
                    return job
                self._cond.wait(0.5)
            return None

    def done(self, job: Job) -> None:
        with self._cond:
            self.running.pop(job.key, None)
            self.finished.add(job.key)
            self.ended.update(p for p in (job.program, job.step) if p)
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self.stopped = True
            self._cond.notify_all()


def estimate(jobs: List[Job], history: Dict[str, float]) -> None:
    """Each job's expected seconds: its own last time, else the mean of the same model's cells
    (other sessions, other versions), else the mean of its kind, else a default."""
    by_model: Dict[str, List[float]] = {}
    by_kind: Dict[str, List[float]] = {}
    for key, seconds in history.items():
        kind = JobKind.HAZARDS if key.startswith("hazards/") else JobKind.LOAD if key.startswith("portability/") else JobKind.CELL
        by_kind.setdefault(kind.value, []).append(seconds)
        if kind is JobKind.CELL:
            by_model.setdefault("/".join(key.split("/")[2:]), []).append(seconds)
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    for job in jobs:
        model = "/".join(job.key.split("/")[2:])
        if job.key in history:
            job.estimate = history[job.key]
        elif job.kind is JobKind.CELL and model in by_model:
            job.estimate = mean(by_model[model])
        else:
            job.estimate = mean(by_kind[job.kind.value]) if job.kind.value in by_kind else DEFAULT_SECONDS[job.kind.value]


def read_times(envs_root: Path, run: Path) -> Dict[str, float]:
    """Seconds of earlier jobs: the machine's times file, then the run's own records."""
    try:
        times = {k: float(v) for k, v in json.loads((envs_root / TIMES).read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        times = {}
    from ..shared.records import load_records

    if run.is_dir():
        times.update({r.id: r.seconds for r in load_records(run) if r.seconds})
    return times


def write_times(envs_root: Path, times: Dict[str, float]) -> None:
    path = envs_root / TIMES
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    kept = kept if isinstance(kept, dict) else {}
    kept.update({k: round(v, 2) for k, v in times.items()})
    atomic_write_json(path, kept)
