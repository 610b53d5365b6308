"""Host side: cross-version reports rebuilt from result records.

* **regression**: for every cell (session, mode, model) and stage, the transition from a base
  Paddle version to a head version, and the drift of the error statistics;
* **agreement**: for the same weights (one version-neutral checkpoint per model, see the cell
  side) and the same seeded inputs, do the versions compute the same outputs? Dygraph against
  dygraph, baseline predictor against baseline predictor, each version against the head;
* **portability**: a model exported by version X, loaded and run by version Y (records written by
  ``python -m harness port``).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from tabulate import tabulate

from ..shared.causes import Cause, group
from ..shared.compare import Tolerance, compare_tol, worst
from ..shared.errors import UserError
from ..shared.records import atomic_write_text
from ..shared.record_model import CellRecord, StageRecord
from ..shared.records import Unreadable
from ..shared.run_records import PortabilityLoad
from ..shared.spec import OUTPUTS
from ..shared.vocab import Status, Transition
from ..shared.spec import version_order
from .model import RunModel
from ..shared.notes import clip, fmt_number
from ..shared.runfolder import RunFolder

DRIFT_FACTOR = 10.0
TRANSITIONS = (Transition.REGRESSED, Transition.STILL_FAILING, Transition.FIXED, Transition.NEW, Transition.GONE,
               Transition.STILL_PASS)


def index(records: Sequence[CellRecord]) -> Dict[Tuple[str, str, str], Dict[str, CellRecord]]:
    """(session, mode, model) -> {paddle version: record}."""
    by_key: Dict[Tuple[str, str, str], Dict[str, CellRecord]] = collections.defaultdict(dict)
    for record in records:
        by_key[record.triple][record.version] = record
    return by_key


def _stage_map(record: Optional[CellRecord]) -> Dict[str, StageRecord]:
    return {} if record is None else {s.name: s for s in record.ladder}


def transition(base: Optional[StageRecord], head: Optional[StageRecord]) -> Transition:
    """A skipped stage counts as not run: it can only appear (`new`) or disappear (`gone`).
    ``vacuous`` and ``noop`` say nothing either way: they count as not failing."""
    b = base.status if base is not None and base.status.ran else None
    h = head.status if head is not None and head.status.ran else None
    if b is None and h is None:
        return Transition.SKIPPED
    if b is None:
        return Transition.NEW
    if h is None:
        return Transition.GONE
    if not b.blocks and not h.blocks:
        return Transition.STILL_PASS
    if b.blocks and not h.blocks:
        return Transition.FIXED
    if not b.blocks and h.blocks:
        return Transition.REGRESSED
    return Transition.STILL_FAILING


def drift(base: Optional[StageRecord], head: Optional[StageRecord]) -> Tuple[str, bool]:
    """'base -> head' of the worst output's max abs, flagged when it grew 10x or more."""
    b = base.worst.max_abs if base is not None and base.worst is not None else None
    h = head.worst.max_abs if head is not None and head.worst is not None else None
    if b is None or h is None:
        return "", False
    text = f"{b:.3g} -> {h:.3g}"
    if b == 0.0:
        return (text + " (was exact)", True) if h > 0.0 else (text, False)
    grew = h / b >= DRIFT_FACTOR
    return (text + f" (x{h / b:.0f})" if grew else text), grew


@dataclasses.dataclass(frozen=True)
class RegressionRow:
    """One stage of one cell from a base Paddle version to a head version. ``cell`` has ``{v}``
    where the version goes."""

    cell: str
    stage: str
    base: str
    head: str
    transition: Transition
    drift: str = ""
    drift_flag: bool = False
    message: str = ""
    apart: str = ""


def _cell_pattern(key: Tuple[str, str, str]) -> str:
    return "/".join((key[0], "{v}", key[1], key[2]))


def regression_rows(records: Sequence[CellRecord], base: str, head: str) -> List[RegressionRow]:
    rows = []
    for key, by_version in sorted(index(records).items()):
        if base not in by_version and head not in by_version:
            continue
        b_stages, h_stages = _stage_map(by_version.get(base)), _stage_map(by_version.get(head))
        names = list(dict.fromkeys([*b_stages, *h_stages]))
        apart = _apart(by_version.get(base), by_version.get(head))
        for name in names:
            b, h = b_stages.get(name), h_stages.get(name)
            text, flagged = drift(b, h)
            rows.append(RegressionRow(
                cell=_cell_pattern(key), stage=name, base=str(b.status) if b else "-", head=str(h.status) if h else "-",
                transition=transition(b, h), drift=text, drift_flag=flagged,
                message=h.message if h is not None and h.blocks else "", apart=apart))
    return rows


