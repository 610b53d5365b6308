"""A cell's record as types, converted at the JSON edge only.

The cell side and the runner write a record with ``CellRecord.to_dict`` (plain JSON, the keys
records have always had); every reader (the runner's resume, the reports, regress, qualify,
portability, merge) reads it back with ``CellRecord.from_dict`` and works on these frozen types,
never on keys. A part the types do not model yet (an analysis's own bookkeeping) rides along in
its type's ``extra`` so that a record read and written again loses nothing.

Schemas (``schema`` in every record):

* 3 — this one. A stage's ``worst`` keeps the tensor's shape in ``shape`` and the input shape it
  was met at in ``at_shape``; a stage's ``config`` names its runtime (``runtime``) and holds that
  runtime's fields only.
* 2 — read through the same loader: a ``worst`` whose ``shape`` was a shape label (schema 2 wrote
  the label over the tensor's shape when a stage failed at another input shape) has it moved to
  ``at_shape``; a config without ``runtime`` is read by ``Registry.config_from_dict`` (Paddle's
  fields, another runtime's beside them under its key).
* 1 and older — stages before deployment profiles and evidence: not read (rerun the cell).

Standard library only (the cell side imports it inside any Paddle environment).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterator, List, Mapping, Optional, Tuple

from .compare import Comparison, _optional_float
from .spec import CellSpec
from .vocab import Judged, Owner, SETUP, Status, Word
from .json_types import JsonMapping, JsonObject
from .releases import ReleaseSpan, SourceReproducer

SCHEMA = 3
READABLE_SCHEMAS = (2, 3)


class Outcome(Word):
    """What an analysis found (its ``status`` says whether it ran): one vocabulary for the
    reduction, the op isolation, the op exclusion and the culprit search."""

    LOCALIZED = "localized"          # a piece smaller than the model reproduces
    WHOLE_MODEL = "whole model"      # no piece smaller than the model reproduces alone
    ISOLATED = "isolated"            # one op (or a run of ops) reproduces alone
    NOT_FOUND = "not found"
    NOT_RUN = "not run"
    KNOB_IGNORED = "knob ignored"    # the runtime ignored the lever the search needs (read from a run)
    NO_EFFECT = "no effect"
    FOUND = "found"
    NOT_A_CULPRIT_SET = "not-a-culprit-set"
    UNRESOLVED = "unresolved"

    @classmethod
    def of(cls, value: "str | Outcome | None") -> Optional["Outcome"]:
        try:
            return cls(value) if value is not None else None
        except ValueError:
            return None


def _rest(data: JsonMapping, known: Tuple[str, ...]) -> JsonMapping:
    """The keys of ``data`` a type does not model: kept so that a record read and written again is the same."""
    return {k: v for k, v in data.items() if k not in known and not k.startswith("_")}


# -- a stage ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ShapeResult(Judged):
    """A stage run at one of the cell's other input shapes, against its own reference there."""

    index: int
    label: str
    status: Status
    message: str = ""
    reference: Optional[str] = None
    worst: Optional[Comparison] = None
    outputs: Mapping[str, Comparison] = dataclasses.field(default_factory=dict)
    task: Optional[JsonMapping] = None

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"index": self.index, "label": self.label, "status": self.status}
        if self.reference is not None:
            out["reference"] = self.reference
        if self.worst is not None:
            out["worst"] = self.worst.to_dict()
        if self.outputs:
            out["outputs"] = {k: c.to_dict() for k, c in self.outputs.items()}
        if self.task:
            out["task"] = dict(self.task)
        if self.message:
            out["message"] = self.message
        return out

    @classmethod
    def from_dict(cls, data: JsonMapping) -> "ShapeResult":
        return cls(index=int(data.get("index", 0)), label=str(data.get("label", "")),
                   status=Status.of(data.get("status")), message=str(data.get("message") or ""),
                   reference=data.get("reference"),
                   worst=Comparison.from_dict(data["worst"]) if data.get("worst") else None,
                   outputs={k: Comparison.from_dict(v) for k, v in (data.get("outputs") or {}).items()},
                   task=data.get("task") or None)


