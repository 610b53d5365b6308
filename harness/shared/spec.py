"""The host → cell contract: one cell's spec as a type, the defaults every side shares, and the
outputs file format.

The host (``harness.matrix``, ``harness.running.runner``, ``harness.tipc``) builds a ``CellSpec``; the
launcher hands it to the cell side as ``spec.json`` (``to_dict``, the same JSON as always); the
cell side reads it back (``from_dict``, which refuses a spec it does not understand) and the
record keeps it under ``cell``. Standard library + numpy only.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .vocab import QUANTIZED_MODES, Device, Precision, backend_stage_name, runs_quantized_only
from .json_types import JsonObject

import numpy as np


def release(version: str) -> "tuple[int, int, int]":
    """A release's numbers (``3.0.0`` from "3.0.0", "3.0", "3.0.0rc1"), missing parts 0."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def at_least(version: str, lowest: Optional[str]) -> bool:
    """Whether release ``version`` is at least ``lowest`` (None: any). A pre-release counts as its
    release (3.0.0rc1 has 3.0's API): this asks what a version can do, not where it sorts."""
    return not lowest or release(version) >= release(lowest)


def version_order(version: str) -> Tuple[int, Any]:
    """The one order of Paddle versions, wherever versions are sorted: PEP 440's
    (``packaging.version``): 2.6.2 < 3.0.0rc1 < 3.0.0 < 3.0.0.post1 < 3.1.0; a string that is no
    version sorts after every version, by its text."""
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


@dataclasses.dataclass(frozen=True)
class SessionSpec:
    """A session as a cell knows it: ``<device>_<backend>_<precision>`` and its parts, typed. In
    records the same four strings as always (``to_dict``)."""

    name: str
    device: Device
    backend: str
    precision: Precision

    @classmethod
    def from_dict(cls, data: "Dict[str, str] | SessionSpec") -> "SessionSpec":
        if isinstance(data, SessionSpec):
            return data
        return cls(data["name"], Device(data["device"]), data["backend"], Precision(data["precision"]))

    def to_dict(self) -> Dict[str, str]:
        return {"name": self.name, "device": self.device.value, "backend": self.backend,
                "precision": self.precision.value}

    @property
    def stage(self) -> str:
        """The session's own stage: its backend at its precision (``onednn_bf16``, ``ort_fp32``)."""
        return backend_stage_name(self.device, self.backend, self.precision)


@dataclasses.dataclass(frozen=True)
class Defaults:
    """The numbers that would otherwise stand in several places."""

    stage_timeout: float = 300.0  # seconds a stage may run before it is killed (``timeout``)
    hazard_probe_timeout: float = 300.0
    trt_workspace_mb: int = 1024
    trt_min_subgraph_size: int = 3


DEFAULTS = Defaults()


