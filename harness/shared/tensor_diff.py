"""The per-tensor diff as types (shared by the cell side, which computes it, and the host, which
renders it): the tensors each run wrote, the pairs compared, what could not be paired, and the
diff itself — JSON only at its edges (a dump's ``index.json``, the diff's ``result.json``).

Standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, List, Mapping, Optional, Tuple

from .vocab import Judged, Status
from .json_types import JsonMapping, JsonObject

_PIR_PREFIX = re.compile(r"^0x[0-9a-fA-F]+_")


def key_name(raw: str) -> str:
    """A tensor's name without the per-predictor ``0x..._`` prefix PIR gives it."""
    return _PIR_PREFIX.sub("", raw)


@dataclasses.dataclass(frozen=True)
class DumpedTensor:
    """One tensor a run wrote to disk (a row of its dump's index): the op that wrote it, its name,
    and its file (none when the tensor could not be read: ``error`` says why). A converted graph's
    tensor also names the Paddle op it came from by that op's ``occurrence`` in the saved program."""

    op: str
    raw: str
    shape: Tuple[int, ...] = ()
    dtype: str = ""
    file: str = ""
    layout: str = ""
    error: str = ""
    occurrence: int = -1
    output: int = -1

    @property
    def name(self) -> str:
        return key_name(self.raw)

    @property
    def readable(self) -> bool:
        return bool(self.file)

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"op": self.op, "raw": self.raw}
        for key in ("layout", "error"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.occurrence >= 0 or self.output >= 0:
            out.update(occurrence=self.occurrence, output=self.output)
        if self.file:
            out.update(shape=list(self.shape), dtype=self.dtype, file=self.file)
        return out

    @classmethod
    def from_dict(cls, data: JsonMapping) -> "DumpedTensor":
        return cls(op=str(data["op"]), raw=str(data["raw"]), shape=tuple(data.get("shape") or ()),
                   dtype=str(data.get("dtype") or ""), file=str(data.get("file") or ""),
                   layout=str(data.get("layout") or ""), error=str(data.get("error") or ""),
                   occurrence=int(data.get("occurrence", -1)), output=int(data.get("output", -1)))


@dataclasses.dataclass(frozen=True)
class Unmatched:
    """A tensor of one side that has no counterpart on the other, and why."""

    side: str
    op: str
    name: str
    shape: Tuple[int, ...]
    reason: str

    @classmethod
    def of(cls, tensor: DumpedTensor, side: str, reason: str) -> "Unmatched":
        return cls(side, tensor.op, tensor.name, tensor.shape, reason)


@dataclasses.dataclass(frozen=True)
class TensorRow(Judged):
    """One pair of tensors compared: where it is in the base run, how it was paired, the numbers."""

    index: int
    op: str
    test_op: str
    name: str
    matched_by: str
    shape: Tuple[int, ...]
    test_shape: Tuple[int, ...]
    status: Status
    mismatched: int = 0
    total: int = 0
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    tol_ratio: Optional[float] = None
    min_base: Optional[float] = None
    max_base: Optional[float] = None
    vacuous: bool = False
    suspect: str = ""  # a mismatch the next tensors undo: probably one name for two tensors
    first_divergence: bool = False


@dataclasses.dataclass(frozen=True)
class Dump:
    """One run with every tensor written: its index, its final outputs, and whether fetching the
    intermediates changed those outputs."""

    index: List[DumpedTensor]
    outputs: List[Any]
    hooks_changed_output: bool


@dataclasses.dataclass(frozen=True)
class TensorDiff:
    """Every paired tensor of a base and a test run compared, in the base run's order; the first
    real divergence; what could not be paired; the tolerance; the two configs."""

    rows: List[TensorRow]
    unmatched: List[Unmatched]
    pairs: int
    base_tensors: int
    test_tensors: int
    atol: float = 0.0
    rtol: float = 0.0
    scaled_atol: float = 0.0
    hooks_changed_output: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    final_outputs: List[JsonMapping] = dataclasses.field(default_factory=list)
    base_config: JsonMapping = dataclasses.field(default_factory=dict)
    test_config: JsonMapping = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    program: Mapping[str, str] = dataclasses.field(default_factory=dict)  # the files diffed (``harness diff``)
    unmet: Mapping[str, str] = dataclasses.field(default_factory=dict)  # a side whose requirement this machine lacks

    @property
    def first_divergence(self) -> Optional[TensorRow]:
        return next((r for r in self.rows if r.first_divergence), None)

    def to_dict(self) -> JsonObject:
        out = dataclasses.asdict(self)
        first = self.first_divergence
        out["first_divergence"] = dataclasses.asdict(first) if first is not None else None
        return out

    @classmethod
    def from_dict(cls, data: JsonMapping) -> "TensorDiff":
        rows = [TensorRow(**{**r, "shape": tuple(r.get("shape") or ()), "test_shape": tuple(r.get("test_shape") or ()),
                             "status": Status.of(r.get("status"))}) for r in data.get("rows") or []]
        unmatched = [Unmatched(u["side"], u["op"], u["name"], tuple(u.get("shape") or ()), u["reason"])
                     for u in data.get("unmatched") or []]
        known = {f.name for f in dataclasses.fields(cls)} - {"rows", "unmatched"}
        return cls(rows=rows, unmatched=unmatched, **{k: v for k, v in data.items() if k in known})


__all__ = ["DumpedTensor", "Dump", "TensorDiff", "TensorRow", "Unmatched", "key_name"]
