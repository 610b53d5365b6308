"""Terminal tables and markdown, rendered from the report model.

The terminal table and ``report.md`` both open with what a person acts on: the verdicts, then
one line per distinct cause (with its count and where it hit), the hazards (once, however many
sessions met them) and the numeric failures; the per-stage tables come after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

from tabulate import tabulate

from ..shared.causes import Cause, cause_of
from ..shared.record_model import CellRecord
from ..shared.records import atomic_write_text
from ..shared.vocab import SETUP, STATUS_ORDER, Status
from .model import RunModel
from ..shared.notes import analysis_note, analysis_outcome, clip, evidence_note, fmt_number, stage_note, task_note

STAGE_HEADERS = ["cell", "stage", "status", "max abs", "max rel", "the model says", "evidence", "note"]
OUTPUT_HEADERS = ["cell", "stage", "output", "predictor name", "status", "mismatched", "max abs",
                  "max rel", "cosine", "|ref| max", "atol", "rtol", "scaled atol"]


def _cause_labels(causes: Sequence[Cause]) -> Dict[str, str]:
    return {c.key: f"C{i}" for i, c in enumerate(causes, 1)}


def stage_rows(model: RunModel, records: Sequence[CellRecord], max_note: int = 110) -> List[List[str]]:
    labels = _cause_labels(model.causes())
    rows = []
    for record in records:
        first = record.verdict.first_failing_stage
        unrun = record.verdict.skipped_stage  # the session's own stage: the cell's skip
        for stage in record.ladder:
            worst = stage.worst
            note = stage_note(stage)
            label = labels.get(cause_of(stage.message)) if stage.status in (
                Status.ERROR, Status.CRASH, Status.TIMEOUT) else None
            if label:
                note = f"[{label}] {note}"
            if stage.name == first and stage.name != SETUP:
                note = f"FIRST FAILURE; {note}" if note else "FIRST FAILURE"
            elif stage.name == unrun:
                note = f"SESSION NOT RUN; {note}" if note else "SESSION NOT RUN"
            rows.append([record.id, stage.name, str(stage.status), fmt_number(worst.max_abs if worst else None),
                         fmt_number(worst.max_rel if worst else None), task_note(stage), evidence_note(stage),
                         clip(note, max_note)])
        for entry in record.analysis:
            rows.append([record.id, f"> {entry.kind}", analysis_outcome(entry), "-", "-", "", "",
                         clip(analysis_note(entry), max_note)])
            if entry.get("script"):  # a path is never cut: its own row
                rows.append([record.id, "", "", "", "", "", "", str(record.located(entry.get("script")))])
    return rows


def summary_line(model: RunModel, records: Sequence[CellRecord]) -> str:
    counts = model.verdict_counts(records)
    return f"{len(records)} cells: " + ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts.get(s))


def findings_lines(model: RunModel, fmt: str = "text", limit: int = 6) -> List[str]:
    """Distinct causes, hazards and numeric failures: one line each."""
    bullet = "- " if fmt == "markdown" else "  "
    lines: List[str] = []
    causes = model.causes()
    if causes:
        lines.append(f"Distinct causes ({len(causes)}):")
        for label, cause in zip(_cause_labels(causes).values(), causes):
            more = len(cause.places) - limit
            where = ", ".join(cause.places[:limit]) + (f", +{more} more" if more > 0 else "")
            diagnosis = model.diagnosis(cause)
            found = f" — {diagnosis.words()}" if diagnosis and diagnosis.words() else ""
            span = model.version_span(cause.places)
            versions = f" — {span.words()}" if span and span.words() else ""
            lines.append(f"{bullet}[{label}] {cause.kind} x{cause.count} in {len(cause.places)} cell(s): "
                         f"{clip(cause.message, 220)} — {where}{versions}{found}")
    gaps = model.harness_gaps()
    if gaps:
        lines.append(f"The harness could not test ({len(gaps)} places; its own failures, not findings about Paddle):")
        lines.extend(f"{bullet}{gap.place} {gap.what}: {clip(gap.message, 220)}" for gap in gaps[:limit * 2])
        if len(gaps) > limit * 2:
            lines.append(f"{bullet}... and {len(gaps) - limit * 2} more (status untestable in the records)")
    hazards = model.hazards()
    details = model.hazard_details()
    if hazards:
        lines.append(f"Hazards ({len(hazards)}; findings about Paddle, not cell verdicts):")
        for hazard in hazards:
            info = details.get(hazard.kind)
            issue = f" ({info.issue})" if info is not None and info.issue else ""
            lines.append(f"{bullet}{hazard.kind}: {info.calls if info else ''} raises {clip(hazard.message, 200)}{issue}"
                         f" — probed in {', '.join(hazard.places)}")
    for probe in model.hazard_probe_failures():
        lines.append(f"{bullet}hazard probe of {probe.session or 'Paddle'}@{probe.paddle} did not finish: "
                     f"{probe.ended.get('status')}: {clip(str(probe.ended.get('message', '')), 160)}")
    skipped = model.skipped_shapes()
    if skipped:
        lines.append(f"Shapes not run: the dygraph model raised there ({len(skipped)}):")
        lines.extend(f"{bullet}{place} {shape}: {clip(why, 200)}" for place, shape, why in skipped[:limit])
        if len(skipped) > limit:
            lines.append(f"{bullet}... and {len(skipped) - limit} more (each record's setup.shape_variants)")
    numeric = model.numeric_failures()
    labels = dict(zip(map(id, causes), _cause_labels(causes).values()))
    if numeric:
        lines.append(f"Numeric failures ({len(numeric)}):")
        for f in numeric:
            # A numeric failure proven the converter's belongs to that cause (every runtime that read the file).
            owner = model.converter_cause(f.place, f.stage)
            owned = f"; the converter's: cause [{labels[id(owner)]}]" if owner is not None else ""
            scale = (f", {100 * f.relative_to_scale:.3g}% of the output's scale" if f.relative_to_scale is not None
                     else "")
            culprit = f"; culprit: {', '.join(f.culprits)}" if f.culprits else ""
            where = f" — {f.diagnosis.words()}" if f.diagnosis and f.diagnosis.words() else ""
            span = model.numeric_span(f)
            versions = f"; {span.words()}" if span and span.words() else ""
            lines.append(f"{bullet}{f.place} {f.stage}: {f.output} max abs {fmt_number(f.max_abs)}{scale}, "
                         f"cosine {fmt_number(f.cosine, 5)}{culprit}{owned}{versions}{where}")
    return lines


def machine_lines(model: RunModel, fmt: str = "text") -> List[str]:
    """The machine(s) the cells ran on, once each: bf16 and int8 verdicts depend on them."""
    bullet = "- " if fmt == "markdown" else "  "
    machines = model.machines()
    if len(machines) == 1:
        return [f"Machine: {machines[0].label} (key {machines[0].key})"]
    lines = [f"Machines ({len(machines)}; cells on different CPUs can differ in bf16/int8 numerics):"]
    for m in machines:
        where = ", ".join(f"{s}@{v}" for s, v in m.columns[:6]) + (" ..." if len(m.columns) > 6 else "")
        lines.append(f"{bullet}{m.label} (key {m.key}): {len(m.cells)} cell(s) — {where}")
    return lines


def unreadable_lines(model: RunModel, fmt: str = "text") -> List[str]:
    """Files where a record belongs that could not be read: listed, never dropped."""
    if not model.unreadable:
        return []
    bullet = "- " if fmt == "markdown" else "  "
    return [f"Unreadable records ({len(model.unreadable)}; not in any count or table above):",
            *(f"{bullet}{u}" for u in model.unreadable)]


def terminal_table(model: RunModel, records: Sequence[CellRecord] = ()) -> str:
    records = list(records or model.records)
    table = tabulate(stage_rows(model, records), headers=STAGE_HEADERS, tablefmt="simple")
    findings = findings_lines(model) + unreadable_lines(model)
    return "\n".join([table, "", *findings, *([""] if findings else []), *machine_lines(model),
                      summary_line(model, records)])


def glance_table(model: RunModel) -> str:
    """Model × mode rows, session × version columns, the verdict (and its first failing stage) in each."""
    columns = model.columns
    grid = model.glance()
    body = []
    for row in model.rows:
        cells = []
        for column in columns:
            verdict = grid.get(row, {}).get(column)
            if verdict is None:
                cells.append("-")
                continue
            stage = verdict.first_failing_stage
            cells.append(f"{verdict.status}" + (f" @{stage}" if stage else ""))
        body.append([f"{row[0]} · {row[1]}", *cells])
    return tabulate(body, headers=["model · mode", *[f"{s} {v}" for s, v in columns]], tablefmt="github")


def markdown_report(model: RunModel, title: str) -> str:
    lines = [f"# {title}", "", f"{summary_line(model, model.records)}", "", *machine_lines(model, "markdown"), "",
             "## Matrix at a glance", "", glance_table(model), ""]
    unreadable = unreadable_lines(model, "markdown")
    if unreadable:
        lines += ["## Unreadable records", "", *unreadable[1:], ""]
    findings = findings_lines(model, "markdown")
    if findings:
        lines += ["## Findings", "", *findings, ""]
    for (session, version), group in model.by_session().items():
        paddle = next((r.paddle for r in group if r.paddle), None) or {}
        lines += [f"## {session} · Paddle {version}", ""]
        if paddle:
            lines += [f"Paddle {paddle.get('version')} (commit {str(paddle.get('commit'))[:12]}, "
                      f"CUDA {paddle.get('cuda') or 'none'}, TensorRT {paddle.get('tensorrt') or 'none'})", ""]
        lines += [tabulate(stage_rows(model, group, max_note=400), headers=STAGE_HEADERS, tablefmt="github"), ""]
        detail = output_rows(group)
        if detail:
            lines += ["<details><summary>per-output error statistics</summary>", "",
                      tabulate(detail, headers=OUTPUT_HEADERS, tablefmt="github"), "", "</details>", ""]
    return "\n".join(lines)


def output_rows(records: Sequence[CellRecord]) -> List[List[str]]:
    rows = []
    for record in records:
        for stage in record.stages:
            for label, stats in stage.outputs.items():
                rows.append([
                    record.id, stage.name, label, stats.predictor_name or "-", str(stats.status),
                    f"{stats.mismatched}/{stats.total}", fmt_number(stats.max_abs),
                    fmt_number(stats.max_rel), fmt_number(stats.cosine), fmt_number(stats.ref_absmax),
                    fmt_number(stats.atol), fmt_number(stats.rtol), fmt_number(stats.scaled_atol or None),
                ])
    return rows


def short_summary(model: RunModel, title: str, limit: int = 10) -> str:
    """Short enough for a pull-request comment or $GITHUB_STEP_SUMMARY: counts, the matrix at a
    glance, and the first findings."""
    findings = unreadable_lines(model, "markdown") + findings_lines(model, "markdown", limit=3)
    shown = findings[:limit] + ([f"- ... {len(findings) - limit} more lines in report.md"] if len(findings) > limit else [])
    return "\n".join([f"### {title}", "", summary_line(model, model.records), "", *machine_lines(model, "markdown"), "",
                      glance_table(model), "", *shown, ""])


def write_markdown(path: Path, model: RunModel, title: str) -> Path:
    atomic_write_text(Path(path), markdown_report(model, title) + "\n")
    return Path(path)
