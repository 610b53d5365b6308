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
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from tabulate import tabulate

from ..shared.causes import Cause, group
from ..shared.compare import Tolerance, compare_tol, worst
from ..shared.errors import UserError
from ..shared.records import atomic_write_text
from ..shared.results import StageResult
from ..shared.spec import OUTPUTS
from ..shared.vocab import Status, Transition
from ..shared.spec import version_order
from .model import RunModel, stage_results
from ..shared.notes import clip, fmt_number
from ..shared.runfolder import RunFolder

DRIFT_FACTOR = 10.0
TRANSITIONS = (Transition.REGRESSED, Transition.STILL_FAILING, Transition.FIXED, Transition.NEW, Transition.GONE,
               Transition.STILL_PASS)


def cell_key(record: Dict[str, Any]) -> Tuple[str, str, str]:
    cell = record["cell"]
    return cell["session"]["name"], cell["mode"], cell["model"]["name"]


def index(records: Sequence[Dict[str, Any]]) -> Dict[Tuple[str, str, str], Dict[str, Dict[str, Any]]]:
    """(session, mode, model) -> {paddle version: record}."""
    by_key: Dict[Tuple[str, str, str], Dict[str, Dict[str, Any]]] = collections.defaultdict(dict)
    for record in records:
        by_key[cell_key(record)][record["cell"]["paddle"]] = record
    return by_key