@dataclasses.dataclass(frozen=True)
class CellSpec:
    """Everything the cell side needs to run one cell, and nothing about where it runs."""

    id: str
    session: "SessionSpec"
    stages: List[str]
    paddle: str
    mode: str
    model: JsonObject  # the matrix's model table: name and either factory + inputs, or capture (a TIPC export)
    tolerances: Dict[str, Dict[str, float]]
    output_tolerances: Dict[str, Dict[str, Dict[str, float]]]
    seed: int
    train_steps: int
    reference_threads: int
    deploy_threads: int
    stage_timeout: float = DEFAULTS.stage_timeout
    trt_workspace_mb: int = DEFAULTS.trt_workspace_mb
    trt_min_subgraph_size: int = DEFAULTS.trt_min_subgraph_size
    mode_requires_device: Optional[str] = None
    mode_packages: List[str] = dataclasses.field(default_factory=list)
    matrix: Optional[str] = None
    matrix_fingerprint: Optional[str] = None
    checkpoint: Optional[str] = None  # the run's shared weights of this (mode, model)
    # The run's shared setup of this (Paddle, mode, model): the export, inputs and dygraph outputs
    # the first cell of the program made, reused by the other sessions' cells (``cell.shared_setup``).
    program: Optional[str] = None
    root_cause: bool = True
    tipc: Optional[JsonObject] = None  # the TIPC command a captured export came from
    # what produces the record, part by part (``harness.running.provenance``): a rerun compares it
    produced_by: Optional[Dict[str, str]] = None

    # Key order of the JSON: the order records have always had.
    _ORDER = ("id", "session", "stages", "paddle", "mode", "mode_requires_device", "mode_packages", "model",
              "tolerances", "output_tolerances", "seed", "train_steps", "reference_threads", "deploy_threads",
              "stage_timeout", "trt_workspace_mb", "trt_min_subgraph_size", "matrix", "matrix_fingerprint",
              "tipc", "checkpoint", "program", "root_cause", "produced_by")
    # Keys written only when set (a spec without them reads back the same).
    _OPTIONAL = ("tipc", "checkpoint", "program", "produced_by")

    def to_dict(self) -> JsonObject:
        out: JsonObject = {}
        for key in self._ORDER:
            value = getattr(self, key)
            if key in self._OPTIONAL and value is None:
                continue
            out[key] = value.to_dict() if isinstance(value, SessionSpec) else value
        return out

    @classmethod
    def from_dict(cls, data: JsonObject) -> "CellSpec":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"cell spec has unknown keys {unknown}: the host and cell sides are different "
                             f"harness versions")
        return cls(**dict(data, session=SessionSpec.from_dict(data["session"])))

    def replace(self, **changes: Any) -> "CellSpec":
        return dataclasses.replace(self, **changes)

    @property
    def model_name(self) -> str:
        return self.model["name"]

    @property
    def captured(self) -> bool:
        return bool(self.model.get("capture"))

    @property
    def preload_key(self) -> Optional[str]:
        """Which fork server preloads what this model's build imports: its family's (every model of
        a family imports its suite, the costly part of a zoo cell); None for a model of no family
        (the built-in models, a user's own factory: no second server for them) and captures."""
        family = self.model.get("family")
        if self.captured or not isinstance(family, dict) or not family.get("name"):
            return None
        return f"family:{family['name']}"

    @property
    def declared_skip(self) -> Optional[str]:
        """Why the matrix itself never runs this cell, or None: a mode its suite does not train the
        model in (``models.X.modes``), a program oneDNN int8 cannot run (not quantized), a release
        older than the model family needs. Known from the matrix alone: the cell's setup skips with
        these words, and a qualification never requires such a cell (it would block on a skip the
        matrix planned)."""
        return _not_trained_so(self) or _not_quantized(self) or _family_too_new(self)

    @property
    def session_stage(self) -> str:
        """The session's own stage: its backend at its precision (``onednn_bf16``, ``ort_fp32``),
        the stage whose skip means the session did not run."""
        return self.session.stage


def _not_trained_so(cell: CellSpec) -> Optional[str]:
    """A model whose matrix entry lists the modes its suite trains it in, in another mode."""
    declared = cell.model.get("modes")
    if declared is None or cell.mode == "normal" or cell.mode in declared:
        return None
    said = "; ".join(f"{mode}: {how}" for mode, how in declared.items()) or "none besides normal"
    return (f"its suite does not train {cell.model['name']} in {cell.mode} (models.{cell.model['name']}.modes "
            f"lists how it does: {said})")


def _not_quantized(cell: CellSpec) -> Optional[str]:
    """A cell of another mode would train, export and run every stage but the session's own (a zoo
    model's cell at the cost of a cpu_fp32 one, measured), for a skip."""
    if runs_quantized_only(cell.session.backend, cell.session.precision) and cell.mode not in QUANTIZED_MODES:
        return (f"oneDNN int8 (enable_mkldnn_int8) runs quantized programs: train the model in a quantization-aware "
                f"mode ({', '.join(QUANTIZED_MODES)}); this cell's mode is {cell.mode}")
    return None


def _family_too_new(cell: CellSpec) -> Optional[str]:
    family = cell.model.get("family")
    if not isinstance(family, dict) or at_least(cell.paddle, family.get("requires_paddle")):
        return None
    return (f"model family {family['name']} ({', '.join(family['packages'])}) needs Paddle >= "
            f"{family['requires_paddle']}; this environment has {cell.paddle}")


class OutputsFile:
    """A list of output arrays as ``.npz`` (``o0``, ``o1``, ...): dygraph, baseline and loaded
    outputs; read by the cell side, regress and portability."""

    @staticmethod
    def key(index: int) -> str:
        return f"o{index}"

    def save(self, path: "str | Path", arrays: List[np.ndarray]) -> None:
        np.savez(path, **{self.key(i): a for i, a in enumerate(arrays)})

    def load(self, path: "str | Path", count: Optional[int] = None) -> List[np.ndarray]:
        with np.load(path) as data:
            n = len(data.files) if count is None else count
            return [data[self.key(i)] for i in range(n)]


OUTPUTS = OutputsFile()
