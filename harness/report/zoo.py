"""The zoo at a glance (host side): every model of the matrix's zoo — its family, what is exported
(its factory's own first line), its task, the train modes its suite trains it in — and its verdict
in every (session, Paddle version, train mode) of a run, with the cause it met (the report's labels)
and where the analysis placed it.

``python -m harness report --run RUN --zoo docs/zoo.md`` writes it beside the usual report. A zoo
model the run did not reach says "not run" (never left out): the file names every one.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from ..matrix import Matrix
from ..shared.causes import at_word, run_words
from ..shared.vocab import Status
from .model import Diagnosis, RunModel
from .tables import _cause_labels


def _first_line(factory: str) -> str:
    """The factory's docstring's first sentence, read from its module's source without importing it
    (the host has no suite installed; importing a package's top level finds its folder only)."""
    module, _, name = factory.partition(":")
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return ""
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*rest).with_suffix(".py") if rest else None
    if path is None or not path.is_file():
        return ""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    doc = ast.get_docstring(found) if found is not None else None
    return " ".join((doc or "").split()).split(". ")[0].rstrip(".")


def _cell(verdict: Optional[str], label: str, where: str) -> str:
    if verdict is None:
        return "not run"
    said = verdict + (f" [{label}]" if label else "")
    return said + (f" at {where}" if where else "")


def table(model: RunModel, matrix: Matrix, run: Path) -> str:
    """The zoo's markdown: one row per model, one column per (session, version) of the run."""
    zoo: List[str] = list(matrix.zoo.get("models") or [])
    columns = model.columns
    labels = _cause_labels(model.causes())
    label_of: Dict[Tuple[str, str], str] = {}
    for label, cause in zip(labels.values(), model.causes()):
        for place, stages in cause.stages.items():
            label_of.setdefault((place, stages[0] if stages else ""), label)
    by_cell = {(r.model, r.column, r.mode): r for r in model.records}
    # One column per (session, version) and train mode the run has: normal first, then the others.
    modes = sorted({r.mode for r in model.records}, key=lambda m: (m != "normal", m))
    # Only the (session, version, mode) the run asked: a mode's sessions are its own (modes.X.zoo_sessions).
    asked = {(r.session, r.version, r.mode) for r in model.records}
    columns = [(s, v, m) for m in modes for s, v in columns if (s, v, m) in asked]
    # A column whose every cell skipped (AMP on CPU, int8 on a plain program) is said once, with its reasons.
    skipped = [c for c in columns if _all_skips([by_cell.get((n, (c[0], c[1]), c[2])) for n in zoo])]
    columns = [c for c in columns if c not in skipped]
    head = (["model", "family", "what is exported", "task", "train modes its suite uses (besides normal)"]
            + [f"{s} · {v}" + (f" · {m}" if m != "normal" else "") for s, v, m in columns])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in zoo:
        spec = matrix.data["models"].get(name, {})
        task = spec.get("task")
        task_words = task if isinstance(task, str) else (task or {}).get("kind", "") if task else ""
        declared = spec.get("modes")
        row = [f"`{name}`", str(spec.get("family") or ""), at_word(_first_line(str(spec.get("factory") or "")), 140),
               task_words or "outputs",
               "not declared" if declared is None else ", ".join(declared) or "none"]
        for session, version, mode in columns:
            record = by_cell.get((name, (session, version), mode))
            if record is None:
                row.append(_cell(None, "", ""))
                continue
            stage = record.verdict.first_failing_stage or ""
            label = label_of.get((record.id, stage), "")
            found = Diagnosis.of(record, stage) if stage and stage != "setup" else None
            where = found.layer or found.op if found is not None else ""
            row.append(_cell(record.verdict.status.value + (f" ({stage})" if stage else ""), label, at_word(where, 60)))
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    causes = [f"- **[{label}]** {cause.kind}: {at_word(run_words(cause.message, run), 300)}"
              for label, cause in zip(labels.values(), model.causes())]
    families = sorted({str(matrix.data['models'].get(n, {}).get('family') or '') for n in zoo} - {""})
    machines = "; ".join(m.label for m in model.machines())
    every_skip = [f"- {s} · {v} · {m}: {_reasons([by_cell.get((n, (s, v), m)) for n in zoo])}" for s, v, m in skipped]
    return "\n".join([f"{len(zoo)} models from {len(families)} families ({', '.join(families)}); the run's "
                       f"machine: {machines}.", "", *lines, "",
                       *([f"Columns whose every cell is a skip ({len(skipped)}), each with its reasons:", "", *every_skip, ""]
                         if skipped else []),
                       "Causes (the report's labels):", "", *causes, ""])


def _all_skips(records: List[Any]) -> bool:
    ran = [r for r in records if r is not None]
    return bool(ran) and all(r.verdict.status is Status.SKIP for r in ran)


def _reasons(records: List[Any]) -> str:
    """The distinct skip reasons of a column, each with how many cells said it (a model's name cut out)."""
    said = Counter(at_word(r.verdict.message.replace(r.model, "<model>").split(" (models.")[0], 160)
                   for r in records if r is not None)
    return "; ".join(f"{n}× {words}" for words, n in said.most_common())


def write(path: Path, model: RunModel, matrix_path: Path, run: Path) -> Path:
    from ..matrix import load as load_matrix

    path.write_text(table(model, load_matrix(matrix_path), run), encoding="utf-8")
    return path


__all__ = ["table", "write"]