def _apart(base: Optional[CellRecord], head: Optional[CellRecord]) -> str:
    """What makes a base/head pair of records not a comparison of Paddle versions alone: other
    weights (a sharded run whose shards trained their own), another machine (bf16/int8 kernels
    follow the CPU)."""
    if base is None or head is None:
        return ""
    notes = []
    if base.weights and head.weights and base.weights != head.weights:
        notes.append("other weights")
    if base.machine_key != head.machine_key:
        notes.append("other machine")
    return ", ".join(notes)


@dataclasses.dataclass(frozen=True)
class WeightsRow:
    """A (mode, model) and the weights' sha256 each Paddle version computed with."""

    mode: str
    model: str
    versions: Mapping[str, List[str]]

    @property
    def identical(self) -> bool:
        return len({h for hashes in self.versions.values() for h in hashes}) == 1


def weights_rows(records: Sequence[CellRecord]) -> List[WeightsRow]:
    """Per (mode, model): the weights' sha256 each Paddle version computed with. One hash across
    versions is the premise of every cross-version comparison."""
    found: Dict[Tuple[str, str], Dict[str, set]] = collections.defaultdict(lambda: collections.defaultdict(set))
    for record in records:
        if record.weights:
            found[(record.mode, record.model)][record.version].add(record.weights)
    return [WeightsRow(mode, model, {v: sorted(h) for v, h in sorted(by_version.items(),
                                                                      key=lambda kv: version_order(kv[0]))})
            for (mode, model), by_version in sorted(found.items())]


def machine_summary(records: Sequence[CellRecord], base: str, head: str) -> List[str]:
    """The machines the base and head records came from, when they are not one machine."""
    from ..shared.machine import label

    sides = {}
    for side, version in (("base", base), ("head", head)):
        sides[side] = {r.machine_key: r.machine for r in records if r.version == version}
    if set(sides["base"]) == set(sides["head"]) and len(sides["base"]) == 1:
        return []
    lines = ["Records of this pair come from different machines: a transition in a bf16 or int8 stage may be "
             "the CPU's, not Paddle's (rows marked 'other machine')."]
    for side, version in (("base", base), ("head", head)):
        for key, facts in sides[side].items():
            lines.append(f"{side} {version}: {label(facts)} (key {key})")
    return lines


def versions_in(records: Sequence[CellRecord]) -> List[str]:
    return sorted({r.version for r in records}, key=version_order)


def pick_pairs(records: Sequence[CellRecord], base: Optional[str], head: Optional[str]) -> List[Tuple[str, str]]:
    versions = versions_in(records)
    if not versions:
        raise UserError("no result records to compare; run sessions at two Paddle versions first.")
    for flag, value in (("--base", base), ("--head", head)):
        if value is not None and value not in versions:
            raise UserError(f"{flag} {value}: no records for Paddle {value} in this run (have: "
                            f"{', '.join(versions)}); run its sessions first or pick another version.")
    head = head or versions[-1]
    if base is not None:
        if base == head:
            raise UserError(f"--base and --head are both {head}; pick two different versions.")
        pairs = [(base, head)]
    else:
        pairs = [(v, head) for v in versions if v != head]
        if not pairs:
            raise UserError(f"only Paddle {head} has records; run another version's sessions to compare.")
    index_ = index(records)
    for b, h in pairs:
        if not any(b in vs and h in vs for vs in index_.values()):
            raise UserError(f"Paddle {b} and {h} have no cell in common (same session, mode and model); "
                            f"run the same sessions at both versions.")
    return pairs


# -- agreement across versions (same weights, same inputs) ---------------------

def _load_npz(path: Path) -> Optional[List[np.ndarray]]:
    return OUTPUTS.load(path) if path.exists() else None


@dataclasses.dataclass(frozen=True)
class AgreementRow:
    """One version's dygraph or inference outputs against the reference version's, same weights."""

    cell: str
    version: str
    reference: str
    what: str
    status: Status
    note: str = ""
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None


def agreement_rows(records: Sequence[CellRecord], reference: str) -> List[AgreementRow]:
    """Each version's outputs against the reference version's, for cells with the same weights."""
    rows = []
    for key, by_version in sorted(index(records).items()):
        ref = by_version.get(reference)
        if ref is None or not ref.setup.passed:
            continue
        tol = Tolerance.of(ref.cell.tolerances["fp32"])
        for version, record in sorted(by_version.items(), key=lambda kv: version_order(kv[0])):
            if version == reference or not record.setup.passed:
                continue
            for what, name in (("dygraph", "dygraph.npz"), ("inference", "baseline.npz")):
                row = functools.partial(AgreementRow, _cell_pattern(key), version, reference, what)
                if record.weights is None or record.weights != ref.weights:
                    rows.append(row(Status.SKIP, "different weights (no shared checkpoint)"))
                    continue
                a, b = _load_npz(ref.work_dir / name), _load_npz(record.work_dir / name)
                if a is None or b is None:
                    rows.append(row(Status.SKIP, f"no {what} outputs in one of the two cells"))
                elif len(a) != len(b):
                    rows.append(row(Status.FAIL, f"{len(a)} outputs vs {len(b)}"))
                else:
                    stats = [compare_tol(x, y, tol) for x, y in zip(a, b)]
                    w = worst(stats)
                    rows.append(row(Status.FAIL if any(s.blocks for s in stats) else Status.PASS, w.note if w else "",
                                    w.max_abs if w else None, w.max_rel if w else None))
    return rows


