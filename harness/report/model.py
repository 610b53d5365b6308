"""The report model: a run's records and hazard probes, read once, with everything the renderers
show computed here (verdict counts, the matrix at a glance, distinct causes, hazards, numeric
failures). Renderers format; they do not compute.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..shared.causes import Cause, cause_of, group, one_defect
from ..shared.machine import label as machine_label, numeric_key
from ..shared.record_model import CellRecord, Comparison, Outcome, Reduction, Reproducer, Verdict
from ..shared.records import Unreadable, scan_records
from ..shared.run_records import HazardCheck, HazardProbe
from ..shared.spec import version_order
from ..shared.vocab import Owner, Status
from ..shared.runfolder import RunFolder


@dataclasses.dataclass
class Diagnosis:
    """Where a cell's first failure was localized, in the record's own words: the smallest piece
    that reproduces it (layer path, the op by elimination), the culprit searches' verdicts, the
    triage of a consistency failure, and the reproducer."""

    stage: str
    layer: str = ""
    op: str = ""
    fusion: str = ""
    searches: List[str] = dataclasses.field(default_factory=list)
    triage: str = ""
    reproducer: Optional[Reproducer] = None
    draft: str = ""  # the issue draft beside the reproducer (``drafts.py`` writes it), when there is one
    not_analysed: str = ""  # why this stage has no analysis of its own (another stage had it)
    not_reduced: str = ""  # why its reduction found no place (the step's own words): never a place
    workaround: str = ""  # the verified smallest change that makes the stage pass (``cell/workaround.py``)
    releases: str = ""  # the release span of its cause (``python -m harness releases``)

    script: str = ""  # the reproducer's script, where this process can open it

    @classmethod
    def of(cls, record: CellRecord, stage: Optional[str] = None) -> Optional["Diagnosis"]:
        """``stage``'s own diagnosis (default: the stage the cell localized): its searches, and its
        place and reproducer when it is the stage the cell reduced; for another stage, a word that
        it was not reduced — never the reduced stage's place."""
        analysis = record.analysis
        localized = analysis.localized_stage()
        stage = stage or localized
        if not stage:
            return None
        found = cls(stage=stage)
        if localized == stage:
            found._place(analysis.reduction, analysis.reproducer, record)
        elif localized:
            found.not_analysed = (f"{stage} not reduced: the cell's first failing stage ({localized}) was, and its "
                                  f"place and reproducer are its own")
        for key in ("bisect", "exclude", "fp32_ops"):
            entry = analysis.get(key)
            if entry is None or entry.stage != stage:
                continue
            if entry.verdict:
                found.searches.append(entry.verdict)
            elif entry.found is Outcome.KNOB_IGNORED and key == "fp32_ops":
                found.searches.append(f"op types kept at fp32: {entry.message}")
            elif entry.found is Outcome.KNOB_IGNORED:
                found.searches.append("oneDNN op list (set_mkldnn_op) ignored by this Paddle (read from a run): "
                                      "no op exclusion")
            elif entry.outcome:
                found.searches.append(f"{key}: {entry.outcome}")
        triage = analysis.get("triage")
        if triage is not None and triage.outcome and triage.stage == stage:
            found.triage = f"triage: {triage.outcome}"
            lost = (triage.get("export") or {}).get("words") or ""  # what the export lost (``cell/export_loss``)
            if lost:
                found.triage += f" — {lost}"
                # An op of the program is the wrong answer for an export failure: what the program lacks
                # is (the reduction's op ran in both and behaves), so the place is the layer and what was lost.
                found.op, found.fusion = "", ""
        found.workaround = workaround_words(analysis.get("workaround"), stage)
        if analysis.releases is not None and localized == stage:
            found.releases = analysis.releases.words()
        return found if found.words() else None

    def _place(self, reduce: Optional[Reduction], repro: Optional[Reproducer], record: CellRecord) -> None:
        if reduce is not None and reduce.localized:
            members = ", ".join(reduce.members) or reduce.path
            self.layer = (f"{members} ({reduce.layer})" if members
                          else "the whole model (no sublayer reproduces alone)")
            own = reduce.own_op_types
            self.op = reduce.op or (f"one of {', '.join(own)}" if own else "")
            if reduce.op_call:
                self.op += " (reproduces alone)"
            if reduce.fusion:
                self.op, self.fusion = "", f"the fusion by {', '.join(reduce.fusion)} across its sublayers"
        elif reduce is not None and reduce.entry.message:
            self.not_reduced = reduce.entry.message
        if repro is not None and repro.script:
            # The record's paths are the run folder's: resolved where this process reads the record.
            script = record.located(repro.script)
            self.reproducer, self.script = repro, str(script)
            draft = script.parent / DRAFT
            self.draft = str(draft) if draft.is_file() else ""

    def words(self) -> str:
        parts = [self.not_analysed] if self.not_analysed else []
        if self.layer:
            parts.append(f"layer {self.layer}")
        if self.not_reduced:
            parts.append(f"not reduced: {self.not_reduced}")
        if self.op:
            parts.append(f"op {self.op}")
        if self.fusion:
            parts.append(self.fusion)
        parts += self.searches
        if self.triage:
            parts.append(self.triage)
        if self.releases:
            parts.append(f"releases: {self.releases}")
        if self.workaround:
            parts.append(f"workaround: {self.workaround}")
        if self.reproducer:
            verified = "verified" if self.reproducer.verified else "NOT verified"
            parts.append(f"reproducer: {self.script} ({verified})")
        if self.draft:
            parts.append(f"issue draft: {self.draft}")
        return "; ".join(parts)


