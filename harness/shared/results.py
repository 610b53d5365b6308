"""Stage and output results as objects that know whether they passed.

Records stay plain JSON (the journal and the record files are read by other tools too); readers
wrap what they read in these views instead of poking at keys and comparing loose strings.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from .vocab import Status


@dataclasses.dataclass(frozen=True)
class OutputResult:
    label: str
    status: Status
    stats: Mapping[str, Any]

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS

    @property
    def max_abs(self) -> Optional[float]:
        return self.stats.get("max_abs")


@dataclasses.dataclass(frozen=True)
class StageResult:
    name: str
    status: Status
    message: str = ""
    worst: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    evidence: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    outputs: Tuple[OutputResult, ...] = ()
    raw: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: Dict[str, Any], name: Optional[str] = None) -> "StageResult":
        per_output = data.get("outputs")
        # A setup entry's "outputs" lists the dygraph output labels; only stages compare them.
        outputs = tuple(OutputResult(label, Status.of(stats.get("status")), stats)
                        for label, stats in per_output.items()) if isinstance(per_output, dict) else ()
        return cls(name=name or data.get("name", "?"), status=Status.of(data.get("status")),
                   message=data.get("message", "") or "", worst=data.get("worst") or {},
                   evidence=data.get("evidence") or {}, outputs=outputs, raw=data)

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS

    @property
    def blocks(self) -> bool:
        return self.status.blocks

    @property
    def failing_outputs(self) -> Tuple[OutputResult, ...]:
        return tuple(o for o in self.outputs if o.status.blocks)
