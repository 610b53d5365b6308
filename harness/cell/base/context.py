"""One cell's spec and work folder, and what every room of the cell side asks of them."""

from __future__ import annotations

import contextlib
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from ...shared.backends import DeployOptions, StagePlan, plan_stages
from ...shared.vocab import QUANTIZED_MODES
from ...shared.compare import Tolerance
from ...shared.errors import HarnessFailure
from ...shared.record_model import StageRecord
from ...shared.records import Journal
from ...shared.spec import OUTPUTS, CellSpec
from ...shared.task import Task, judge
from ...shared.vocab import Precision
from .modes import mode_for


class CellContext:
    def __init__(self, spec: CellSpec, work: Path):
        self.cell = spec
        self.spec = spec.to_dict()  # the JSON view: what records and modes read
        self.work = Path(work)
        self.journal = Journal(self.work / "journal.jsonl")
        self.where = f"{self.cell.matrix or 'matrix'}: models.{self.cell.model['name']}"
        self.mode = mode_for(self.cell.mode)
        # The model this process built, trained and exported, with its InputSpecs: what the
        # reduction takes apart (a factory may not build the same model twice in one process).
        self.built: Optional[Tuple[Any, List[Any]]] = None
        # The model rebuilt from its source with the exported weights, in a process where it was not
        # built (a restarted worker): kept, so that a second analysis step does not build it again.
        self.rebuilt: Optional[Tuple[Any, List[Any]]] = None
        # What this cell takes from its program's maker (``shared_setup.Reused``): the stages its
        # ladder runs alike and their analyses; None in a cell that made its own.
        self.reused: Any = None

    # Paddle is imported lazily so that a resumed worker whose stages are all done costs
    # nothing, and so that import failures are recorded like any other error.
    @property
    def paddle_api(self):
        from .. import paddle_api

        return paddle_api

    @property
    def paddle(self):
        return self.paddle_api.paddle

    @property
    def saved(self):
        """``jit.save`` and the program it wrote (``paddle_api.export``)."""
        from ..paddle_api import export

        return export

    @property
    def predictors(self):
        """Predictors built and run (``paddle_api.predictor``)."""
        from ..paddle_api import predictor

        return predictor

    def plan(self, setup: StageRecord) -> List[StagePlan]:
        return self.plan_for(setup.get("export")["format"])

    def plan_for(self, fmt: str) -> List[StagePlan]:
        """The session's stages for a program of format ``fmt`` (a source reproducer exports
        whichever format the Paddle running it writes)."""
        cell = self.cell
        session = cell.session
        options = DeployOptions(reference_threads=cell.reference_threads, deploy_threads=cell.deploy_threads,
                                trt_workspace_mb=cell.trt_workspace_mb, trt_min_subgraph_size=cell.trt_min_subgraph_size)
        return plan_stages(session.device, session.backend, session.precision, fmt, options,
                           quantized=cell.mode in QUANTIZED_MODES)

    @property
    def task(self) -> Optional[Task]:
        """What the model's outputs mean (the matrix model's ``task``), for the verdict in its terms."""
        return Task.of(self.cell.model.get("task"))

    def judge_task(self, labels: List[str], reference: List[np.ndarray], got: List[np.ndarray]) -> Optional[Dict[str, Any]]:
        verdict = judge(self.task, labels, reference, got)
        return verdict.to_dict() if verdict is not None else None

    @property
    def fp32_atol(self) -> float:
        """fp32's absolute tolerance: what a floor holds an output the precision's rounding leaves unmoved to."""
        return Tolerance.of(self.cell.tolerances[Precision.FP32.value]).atol

    def tolerance(self, plan: StagePlan, label: Optional[str] = None) -> Tolerance:
        """The tolerance a stage's comparison uses, with the matrix's per-output override for ``label``."""
        precision = Precision(plan.tolerance_precision).value
        tol = Tolerance.of(self.cell.tolerances[precision])
        if label is None:
            return tol
        return tol.overridden((self.cell.output_tolerances or {}).get(precision, {}).get(label))

    @staticmethod
    def file(kind: str, shape: int = 0) -> str:
        """``inputs``, ``dygraph`` or ``baseline`` arrays at the primary shape (0) or variant ``shape``."""
        return f"{kind}.npz" if shape == 0 else f"{kind}_s{shape}.npz"

    def feeds(self, shape: int = 0) -> Dict[str, np.ndarray]:
        """The inputs at the primary shape (0) or at shape variant ``shape``."""
        with self._own_file(self.file("inputs", shape)) as path:
            return dict(np.load(path))

    def save_outputs(self, name: str, arrays: List[np.ndarray]) -> None:
        OUTPUTS.save(self.work / name, arrays)

    def load_outputs(self, name: str, labels: List[str]) -> List[np.ndarray]:
        with self._own_file(name) as path:
            return OUTPUTS.load(path, len(labels))

    @contextlib.contextmanager
    def _own_file(self, name: str) -> Iterator[Path]:
        """A file the cell wrote itself: when it is gone or torn, the harness cannot test what
        needs it (another process changed the work folder), which is no finding about Paddle."""
        path = self.work / name
        try:
            yield path
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # nothing of Paddle runs here
            raise HarnessFailure(f"the cell's own {name} in {self.work} is gone or torn ({type(exc).__name__}): "
                                 f"something else changed the work folder; rerun the cell") from exc
