"""What an analysis step has done so far, on disk as it happens (cell side): the step and the stage it
analyses, then each trial as it ends (``protocol.ANALYSIS_PROGRESS``). A worker that dies inside the
step (killed at the stage timeout, or taken by the kernel with a trial's child) leaves this
behind, and the host keeps it in the step's record: what was found before is not lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ...shared.protocol import ANALYSIS_PROGRESS


def begin(work: Path, step: str, stage: str) -> None:
    (work / ANALYSIS_PROGRESS).write_text(json.dumps({"step": step, "stage": stage}) + "\n", encoding="utf-8")


def ended(work: Path, trial: Mapping[str, Any]) -> None:
    with open(work / ANALYSIS_PROGRESS, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(dict(trial), default=str) + "\n")


__all__ = ["begin", "ended"]
