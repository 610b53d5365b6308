"""Release qualification: one verdict over a run's records, with known issues.

``python -m harness qualify --run NAME [--strict] [--known known.toml]`` (``nox -s qualify``)
answers *qualified* or *not qualified* (exit 0 or 1) with the reasons on one screen.

Required cells come from the matrix's ``[qualify]`` table (``sessions``, ``versions``, ``modes``,
``models``; each defaults to everything the matrix runs: every session at every version it
lists, ``run.modes``, ``run.models``). A cell blocks when its verdict is ``fail``, ``error``,
``crash``, ``timeout``, ``vacuous`` or ``untestable`` (the harness could not test it: nothing
qualifies it) and no known issue expects it. A required cell whose verdict is ``skip`` (its
session's own stage did not run: no bf16 on this CPU, no GPU) blocks too: nothing qualified it.
Sessions the release accepts unrun on machines without their feature are listed in
``[qualify] optional = ["cpu_onednn_bf16", ...]``: their skips are reported, never blocking.
A reduced-precision stage whose precision itself changes what the model answers (``floor.
answers_changed``: a risk of deploying it so, not a runtime's bug) is reported; it blocks in the
sessions listed in ``[qualify] precision_risks``.
A required cell without a
record blocks, and so does a file in a record's place that cannot be read (truncated, another
schema): no verdict over what did not run. ``--partial`` qualifies what is there and says so in
the verdict line (``QUALIFIED (partial: 3 of 180 required cells)``); unreadable records block
even then (a corrupt record is a fault to fix, not a cell left out). ``--strict`` (what a
release uses) also blocks on skipped cells and hazards.

The known-issues file (TOML), as pytest's xfail::

    [[known]]
    cell = "cpu_onednn_int8/*/qat/*"   # a glob over cell ids <session>/<paddle>/<mode>/<model>
    stage = "onednn_int8"              # optional: only when this stage is the first failing one
    reason = "enable_mkldnn_int8 gives wrong numbers on QAT models"
    link = "https://github.com/PaddlePaddle/Paddle/issues/NNNN"
    workaround = "config.delete_pass('...')"   # optional: what ships meanwhile (``workarounds`` writes it)

An expected failure does not block; a cell an entry expects that passed is reported (remove the
entry); an entry that matches no cell of the run is reported as stale.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from pathlib import Path
from typing import Any, List, Optional, Sequence

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

from ..shared.errors import UserError
from ..shared.record_model import CellRecord
from ..shared.records import Unreadable
from ..shared.vocab import QUANTIZED_MODES, Status, runs_quantized_only
from .model import RunModel

_KNOWN_KEYS = {"cell", "stage", "reason", "link", "workaround"}


@dataclasses.dataclass(frozen=True)
class Known:
    cell: str
    reason: str
    stage: Optional[str] = None
    link: Optional[str] = None

    def matches(self, record: CellRecord) -> bool:
        return fnmatch.fnmatchcase(record.id, self.cell)

    def expects(self, record: CellRecord) -> bool:
        return self.matches(record) and (self.stage is None or self.stage == record.verdict.first_failing_stage)


def load_known(path: Optional[Path]) -> List[Known]:
    if path is None:
        return []
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"--known {path}: not found; pass an existing known-issues file.") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"--known {path}: not valid TOML ({exc}); fix the file.") from None
    entries = data.get("known", [])
    if set(data) - {"known"} or not isinstance(entries, list):
        raise UserError(f"--known {path}: expected only [[known]] tables, got {sorted(data)}.")
    known = []
    for i, entry in enumerate(entries):
        where = f"--known {path}: known[{i}]"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: expected a table.")
        unknown = set(entry) - _KNOWN_KEYS
        if unknown:
            raise UserError(f"{where}: unknown key {sorted(unknown)[0]!r}; allowed: {', '.join(sorted(_KNOWN_KEYS))}.")
        for key in ("cell", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise UserError(f"{where}.{key}: missing; every entry names a cell glob and a reason.")
        for key in ("stage", "link", "workaround"):
            if key in entry and not isinstance(entry[key], str):
                raise UserError(f"{where}.{key}: expected a string, got {entry[key]!r}.")
        known.append(Known(entry["cell"], entry["reason"], entry.get("stage"), entry.get("link")))
    return known


def required_cells(matrix: Any, scope: Optional[Sequence[str]] = None, models: Optional[Sequence[str]] = None) -> List[str]:
    """Cell ids the release needs, from the matrix's [qualify] table (defaults: everything; the
    table's keys and values were checked when the matrix was loaded); or, given ``scope``
    (``session@version`` pairs) and ``models`` (``zoo`` among them), the cells of those: what a
    qualification over the zoo asked for."""
    table = matrix.data.get("qualify", {})
    if scope:
        pairs = [tuple(item.split("@", 1)) for item in scope]
    else:
        pairs = [(name, version) for name in table.get("sessions", list(matrix.sessions))
                 for version in table.get("versions", matrix.session(name).versions)
                 if version in matrix.session(name).versions]
    chosen = list(models or []) or table.get("models")
    return [spec.id for name, version in pairs
            for spec in matrix.expand(name, version, modes=table.get("modes") or _modes_run(matrix, name), models=chosen)
            if spec.declared_skip is None]


def _modes_run(matrix: Any, session: str) -> Optional[List[str]]:
    """The modes a session's cells are required in when [qualify] names none: the run's (None), but
    oneDNN int8's are the quantized modes the matrix has (it runs nothing else)."""
    spec = matrix.session(session)
    if runs_quantized_only(spec.backend, spec.precision):
        return [mode for mode in QUANTIZED_MODES if mode in matrix.data["modes"]]
    return None


