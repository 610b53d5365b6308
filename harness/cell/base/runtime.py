"""What the ladder needs from an inference runtime (the seam; Polygraphy's loader + runner in one).

A ``Runtime`` turns a saved program and a stage's config into a ``Session``; a session runs
feeds (by name) and returns outputs in the runtime's order, with the evidence of what ran. The
evidence keys are the record's: ``passes`` and ``analysis_passes`` (what the build ran),
``config_read_back`` (the runtime's own answer about its config), ``ops``, ``op_types``,
``op_sequence_sha1`` and ``output_dtypes`` (what the run executed). A stage whose evidence
equals its reference's ran the same program: ``noop``.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...shared.compare import Tolerance
from ...shared.config import PredictorConfig, StageConfig
from ...shared.runtime import Requirement, SearchSpace, StagePlan
from ...shared.tensor_diff import TensorDiff
from ...shared.json_types import JsonObject

if TYPE_CHECKING:
    from ...runtimes.paddle2onnx.reference import ConversionJudge


class Session(abc.ABC):
    """One built program under one config, ready to run."""

    #: what the build ran and what the runtime says its config is
    build_evidence: JsonObject  # what the build ran, as the stage record keeps it
    #: for a program another tool converted: raises when its check of the conversion (done while
    #: the session ran) found the converter at fault; called after the evidence run
    settle: Optional[Callable[[], None]] = None

    def __init__(self, evidence: JsonObject, settle: Optional[Callable[[], None]] = None):
        self.build_evidence = evidence
        self.settle = settle

    def run_settled(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        """``run``, then the conversion's own check, so a finding about the converter is raised
        before these outputs are judged — or before the runtime's own error, when it raised."""
        try:
            names, outputs = self.run(feeds)
        except Exception:
            if self.settle is not None:  # a conversion of memory is the cause of what its runtime then did
                self.settle()
            raise
        if self.settle is not None:
            self.settle()
        return names, outputs

    @abc.abstractmethod
    def input_names(self) -> List[str]:
        """The feed order the runtime reports (recorded; feeding is by name)."""

    @abc.abstractmethod
    def run(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        """Output names and arrays, in the runtime's order."""

    @abc.abstractmethod
    def run_with_evidence(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray], JsonObject]:
        """As ``run``, and what executed (op count, types, sequence digest, output dtypes)."""


class Runtime(abc.ABC):
    name: str = ""
    #: the import lines of this runtime's reproducer script
    reproducer_imports: str = ""

    @abc.abstractmethod
    def unmet(self, requirement: Requirement) -> Optional[str]:
        """Why this build or machine cannot meet a backend's requirement, or None."""

    @abc.abstractmethod
    def session(self, files: Dict[str, str], config: StageConfig, feeds: Dict[str, np.ndarray],
                scratch: Path, variants: Sequence[Dict[str, np.ndarray]] = ()) -> Session:
        """Build the program in ``files`` under ``config``, once for every shape it will run: the
        primary ``feeds`` and the ``variants`` give the shapes a runtime with shape profiles needs
        (min/opt/max); ``scratch`` is a path prefix for files the build writes."""

    @abc.abstractmethod
    def search_items(self, plan: StagePlan, evidence: Mapping[str, Any], baseline_evidence: Mapping[str, Any]) -> List[str]:
        """What the culprit search may switch off for this stage, one by one (passes that ran,
        op types an engine may take), from the stage's and the baseline's evidence."""

    def probe_search_items(self, plan: StagePlan, folder: Path) -> Tuple[List[str], str]:
        """The search space read elsewhere when the stage's own evidence has none (its build
        raised first), and where it was read; nothing by default."""
        return [], ""

    @abc.abstractmethod
    def without(self, plan: StagePlan, disabled: List[str]) -> StageConfig:
        """The stage's config with ``disabled`` items of its search space switched off."""

    def coarser(self, plan: StagePlan) -> List[Tuple[str, StageConfig]]:
        """Coarser levers than the search's items, for a workaround: a lower optimization level,
        the backend off; each in words with the stage's config changed. None by default."""
        return []

    def conversion_candidates(self, plan: StagePlan, files: Dict[str, str]) -> List[Tuple[str, StageConfig]]:
        """For a runtime that reads a converter's output, the converter's own options a workaround may
        change (another opset, its optimizer off), each in words with the stage's config changed."""
        return []

    @abc.abstractmethod
    def config_calls(self, files: Dict[str, str], config: StageConfig) -> List[str]:
        """The runtime's own API calls that configure ``config``, as lines of code on a variable
        ``config`` (what a reproducer replays), recorded as the session builder makes them."""

    @abc.abstractmethod
    def reproducer_lines(self, model: str, params: str, config: StageConfig, files: Dict[str, str]) -> str:
        """Code that runs the program (``model``/``params``: file names beside the script) under
        ``config`` with this runtime's public API, on ``inputs`` (an npz by input name), and sets
        ``names`` and ``outputs``: what a reproducer replays."""

    def conversion_judge(self, files: Dict[str, str]) -> "Optional[ConversionJudge]":
        """For a runtime that reads a converter's output of ``files``: the script that judges whose
        bug a failure is (the converter's or this runtime's); None for a runtime that reads the
        program itself."""
        return None

    def for_trials(self, numeric: bool, message: str) -> None:
        """A reduction's trials of a stage's failure follow in this process (``numeric``: the stage
        failed on its numbers, else it raised ``message``): a runtime may leave out work whose
        evidence no such trial reads. Nothing by default."""

    def cause_words(self, message: str) -> str:
        """The words of a stage's error its reproducer, run alone, prints (normalized)."""
        from ...shared.causes import stage_cause

        return stage_cause(message)[:120]

    def causes(self, message: str) -> List[str]:
        """The distinct causes one error message carries, each in words a trial's message can be
        matched with: one (``cause_words``) unless the runtime's words list several (a converter
        naming each op it cannot convert)."""
        words = self.cause_words(message)
        return [words] if words else []

    def tensor_diff(self, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                    test: StageConfig, out: Path, tolerance: Tolerance) -> TensorDiff:
        """Every intermediate tensor of this runtime's session at ``test`` matched with Paddle
        Inference's at ``base`` (the baseline's config) and compared: the per-tensor table."""
        raise NotImplementedError(f"the per-tensor diff is not written for {self.name} yet")


def unimportable(package: str) -> Optional[str]:
    """Why ``package`` cannot be imported here (a runtime's requirement), or None: the import is the check."""
    import importlib

    try:
        importlib.import_module(package)
    except Exception as exc:
        return f"{package} cannot be imported here ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
    return None


__all__ = ["Runtime", "Session", "SearchSpace", "unimportable"]