def workaround_words(entry: Optional[Any], stage: str) -> str:
    """A stage's verified workaround in one line: the runtime's call(s), the shapes, the speed."""
    if entry is None or entry.stage != stage or entry.status is not Status.PASS:
        return ""
    if not entry.get("verified"):
        return f"none verified ({len(entry.get('tried') or [])} change(s) tried)"
    lines = "; ".join(entry.get("change_lines") or []) or str(entry.get("change") or "")
    speed = entry.get("speed") or {}
    ratio = f", latency ×{speed['ratio']} against {speed.get('against')}" if speed.get("ratio") is not None else ""
    return f"{lines} (verified at {entry.get('shapes')} shape(s){ratio})"


# The issue draft's file name, beside a reproducer's script.
DRAFT = "issue.md"


@dataclasses.dataclass(frozen=True)
class VersionSpan:
    """The Paddle versions at which a cause appears in the cells it hit, and those at which the
    same cells (same session, mode and model, the same trained weights) ran without it."""

    appears: Tuple[str, ...]
    without: Tuple[Tuple[str, bool], ...]  # (version, whether the cell passed there)
    other_weights: Tuple[str, ...] = ()   # versions of the same cells trained to other weights: not compared

    @property
    def first_bad(self) -> Optional[str]:
        earlier = [v for v, _ in self.without if version_order(v) < version_order(self.appears[0])]
        return self.appears[0] if earlier else None

    def words(self) -> str:
        if not self.without:
            said = [f"at every version run ({', '.join(self.appears)})" if len(self.appears) > 1
                    else f"appears at {self.appears[0]}"]
        else:
            said = self._against_without()
        if self.other_weights:
            said.append(f"{', '.join(self.other_weights)} trained other weights (not compared)")
        return "; ".join(said) if self.without or self.other_weights or len(self.appears) > 1 else ""

    def _against_without(self) -> List[str]:
        first, last = version_order(self.appears[0]), version_order(self.appears[-1])
        before = [(v, ok) for v, ok in self.without if version_order(v) < first]
        after = [(v, ok) for v, ok in self.without if version_order(v) > last]
        between = [(v, ok) for v, ok in self.without if (v, ok) not in before and (v, ok) not in after]

        def ran(items: List[Tuple[str, bool]]) -> str:
            passed, many = all(ok for _, ok in items), len(items) > 1
            verb = ("pass" if many else "passes") if passed else ("run" if many else "runs")
            return f"{', '.join(v for v, _ in items)} {verb} the same cell" + ("" if passed else " without it")

        said = [f"appears from {self.first_bad}" if self.first_bad else f"appears at {self.appears[0]}"]
        if before:
            said.append(ran(before[-1:]))
        if between:
            said.append(f"not at {', '.join(v for v, _ in between)}")
        if after:
            said.append(f"gone from {after[0][0]} ({ran(after)})")
        return said


@dataclasses.dataclass(frozen=True)
class HarnessGap:
    """A place the harness could not test: where, what, and the harness's own words."""

    place: str
    what: str
    message: str