def precision_risk_sessions(matrix: Any) -> List[str]:
    """Sessions where the precision's own change of the model's answers blocks (``[qualify] precision_risks``)."""
    return list(matrix.data.get("qualify", {}).get("precision_risks", []))


def precision_risk(record: CellRecord) -> str:
    """The words of a stage of ``record`` whose precision itself changes the model's answers, or ""."""
    for stage in record.stages:
        changed = (stage.get("floor") or {}).get("answers_changed") or {}
        if changed.get("words"):
            return f"{record.id} {stage.name}: {changed['words']}"
    return ""


def optional_sessions(matrix: Any) -> List[str]:
    """Sessions whose skipped cells do not block (``[qualify] optional``; checked at load)."""
    return list(matrix.data.get("qualify", {}).get("optional", []))


@dataclasses.dataclass
class Qualification:
    blocking: List[str]
    expected: List[str]
    unexpected_passes: List[str]
    stale: List[Known]
    skipped: List[str]
    missing: List[str]
    hazards: List[str]
    strict: bool
    unreadable: List[Unreadable] = dataclasses.field(default_factory=list)
    required: int = 0
    partial: bool = False
    unrun: List[str] = dataclasses.field(default_factory=list)  # required cells that only skipped
    risks: List[str] = dataclasses.field(default_factory=list)  # the precision's own change of answers, reported

    @property
    def qualified(self) -> bool:
        if self.blocking or self.unreadable or self.unrun:
            return False
        if self.missing and not self.partial:
            return False
        return not (self.strict and (self.skipped or self.hazards))

    @property
    def verdict_line(self) -> str:
        if not self.qualified:
            return "NOT QUALIFIED"
        if self.missing:
            return f"QUALIFIED (partial: {self.required - len(self.missing)} of {self.required} required cells)"
        return "QUALIFIED"


