"""One cause, every cell (host side): a workaround verified on one cell of a cause, tried on the
cause's other cells.

``python -m harness workarounds`` groups the cells' workarounds by cause. For each change verified in
one cell and each other cell of the same cause that did not verify that very change:

* the other cell's own search tried it → its verdicts there (nothing to run);
* else, when both are Paddle Inference configs → the other cell's program reproducer (``repro.py``:
  the piece that failed, at the shape it failed at) run again beside it, in ``across/<k>/``, with the
  change's Config calls made before the predictor is created, in that cell's environment (Paddle at its
  release, made as ``releases`` makes it). "fixes its reproducer" says exactly that: one piece at one
  shape, not the cell's every-shape verification;
* else (another runtime's config, a change to the model's code) → not tried, and why.

The answers are written into ``workarounds.md`` beside the cause's cells.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..shared.causes import cause_of, stage_cause
from ..shared.record_model import CellRecord, StageRecord
from ..shared.vocab import Status

# The cells of a cause are ``report.workarounds.CellWorkaround``s (cell, verified, change, entry); that
# module calls this one, so the type is named, not imported.
CellWorkaround = Any

Say = Callable[[str], object]
PREDICTOR_LINE = "create_predictor(config)"  # where a Paddle Inference reproducer builds its predictor
TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class Tried:
    """A change verified in ``source``, tried on ``cell``: the outcome in words, and the script run."""

    change: str
    source: str
    cell: str
    words: str
    script: str = ""

    def line(self) -> str:
        where = f" (`{self.script}`)" if self.script else ""
        return f"`{self.change}` (verified on `{self.source}`) on `{self.cell}`: {self.words}{where}"


def _paddle_inference(entry_config: Dict[str, object]) -> bool:
    return str(entry_config.get("runtime") or "paddle_inference") == "paddle_inference"


def variant(script: Path, change_lines: Sequence[str], folder: Path) -> Optional[Path]:
    """``script``'s folder copied to ``folder`` with ``change_lines`` before the predictor is created;
    None when the script builds no Paddle Inference predictor."""
    text = script.read_text(encoding="utf-8")
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if PREDICTOR_LINE in line), None)
    if at is None:
        return None
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(script.parent, folder, ignore=shutil.ignore_patterns("across", "*.log", "issue.md", "workaround.md"))
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    patched = lines[:at] + ["# The change verified on another cell of this cause:"] + \
        [indent + line for line in change_lines] + lines[at:]
    out = folder / script.name
    out.write_text("\n".join(patched) + "\n", encoding="utf-8")
    return out


def tried_on(cells: Sequence[CellWorkaround], records: Dict[str, CellRecord],
             environment: Callable[[CellRecord], Optional[Path]], say: Say) -> List[Tried]:
    """Every verified change of the cause's cells on every other cell of it."""
    found: List[Tried] = []
    verified = [c for c in cells if c.verified]
    for source in verified:
        change, lines = source.change, list(source.entry.get("change_lines") or [])
        for cell in cells:
            if cell.cell == source.cell or (cell.verified and cell.change == change):
                continue
            own = next((t for t in cell.entry.get("tried") or [] if t.get("change") == source.entry.get("change")), None)
            if own is not None:
                verdicts = ", ".join(f"shape {k}: {v}" for k, v in (own.get("verdicts") or {}).items()) or "not run"
                found.append(Tried(change, source.cell, cell.cell, f"tried in its own search: {verdicts}"))
                continue
            found.append(_run_on(source, cell, lines, records.get(cell.cell), environment, len(found) + 1, say))
    return found


def _run_on(source: CellWorkaround, cell: CellWorkaround, lines: List[str], record: Optional[CellRecord],
            environment: Callable[[CellRecord], Optional[Path]], k: int, say: Say) -> Tried:
    change = source.change
    if source.entry.get("model_side"):
        return Tried(change, source.cell, cell.cell, "not tried: a change to the model's code, not to a config a "
                                                     "reproducer makes")
    if not _paddle_inference(source.entry.get("config") or {}) or not lines:
        return Tried(change, source.cell, cell.cell, "not tried: only Paddle Inference Config calls are pasted into "
                                                     "another cell's reproducer")
    repro = record.analysis.reproducer if record is not None else None
    if repro is None or not repro.verified or not repro.script:
        return Tried(change, source.cell, cell.cell, "not tried: the cell has no verified program reproducer")
    script = record.located(repro.script)
    patched = variant(script, lines, script.parent / "across" / str(k))
    if patched is None:
        return Tried(change, source.cell, cell.cell, "not tried: its reproducer builds no Paddle Inference predictor")
    python = environment(record)  # the Python of the cell's environment (``envs.ensure``)
    if python is None:
        return Tried(change, source.cell, cell.cell, f"not tried: no environment of Paddle {record.version} here")
    say(f"[workarounds] {change} on {cell.cell}")
    return Tried(change, source.cell, cell.cell, run_variant(python, patched, record.stage(repro.stage)),
                 _shareable(patched, record))


def run_variant(python: Path, patched: Path, stage: Optional[StageRecord]) -> str:
    """The patched reproducer run by ``python`` (a cell environment's interpreter) in its folder, judged."""
    try:
        proc = subprocess.run([str(python), patched.name], cwd=patched.parent, capture_output=True,
                              text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"could not run: over {TIMEOUT:g} s"
    return _judged(proc, stage)


def _shareable(path: Path, record: CellRecord) -> str:
    """The script as ``workarounds.md`` names it: relative to the run folder (no path of this machine)."""
    return path.relative_to(record.run).as_posix() if record.run is not None and path.is_relative_to(record.run) \
        else path.name


def _judged(proc: "subprocess.CompletedProcess[str]", stage: Optional[StageRecord]) -> str:
    """What the patched reproducer's run says, as its own run was judged (``cell/reproducer``): a numeric
    failure by its MISMATCH line, an error by its cause's words in what it printed."""
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode == 0 and "not reproduced" in output:
        return "fixes its reproducer (the failing piece at its failing shape)"
    numeric = stage is not None and stage.status is Status.FAIL
    words = stage_cause(stage.message)[:120] if stage is not None and not numeric else ""
    if proc.returncode and (("MISMATCH: reproduced" in output) if numeric else bool(words) and words in cause_of(output)):
        return "does not fix its reproducer"
    said = [ln for ln in output.splitlines() if ln.strip()]
    return f"could not run: {(said[-1] if said else f'exit {proc.returncode}')[:160]}"


__all__ = ["Tried", "tried_on", "variant", "run_variant"]
