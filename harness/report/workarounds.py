"""Workarounds of a run (host side): what to ship this week, per cause, in the forms users deploy with.

``python -m harness workarounds --run RUN`` reads every record's ``analysis.workaround`` (the cell's
verified smallest change, ``cell/workaround.py``) and writes:

* ``<run>/workarounds.md``: per cause, the change, the cells it was verified on (every cell of the
  cause searched its own: one line per cell, so a release manager sees whether one change fixes
  every model the cause hits), its speed ratio per cell, what else it changes; the Paddle
  Inference ``Config`` lines and PaddleX's high-performance inference config (``hpi_config``);
  what was tried where nothing worked;
* ``<run>/known-issues.toml``: one ``[[known]]`` entry per failing cell (cell, stage, the cause as
  the reason, the reproducer as the link, the verified change as ``workaround``), the file
  ``qualify --known`` reads: the run's known failures pass, a new one still blocks;
* ``workaround.md`` beside each cell's reproducer (the draft links it).

A cause is the failing stage's cause in Paddle's words (``shared.causes``; a numeric failure is the
stage's). Only verified workarounds are written as workarounds; a cell with none says what was
tried."""

from __future__ import annotations

import collections
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..shared.causes import at_word, run_words, shown_apart, stage_cause
from ..shared.record_model import AnalysisEntry, CellRecord
from ..shared.records import atomic_write_text, load_records
from ..shared.vocab import Status

KNOWN_FILE = "known-issues.toml"
TABLE_FILE = "workarounds.md"
BESIDE = "workaround.md"


@dataclasses.dataclass
class CellWorkaround:
    cell: str
    stage: str
    cause: str            # Paddle's words (a numeric failure: the stage's)
    entry: AnalysisEntry
    reproducer: Optional[str]
    key: str = ""         # the cause's grouping key (``cause_of``): internal, never shown

    @property
    def verified(self) -> bool:
        return bool(self.entry.get("verified"))

    @property
    def change(self) -> str:
        """The change as the runtime's own call(s) (``config.delete_pass('...')``), else in words."""
        lines = self.entry.get("change_lines") or []
        return "; ".join(lines) if lines else str(self.entry.get("change") or "")

    @property
    def ratio(self) -> Optional[float]:
        return (self.entry.get("speed") or {}).get("ratio")


def _cause(record: CellRecord, stage_name: str) -> Tuple[str, str]:
    """The failing stage's cause: ``(grouping key, Paddle's words)``; a converter's proven bug by its
    converter and op, the same in every runtime's session."""
    stage = record.setup if stage_name == "setup" else next((s for s in record.stages if s.name == stage_name), None)
    if stage is None:
        return stage_name, stage_name
    repro = record.analysis.reproducer
    if repro is not None and repro.converter_cause and repro.stage == stage_name:
        return repro.converter_cause, " ".join(str(repro.conversion.get("words") or repro.converter_cause).split())
    if stage.status is Status.FAIL:
        words = f"{stage_name}: outputs beyond the tolerance"
        return words, words
    message = " ".join(str(stage.message or "").split())
    return stage_cause(message) or message, message


def collect(records: Sequence[CellRecord]) -> List[CellWorkaround]:
    found = []
    for record in records:
        entry = record.analysis.get("workaround")
        if entry is None or entry.status is not Status.PASS:
            continue
        repro = record.analysis.reproducer
        key, words = _cause(record, entry.stage or "")
        found.append(CellWorkaround(record.id, entry.stage or "", words, entry,
                                    repro.entry.get("folder") if repro is not None else None, key))
    return found


def by_cause(cells: Sequence[CellWorkaround]) -> Dict[str, List[CellWorkaround]]:
    """The cells of each cause (by its grouping key), largest first."""
    grouped: Dict[str, List[CellWorkaround]] = {}
    for cell in cells:
        grouped.setdefault(cell.key or cell.cause, []).append(cell)
    return dict(sorted(grouped.items(), key=lambda kv: -len(kv[1])))


def _headings(groups: Dict[str, List[CellWorkaround]], limit: int) -> List[str]:
    """Each cause in Paddle's words (its first cell's), shortened at a word and told apart."""
    return shown_apart([group[0].cause for group in groups.values()], limit)


def _common_change(cells: Sequence[CellWorkaround]) -> str:
    """The change most cells of a cause verified (the first met on a tie: the same answer every run)."""
    counted = collections.Counter(c.change for c in cells if c.verified)
    return counted.most_common(1)[0][0] if counted else ""