# -- computing once, rendering twice ---------------------------------------------

@dataclasses.dataclass
class PairReport:
    base: str
    head: str
    rows: List[RegressionRow]
    machines: List[str] = dataclasses.field(default_factory=list)

    @property
    def counts(self) -> Dict[Transition, int]:
        return dict(collections.Counter(r.transition for r in self.rows))

    @property
    def regressed(self) -> List[RegressionRow]:
        return [r for r in self.rows if r.transition is Transition.REGRESSED]

    def causes(self) -> List[Cause]:
        """What the regressed and still-failing stages of the head say, one line per cause."""
        return group((r.head, r.message, r.cell.format(v=self.head))
                     for r in self.rows if r.message and r.transition in (Transition.REGRESSED, Transition.STILL_FAILING))

    def numeric(self) -> List[RegressionRow]:
        """Error growth: stages that ran on both sides and whose worst max abs grew 10x or more,
        or that went from pass to fail on numbers."""
        return [r for r in self.rows if r.drift_flag or (r.transition is Transition.REGRESSED and r.head == "fail")]


@dataclasses.dataclass
class CrossVersion:
    pairs: List[PairReport]
    agreement: List[AgreementRow]
    portability: List[PortabilityLoad]
    weights: List[WeightsRow] = dataclasses.field(default_factory=list)
    unreadable: List[Unreadable] = dataclasses.field(default_factory=list)
    spans: List[Tuple[str, str]] = dataclasses.field(default_factory=list)  # (cause, the versions it appears at)

    @property
    def weights_differ(self) -> List[WeightsRow]:
        return [w for w in self.weights if not w.identical]

    @property
    def regressed(self) -> int:
        return sum(len(p.regressed) for p in self.pairs)


def compute(model: RunModel, pairs: List[Tuple[str, str]], portability: List[PortabilityLoad]) -> CrossVersion:
    return CrossVersion([PairReport(b, h, regression_rows(model.records, b, h), machine_summary(model.records, b, h))
                         for b, h in pairs],
                        agreement_rows(model.records, pairs[0][1]), portability, weights_rows(model.records),
                        list(model.unreadable), cause_spans(model))


def cause_spans(model: RunModel) -> List[Tuple[str, str]]:
    """Each distinct cause and numeric failure (cell and stage), and where across versions it appears."""
    spans: List[Tuple[str, str]] = []
    for cause in model.causes():
        span = model.version_span(cause.places)
        if span is not None and span.words():
            spans.append((f"{cause.kind}: {clip(cause.message, 160)}", span.words()))
    seen = set()
    for failure in model.numeric_failures():
        span = model.numeric_span(failure)
        label = f"numeric failure of {failure.place.split('/')[0]} · {'/'.join(failure.place.split('/')[2:])} at {failure.stage}"
        if span is not None and span.words() and label not in seen:
            seen.add(label)
            spans.append((label, span.words()))
    return spans