def _stage_map(record: Optional[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    return {} if record is None else {s["name"]: s for s in stage_results(record)}


def transition(base: Optional[Dict[str, Any]], head: Optional[Dict[str, Any]]) -> Transition:
    """A skipped stage counts as not run: it can only appear (`new`) or disappear (`gone`).
    ``vacuous`` and ``noop`` say nothing either way: they count as not failing."""
    b = StageResult.from_dict(base).status if base else None
    h = StageResult.from_dict(head).status if head else None
    b = b if b is not None and b.ran else None
    h = h if h is not None and h.ran else None
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


def drift(base: Optional[Dict[str, Any]], head: Optional[Dict[str, Any]]) -> Tuple[str, bool]:
    """'base -> head' of the worst output's max abs, flagged when it grew 10x or more."""
    b = ((base or {}).get("worst") or {}).get("max_abs")
    h = ((head or {}).get("worst") or {}).get("max_abs")
    if b is None or h is None:
        return "", False
    text = f"{b:.3g} -> {h:.3g}"
    if b == 0.0:
        return (text + " (was exact)", True) if h > 0.0 else (text, False)
    grew = h / b >= DRIFT_FACTOR
    return (text + f" (x{h / b:.0f})" if grew else text), grew


def regression_rows(records: Sequence[Dict[str, Any]], base: str, head: str) -> List[Dict[str, Any]]:
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
            rows.append({
                "cell": "/".join((key[0], "{v}", key[1], key[2])),
                "stage": name,
                "base": str(b["status"]) if b else "-",
                "head": str(h["status"]) if h else "-",
                "transition": transition(b, h),
                "drift": text,
                "drift_flag": flagged,
                "message": (h or {}).get("message", "") if h and Status.of(h["status"]).blocks else "",
                "apart": apart,
            })
    return rows


def machine_key(record: Optional[Dict[str, Any]]) -> Optional[str]:
    return ((record or {}).get("machine") or {}).get("key")


def weights_sha(record: Optional[Dict[str, Any]]) -> Optional[str]:
    return (((record or {}).get("setup") or {}).get("weights") or {}).get("sha256")


def _apart(base: Optional[Dict[str, Any]], head: Optional[Dict[str, Any]]) -> str:
    """What makes a base/head pair of records not a comparison of Paddle versions alone: other
    weights (a sharded run whose shards trained their own), another machine (bf16/int8 kernels
    follow the CPU)."""
    if base is None or head is None:
        return ""
    notes = []
    if weights_sha(base) and weights_sha(head) and weights_sha(base) != weights_sha(head):
        notes.append("other weights")
    if machine_key(base) != machine_key(head):
        notes.append("other machine")
    return ", ".join(notes)


def weights_rows(records: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per (mode, model): the weights' sha256 each Paddle version computed with. One hash across
    versions is the premise of every cross-version comparison."""
    found: Dict[Tuple[str, str], Dict[str, set]] = collections.defaultdict(lambda: collections.defaultdict(set))
    for record in records:
        sha = weights_sha(record)
        if sha:
            found[(record["cell"]["mode"], record["cell"]["model"]["name"])][record["cell"]["paddle"]].add(sha)
    rows = []
    for (mode, model), by_version in sorted(found.items()):
        hashes = set().union(*by_version.values())
        rows.append({"mode": mode, "model": model,
                     "versions": {v: sorted(h) for v, h in sorted(by_version.items(), key=lambda kv: version_order(kv[0]))},
                     "identical": len(hashes) == 1})
    return rows


def machine_summary(records: Sequence[Dict[str, Any]], base: str, head: str) -> List[str]:
    """The machines the base and head records came from, when they are not one machine."""
    from ..shared.machine import label

    sides = {}
    for side, version in (("base", base), ("head", head)):
        sides[side] = {machine_key(r): r.get("machine") for r in records if r["cell"]["paddle"] == version}
    if set(sides["base"]) == set(sides["head"]) and len(sides["base"]) == 1:
        return []
    lines = ["Records of this pair come from different machines: a transition in a bf16 or int8 stage may be "
             "the CPU's, not Paddle's (rows marked 'other machine')."]
    for side, version in (("base", base), ("head", head)):
        for key, facts in sides[side].items():
            lines.append(f"{side} {version}: {label(facts)} (key {key})")
    return lines


def versions_in(records: Sequence[Dict[str, Any]]) -> List[str]:
    return sorted({r["cell"]["paddle"] for r in records}, key=version_order)


def pick_pairs(records: Sequence[Dict[str, Any]], base: Optional[str], head: Optional[str]) -> List[Tuple[str, str]]:
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

def _work_dir(record: Dict[str, Any]) -> Path:
    return Path(record["_path"]).with_suffix("")


def _load_npz(path: Path) -> Optional[List[np.ndarray]]:
    return OUTPUTS.load(path) if path.exists() else None


def agreement_rows(records: Sequence[Dict[str, Any]], reference: str) -> List[Dict[str, Any]]:
    """Each version's outputs against the reference version's, for cells with the same weights."""
    rows = []
    for key, by_version in sorted(index(records).items()):
        ref = by_version.get(reference)
        if ref is None or Status.of(ref["setup"].get("status")) is not Status.PASS:
            continue
        ref_sha = (ref["setup"].get("weights") or {}).get("sha256")
        tol = ref["cell"]["tolerances"]["fp32"]
        for version, record in sorted(by_version.items(), key=lambda kv: version_order(kv[0])):
            if version == reference or Status.of(record["setup"].get("status")) is not Status.PASS:
                continue
            sha = (record["setup"].get("weights") or {}).get("sha256")
            for what, name in (("dygraph", "dygraph.npz"), ("inference", "baseline.npz")):
                row = {"cell": "/".join((key[0], "{v}", key[1], key[2])), "version": version,
                       "reference": reference, "what": what}
                if sha is None or sha != ref_sha:
                    row.update(status="skip", note="different weights (no shared checkpoint)")
                    rows.append(row)
                    continue
                a, b = _load_npz(_work_dir(ref) / name), _load_npz(_work_dir(record) / name)
                if a is None or b is None:
                    row.update(status="skip", note=f"no {what} outputs in one of the two cells")
                elif len(a) != len(b):
                    row.update(status="fail", note=f"{len(a)} outputs vs {len(b)}")
                else:
                    stats = [compare_tol(x, y, Tolerance.of(tol)) for x, y in zip(a, b)]
                    bad = [s for s in stats if Status.of(s["status"]).blocks]
                    w = worst(stats)
                    row.update(status=Status.FAIL if bad else Status.PASS, max_abs=w.get("max_abs"),
                               max_rel=w.get("max_rel"), note=w.get("note", ""))
                rows.append(row)
    return rows


# -- computing once, rendering twice ---------------------------------------------

@dataclasses.dataclass
class PairReport:
    base: str
    head: str
    rows: List[Dict[str, Any]]
    machines: List[str] = dataclasses.field(default_factory=list)

    @property
    def counts(self) -> Dict[Transition, int]:
        return dict(collections.Counter(r["transition"] for r in self.rows))

    @property
    def regressed(self) -> List[Dict[str, Any]]:
        return [r for r in self.rows if r["transition"] is Transition.REGRESSED]

    def causes(self) -> List[Cause]:
        """What the regressed and still-failing stages of the head say, one line per cause."""
        return group((r["head"], r["message"], r["cell"].format(v=self.head))
                     for r in self.rows if r["message"] and r["transition"] in (Transition.REGRESSED, Transition.STILL_FAILING))

    def numeric(self) -> List[Dict[str, Any]]:
        """Error growth: stages that ran on both sides and whose worst max abs grew 10x or more,
        or that went from pass to fail on numbers."""
        return [r for r in self.rows if r["drift_flag"] or (r["transition"] is Transition.REGRESSED and r["head"] == "fail")]


@dataclasses.dataclass
class CrossVersion:
    pairs: List[PairReport]
    agreement: List[Dict[str, Any]]
    portability: List[Dict[str, Any]]
    weights: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    unreadable: List[Any] = dataclasses.field(default_factory=list)
    spans: List[Tuple[str, str]] = dataclasses.field(default_factory=list)  # (cause, the versions it appears at)

    @property
    def weights_differ(self) -> List[Dict[str, Any]]:
        return [w for w in self.weights if not w["identical"]]

    @property
    def regressed(self) -> int:
        return sum(len(p.regressed) for p in self.pairs)


def compute(model: RunModel, pairs: List[Tuple[str, str]], portability: List[Dict[str, Any]]) -> CrossVersion:
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
        out.extend(f"{bullet}{w['mode']} · {w['model']}: " + "; ".join(
            f"{v} {', '.join(h[:12] for h in hs)}" for v, hs in w["versions"].items()) for w in report.weights_differ)
    if report.spans:
        out.append(heading("Where each cause appears across versions (same cells, same weights)"))
        out.extend(f"{bullet}{cause} — {words}" for cause, words in report.spans)
    for pair in report.pairs:
        counts = pair.counts
        out.append(heading(f"Paddle {pair.base} -> {pair.head}"))
        out.append(", ".join(f"{counts.get(t, 0)} {t}" for t in TRANSITIONS) +
                   f"; {sum(r['drift_flag'] for r in pair.rows)} with error growth >= {DRIFT_FACTOR:g}x")
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
            out.extend(f"{bullet}{r['cell'].format(v=f'{pair.base}->{pair.head}')} {r['stage']}: {r['base']} -> "
                       f"{r['head']}, max abs {r['drift'] or '-'}" for r in numeric)
        rows = sorted(pair.rows, key=lambda r: (order.get(r["transition"], 99), r["cell"], r["stage"]))
        table = [[r["cell"].format(v=f"{pair.base}->{pair.head}"), r["stage"], r["base"], r["head"], str(r["transition"]),
                  ("! " if r["drift_flag"] else "") + r["drift"], r.get("apart", ""), clip(r["message"], 100)]
                 for r in rows]
        out.append("")
        out.append(tabulate(table, headers=["cell", "stage", pair.base, pair.head, "transition", "max abs drift",
                                            "compared across", "head message"], tablefmt=fmt))
    if report.agreement:
        head = report.pairs[0].head
        out.append(heading(f"Same weights, same inputs: each version against Paddle {head}"))
        out.append(tabulate([[r["cell"].format(v=r["version"]), r["what"], str(r["status"]), fmt_number(r.get("max_abs")),
                              fmt_number(r.get("max_rel")), r.get("note", "")] for r in report.agreement],
                            headers=["cell", "outputs", "status", "max abs", "max rel", "note"], tablefmt=fmt))
    if report.weights:
        out.append(heading("Weights per (mode, model) and version (sha256)"))
        versions = sorted({v for w in report.weights for v in w["versions"]}, key=version_order)
        out.append(tabulate([[f"{w['mode']} · {w['model']}", *[", ".join(h[:12] for h in w["versions"].get(v, [])) or "-"
                                                             for v in versions],
                              "identical" if w["identical"] else "DIFFER"] for w in report.weights],
                            headers=["mode · model", *versions, "across versions"], tablefmt=fmt))
    if report.portability:
        out.append(heading("Artifact portability: exported by X, run by Y"))
        out.append(portability_table(report.portability, fmt))
    return "\n".join(out)


def portability_table(port: List[Dict[str, Any]], fmt: str) -> str:
    exporters = sorted({p["exported_by"] for p in port}, key=version_order)
    loaders = sorted({p["loaded_by"] for p in port}, key=version_order)
    cells: Dict[Tuple[str, str], List[str]] = collections.defaultdict(list)
    for p in port:
        cells[(p["exported_by"], p["loaded_by"])].append(f"{p['model']}: {p['status']}")
    table = [[f"exported by {x}"] + ["; ".join(sorted(cells.get((x, y), ["-"]))) for y in loaders] for x in exporters]
    lines = [tabulate(table, headers=["", *[f"run by {y}" for y in loaders]], tablefmt=fmt)]
    notes = [p for p in port if Status.of(p["status"]).blocks]
    if notes:
        lines.append("")
        lines.extend(f"- {p['exported_by']} -> {p['loaded_by']} {p['model']}: {p['status']}: {p.get('message', '')[:200]}"
                     for p in notes)
    return "\n".join(lines)


def load_portability(results: Path) -> List[Dict[str, Any]]:
    out = []
    for path in RunFolder(Path(results)).load_files():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("kind") == "portability":
            out.append(data)
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