def table(cells: Sequence[CellWorkaround]) -> str:
    """The across-cells table: cause, workaround, cells fixed by it, speed ratio."""
    lines = ["| cause | workaround | cells fixed | speed ratio (with / without) |", "|---|---|---|---|"]
    groups = by_cause(cells)
    for cause, group in zip(_headings(groups, 90), groups.values()):
        change = _common_change(group)
        fixed = [c for c in group if c.verified and c.change == change]
        ratios = [c.ratio for c in fixed if c.ratio is not None]
        speed = (f"{statistics.median(ratios):.2f}" + (f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else "")
                 if ratios else "-")
        lines.append(f"| {_cell_text(cause)} | {_cell_text(change) or 'none verified'} | "
                     f"{len(fixed)} of {len(group)} | {speed} |")
    return "\n".join(lines) + "\n"


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def cell_section(cell: CellWorkaround) -> str:
    entry = cell.entry
    if not cell.verified:
        tried = "; ".join(f"{t['change']} ({', '.join(f'shape {k}: {v}' for k, v in t['verdicts'].items())})"
                          for t in entry.get("tried") or []) or "nothing"
        not_tried = "; ".join(entry.get("not_tried") or [])
        return (f"- `{cell.cell}` ({cell.stage}): no verified workaround. Tried: {tried}."
                + (f" Not tried: {not_tried}." if not_tried else "") + "\n")
    speed = entry.get("speed") or {}
    changes = entry.get("changes") or {}
    said = [f"- `{cell.cell}` ({cell.stage}): **{cell.change}**, verified at {entry.get('shapes')} shape(s); "
            f"latency {speed.get('with_ms')} ms against {speed.get('against_ms')} ms for {speed.get('against')} "
            f"(ratio {speed.get('ratio')}, median of {speed.get('runs')} runs each, alternated)"]
    if changes.get("passes_no_longer_run"):
        said.append(f"  - passes that no longer run: {', '.join(changes['passes_no_longer_run'])}")
    if changes.get("off_backend") is not None:
        off = ", ".join(f"{t} ×{n}" for t, n in changes["off_backend"].items()) or "none"
        said.append(f"  - {changes.get('backend_ops')} of {changes.get('ops')} ops run on oneDNN with it; off oneDNN: {off}")
    model_side = entry.get("model_side")
    if model_side:  # the model's own code changes; the deployment's config stays as it was
        said += ["", f"  In the model's code ({model_side.get('calls_respelled')} call(s) of {model_side.get('api')} "
                     f"respelled; {model_side.get('op')} as the stage runs it no longer fails):", "", "  ```python",
                 f"  # instead of {model_side.get('api')}(...):", f"  {model_side.get('instead')}", "  ```", ""]
    else:
        said += ["", f"  {_title(entry)}:", "", "  ```python", *[f"  {line}" for line in entry.get("config_lines") or []],
                 "  ```", ""]
    if entry.get("paddlex_hpi"):
        import yaml  # host side's (HOST_SIDE); the CLI's parser imports this module in cell envs too

        text = yaml.safe_dump(dict(entry.get("paddlex_hpi")), sort_keys=False, default_flow_style=False)
        said += ["  PaddleX (`hpi_config` of the model's config):", "", "  ```yaml",
                 *[f"  {line}" for line in text.splitlines()], "  ```", ""]
    return "\n".join(said) + "\n"


def _title(entry: AnalysisEntry) -> str:
    """Whose config lines these are, by the runtime the verified config names."""
    from ..runtimes import REGISTRY

    kind = REGISTRY.config_types().get(str((entry.get("config") or {}).get("runtime") or "paddle_inference"))
    return kind.title if kind is not None and kind.title else "Paddle Inference"


def _draws_at_inference(record: CellRecord) -> bool:
    """An ``untestable`` cell whose model draws random numbers in its own forward (its dygraph disagrees
    with itself, the random ops named): a property of the model, listed as known with that reason. Any
    other untestable cell is the harness's gap and stays blocking."""
    repeated = (record.setup.extra if record.setup is not None else {}).get("repeatability") or {}
    return record.verdict.status is Status.UNTESTABLE and repeated.get("agrees") is False and bool(repeated.get("random_ops"))


