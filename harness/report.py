"""Host side: tables and summaries rebuilt from result records alone."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence

from tabulate import tabulate

from .compare import describe_tolerance
from .records import atomic_write_text

STAGE_HEADERS = ["cell", "stage", "status", "max abs", "max rel", "note"]


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def worst_output_note(worst: Dict[str, Any]) -> str:
    """Which output failed and by how much, or the comparison's own note (vacuous, shape)."""
    if not worst:
        return ""
    if worst.get("note"):
        return f"{worst.get('output')}: {worst['note']}"
    return (f"{worst.get('output')}: {worst.get('mismatched')}/{worst.get('total')} out of "
            f"{describe_tolerance(worst)}")


def stage_note(stage: Dict[str, Any], first_failing: bool) -> str:
    parts = []
    if first_failing:
        parts.append("FIRST FAILURE")
    if stage.get("workaround"):
        parts.append(stage["workaround"])
    worst = stage.get("worst") or {}
    if stage.get("status") == "fail" and worst:
        parts.append(worst_output_note(worst))
    elif stage.get("vacuous"):
        parts.append("vacuous comparison")
    if stage.get("message"):
        parts.append(str(stage["message"]))
    if stage.get("status") == "crash" and stage.get("stderr_tail"):
        last = [ln for ln in stage["stderr_tail"].splitlines() if ln.strip()][-1:]
        if last:
            parts.append(f"stderr: {last[0].strip()[:160]}")
    return "; ".join(parts)


def stage_rows(records: Iterable[Dict[str, Any]], max_note: int = 110) -> List[List[str]]:
    rows = []
    for record in records:
        verdict = record["verdict"]
        if verdict.get("first_failing_stage") == "setup":
            rows.append([record["id"], "setup", record["setup"].get("status", "?"), "-", "-",
                         _clip(record["setup"].get("message", ""), max_note)])
            continue
        for stage in record["stages"]:
            worst = stage.get("worst") or {}
            first = stage["name"] == verdict.get("first_failing_stage")
            rows.append([
                record["id"], stage["name"], stage["status"],
                _fmt(worst.get("max_abs")), _fmt(worst.get("max_rel")),
                _clip(stage_note(stage, first), max_note),
            ])
        for kind, result in (record.get("analysis") or {}).items():
            rows.append([record["id"], f"> {kind}", result.get("status", "?"), "-", "-",
                         _clip(analysis_note(kind, result), max_note)])
    return rows


def analysis_note(kind: str, result: Dict[str, Any]) -> str:
    stage = result.get("stage", "?")
    if result.get("status") in ("error", "crash", "timeout"):
        return f"{kind} of {stage}: {result.get('message', '')}"
    if kind == "bisect":
        if result.get("status") == "skip":
            return f"{stage}: {result.get('message', '')}"
        what = "IR passes" if result.get("kind") == "passes" else "TensorRT op types"
        culprits = ", ".join(result.get("culprits") or []) or "none"
        text = (f"{stage}: culprit {what}: {culprits} ({result.get('builds')} builds over "
                f"{result.get('candidates')} candidates)")
        return text + (f"; {result['message']}" if result.get("message") else "")
    if kind == "diff":
        first = result.get("first_divergence")
        where = f"first divergence at #{first['index']} {first['op']} {first['name']}" if first else "no tensor diverges"
        return f"{stage} vs baseline: {where}; table: {(result.get('files') or {}).get('xlsx') or (result.get('files') or {}).get('csv')}"
    return str(result.get("message", ""))


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counts(records: Sequence[Dict[str, Any]]) -> Dict[str, int]:
    return dict(collections.Counter(r["verdict"]["status"] for r in records))


def terminal_table(records: Sequence[Dict[str, Any]]) -> str:
    table = tabulate(stage_rows(records), headers=STAGE_HEADERS, tablefmt="simple")
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts(records).items()))
    return f"{table}\n\n{len(records)} cells: {summary}"


def markdown_summary(records: Sequence[Dict[str, Any]], title: str) -> str:
    lines = [f"# {title}", ""]
    by_session: Dict[str, List[Dict[str, Any]]] = collections.defaultdict(list)
    for record in records:
        key = f"{record['cell']['session']['name']} · Paddle {record['cell']['paddle']}"
        by_session[key].append(record)
    lines += ["| session | cells | " + " | ".join(["pass", "fail", "error", "crash", "timeout", "skip"]) + " |",
              "|---|---:|" + "---:|" * 6]
    for key, group in sorted(by_session.items()):
        c = counts(group)
        lines.append(f"| {key} | {len(group)} | " + " | ".join(str(c.get(s, 0)) for s in
                     ("pass", "fail", "error", "crash", "timeout", "skip")) + " |")
    lines.append("")
    for key, group in sorted(by_session.items()):
        paddle = next((r["paddle"] for r in group if r.get("paddle")), None) or {}
        lines += [f"## {key}", ""]
        if paddle:
            lines += [f"Paddle {paddle.get('version')} (commit {str(paddle.get('commit'))[:12]}, "
                      f"CUDA {paddle.get('cuda') or 'none'}, TensorRT {paddle.get('tensorrt') or 'none'})", ""]
        lines.append(tabulate(stage_rows(group, max_note=400), headers=STAGE_HEADERS, tablefmt="github"))
        lines.append("")
        detail = output_rows(group)
        if detail:
            lines += ["<details><summary>per-output error statistics</summary>", "",
                      tabulate(detail, headers=OUTPUT_HEADERS, tablefmt="github"), "", "</details>", ""]
    return "\n".join(lines)


OUTPUT_HEADERS = ["cell", "stage", "output", "predictor name", "status", "mismatched", "max abs",
                  "max rel", "cosine", "|ref| max", "atol", "rtol", "scaled atol"]


def output_rows(records: Sequence[Dict[str, Any]]) -> List[List[str]]:
    rows = []
    for record in records:
        for stage in record["stages"]:
            for label, stats in (stage.get("outputs") or {}).items():
                rows.append([
                    record["id"], stage["name"], label, stats.get("predictor_name", "-"), stats["status"],
                    f"{stats.get('mismatched')}/{stats.get('total')}", _fmt(stats.get("max_abs")),
                    _fmt(stats.get("max_rel")), _fmt(stats.get("cosine")), _fmt(stats.get("ref_absmax")),
                    _fmt(stats.get("atol")), _fmt(stats.get("rtol")), _fmt(stats.get("scaled_atol")),
                ])
    return rows


def write_markdown(path: Path, records: Sequence[Dict[str, Any]], title: str) -> Path:
    atomic_write_text(Path(path), markdown_summary(records, title) + "\n")
    return Path(path)