@dataclasses.dataclass
class NumericFailure:
    place: str
    stage: str
    output: str
    max_abs: Optional[float]
    scale: Optional[float]
    cosine: Optional[float]
    culprits: List[str]
    diagnosis: Optional["Diagnosis"] = None

    @property
    def relative_to_scale(self) -> Optional[float]:
        if self.max_abs is None or not self.scale:
            return None
        return self.max_abs / self.scale


@dataclasses.dataclass
class Machine:
    """One machine (by its numeric key) and the cells that ran on it."""

    key: str
    facts: Optional[Mapping[str, Any]]
    cells: List[str]
    columns: List[Tuple[str, str]]

    @property
    def label(self) -> str:
        return machine_label(self.facts)


@dataclasses.dataclass
class RunModel:
    records: List[CellRecord]
    hazard_probes: List[HazardProbe] = dataclasses.field(default_factory=list)
    unreadable: List[Unreadable] = dataclasses.field(default_factory=list)
    _causes: Optional[List[Cause]] = dataclasses.field(default=None, repr=False)

    @classmethod
    def load(cls, results: Path) -> "RunModel":
        records, unreadable = scan_records(results)
        return cls(records, load_hazard_probes(results), unreadable)

    def machines(self) -> List[Machine]:
        """The machines the run's cells ran on, by numeric key (a merged run of shards can have
        several): each once, with its cells and (session, version) columns."""
        found: Dict[str, Machine] = {}
        for r in self.records:
            # By the CPU alone: a record the host wrote for a cell whose worker never asked Paddle (a
            # crash, a skip) lacks oneDNN's ISA and the cell's environment, and is the same machine.
            facts = r.machine or {}
            key = numeric_key(facts.get("cpu"), list(facts.get("flags") or []), None) if facts else "unknown"
            machine = found.setdefault(key, Machine(r.machine_key or key, r.machine or None, [], []))
            if (facts.get("onednn") or {}).get("isa") and not ((machine.facts or {}).get("onednn") or {}).get("isa"):
                machine.key, machine.facts = r.machine_key or key, facts  # the fuller description of it
            machine.cells.append(r.id)
            if r.column not in machine.columns:
                machine.columns.append(r.column)
        return list(found.values())

    # -- counts and grid ---------------------------------------------------------
    def verdict_counts(self, records: Optional[Sequence[CellRecord]] = None) -> Dict[Status, int]:
        return dict(collections.Counter(r.verdict.status for r in (records or self.records)))

    @property
    def columns(self) -> List[Tuple[str, str]]:
        """(session, Paddle version) pairs with records, sessions in matrix order of appearance."""
        seen = {r.column for r in self.records}
        return sorted(seen, key=lambda c: (c[0], version_order(c[1])))

    @property
    def rows(self) -> List[Tuple[str, str]]:
        """(model, mode) pairs with records."""
        return sorted({(r.model, r.mode) for r in self.records})

    def glance(self) -> Dict[Tuple[str, str], Dict[Tuple[str, str], Verdict]]:
        """(model, mode) -> (session, version) -> the cell's verdict."""
        grid: Dict[Tuple[str, str], Dict[Tuple[str, str], Verdict]] = collections.defaultdict(dict)
        for r in self.records:
            grid[(r.model, r.mode)][r.column] = r.verdict
        return grid

    def by_session(self) -> Dict[Tuple[str, str], List[CellRecord]]:
        groups: Dict[Tuple[str, str], List[CellRecord]] = collections.defaultdict(list)
        for r in self.records:
            groups[r.column].append(r)
        return dict(sorted(groups.items(), key=lambda kv: (kv[0][0], version_order(kv[0][1]))))

    # -- findings -------------------------------------------------------------------
    def causes(self) -> List[Cause]:
        """Stage results that ended in Paddle's words (error, crash, timeout), and the findings a
        mode met on the way (with the workaround that ran beside each), one line per cause.
        Computed once: every renderer numbers causes the same way."""
        if self._causes is None:
            self._causes = one_defect(group(_worded(self.records)))
        return self._causes

    def converter_cause(self, place: str, stage: str) -> Optional[Cause]:
        """The converter's cause a failure of ``stage`` in ``place`` belongs to (a numeric failure is
        in it, not apart from it: a converter's proven bug, or the memory defect it was made one with), or None."""
        return next((c for c in self.causes() if (c.kind == Owner.CONVERTER.value or c.joined)
                     and stage in c.stages.get(place, [])), None)

    def hazards(self) -> List[Cause]:
        """Hazards that raised, one per (hazard, message), with the versions they were probed at and
        the sessions they concern (a probe of a run before probes were per version: its session)."""
        items = []
        for probe in self.hazard_probes:
            for h in probe.hazards:
                if not h.raised:
                    continue
                place = probe.place if probe.session else f"{probe.place} ({probe.device}: {h.concerns})"
                items.append((h.id, h.message, place))
        return group(items)

    def hazard_details(self) -> Dict[str, HazardCheck]:
        return {h.id: h for probe in self.hazard_probes for h in probe.hazards}

    def hazard_probe_failures(self) -> List[HazardProbe]:
        return [p for p in self.hazard_probes if p.ended]

    def numeric_failures(self) -> List[NumericFailure]:
        found = []
        for r in self.records:
            bisect = r.analysis.get("bisect")
            for stage in r.stages:
                if stage.status is not Status.FAIL:
                    continue
                worst = stage.worst or Comparison((), "", 0.0, 0.0, Status.FAIL)
                culprits = list(bisect.get("culprits") or []) if bisect is not None and bisect.stage == stage.name else []
                found.append(NumericFailure(r.id, stage.name, worst.output or "-", worst.max_abs, worst.ref_absmax,
                                            worst.cosine, culprits, Diagnosis.of(r, stage.name)))
        return found

    def diagnosis(self, cause: Cause) -> Optional[Diagnosis]:
        """Where a stage that raised this cause was localized, from that stage's own analysis
        (one with a verified reproducer first); else why its stages were not analysed."""
        # A trial's death (a crash with no stage of its own) has no stage diagnosis: the cell's is another cause's.
        found = [d for r in self.records if r.id in cause.places
                 for stage in cause.stages.get(r.id, [] if cause.kind == Status.CRASH.value else [None])
                 for d in [Diagnosis.of(r, stage)] if d is not None]
        analysed = [d for d in found if not d.not_analysed]
        return (next((d for d in analysed if d.reproducer and d.reproducer.verified), None)
                or (analysed[0] if analysed else found[0] if found else None))

    def version_span(self, hit: Iterable[str]) -> Optional[VersionSpan]:
        """Across versions, where the cells ``hit`` (record ids) show a cause and where the same
        cells ran without it; None when they ran at one version only."""
        hit = set(hit)
        by_id = {r.id: r for r in self.records}
        triples = {by_id[i].triple for i in hit if i in by_id}
        weights = {by_id[i].triple: by_id[i].weights for i in hit if i in by_id}
        appears, without, other = set(), {}, set()
        for r in self.records:
            if r.triple not in triples:
                continue
            version = r.version
            if r.id in hit:
                appears.add(version)
            elif weights.get(r.triple) not in (None, r.weights):
                other.add(version)
            else:
                passed = r.verdict.status is Status.PASS
                without[version] = without.get(version, True) and passed
        without = {v: ok for v, ok in without.items() if v not in appears}
        if len(appears | set(without) | other) < 2:
            return None
        return VersionSpan(tuple(sorted(appears, key=version_order)),
                           tuple(sorted(without.items(), key=lambda kv: version_order(kv[0]))),
                           tuple(sorted(other - appears - set(without), key=version_order)))

    def numeric_span(self, failure: NumericFailure) -> Optional[VersionSpan]:
        """``version_span`` of a numeric failure: the same cell failing on numbers at the same stage."""
        place = next((r for r in self.records if r.id == failure.place), None)
        if place is None:
            return None
        return self.version_span(r.id for r in self.records if r.triple == place.triple and any(
            s.name == failure.stage and s.status is Status.FAIL for s in r.ladder))

    def harness_gaps(self) -> List["HarnessGap"]:
        """Every place the harness could not test (``untestable``: a setup, stage, shape or
        analysis step it could not build; reduction pieces it could not export), counted apart
        from the findings: none of them says anything about Paddle."""
        gaps = []
        for r in self.records:
            for stage in r.ladder:
                if stage.status is Status.UNTESTABLE:
                    gaps.append(HarnessGap(r.id, stage.name, stage.message))
                    continue  # its message names the shape, if one made it so
                for shape in stage.shapes:
                    if shape.status is Status.UNTESTABLE:
                        gaps.append(HarnessGap(r.id, f"{stage.name} at {shape.label}", shape.message))
            for entry in r.analysis:
                if entry.status is Status.UNTESTABLE:
                    gaps.append(HarnessGap(r.id, f"{entry.kind} of {entry.stage}", entry.message))
                for what, trials in (("pieces", entry.get("trials") or []),
                                     ("one-op programs", (entry.get("isolation") or {}).get("tried") or [])):
                    # a vacuous piece (no op of its own) is nothing the harness failed to build
                    # nor a trial whose process Paddle killed (a finding of its own: ``causes``)
                    unbuilt = [t for t in trials if t.get("untestable") and not t.get("vacuous")
                               and (t.get("died") or {}).get("by") != "paddle"]
                    if unbuilt:
                        gaps.append(HarnessGap(r.id, f"{entry.kind} of {entry.stage}",
                                               f"{len(unbuilt)} of {len(trials)} {what} could not be built or run "
                                               f"alone; first: {', '.join(unbuilt[0]['members'])}: {unbuilt[0].get('note', '')}"))
        return gaps

    def skipped_shapes(self) -> List[Tuple[str, str, str]]:
        """(cell, shape, why) of every shape variant a cell did not run because its dygraph model
        raised there: listed in the findings, never dropped."""
        return [(r.id, v["label"], v.get("message", "")) for r in self.records
                for v in (r.setup.get("shape_variants") or []) if Status.of(v.get("status")) is Status.SKIP]

    def stage_counts(self) -> Dict[Status, int]:
        return dict(collections.Counter(s.status for r in self.records for s in r.ladder))


