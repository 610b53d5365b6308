"""JUnit XML for CI (GitHub, GitLab, Jenkins render it): one test suite per session and Paddle
version, one test case per cell and stage (``classname`` the cell id, ``name`` the stage).

``fail`` and ``vacuous`` are failures (the message and the worst output's statistics in the
body); ``error``, ``crash`` and ``timeout`` are errors (Paddle's message, the log tail); ``skip``
and ``noop`` are skipped with the reason. Every text is escaped by the XML writer.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import List

from ..shared.records import atomic_write_text
from ..shared.record_model import CellRecord, StageRecord
from ..shared.vocab import Status
from .model import RunModel
from ..shared.notes import fmt_number, stage_note

FAILURES = (Status.FAIL, Status.VACUOUS)
ERRORS = (Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.UNTESTABLE)  # untestable: the type says whose
SKIPS = (Status.SKIP, Status.NOOP)


def _case(record: CellRecord, stage: StageRecord) -> ET.Element:
    case = ET.Element("testcase", classname=record.id, name=stage.name,
                      time=f"{float(stage.get('seconds') or 0.0):.3f}")
    note = stage_note(stage)
    if stage.status in FAILURES:
        body = "\n".join(f"{label}: {o.mismatched}/{o.total} mismatched, max abs "
                         f"{fmt_number(o.max_abs)}, max rel {fmt_number(o.max_rel)}, cosine "
                         f"{fmt_number(o.cosine, 6)}, |ref| max {fmt_number(o.ref_absmax)}"
                         for label, o in stage.outputs.items())
        failure = ET.SubElement(case, "failure", message=f"{stage.status}: {note}"[:1000], type=str(stage.status))
        failure.text = body
    elif stage.status in ERRORS:
        error = ET.SubElement(case, "error", message=f"{stage.status}: {note}"[:1000], type=str(stage.status))
        error.text = str(stage.get("stderr_tail") or stage.message)
    elif stage.status in SKIPS:
        ET.SubElement(case, "skipped", message=f"{stage.status}: {note}"[:1000])
    evidence = stage.evidence
    if evidence:
        out = ET.SubElement(case, "system-out")
        out.text = (f"passes: {len(evidence.get('passes') or [])}, ops: {evidence.get('ops')}, "
                    f"op dtypes: {evidence.get('output_dtypes')}")
    return case


def junit_xml(model: RunModel) -> str:
    root = ET.Element("testsuites", name="paddle-qualification")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for (session, version), records in model.by_session().items():
        suite = ET.SubElement(root, "testsuite", name=f"{session}@{version}")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        seconds = 0.0
        for record in records:
            for stage in record.ladder:
                case = _case(record, stage)
                suite.append(case)
                counts["tests"] += 1
                seconds += float(case.get("time"))
                for tag, key in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
                    if case.find(tag) is not None:
                        counts[key] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{seconds:.3f}")
    if model.unreadable:
        # A record that cannot be read is an error of its own: CI shows it instead of a smaller count.
        suite = ET.SubElement(root, "testsuite", name="unreadable records", tests=str(len(model.unreadable)),
                              failures="0", errors=str(len(model.unreadable)), skipped="0", time="0.000")
        for item in model.unreadable:
            case = ET.SubElement(suite, "testcase", classname="unreadable", name=item.path, time="0.000")
            ET.SubElement(case, "error", message=item.reason[:1000], type="unreadable")
        totals["tests"] += len(model.unreadable)
        totals["errors"] += len(model.unreadable)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: Path, model: RunModel) -> Path:
    atomic_write_text(Path(path), junit_xml(model))
    return Path(path)


__all__: List[str] = ["junit_xml", "write"]