def render(report: CrossVersion, fmt: str) -> str:
    out: List[str] = []
    heading = (lambda t: f"## {t}\n") if fmt == "github" else (lambda t: f"\n== {t} ==")
    bullet = "- " if fmt == "github" else "  "
    order = {t: i for i, t in enumerate(TRANSITIONS)}
    if report.unreadable:
        out.append(heading(f"Unreadable records ({len(report.unreadable)}; in no comparison below)"))
        out.extend(f"{bullet}{u}" for u in report.unreadable)
    if report.weights_differ:
        out.append(heading("Different weights across versions"))
        out.append("These (mode, model) pairs were not computed with one checkpoint, so their cross-version rows "
                   "compare weights as well as Paddle versions (rows marked 'other weights'); run the shards "
                   "from one checkpoint folder (see ci/github-actions.yml).")
        out.extend(f"{bullet}{w.mode} · {w.model}: " + "; ".join(
            f"{v} {', '.join(h[:12] for h in hs)}" for v, hs in w.versions.items()) for w in report.weights_differ)
    if report.spans:
        out.append(heading("Where each cause appears across versions (same cells, same weights)"))
        out.extend(f"{bullet}{cause} — {words}" for cause, words in report.spans)
    for pair in report.pairs:
        counts = pair.counts
        out.append(heading(f"Paddle {pair.base} -> {pair.head}"))
        out.append(", ".join(f"{counts.get(t, 0)} {t}" for t in TRANSITIONS) +
                   f"; {sum(r.drift_flag for r in pair.rows)} with error growth >= {DRIFT_FACTOR:g}x")
        out.extend(pair.machines)
        causes = pair.causes()
        if causes:
            out.append(f"Distinct causes in {pair.head} ({len(causes)}):")
            out.extend(f"{bullet}{c.kind} x{c.count} in {len(c.places)} cell(s): {clip(c.message, 200)} — "
                       f"{', '.join(c.places[:4])}" + (f", +{len(c.places) - 4} more" if len(c.places) > 4 else "")
                       for c in causes)
        numeric = pair.numeric()
        if numeric:
            out.append(f"Numeric regressions ({len(numeric)}):")
            out.extend(f"{bullet}{r.cell.format(v=f'{pair.base}->{pair.head}')} {r.stage}: {r.base} -> "
                       f"{r.head}, max abs {r.drift or '-'}" for r in numeric)
        rows = sorted(pair.rows, key=lambda r: (order.get(r.transition, 99), r.cell, r.stage))
        table = [[r.cell.format(v=f"{pair.base}->{pair.head}"), r.stage, r.base, r.head, str(r.transition),
                  ("! " if r.drift_flag else "") + r.drift, r.apart, clip(r.message, 100)]
                 for r in rows]
        out.append("")
        out.append(tabulate(table, headers=["cell", "stage", pair.base, pair.head, "transition", "max abs drift",
                                            "compared across", "head message"], tablefmt=fmt))
    if report.agreement:
        head = report.pairs[0].head
        out.append(heading(f"Same weights, same inputs: each version against Paddle {head}"))
        out.append(tabulate([[r.cell.format(v=r.version), r.what, str(r.status), fmt_number(r.max_abs),
                              fmt_number(r.max_rel), r.note] for r in report.agreement],
                            headers=["cell", "outputs", "status", "max abs", "max rel", "note"], tablefmt=fmt))
    if report.weights:
        out.append(heading("Weights per (mode, model) and version (sha256)"))
        versions = sorted({v for w in report.weights for v in w.versions}, key=version_order)
        out.append(tabulate([[f"{w.mode} · {w.model}", *[", ".join(h[:12] for h in w.versions.get(v, [])) or "-"
                                                         for v in versions],
                              "identical" if w.identical else "DIFFER"] for w in report.weights],
                            headers=["mode · model", *versions, "across versions"], tablefmt=fmt))
    if report.portability:
        out.append(heading("Artifact portability: exported by X, run by Y"))
        out.append(portability_table(report.portability, fmt))
    return "\n".join(out)


def portability_table(port: List[PortabilityLoad], fmt: str) -> str:
    exporters = sorted({p.exported_by for p in port}, key=version_order)
    loaders = sorted({p.loaded_by for p in port}, key=version_order)
    cells: Dict[Tuple[str, str], List[str]] = collections.defaultdict(list)
    for p in port:
        cells[(p.exported_by, p.loaded_by)].append(f"{p.model}: {p.status}")
    table = [[f"exported by {x}"] + ["; ".join(sorted(cells.get((x, y), ["-"]))) for y in loaders] for x in exporters]
    lines = [tabulate(table, headers=["", *[f"run by {y}" for y in loaders]], tablefmt=fmt)]
    notes = [p for p in port if p.status.blocks]
    if notes:
        lines.append("")
        lines.extend(f"- {p.exported_by} -> {p.loaded_by} {p.model}: {p.status}: {p.message[:200]}" for p in notes)
    return "\n".join(lines)


def load_portability(results: Path) -> List[PortabilityLoad]:
    out = []
    for path in RunFolder(Path(results)).load_files():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("kind") == "portability":
            out.append(PortabilityLoad.from_dict(data))
    return out


def run(results: Path, base: Optional[str], head: Optional[str], out: Optional[Path]) -> int:
    if not results.is_dir():
        raise UserError(f"--results/--run: {results} does not exist; run sessions first.")
    model = RunModel.load(results)
    try:
        pairs = pick_pairs(model.records, base, head)
    except UserError:
        for item in model.unreadable:  # nothing dropped silently, even when nothing can be compared
            print(f"unreadable record: {item}")
        raise
    report = compute(model, pairs, load_portability(results))
    print(render(report, "simple"))
    path = out or RunFolder(Path(results)).regression
    atomic_write_text(path, f"# Cross-version report\n\n{render(report, 'github')}\n")
    print(f"\nreport: {path}")
    if report.regressed:
        print(f"{report.regressed} stage(s) regressed", flush=True)
    if report.unreadable:
        print(f"{len(report.unreadable)} unreadable record(s) listed above were compared with nothing", file=sys.stderr)
    return 1 if report.regressed or report.unreadable else 0