def _worded(records: Iterable[CellRecord]):
    for r in records:
        for finding in r.setup.get("findings") or []:
            yield "finding", f"{finding['finding']}; workaround beside it: {finding['workaround']}", r.id
        converted = _converter_owned(r)
        for stage in r.ladder:
            if stage.name in converted:
                # The converter's bug, proven on its file: one cause across every runtime that read it
                # (one may raise where another computes it), keyed by converter and op.
                key, words = converted[stage.name]
                said = f"{words}; {stage.message}" if stage.message and stage.status is not Status.FAIL else words
                yield Owner.CONVERTER.value, said, r.id, stage.name, key
            elif stage.status in (Status.ERROR, Status.CRASH, Status.TIMEOUT):
                yield stage.status.value, stage.message, r.id, stage.name
        for entry in r.analysis:
            for death in entry.get("deaths") or []:
                # A trial's process killed by a call a user could make (a predictor, a public API, the
                # model's own layers): a finding of its own. The harness's own forms are its gaps.
                if death.get("by") == "paddle":
                    # A workaround candidate's config is what a user would write: it is part of the cause.
                    change = f": {death['change']}" if death.get("change") else ""
                    yield Status.CRASH.value, f"{death.get('words')} (a trial of the {entry.kind}{change})", r.id


