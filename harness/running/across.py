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

A change is tried once per cell however many cells verified it (a oneDNN cause's cells verify the
same ``delete_pass`` lines: before, each of 18 sources ran it again on every other cell), and the
answer is kept beside the patched script (``across/<change hash>/tried.txt``): a later ``workarounds``
over the same reproducer and the same change takes it ("tried earlier") instead of running it again,
so an interrupted step resumes. A cell run again removes its folder, and with it the answer.

The answers are written into ``workarounds.md`` beside the cause's cells.
"""

from __future__ import annotations

import dataclasses
import hashlib
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
ANSWER = "tried.txt"  # beside the patched script: what its run said
EARLIER = " (tried earlier)"
COULD_NOT = "could not run"


@dataclasses.dataclass(frozen=True)
class Tried:
    """A change verified in ``source``, tried on ``cell``: the outcome in words, and the script run."""

    change: str
    source: str           # the first cell that verified the change
    cell: str
    words: str
    script: str = ""
    more: int = 0         # how many other cells verified the same change

    def line(self) -> str:
        where = f" (`{self.script}`)" if self.script else ""
        also = f" and {self.more} other cell{'s' if self.more > 1 else ''}" if self.more else ""
        return f"`{self.change}` (verified on `{self.source}`{also}) on `{self.cell}`: {self.words}{where}"


def _paddle_inference(entry_config: Dict[str, object]) -> bool:
    return str(entry_config.get("runtime") or "paddle_inference") == "paddle_inference"


def patched_text(script: Path, change_lines: Sequence[str]) -> Optional[str]:
    """``script`` with ``change_lines`` before the predictor is created; None when it builds none."""
    lines = script.read_text(encoding="utf-8").splitlines()
    at = next((i for i, line in enumerate(lines) if PREDICTOR_LINE in line), None)
    if at is None:
        return None
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    return "\n".join(lines[:at] + ["# The change verified on another cell of this cause:"] +
                     [indent + line for line in change_lines] + lines[at:]) + "\n"


def variant(script: Path, change_lines: Sequence[str], folder: Path) -> Optional[Path]:
    """``script``'s folder copied to ``folder`` with ``change_lines`` before the predictor is created;
    None when the script builds no Paddle Inference predictor."""
    text = patched_text(script, change_lines)
    if text is None:
        return None
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(script.parent, folder, ignore=shutil.ignore_patterns("across", "*.log", "issue.md", "workaround.md"))
    out = folder / script.name
    out.write_text(text, encoding="utf-8")
    return out


def tried_earlier(script: Path, change_lines: Sequence[str]) -> Optional[str]:
    """The answer a run of this very patched script left (``ANSWER`` beside it), else None."""
    text = patched_text(script, change_lines)
    folder = script.parent / "across" / change_key(change_lines)
    answer, kept = folder / ANSWER, folder / script.name
    if text is None or not answer.is_file() or not kept.is_file() or kept.read_text(encoding="utf-8") != text:
        return None
    return answer.read_text(encoding="utf-8").strip() or None


def change_key(change_lines: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(change_lines).encode()).hexdigest()[:12]


def tried_on(cells: Sequence[CellWorkaround], records: Dict[str, CellRecord],
             environment: Callable[[CellRecord], Optional[Path]], say: Say) -> List[Tried]:
    """Every change verified on a cell of the cause, once on each other cell of it."""
    found: List[Tried] = []
    sources: Dict[str, List[CellWorkaround]] = {}
    for cell in cells:
        if cell.verified:
            sources.setdefault(cell.change, []).append(cell)
    for change, verified in sources.items():
        source, more = verified[0], len(verified) - 1
        for cell in cells:
            if cell.verified and cell.change == change:
                continue
            own = next((t for t in cell.entry.get("tried") or [] if t.get("change") == source.entry.get("change")), None)
            if own is not None:
                verdicts = ", ".join(f"shape {k}: {v}" for k, v in (own.get("verdicts") or {}).items()) or "not run"
                found.append(Tried(change, source.cell, cell.cell, f"tried in its own search: {verdicts}", more=more))
                continue
            found.append(dataclasses.replace(_run_on(source, cell, records.get(cell.cell), environment, say), more=more))
    return found


def _run_on(source: CellWorkaround, cell: CellWorkaround, record: Optional[CellRecord],
            environment: Callable[[CellRecord], Optional[Path]], say: Say) -> Tried:
    change, lines = source.change, list(source.entry.get("change_lines") or [])
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
    folder = script.parent / "across" / change_key(lines)
    earlier = tried_earlier(script, lines)
    if earlier is not None:
        return Tried(change, source.cell, cell.cell, earlier + EARLIER, _shareable(folder / script.name, record))
    patched = variant(script, lines, folder)
    if patched is None:
        return Tried(change, source.cell, cell.cell, "not tried: its reproducer builds no Paddle Inference predictor")
    python = environment(record)  # the Python of the cell's environment (``envs.ensure``)
    if python is None:
        return Tried(change, source.cell, cell.cell, f"not tried: no environment of Paddle {record.version} here")
    say(f"[workarounds] {change} on {cell.cell}")
    words = run_variant(python, patched, record.stage(repro.stage))
    if not words.startswith(COULD_NOT):  # a run that could not be judged is asked again next time
        (folder / ANSWER).write_text(words + "\n", encoding="utf-8")
    return Tried(change, source.cell, cell.cell, words, _shareable(patched, record))


def run_variant(python: Path, patched: Path, stage: Optional[StageRecord]) -> str:
    """The patched reproducer run by ``python`` (a cell environment's interpreter) in its folder, judged."""
    try:
        proc = subprocess.run([str(python), patched.name], cwd=patched.parent, capture_output=True,
                              text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"{COULD_NOT}: over {TIMEOUT:g} s"
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
    return f"{COULD_NOT}: {(said[-1] if said else f'exit {proc.returncode}')[:160]}"


__all__ = ["Tried", "tried_on", "variant", "run_variant", "tried_earlier", "change_key"]