@dataclasses.dataclass(frozen=True)
class StageRecord(Judged):
    """One stage's result (and a cell's setup, read as a stage named ``setup``): its status and
    message, its outputs' comparisons and the worst of them, its evidence, the other shapes."""

    name: str
    status: Status
    message: str = ""
    outputs: Mapping[str, Comparison] = dataclasses.field(default_factory=dict)
    worst: Optional[Comparison] = None
    evidence: JsonMapping = dataclasses.field(default_factory=dict)
    config: JsonMapping = dataclasses.field(default_factory=dict)
    shapes: Tuple[ShapeResult, ...] = ()
    task: Optional[JsonMapping] = None
    failing_shape: Optional[int] = None
    extra: JsonMapping = dataclasses.field(default_factory=dict, repr=False)

    _KNOWN = ("name", "status", "message", "outputs", "worst", "evidence", "config", "shapes", "task", "failing_shape")

    @classmethod
    def from_dict(cls, data: JsonMapping, name: Optional[str] = None) -> "StageRecord":
        per_output = data.get("outputs")
        # A setup entry's "outputs" lists the dygraph output labels (kept as they are); a stage's compares them.
        compared = isinstance(per_output, Mapping)
        known = cls._KNOWN if compared or per_output is None else tuple(k for k in cls._KNOWN if k != "outputs")
        return cls(name=name or str(data.get("name", "?")), status=Status.of(data.get("status")),
                   message=str(data.get("message") or ""),
                   outputs={label: Comparison.from_dict(stats) for label, stats in per_output.items()} if compared else {},
                   worst=Comparison.from_dict(data["worst"]) if data.get("worst") else None,
                   evidence=data.get("evidence") or {}, config=data.get("config") or {},
                   shapes=tuple(ShapeResult.from_dict(s) for s in data.get("shapes") or []),
                   task=data.get("task") or None, failing_shape=data.get("failing_shape"), extra=_rest(data, known))

    def to_dict(self) -> JsonObject:
        out: JsonObject = dict(self.extra)
        out["status"] = self.status
        if self.message:
            out["message"] = self.message
        if self.config:
            out["config"] = dict(self.config)
        if self.evidence:
            out["evidence"] = dict(self.evidence)
        if self.outputs:
            out["outputs"] = {k: c.to_dict() for k, c in self.outputs.items()}
        if self.worst is not None:
            out["worst"] = self.worst.to_dict()
        if self.task:
            out["task"] = dict(self.task)
        if self.shapes:
            out["shapes"] = [s.to_dict() for s in self.shapes]
        if self.failing_shape is not None:
            out["failing_shape"] = self.failing_shape
        if self.name != SETUP:
            out["name"] = self.name
        return out

    def get(self, key: str, default: Any = None) -> Any:
        """A part no type models yet (timings, lever, reference, the setup's export...)."""
        if key in self._KNOWN and key not in self.extra:
            raise KeyError(f"{key!r} is a typed field of a stage record: read .{key}")
        return self.extra.get(key, default)

    @property
    def output_labels(self) -> List[str]:
        """The outputs' labels: a setup entry lists the dygraph outputs', a stage compares them."""
        return list(self.extra.get("outputs") or self.outputs)


# -- the verdict ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Verdict(Judged):
    """A cell's one status (``runner.verdict_of``): its first blocking stage, else untestable,
    vacuous, pass; skip when the session's own stage did not run. ``task`` says it in the model's terms."""

    status: Status
    first_failing_stage: Optional[str] = None
    message: str = ""
    skipped_stage: Optional[str] = None
    task: Optional[JsonMapping] = None

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"status": self.status, "first_failing_stage": self.first_failing_stage,
                               "message": self.message}
        if self.skipped_stage:
            out["skipped_stage"] = self.skipped_stage
        if self.task:
            out["task"] = dict(self.task)
        return out

    @classmethod
    def from_dict(cls, data: JsonMapping) -> "Verdict":
        return cls(status=Status.of(data.get("status")), first_failing_stage=data.get("first_failing_stage"),
                   message=str(data.get("message") or ""), skipped_stage=data.get("skipped_stage"),
                   task=data.get("task") or None)


# -- the analyses of a cell's first failure ---------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class AnalysisEntry:
    """One analysis of a failing stage (``triage``, ``bisect``, ``exclude``, ``reduce``,
    ``reproducer``, ``diff``...): whether it ran (``status``), of which stage, what it found
    (``outcome``), and its own parts (``extra``, read with ``get``)."""

    kind: str
    status: Status
    stage: Optional[str] = None
    outcome: Optional[str] = None
    message: str = ""
    verdict: str = ""
    extra: JsonMapping = dataclasses.field(default_factory=dict, repr=False)

    _KNOWN = ("status", "stage", "outcome", "message", "verdict")

    @classmethod
    def from_dict(cls, kind: str, data: JsonMapping) -> "AnalysisEntry":
        outcome = data.get("outcome")
        return cls(kind=kind, status=Status.of(data.get("status")), stage=data.get("stage"),
                   outcome=str(outcome) if outcome is not None else None, message=str(data.get("message") or ""),
                   verdict=str(data.get("verdict") or ""), extra=_rest(data, cls._KNOWN))

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"status": self.status}
        if self.outcome is not None:
            out["outcome"] = self.outcome
        out.update(self.extra)
        if self.stage is not None or "stage" in self.extra:
            out["stage"] = self.stage
        if self.message:
            out["message"] = self.message
        if self.verdict:
            out["verdict"] = self.verdict
        return out

    def get(self, key: str, default: Any = None) -> Any:
        """A part of the analysis's own (culprits, trials, the reproducer's script...)."""
        if key in self._KNOWN:
            raise KeyError(f"{key!r} is a typed field of an analysis entry: read .{key}")
        return self.extra.get(key, default)

    @property
    def found(self) -> Optional[Outcome]:
        return Outcome.of(self.outcome)