def _converter_owned(record: CellRecord) -> Dict[str, Tuple[str, str]]:
    """The stages of ``record`` whose failure is a converter's proven bug at a named op: the
    reproduced stage, and every other stage of the cell that read the converter's file (its evidence
    names the converter) and raised the same words or failed on numbers too; each with the cause's
    key and words."""
    repro = record.analysis.reproducer
    key = repro.converter_cause if repro is not None else None
    if key is None:
        return {}
    words = str(repro.conversion.get("words") or key)
    home = next((s for s in record.ladder if s.name == repro.stage), None)
    if home is None:
        return {}
    same = {s.name for s in record.ladder if s.name == home.name or (
        s.status is home.status and s.evidence.get("converter")
        and (s.status is Status.FAIL or cause_of(s.message) == cause_of(home.message)))}
    return {name: (key, words) for name in same}


def load_hazard_probes(results: Path) -> List[HazardProbe]:
    """A run's hazard probes: one per Paddle version and device (``versions/<v>/hazards-<device>.json``),
    or, in runs made before that, one per session (``<session>/<v>/hazards.json``)."""
    probes = []
    for path in RunFolder(Path(results)).hazard_files():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("kind") == "hazards":
            if path.name == "hazards.json":
                data.setdefault("session", path.parent.parent.name)
            data["paddle"] = path.parent.name
            probes.append(HazardProbe.from_dict(data))
    return probes
