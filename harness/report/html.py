"""One self-contained HTML report (styles and images inline; nothing is fetched at view time),
rendered from the report model with Jinja2 (autoescaping on: every name and message from records
or Paddle is escaped) and matplotlib (the drift plot; the per-tensor plots the runner wrote).
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, Dict, Optional

from .. import __version__
from ..shared.logs import log_tail
from ..shared.record_model import AnalysisEntry, CellRecord
from ..shared.records import atomic_write_text
from ..shared.tensor_diff import TensorDiff
from ..shared.vocab import STATUS_ORDER, cell_id
from ..shared.spec import version_order
from .model import Diagnosis, RunModel
from ..shared.notes import analysis_note, analysis_outcome, evidence_note, fmt_number, stage_note, task_note
from .tensors import pyplot, row_cells

TEMPLATES = Path(__file__).with_name("templates")
TENSOR_ROWS = 60  # per cell: the first divergence and its neighbourhood are what a person reads


def _anchor(place: str) -> str:
    return "cell-" + re.sub(r"[^A-Za-z0-9_-]", "-", place)


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def drift_plot(model: RunModel) -> Optional[str]:
    """Max abs error of each (session, stage) across Paddle versions, as an inline PNG."""
    series: Dict[str, Dict[str, float]] = {}
    for record in model.records:
        for stage in record.stages:
            value = stage.worst.max_abs if stage.worst else None
            if value is None:
                continue
            key = f"{record.session}:{stage.name}"
            version = record.version
            series.setdefault(key, {})[version] = max(series.get(key, {}).get(version, 0.0), float(value))
    versions = sorted({v for points in series.values() for v in points}, key=version_order)
    if len(versions) < 2:
        return None
    with pyplot() as plt:
        fig, ax = plt.subplots(figsize=(9, 4))
        floor = 1e-9
        for key, points in sorted(series.items()):
            xs = [i for i, v in enumerate(versions) if v in points]
            ax.semilogy(xs, [max(points[versions[i]], floor) for i in xs], marker="o", linewidth=1, label=key)
        ax.set_xticks(range(len(versions)))
        ax.set_xticklabels(versions)
        ax.set_ylabel("worst output max abs")
        ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        png = _png(fig)
        plt.close(fig)
    return png


def _tensor_rows(record: CellRecord, diff: AnalysisEntry):
    """The per-tensor rows around the first divergence, and how many there are."""
    path = record.located(diff.get("result"))
    if path is None or not path.exists():
        return None
    rows = TensorDiff.from_dict(json.loads(path.read_text(encoding="utf-8"))).rows
    first = next((i for i, r in enumerate(rows) if r.first_divergence), 0)
    start = max(0, first - TENSOR_ROWS // 3)
    shown = []
    for row in rows[start:start + TENSOR_ROWS]:
        cells = row_cells(row)
        shown.append({"index": row.index, "op": cells[1], "name": row.name, "mismatched": cells[4],
                      "max_abs": fmt_number(row.max_abs, 4), "max_rel": fmt_number(row.max_rel, 4),
                      "matched_by": row.matched_by, "note": cells[10], "first": row.first_divergence})
    return shown, len(rows)


def _cell(record: CellRecord) -> Dict[str, Any]:
    """One cell as the template shows it (every field escaped there)."""
    stages, outputs = [], []
    for stage in record.ladder:
        worst = stage.worst
        stages.append({"name": stage.name, "status": str(stage.status),
                       "max_abs": fmt_number(worst.max_abs if worst else None),
                       "max_rel": fmt_number(worst.max_rel if worst else None), "answers": task_note(stage),
                       "answers_changed": bool((stage.task or {}).get("changed")), "evidence": evidence_note(stage),
                       "lever": stage.get("lever", ""), "note": stage_note(stage)})
        for label, stats in stage.outputs.items():
            outputs.append({"stage": stage.name, "label": label, "status": str(stats.status),
                            "mismatched": f"{stats.mismatched}/{stats.total}",
                            "max_abs": fmt_number(stats.max_abs), "max_rel": fmt_number(stats.max_rel),
                            "cosine": fmt_number(stats.cosine, 6), "ref_absmax": fmt_number(stats.ref_absmax)})
    tensors, total, png = [], 0, None
    diff = record.analysis.get("diff")
    if diff is not None:
        found = _tensor_rows(record, diff)
        if found:
            tensors, total = found
        plot = record.located((diff.get("files") or {}).get("png"))
        if plot is not None and plot.exists():
            png = base64.b64encode(plot.read_bytes()).decode("ascii")
    work = record.work_dir
    return {"id": record.id, "anchor": _anchor(record.id), "status": str(record.verdict.status),
            "message": record.verdict.message, "stages": stages, "outputs": outputs,
            "analysis": [{"kind": entry.kind, "outcome": analysis_outcome(entry), "note": analysis_note(entry)}
                         for entry in record.analysis],
            "tensors": tensors, "tensor_total": total, "tensor_png": png,
            "log_tail": log_tail(work / "worker.log", lines=20) if work else ""}


def _diagnosis(found: Optional[Diagnosis], base: Path) -> Optional[Dict[str, Any]]:
    """Where a failure was localized, as the template shows it (every field escaped there). The
    draft's link is relative to the report's folder (``base``): it still opens after the run
    folder was moved or copied with its report."""
    if found is None:
        return None
    return {"layer": found.layer, "op": found.op or found.fusion, "searches": found.searches, "triage": found.triage,
            "reproducer": {"script": found.script, "verified": found.reproducer.verified} if found.reproducer else None,
            "not_analysed": found.not_analysed, "not_reduced": found.not_reduced, "draft": found.draft, "workaround": found.workaround,
            "releases": found.releases,
            "draft_href": _href(Path(found.draft), base) if found.draft else ""}


def _href(target: Path, base: Path) -> str:
    return urllib.parse.quote(Path(os.path.relpath(target.resolve(), base.resolve())).as_posix())


def _versions(span: Any) -> str:
    return span.words() if span is not None else ""


def render(model: RunModel, title: str, base: Path = Path(".")) -> str:
    """The report's page; ``base``: the folder it is written to (its links are relative to it)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    counts = model.verdict_counts()
    grid = model.glance()
    rows = []
    for model_name, mode in model.rows:
        cells = []
        for column in model.columns:
            verdict = grid.get((model_name, mode), {}).get(column)
            if verdict is None:
                cells.append(None)
                continue
            place = cell_id(column[0], column[1], mode, model_name)
            cells.append({"id": place, "anchor": _anchor(place), "status": str(verdict.status),
                          "stage": verdict.first_failing_stage, "message": verdict.message})
        rows.append({"label": f"{model_name} · {mode}", "cells": cells})
    details = model.hazard_details()
    hazards = [{"kind": h.kind, "message": h.message, "places": h.places,
                "calls": details[h.kind].calls if h.kind in details else "",
                "issue": details[h.kind].issue if h.kind in details else None} for h in model.hazards()]
    numeric = [{"place": f.place, "stage": f.stage, "output": f.output, "max_abs": fmt_number(f.max_abs),
                "of_scale": f"{100 * f.relative_to_scale:.3g}%" if f.relative_to_scale is not None else "-",
                "cosine": fmt_number(f.cosine, 5), "culprits": ", ".join(f.culprits),
                "versions": _versions(model.numeric_span(f)),
                "diagnosis": _diagnosis(f.diagnosis, base)} for f in model.numeric_failures()]
    return env.get_template("report.html.j2").render(
        title=title, harness=__version__, n_cells=len(model.records),
        counts=[(str(s), counts[s]) for s in STATUS_ORDER if counts.get(s)],
        columns=model.columns, rows=rows, hazards=hazards, numeric=numeric,
        gaps=[dataclasses.asdict(g) for g in model.harness_gaps()],
        causes=[{"kind": c.kind, "count": c.count, "message": c.message, "places": c.places,
                 "versions": _versions(model.version_span(c.places)),
                 "diagnosis": _diagnosis(model.diagnosis(c), base)} for c in model.causes()],
        machines=[{"key": m.key, "label": m.label, "cells": len(m.cells),
                   "columns": ", ".join(f"{a}@{b}" for a, b in m.columns)} for m in model.machines()],
        unreadable=[{"path": u.path, "reason": u.reason} for u in model.unreadable],
        drift_png=drift_plot(model), cells=[_cell(r) for r in sorted(model.records, key=lambda r: r.id)])


def write(path: Path, model: RunModel, title: str) -> Path:
    atomic_write_text(Path(path), render(model, title, Path(path).parent))
    return Path(path)