def known_issues(cells: Sequence[CellWorkaround], records: Sequence[CellRecord], run: Path) -> str:
    """``[[known]]`` entries for every failing cell (with its workaround when one was verified)."""
    import tomli_w  # host side's (HOST_SIDE), imported where it writes

    header = ("# Known failures of this run, written by `python -m harness workarounds` from its records.\n"
              "# `python -m harness qualify --known <this file>` passes them; a new failure still blocks.\n\n")
    by_cell = {c.cell: c for c in cells}
    known = []
    for record in records:
        if record.verdict.status not in (Status.FAIL, Status.ERROR, Status.CRASH, Status.TIMEOUT) \
                and not _draws_at_inference(record):
            continue
        stage = record.verdict.first_failing_stage
        found = by_cell.get(record.id)
        repro = record.analysis.reproducer
        entry = {"cell": record.id, "stage": stage, "reason": at_word(run_words(_cause(record, stage or "")[1], run), 300)}
        if repro is not None and repro.entry.get("folder"):
            entry["link"] = str(Path(repro.entry.get("folder")) / "issue.md")
        if found is not None and found.verified:
            entry["workaround"] = "; ".join(found.entry.get("change_lines") or [found.change])
        known.append({k: v for k, v in entry.items() if v is not None})
    return header + tomli_w.dumps({"known": known})


def write(run: Path, say=print, environment: Optional[Callable[[CellRecord], Optional[Path]]] = None) -> List[Path]:
    """The run's workaround files; with ``environment`` (a cell's Paddle environment), each change verified
    on one cell of a cause is tried on the cause's other cells (``running/across``)."""
    import tomli_w  # noqa: F401 - both writers before any file: a Python without one writes nothing
    import yaml  # noqa: F401

    from ..running.across import tried_on

    records = load_records(run)
    cells = collect(records)
    written = []
    sections = []
    groups = by_cause(cells)
    by_id = {r.id: r for r in records}
    for cause, group in zip(_headings(groups, 200), groups.values()):
        sections += [f"### {_cell_text(cause)}", "", *[cell_section(c) for c in group]]
        across = tried_on(group, by_id, environment or (lambda record: None), say) if len(group) > 1 else []
        if across:
            sections += ["Across the cause's cells (a change verified on one, on the others):", "",
                         *[f"- {t.line()}" for t in across], ""]
    text = (f"# Workarounds: {run.name}\n\nThe smallest change to each failing stage's config (where none helps, to "
            f"the model's code) that makes it pass at every shape, verified by running the stage with it "
            f"(`python -m harness workarounds`).\n\n"
            + (table(cells) if cells else "No failing stage was searched for a workaround.\n") + "\n"
            + "\n".join(sections))
    atomic_write_text(run / TABLE_FILE, text)
    written.append(run / TABLE_FILE)
    atomic_write_text(run / KNOWN_FILE, known_issues(cells, records, run))
    written.append(run / KNOWN_FILE)
    for cell in cells:
        if cell.reproducer:
            folder = Path(cell.reproducer) if Path(cell.reproducer).is_absolute() else run / cell.reproducer
            if folder.is_dir():
                atomic_write_text(folder / BESIDE, f"# Workaround for `{cell.cell}`\n\n" + cell_section(cell))
                written.append(folder / BESIDE)
    from .refresh import refresh

    written += refresh(run, say)  # the drafts and reports that show these causes link their workarounds
    verified = sum(1 for c in cells if c.verified)
    say(f"workarounds: {verified} of {len(cells)} searched stage(s) have a verified workaround: {run / TABLE_FILE}; "
        f"known issues: {run / KNOWN_FILE}")
    return written


def add_parser(sub: Any) -> None:
    from ..running.pathargs import folder_to_read, run_name

    parser = sub.add_parser("workarounds", help="each failing stage's verified workaround: a table, Config lines, "
                                                 "PaddleX's hpi_config, a known-issues file for qualify")
    parser.add_argument("--results", type=folder_to_read, default=Path("results"))
    parser.add_argument("--run", dest="run_name", type=run_name, default="default")
    parser.add_argument("--python", default=f"{sys.version_info.major}.{sys.version_info.minor}",
                        help="the Python of the cells' environments a change is tried in (default: %(default)s)")
    parser.add_argument("--envs", type=Path, default=None,
                        help="where those environments are kept (default: the pool's, .nox/)")


def command(args: Any) -> int:
    from ..running.pathargs import existing_run
    from ..running.pool import default_envs_root
    from ..running.releases import Environments

    run = existing_run(args.results, args.run_name)
    root = args.envs or default_envs_root()
    made: Dict[str, Optional[Path]] = {}  # a cell's environment once, however many changes are tried on it

    def environment(record: CellRecord) -> Optional[Path]:
        if record.id not in made:
            made[record.id] = Environments(root, record, args.python, print)(record.version)
        return made[record.id]

    write(run, environment=environment)
    return 0


__all__ = ["add_parser", "command", "write", "collect", "table", "known_issues", "CellWorkaround", "KNOWN_FILE", "TABLE_FILE"]
