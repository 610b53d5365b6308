"""A run's records besides its cells, as types: the hazard probe of each Paddle version and device
(``versions/<v>/hazards-<device>.json``) and each portability load (``portability/...``). JSON at
their edges only, as cell records are (``record_model``).

Standard library only: the cell side writes hazard probes.
"""

from __future__ import annotations

import dataclasses
from typing import List, Mapping, Optional

from .json_types import JsonObject
from .vocab import HAZARD, Status


@dataclasses.dataclass(frozen=True)
class HazardCheck:
    """One documented knob combination tried on a probe program: ``hazard`` when it raised (with
    Paddle's words), ``clear`` when it did not."""

    id: str
    calls: str
    status: str
    message: str = ""
    issue: Optional[str] = None
    format: str = ""
    backends: List[str] = dataclasses.field(default_factory=list)

    @property
    def raised(self) -> bool:
        return self.status == HAZARD

    @property
    def concerns(self) -> str:
        """The sessions it concerns, in words."""
        return " and ".join(self.backends) + " sessions" if self.backends else "every session"

    def to_dict(self) -> JsonObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> "HazardCheck":
        return cls(id=str(data["id"]), calls=str(data.get("calls") or ""), status=str(data.get("status") or ""),
                   message=str(data.get("message") or ""), issue=data.get("issue"), format=str(data.get("format") or ""),
                   backends=list(data.get("backends") or []))


@dataclasses.dataclass(frozen=True)
class HazardProbe:
    """Every hazard of one Paddle version and device, probed once per run; what it was made for (the
    version's packages, the machine), and, when the probe itself did not finish, how it ended."""

    paddle: str
    device: str = "cpu"
    hazards: List[HazardCheck] = dataclasses.field(default_factory=list)
    format: str = ""
    made_for: Optional[Mapping[str, object]] = None
    ended: Optional[Mapping[str, object]] = None  # the probe's own crash or timeout (``probe`` in the file)
    session: Optional[str] = None  # a probe of a run made before probes were per version: its session
    cpu_seconds: Optional[float] = None
    seconds: Optional[float] = None

    @property
    def place(self) -> str:
        return f"{self.session}@{self.paddle}" if self.session else f"Paddle {self.paddle}"

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"kind": "hazards", "paddle": self.paddle, "device": self.device, "format": self.format,
                           "hazards": [h.to_dict() for h in self.hazards]}
        if self.ended is not None:
            out["probe"] = dict(self.ended)
        for key in ("made_for", "session", "cpu_seconds", "seconds"):
            value = getattr(self, key)
            if value is not None:
                out[key] = dict(value) if isinstance(value, Mapping) else value
        return out

    @classmethod
    def from_dict(cls, data: JsonObject) -> "HazardProbe":
        return cls(paddle=str(data.get("paddle") or ""), device=str(data.get("device") or "cpu"),
                   hazards=[HazardCheck.from_dict(h) for h in data.get("hazards") or []],
                   format=str(data.get("format") or ""), made_for=data.get("made_for"), ended=data.get("probe"),
                   session=data.get("session"), cpu_seconds=data.get("cpu_seconds"), seconds=data.get("seconds"))


@dataclasses.dataclass(frozen=True)
class PortabilityLoad:
    """A cell's export, made by one Paddle version, loaded and run by another, compared with the
    exporter's baseline outputs."""

    exported_by: str
    loaded_by: str
    session: str
    mode: str
    model: str
    status: Status
    message: str = ""
    format: Optional[str] = None
    program: str = ""
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    signal: Optional[str] = None
    seconds: Optional[float] = None
    cpu_seconds: Optional[float] = None
    ended: Mapping[str, object] = dataclasses.field(default_factory=dict)  # how a loader that died ended

    _KNOWN = ("exported_by", "loaded_by", "session", "mode", "model", "status", "message", "format", "program",
              "max_abs", "max_rel", "signal", "seconds", "cpu_seconds")

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"kind": "portability", **dict(self.ended)}
        out.update({k: getattr(self, k) for k in self._KNOWN if getattr(self, k) is not None})
        return out

    @classmethod
    def from_dict(cls, data: JsonObject) -> "PortabilityLoad":
        known = {k: data.get(k) for k in cls._KNOWN if data.get(k) is not None}
        known["status"] = Status.of(data.get("status"))
        known["message"] = str(data.get("message") or "")
        return cls(ended={k: v for k, v in data.items() if k not in cls._KNOWN and k != "kind"}, **known)


__all__ = ["HazardCheck", "HazardProbe", "PortabilityLoad"]
