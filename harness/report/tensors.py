"""Host side: render a per-tensor diff (rows from ``harness.cell.anatomy.layerwise``) as a terminal
table, CSV, xlsx, markdown and a PNG plot of the error relative to the tolerance along the execution order.

openpyxl and matplotlib are imported only when their file is written.
"""

from __future__ import annotations

import contextlib
import csv
import math
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from tabulate import tabulate

from ..shared.compare import Tolerance, describe_tolerance
from ..shared.records import atomic_write_text
from ..shared.notes import fmt_number
from ..shared.tensor_diff import TensorDiff, TensorRow

HEADERS = ["#", "Operator Type", "Tensor Name", "Shape", "Mismatched Elements", "Max Atol", "Max Rtol",
           "Min Val (base)", "Max Val (base)", "Matched by", "Note"]


def _f(value: Any) -> str:
    return fmt_number(value, digits=4)


def row_cells(row: TensorRow) -> List[Any]:
    shape = "match" if row.shape == row.test_shape else f"expected {list(row.shape)} got {list(row.test_shape)}"
    note = []
    if row.first_divergence:
        note.append("<< FIRST DIVERGENCE")
    if row.suspect:
        note.append(f"suspect: {row.suspect}")
    if row.vacuous:
        note.append("vacuous")
    op = row.op if row.op == row.test_op else f"{row.op} / {row.test_op}"
    return [row.index, op, row.name, shape, f"{row.mismatched}/{row.total}", row.max_abs,
            row.max_rel, row.min_base, row.max_base, row.matched_by, "; ".join(note)]


def terminal(result: TensorDiff, top: int = 15) -> str:
    rows = result.rows
    first = result.first_divergence
    ranked = sorted(rows, key=lambda r: -(r.max_rel or 0.0))[:top]
    shown = sorted({(r.index, r.name): r for r in ranked + ([first] if first else [])}.values(),
                   key=lambda r: r.index)
    table = tabulate([[_f(c) for c in row_cells(r)] for r in shown], headers=HEADERS, tablefmt="simple")
    lines = [table, "", summary_line(result)]
    return "\n".join(lines)


def _tolerance(result: TensorDiff) -> Tolerance:
    return Tolerance(result.atol, result.rtol, result.scaled_atol)


def summary_line(result: TensorDiff) -> str:
    rows = result.rows
    first = result.first_divergence
    bad = sum(not r.passed for r in rows)
    parts = [f"{len(rows)} tensors compared ({result.pairs} matched of {result.base_tensors} base / "
             f"{result.test_tensors} test), {bad} out of {describe_tolerance(_tolerance(result))}, "
             f"{len(result.unmatched)} unmatched"]
    parts.append(f"first divergence: #{first.index} {first.op} {first.name} (max rel {_f(first.max_rel)})"
                 if first else "first divergence: none")
    hooks = result.hooks_changed_output
    if any(hooks.values()):
        parts.append(f"WARNING: fetching intermediates changed the final output ({hooks})")
    else:
        parts.append("fetching intermediates did not change the final outputs (checked bitwise)")
    return "; ".join(parts)


def write_csv(path: Path, result: TensorDiff) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADERS)
        for row in result.rows:
            writer.writerow(row_cells(row))
    return path


def write_markdown(path: Path, result: TensorDiff, title: str) -> Path:
    body = tabulate([[_f(c) for c in row_cells(r)] for r in result.rows], headers=HEADERS, tablefmt="github")
    unmatched = tabulate([[u.side, u.op, u.name, list(u.shape), u.reason] for u in result.unmatched],
                         headers=["side", "op", "name", "shape", "why unmatched"], tablefmt="github")
    atomic_write_text(path, f"# {title}\n\n{summary_line(result)}\n\n{body}\n\n## Unmatched tensors\n\n{unmatched}\n")
    return path


def write_xlsx(path: Path, result: TensorDiff) -> Path:
    from openpyxl import Workbook
    from openpyxl.styles import Font, PatternFill

    book = Workbook()
    sheet = book.active
    sheet.title = "tensors"
    sheet.append(HEADERS)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    red = PatternFill("solid", fgColor="FFC7CE")
    amber = PatternFill("solid", fgColor="FFEB9C")
    for row in result.rows:
        sheet.append([_xl(c) for c in row_cells(row)])
        if row.first_divergence:
            for cell in sheet[sheet.max_row]:
                cell.fill = red
                cell.font = Font(bold=True)
        elif not row.passed:
            for cell in sheet[sheet.max_row]:
                cell.fill = amber
    sheet.freeze_panes = "A2"
    extra = book.create_sheet("unmatched")
    extra.append(["side", "op", "name", "shape", "why unmatched"])
    for u in result.unmatched:
        extra.append([u.side, u.op, u.name, str(list(u.shape)), u.reason])
    info = book.create_sheet("summary")
    info.append(["summary", summary_line(result)])
    info.append(["base config", str(dict(result.base_config))])
    info.append(["test config", str(dict(result.test_config))])
    book.save(path)
    return path


def _xl(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        return str(value)
    return value


# pyplot keeps per-process state (its figure manager, mathtext's parser): two plots drawn at once
# from two threads (two failing cells ending together in the job pool) raised IndexError in
# mathtext. Every plot of the host side is drawn under this lock.
_PLOTTING = threading.Lock()


@contextlib.contextmanager
def pyplot() -> Iterator[Any]:
    """matplotlib's pyplot on the Agg backend, held by one thread at a time."""
    import matplotlib

    with _PLOTTING:
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        yield plt


def write_plot(path: Path, result: TensorDiff, title: str) -> Path:
    with pyplot() as plt:
        return _draw(plt, path, result, title)


def _draw(plt: Any, path: Path, result: TensorDiff, title: str) -> Path:
    rows = result.rows
    xs = [r.index for r in rows]
    # The isclose ratio |diff| / (atol + rtol*|ref|) of the worst element: above 1 is out of
    # tolerance. (Plain max relative error is dominated by near-zero reference elements.)
    ys = [min(max(r.tol_ratio or 0.0, 1e-6), 1e6) for r in rows]
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.semilogy(xs, ys, marker=".", linewidth=0.8, label="worst |diff| / tolerance band")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8,
               label=f"tolerance ({describe_tolerance(_tolerance(result))})")
    first = result.first_divergence
    if first:
        ax.axvline(first.index, color="red", linewidth=1.0)
        ax.annotate(f"first divergence\n{first.name}", xy=(first.index, ys[xs.index(first.index)]),
                    xytext=(10, 10), textcoords="offset points", color="red", fontsize=8)
    ax.set_xlabel("op index (base run, execution order)")
    ax.set_ylabel("error / tolerance")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_all(out_dir: Path, result: TensorDiff, title: str, formats: Optional[List[str]] = None) -> Dict[str, str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    formats = formats or ["csv", "xlsx", "md", "png"]
    written = {}
    if "csv" in formats:
        written["csv"] = str(write_csv(out_dir / "tensors.csv", result))
    if "md" in formats:
        written["md"] = str(write_markdown(out_dir / "tensors.md", result, title))
    if "xlsx" in formats:
        written["xlsx"] = str(write_xlsx(out_dir / "tensors.xlsx", result))
    if "png" in formats:
        written["png"] = str(write_plot(out_dir / "tensors.png", result, title))
    return written