@dataclasses.dataclass(frozen=True)
class Reduction:
    """The smallest piece that reproduces a stage's failure, and its op (``analysis.reduce``)."""

    entry: AnalysisEntry

    @property
    def localized(self) -> bool:
        return self.entry.status is Status.PASS

    @property
    def path(self) -> str:
        return str(self.entry.get("path") or "")

    @property
    def members(self) -> List[str]:
        return list(self.entry.get("members") or [])

    @property
    def layer(self) -> str:
        return str(self.entry.get("layer") or "")

    @property
    def op(self) -> str:
        return str(self.entry.get("op") or "")

    @property
    def op_call(self) -> str:
        return str(self.entry.get("op_call") or "")

    @property
    def op_api(self) -> List[str]:
        """The public calls the model's forward made that ran the op (``paddle.nn.functional...``)."""
        return list(self.entry.get("op_api") or [])

    @property
    def api_config(self) -> List[str]:
        """Those calls as PaddleAPITest config lines."""
        return list(self.entry.get("api_config") or [])

    @property
    def own_op_types(self) -> List[str]:
        return list(self.entry.get("own_op_types") or [])

    @property
    def fusion(self) -> List[str]:
        return list(self.entry.get("fusion") or [])


@dataclasses.dataclass(frozen=True)
class Reproducer:
    """The script replaying a failure with Paddle's API (``analysis.reproducer``), and whether it did."""

    entry: AnalysisEntry

    @property
    def script(self) -> Optional[str]:
        return self.entry.get("script")

    @property
    def verified(self) -> bool:
        return bool(self.entry.get("verified"))

    @property
    def stage(self) -> Optional[str]:
        return self.entry.stage

    @property
    def source(self) -> "SourceReproducer":
        return SourceReproducer.from_dict(self.entry.get("source"))

    @property
    def conversion(self) -> JsonMapping:
        """Whose bug it is, for a runtime reading a converter's file (owner, words, converter, op)."""
        return self.entry.get("conversion") or {}

    @property
    def converter_cause(self) -> Optional[str]:
        """A converter's bug proven at an op: one key (converter, op) in every session reading its file."""
        judged = self.conversion
        proven = judged.get("owner") == Owner.CONVERTER.value and judged.get("op")
        return f"{judged.get('converter')} {judged['op']}" if proven else None


@dataclasses.dataclass(frozen=True)
class Analyses:
    """Every analysis of a cell, by kind, in the order they ran."""

    entries: Mapping[str, AnalysisEntry] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Optional[JsonMapping]) -> "Analyses":
        return cls({kind: AnalysisEntry.from_dict(kind, entry) for kind, entry in (data or {}).items()
                    if isinstance(entry, Mapping)})

    def to_dict(self) -> JsonObject:
        return {kind: entry.to_dict() for kind, entry in self.entries.items()}

    def __iter__(self) -> Iterator[AnalysisEntry]:
        return iter(self.entries.values())

    def __bool__(self) -> bool:
        return bool(self.entries)

    def get(self, kind: str) -> Optional[AnalysisEntry]:
        return self.entries.get(kind)

    @property
    def reduction(self) -> Optional[Reduction]:
        entry = self.entries.get("reduce")
        return Reduction(entry) if entry is not None else None

    @property
    def reproducer(self) -> Optional[Reproducer]:
        entry = self.entries.get("reproducer")
        return Reproducer(entry) if entry is not None else None

    @property
    def releases(self) -> Optional[ReleaseSpan]:
        entry = self.entries.get("releases")
        return ReleaseSpan.from_dict(entry.to_dict()) if entry is not None else None

    def localized_stage(self) -> Optional[str]:
        """The stage the cell reduced (its reduction's, else its reproducer's)."""
        for kind in ("reduce", "reproducer"):
            entry = self.entries.get(kind)
            if entry is not None and entry.stage:
                return entry.stage
        return None


