"""One-line notes and numbers, the same words in every renderer."""

from __future__ import annotations

from typing import Any, Dict

from .compare import describe_tolerance
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


def worst_output_note(worst: Dict[str, Any]) -> str:
    """Which output failed and by how much, or the comparison's own note (vacuous, shape)."""
    if not worst:
        return ""
    if worst.get("note"):
        return f"{worst.get('output')}: {worst['note']}"
    return (f"{worst.get('output')}: {worst.get('mismatched')}/{worst.get('total')} out of "
            f"{describe_tolerance(worst)}")


def stage_note(stage: Dict[str, Any]) -> str:
    """What a person needs to know about one stage result, in one line."""
    status = Status.of(stage.get("status"))
    parts = []
    worst = stage.get("worst") or {}
    if status in (Status.FAIL, Status.VACUOUS) and worst:
        parts.append(worst_output_note(worst))
    if stage.get("message"):
        parts.append(str(stage["message"]))
    if stage.get("traced_at"):
        parts.append(f"traced at {stage['traced_at'][-1]}")
    if status is Status.CRASH and stage.get("stderr_tail"):
        last = [ln for ln in stage["stderr_tail"].splitlines() if ln.strip()][-1:]
        if last:
            parts.append(f"stderr: {last[0].strip()[:160]}")
    return "; ".join(parts)


def task_note(stage: Dict[str, Any]) -> str:
    """The stage's verdict in the model's terms ("tokens agree 16/16, top-5 overlap 0.97"), or ''."""
    task = stage.get("task") or {}
    return str(task.get("summary") or "")


def evidence_note(stage: Dict[str, Any]) -> str:
    """What a stage ran, in the words of its runtime's descriptor (the stage record names its
    runtime); Paddle Inference's: the passes its build ran and the ops it executed."""
    evidence = stage.get("evidence") or {}
    if not evidence:
        return ""
    own = REGISTRY.evidence_note(stage.get("runtime"), evidence)
    if own:
        return own
    return f"{len(evidence.get('passes') or [])} passes, {evidence.get('ops', '?')} ops"


def analysis_outcome(kind: str, result: Dict[str, Any]) -> str:
    """What an analysis step came to, in one word or two (the status column of its row): ``pass``
    only says that the step ran, which reads as "the diff passed"."""
    status = Status.of(result.get("status"))
    if status is not Status.PASS:
        return str(status.value)
    if kind == "reduce":
        if result.get("op_call"):
            return "isolated"
        return "localized" if result.get("path") or result.get("members") else "whole model"
    if kind == "reproducer":
        return "verified" if result.get("verified") else "NOT verified"
    if kind in ("bisect", "exclude"):
        if result.get("culprits"):
            return "found"
        return str(result.get("outcome") or "not found").replace("-", " ")
    return str(result.get("outcome") or "done")


def analysis_note(kind: str, result: Dict[str, Any]) -> str:
    stage = result.get("stage") or "?"
    status = Status.of(result.get("status"))
    if status in (Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.UNTESTABLE):
        return f"{kind} of {stage}: {result.get('message', '')}"
    if kind == "bisect":
        if status is Status.SKIP:
            return f"{stage}: {result.get('message', '')}"
        space = REGISTRY.search_space(str(result.get("kind")))
        what = space.what if space else result.get("kind")
        culprits = " + ".join(", ".join(s) for s in [result.get("culprits") or []] + (result.get("also_fixed_by") or [])
                              if s) or "none"
        follow = f" + {result['follow_up_builds']} to look for another" if result.get("follow_up_builds") else ""
        text = (f"{stage}: culprit {what}: {culprits} ({result.get('builds')} builds over "
                f"{result.get('candidates')} candidates{follow})")
        return text + (f"; {result['message']}" if result.get("message") else "")
    if kind == "triage":
        return f"{stage}: {result.get('outcome')}: {result.get('meaning', '')}"
    if kind == "reduce":
        if status is Status.SKIP:
            return f"{stage}: {result.get('message', '')}"
        where = ", ".join(result.get("members") or []) or result.get("path") or "the whole model"
        together = len(result.get("ops") or []) > 1
        op = (f"; ops {result['op']} together" if together else
              f"; op {result['op']}" + (" alone" if result.get("op_call") else "") if result.get("op") else "")
        runs = (result.get("isolation") or {}).get("runs")
        return (f"{stage}: {where} ({result.get('layer')}){op}; {result.get('halving_exports', result.get('sub_exports'))} "
                f"sub-exports (budget {result.get('budget')}) + {result.get('finer_exports', 0)} finer"
                + (f" + {runs} op programs" if runs else ""))
    if kind == "exclude":
        return f"{stage}: {result.get('verdict') or result.get('message') or result.get('outcome')}"
    if kind == "reproducer":
        state = "verified" if result.get("verified") else (f"NOT verified (exit {result.get('exit')}: "
                                                           f"{clip(result.get('last_line', ''), 120)})")
        return f"{stage}: {state}"
    if kind == "diff":
        first = result.get("first_divergence")
        where = (f"first divergence at #{first['index']} {first['op']} {first['name']}" if first
                 else result.get("outcome") or "no tensor diverges")
        files = result.get("files") or {}
        return f"{stage} vs baseline: {where}; table: {files.get('xlsx') or files.get('csv') or result.get('result')}"
    return str(result.get("message", ""))
