"""One-line notes and numbers, the same words in every renderer."""

from __future__ import annotations

from typing import Any, Optional

from .compare import Comparison, describe_tolerance
from .record_model import AnalysisEntry, Outcome, StageRecord
from ..runtimes import REGISTRY
from .vocab import Status


def fmt_number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def worst_output_note(worst: Optional[Comparison]) -> str:
    """Which output failed and by how much, or the comparison's own note (vacuous, shape)."""
    if worst is None:
        return ""
    if worst.note:
        return f"{worst.output}: {worst.note}"
    return f"{worst.output}: {worst.mismatched}/{worst.total} out of {describe_tolerance(worst)}"


def stage_note(stage: StageRecord) -> str:
    """What a person needs to know about one stage result, in one line."""
    parts = []
    if stage.status in (Status.FAIL, Status.VACUOUS) and stage.worst is not None:
        parts.append(worst_output_note(stage.worst))
    if stage.message:
        parts.append(stage.message)
    if stage.get("traced_at"):
        parts.append(f"traced at {stage.get('traced_at')[-1]}")
    if (stage.get("fresh_export") or {}).get("words"):  # an export that raised, tried on a fresh instance
        parts.append(stage.get("fresh_export")["words"])
    # A crash said by Paddle's innermost frame needs no more; else the last line it printed (its
    # signal banner names the process: "received by PID ...", so a frame is what names the cause).
    said_where = " in " in (stage.message or "") and (stage.message or "").startswith("worker died with")
    if stage.status is Status.CRASH and stage.get("stderr_tail") and not said_where:
        last = [ln for ln in stage.get("stderr_tail").splitlines() if ln.strip()][-1:]
        if last:
            parts.append(f"stderr: {last[0].strip()[:160]}")
    return "; ".join(parts)


def task_note(stage: StageRecord) -> str:
    """The stage's verdict in the model's terms ("tokens agree 16/16, top-5 overlap 0.97"), or ''."""
    return str((stage.task or {}).get("summary") or "")


def evidence_note(stage: StageRecord) -> str:
    """What a stage ran, in the words of its runtime's descriptor (the stage record names its
    runtime); Paddle Inference's: the passes its build ran and the ops it executed."""
    evidence = stage.evidence
    if not evidence:
        return ""
    own = REGISTRY.evidence_note(stage.get("runtime"), evidence)
    if own:
        return own
    return f"{len(evidence.get('passes') or [])} passes, {evidence.get('ops', '?')} ops"


def analysis_outcome(entry: AnalysisEntry) -> str:
    """What an analysis step came to, in one word or two (the status column of its row): ``pass``
    only says that the step ran, which reads as "the diff passed"."""
    if entry.status is not Status.PASS:
        return str(entry.status.value)
    if entry.kind == "reduce":
        if entry.get("op_call"):
            return Outcome.ISOLATED.value
        return (Outcome.LOCALIZED if entry.get("path") or entry.get("members") else Outcome.WHOLE_MODEL).value
    if entry.kind == "reproducer":
        return "verified" if entry.get("verified") else "NOT verified"
    if entry.kind in ("bisect", "exclude", "fp32_ops"):
        if entry.get("culprits"):
            return Outcome.FOUND.value
        return str(entry.outcome or Outcome.NOT_FOUND.value).replace("-", " ")
    return str(entry.outcome or "done")


def analysis_note(entry: AnalysisEntry) -> str:
    kind, stage, status, get = entry.kind, entry.stage or "", entry.status, entry.get
    if status in (Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.UNTESTABLE):
        # A worker that died in the step took the stage it analysed with it: the step alone is named.
        return f"{kind} of {stage}: {entry.message}" if stage else f"{kind}: {entry.message}"
    if status is Status.SKIP and kind in ("bisect", "reduce"):
        return f"{stage}: {entry.message}"
    if kind == "bisect":
        space = REGISTRY.search_space(str(get("kind")))
        what = space.what if space else get("kind")
        culprits = " + ".join(", ".join(s) for s in [get("culprits") or []] + (get("also_fixed_by") or []) if s) or "none"
        follow = f" + {get('follow_up_builds')} to look for another" if get("follow_up_builds") else ""
        text = f"{stage}: culprit {what}: {culprits} ({get('builds')} builds over {get('candidates')} candidates{follow})"
        return text + (f"; {entry.message}" if entry.message else "")
    if kind == "triage":
        return f"{stage}: {entry.outcome}: {get('meaning', '')}"
    if kind == "reduce":
        where = ", ".join(get("members") or []) or get("path") or "the whole model"
        together = len(get("ops") or []) > 1
        op = (f"; ops {get('op')} together" if together else
              f"; op {get('op')}" + (" alone" if get("op_call") else "") if get("op") else "")
        runs = (get("isolation") or {}).get("runs")
        return (f"{stage}: {where} ({get('layer')}){op}; {get('halving_exports', get('sub_exports'))} "
                f"sub-exports (budget {get('budget')}) + {get('finer_exports', 0)} finer"
                + (f" + {runs} op programs" if runs else ""))
    if kind in ("exclude", "fp32_ops"):
        return f"{stage}: {entry.verdict or entry.message or entry.outcome}"
    if kind == "reproducer":
        state = "verified" if get("verified") else (f"NOT verified (exit {get('exit')}: "
                                                    f"{clip(get('last_line', ''), 120)})")
        return f"{stage}: {state}"
    if kind == "diff":
        first = get("first_divergence")
        where = (f"first divergence at #{first['index']} {first['op']} {first['name']}" if first
                 else entry.outcome or "no tensor diverges")
        files = get("files") or {}
        return f"{stage} vs baseline: {where}; table: {files.get('xlsx') or files.get('csv') or get('result')}"
    return entry.message