# -- the record -------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CellRecord:
    """One cell's result record: what ran (the spec, Paddle, the machine), its setup and stages,
    its verdict and analyses, and where it was read from (``path``, ``run``: never written)."""

    id: str
    cell: CellSpec
    setup: StageRecord
    stages: Tuple[StageRecord, ...]
    verdict: Verdict
    analysis: Analyses = Analyses()
    paddle: JsonMapping = dataclasses.field(default_factory=dict)
    machine: JsonMapping = dataclasses.field(default_factory=dict)
    inputs: JsonMapping = dataclasses.field(default_factory=dict)
    harness: str = ""
    launches: int = 0
    launcher: str = ""
    runner: JsonMapping = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    finished_at: str = ""
    cpu_seconds: Optional[float] = None
    schema: int = SCHEMA
    path: Optional[Path] = None
    run: Optional[Path] = None

    # -- the JSON edge
    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "schema": SCHEMA, "harness": self.harness, "id": self.id, "cell": self.cell.to_dict(),
            "paddle": dict(self.paddle) if self.paddle else None, "machine": dict(self.machine),
            "inputs": dict(self.inputs), "setup": self.setup.to_dict(), "stages": [s.to_dict() for s in self.stages],
            "verdict": self.verdict.to_dict(), "analysis": self.analysis.to_dict(), "launches": self.launches,
            "launcher": self.launcher, "runner": dict(self.runner), "seconds": self.seconds,
            "finished_at": self.finished_at,
        }
        if self.cpu_seconds is not None:
            out["cpu_seconds"] = self.cpu_seconds
        return out

    @classmethod
    def from_dict(cls, data: JsonMapping, path: Optional[Path] = None, run: Optional[Path] = None) -> "CellRecord":
        """A record of a readable schema (``READABLE_SCHEMAS``); ``ValueError`` names why not."""
        schema = data.get("schema")
        if schema not in READABLE_SCHEMAS:
            raise ValueError(f"record schema {schema!r}, this harness reads {', '.join(map(str, READABLE_SCHEMAS))}")
        return cls(
            id=str(data["id"]), cell=CellSpec.from_dict(data["cell"]),
            setup=StageRecord.from_dict(data.get("setup") or {}, SETUP),
            stages=tuple(StageRecord.from_dict(s) for s in data.get("stages") or []),
            verdict=Verdict.from_dict(data.get("verdict") or {}), analysis=Analyses.from_dict(data.get("analysis")),
            paddle=data.get("paddle") or {}, machine=data.get("machine") or {}, inputs=data.get("inputs") or {},
            harness=str(data.get("harness") or ""), launches=int(data.get("launches") or 0),
            launcher=str(data.get("launcher") or ""), runner=data.get("runner") or {},
            seconds=float(data.get("seconds") or 0.0), finished_at=str(data.get("finished_at") or ""),
            cpu_seconds=_optional_float(data.get("cpu_seconds")), schema=int(schema), path=path, run=run)

    # -- what readers ask
    @property
    def session(self) -> str:
        return self.cell.session.name

    @property
    def version(self) -> str:
        return self.cell.paddle

    @property
    def mode(self) -> str:
        return self.cell.mode

    @property
    def model(self) -> str:
        return self.cell.model_name

    @property
    def triple(self) -> Tuple[str, str, str]:
        """(session, mode, model): the same cell at another Paddle version."""
        return self.session, self.mode, self.model

    @property
    def column(self) -> Tuple[str, str]:
        """(session, Paddle version): the report's columns."""
        return self.session, self.version

    @property
    def weights(self) -> Optional[str]:
        """The trained weights' sha256: the premise of every cross-version comparison."""
        return (self.setup.get("weights") or {}).get("sha256")

    @property
    def machine_key(self) -> Optional[str]:
        return self.machine.get("key")

    @property
    def ladder(self) -> Tuple[StageRecord, ...]:
        """The stages; a cell whose setup did not pass shows as its setup entry."""
        if self.verdict.first_failing_stage == SETUP:
            return (self.setup,)
        return self.stages

    def stage(self, name: str) -> Optional[StageRecord]:
        return next((s for s in self.ladder if s.name == name), None)

    @property
    def work_dir(self) -> Optional[Path]:
        """The cell's work folder (beside the record file)."""
        return self.path.with_suffix("") if self.path is not None else None

    def located(self, value: "str | Path | None") -> Optional[Path]:
        """A path the record holds, as a path this process can open: relative ones against the run
        folder the record was read from (records written before paths were relative hold absolute ones)."""
        if not value:
            return None
        where = Path(value)
        if where.is_absolute() or self.run is None:
            return where
        return self.run / where