def qualify(model: RunModel, known: Sequence[Known], required: Sequence[str], strict: bool,
            partial: bool = False, optional: Sequence[str] = (), risks_block: Sequence[str] = ()) -> Qualification:
    blocking, expected, unexpected, skipped, unrun, risks = [], [], [], [], [], []
    needed = set(required)
    for record in sorted(model.records, key=lambda r: r.id):
        status = record.verdict.status
        entry = next((k for k in known if k.expects(record)), None)
        matched = next((k for k in known if k.matches(record)), None)
        line = _line(record)
        if status.blocks or status in (Status.VACUOUS, Status.UNTESTABLE):
            if entry:
                expected.append(f"{line} — known: {entry.reason}" + (f" ({entry.link})" if entry.link else ""))
            else:
                blocking.append(line)
        elif status is Status.SKIP and record.id in needed and record.session not in optional:
            unrun.append(line)
        elif status is Status.SKIP:
            skipped.append(line)
        elif matched:
            unexpected.append(f"{record.id} passed; known entry {matched.cell!r} ({matched.reason}) can go")
        risk = precision_risk(record)
        if risk and not status.blocks:
            (blocking if record.session in risks_block else risks).append(risk)
    stale = [k for k in known if not any(k.matches(r) for r in model.records)]
    present = {r.id for r in model.records}
    missing = [cell for cell in required if cell not in present]
    hazards = [f"{h.kind}: {h.message} (probed in {', '.join(h.places)})" for h in model.hazards()]
    return Qualification(blocking, expected, unexpected, stale, skipped, missing, hazards, strict,
                         list(model.unreadable), len(required), partial, unrun, risks)


def _line(record: CellRecord) -> str:
    verdict = record.verdict
    where = f" at {verdict.first_failing_stage}" if verdict.first_failing_stage else ""
    message = " ".join(verdict.message.split())[:160]
    return f"{record.id}: {verdict.status}{where}" + (f": {message}" if message else "")


def render(result: Qualification, limit: int = 8) -> str:
    lines = [result.verdict_line + (" (strict: skips and hazards block)" if result.strict else "")]

    def section(title: str, items: Sequence[str], blocks: bool, shown: int = limit) -> None:
        if not items:
            return
        mark = "blocking" if blocks else "reported"
        lines.append(f"{title} ({len(items)}, {mark}):")
        lines.extend(f"  {item}" for item in items[:shown])
        if len(items) > shown:
            lines.append(f"  ... and {len(items) - shown} more")

    # Every unreadable file by path: each is something to delete and rerun.
    section("Unreadable records (a record's place, not a record)", [str(u) for u in result.unreadable], True,
            len(result.unreadable))
    section("Unexpected failures", result.blocking, True)
    section("Missing cells (required, no record)", result.missing, not result.partial)
    section("Required cells that did not run (their session's own stage skipped; [qualify] optional accepts them)",
            result.unrun, True)
    section("Precision risks (the precision itself changes the answers; [qualify] precision_risks blocks them)",
            result.risks, False)
    section("Skipped cells", result.skipped, result.strict)
    section("Hazards", result.hazards, result.strict)
    section("Expected failures (known issues)", result.expected, False)
    section("Unexpected passes (remove their known entries)", result.unexpected_passes, False)
    section("Stale known entries (match no cell)", [f"{k.cell}: {k.reason}" for k in result.stale], False)
    return "\n".join(lines)


def run(results: Path, matrix: Any, known_path: Optional[Path], strict: bool, partial: bool = False,
        scope: Optional[Sequence[str]] = None, models: Optional[Sequence[str]] = None) -> int:
    if not results.is_dir():
        raise UserError(f"--results/--run: {results} does not exist; run the sessions first.")
    model = RunModel.load(results)
    if not model.records and not model.unreadable:
        raise UserError(f"--results/--run: no result records under {results}; run the sessions first.")
    known = load_known(known_path)
    if scope:
        # A release is judged by its own cells: another version's in the same run (the release before,
        # published beside it) neither blocks it nor makes its known entries stale.
        every = model.records
        records = [r for r in every if f"{r.session}@{r.version}" in set(scope)]
        model = dataclasses.replace(model, records=records, _causes=None, hazard_probes=[
            h for h in model.hazard_probes if h.paddle in {r.version for r in records}])
        known = [k for k in known if any(k.matches(r) for r in model.records) or not any(k.matches(r) for r in every)]
    result = qualify(model, known, required_cells(matrix, scope, models), strict, partial,
                     optional_sessions(matrix), precision_risk_sessions(matrix))
    print(render(result))
    return 0 if result.qualified else 1
