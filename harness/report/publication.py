"""A release's qualification, published (host side): one Markdown file a Paddle user reads to know
what the release does to the models Paddle ships — how it was made (the command, the harness, the
machine), the verdict ``qualify`` gave, the zoo at a glance (``report --zoo``, beside it), every
distinct cause with its place, op, reproducer, the release it appeared in and its verified
workaround, what changed since the release before, and the known-issues file ``qualify --known``
reads. Written by ``python -m harness qualification`` from the run it made; every cell of the
table is read from the run's records (nothing typed by hand), every name escaped for Markdown.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ..shared.causes import at_word, run_words
from ..shared.record_model import CellRecord
from ..shared.releases import ReleaseSpan
from ..shared.spec import version_order
from ..shared.vocab import Status
from .between import side_by_side, tallies
from .model import Diagnosis, RunModel, workaround_words
from .tables import _cause_labels


def _text(value: str, limit: int = 160) -> str:
    """One Markdown table cell: on one line, cut at a word, its pipes and angle brackets escaped."""
    said = at_word(" ".join(str(value or "").split()), limit)
    return said.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


@dataclasses.dataclass
class Row:
    """One distinct cause as the publication says it."""

    label: str
    kind: str
    words: str
    cells: List[str]
    place: str
    reproducer: str
    span: Optional[ReleaseSpan]
    workaround: str
    analysed: bool = True  # whether any of its cells was analysed (has a reproducer, of whatever stage)

    @property
    def released(self) -> str:
        if self.span is not None:
            return self.span.words()
        if self.reproducer == "none" and not self.analysed:
            return "not placed: no reproducer (its cells' failure was not analysed)"
        if self.reproducer == "none":  # its cells' first failing stage is another cause's: theirs was reduced
            return "not placed: no reproducer of its own (its cells' first failing stage is another cause's)"
        return "not placed: its reproducer has no verified source form `releases` can run"


def _span(records: Sequence[CellRecord], stages: Sequence[str]) -> Optional[ReleaseSpan]:
    """The release span of the cause's own reproducer: a record's span is its reproducer's, which
    stands for another cause when its first failing stage was another (the baseline's, say)."""
    return next((r.analysis.releases for r in records if r.analysis.releases is not None
                 and r.analysis.reproducer is not None and (r.analysis.reproducer.stage or "setup") in stages), None)


def _workaround(records: Sequence[CellRecord], stages: Sequence[str]) -> str:
    for record in records:
        for stage in stages:
            said = workaround_words(record.analysis.get("workaround"), stage)
            if said:
                return f"{said} ({record.id})"
    entries = [e for e in (r.analysis.get("workaround") for r in records) if e is not None]
    searched = [e for e in entries if e.status is not Status.SKIP]
    if not searched and any(e.message for e in entries):  # said not run, and why (a stage that killed its worker)
        return f"not searched: {next(e.message for e in entries if e.message)}"
    counts = [len(e.get("tried") or []) for e in searched]
    return f"none verified ({sum(counts)} change(s) tried)" if counts else "none searched"


def _where(found: Optional[Diagnosis]) -> str:
    if found is None:
        return "not analysed"
    parts = [p for p in (found.layer and f"layer {found.layer}", found.op and f"op {found.op}",
                         found.fusion, found.triage) if p]
    return "; ".join(parts) or found.not_reduced or found.not_analysed or "not placed"


def _repro(found: Optional[Diagnosis], run: Path) -> str:
    if found is None or found.reproducer is None or not found.script:
        return "none"
    script = Path(found.script)
    shown = script.relative_to(run).as_posix() if script.is_relative_to(run) else script.name
    return f"`{shown}` ({'verified' if found.reproducer.verified else 'NOT verified'})"


def rows(model: RunModel, run: Path) -> List[Row]:
    """Every cause the report counts (its labels), then each numeric failure no cause holds."""
    by_id = {r.id: r for r in model.records}
    found: List[Row] = []
    for label, cause in zip(_cause_labels(model.causes()).values(), model.causes()):
        records = [by_id[p] for p in cause.places if p in by_id]
        stages = sorted({s for p in cause.places for s in cause.stages.get(p, [])})
        diagnosis = model.diagnosis(cause)
        found.append(Row(label, cause.kind, cause.message, list(cause.places), _where(diagnosis),
                         _repro(diagnosis, run), _span(records, stages or ["setup"]), _workaround(records, stages),
                         any(r.analysis.reproducer is not None for r in records)))
    for k, failure in enumerate(model.numeric_failures(), 1):
        record = by_id[failure.place]
        if model.converter_cause(failure.place, failure.stage) is not None:
            continue  # the converter's cause holds it
        words = (f"{failure.stage}: outputs beyond the tolerance (max abs {failure.max_abs:.3g} on "
                 f"{failure.output})" if failure.max_abs is not None else f"{failure.stage}: outputs beyond the tolerance")
        found.append(Row(f"F{k}", Status.FAIL.value, words, [failure.place], _where(failure.diagnosis),
                         _repro(failure.diagnosis, run), _span([record], [failure.stage]), _workaround([record], [failure.stage])))
    return found


def _line(version: str) -> tuple:
    """A release's line: 3.3 for 3.3.1 (its major and minor numbers)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def _changed(found: Sequence[Row], version: str) -> List[str]:
    """What changed since the release line before ``version``'s: its newest release ``releases`` asked
    (3.2.2 for 3.3.1): a cause whose last good release is that one or newer is new in this line."""
    before = sorted({v for row in found if row.span is not None for v in row.span.releases
                     if _line(v) < _line(version)}, key=version_order)
    if not before:
        return ["No release before it was asked (`releases` did not run): nothing can be said of what changed."]
    previous = before[-1]
    new = [r for r in found if r.span is not None and r.span.last_good and r.span.first_bad
           and version_order(r.span.first_bad) > version_order(previous)]
    older = [r for r in found if r.span is not None and r.span.first_bad and r not in new]
    unplaced = [r for r in found if r.span is None or not r.span.first_bad]
    lines = [f"Against {previous}, the newest release of the line before {version}'s that the causes were asked at:", ""]
    lines += [f"- **new since {previous}**: [{r.label}] {_text(r.words, 120)} — {_text(r.released, 200)}" for r in new] \
        or [f"- no cause is new since {previous}"]
    lines += [f"- older: [{r.label}] {_text(r.released, 200)}" for r in older]
    lines += [f"- not placed: [{r.label}] {_text(r.released, 200)}" for r in unplaced]
    return lines


def _placed(found: Sequence[Row]) -> List[str]:
    """How many causes are placed exactly, and asked with a script of Paddle, numpy and the standard
    library alone — counted from the spans ``releases`` wrote, each said per cause in the table."""
    spans = [r.span for r in found if r.span is not None]
    exact = sum(1 for span in spans if span.exact)
    alone = sum(1 for span in spans if span.needs_suite is False)
    unknown = sum(1 for span in spans if span.needs_suite is None)
    return [f"Placed exactly (a confirmed last good and first bad release, or in every release with every release "
            f"asked): **{exact} of {len(found)}**. Asked at every release with a script that imports only Paddle, "
            f"numpy and the standard library: {alone} of the {len(spans)} placed"
            + (f" ({unknown} recorded before the span said which script it asked)" if unknown else "")
            + f"; {len(found) - len(spans)} without a verified source reproducer (why, in their row)."
            + _short_forms(spans)]


def _compact_lines(span: ReleaseSpan) -> Optional[int]:
    """The length of the span's verified short form (``compact.py``), None when it has none."""
    said = re.match(r"\S+: (\d+) lines, reproduces at ", span.compact)
    return int(said.group(1)) if said else None


def _short_forms(spans: Sequence[ReleaseSpan]) -> str:
    lengths = sorted(n for n in (_compact_lines(span) for span in spans) if n is not None)
    if not lengths:
        return " No cause has a short form (`compact.py`) verified at its own release."
    return (f" A short form (`compact.py`: the model's source, its export, the stage's own config calls it needs and "
            f"`np.testing.assert_allclose` at the stage's tolerance) reproduces at its own release for "
            f"{len(lengths)} of the {len(spans)} placed: {lengths[0]} to {lengths[-1]} lines (median "
            f"{lengths[len(lengths) // 2]}), {sum(1 for n in lengths if n <= 40)} of at most 40.")


def _short_form_list(found: Sequence[Row]) -> List[str]:
    """Each cause's short form, or why it has none (said by ``releases``)."""
    said = [f"- [{r.label}] {_text(r.span.compact, 300)}" for r in found if r.span is not None and r.span.compact]
    return ["## Short forms", "", *said, ""] if said else []


@dataclasses.dataclass(frozen=True)
class Made:
    """How the publication was made: the release, the command, ``qualify``'s words, the files beside it."""

    version: str
    command: str
    verdict: str
    zoo: str
    known: str
    made_by: str
    not_run: Sequence[str] = ()  # the matrix's sessions the publication has no cell of, each with why
    earlier: Sequence[Tuple[str, str]] = ()  # (release, qualify's words) of each older release of the run
    unrecorded: str = ""  # the cells the command asked that have no record, said as a sentence ("" when none)


def document(model: RunModel, run: Path, made: Made) -> str:
    """The publication's Markdown (the module's docstring says what it holds)."""
    version, command, verdict, zoo, known, made_by = (made.version, made.command, made.verdict, made.zoo, made.known,
                                                      made.made_by)
    found = rows(model, run)
    counts = model.verdict_counts()
    tally = ", ".join(f"{n} {status.value}" for status, n in counts.items() if n)
    older = [v for v, _ in made.earlier]
    head = [f"# Paddle {version}, qualified over the zoo" + (f" beside {', '.join(older)}" if older else ""), "",
            f"Made by `{command}` ({made_by}); {len(model.records)} cells: {tally}.",
            f"The machine: {'; '.join(m.label for m in model.machines())}.", "",
            *([f"**Not complete:** {made.unrecorded}", ""] if made.unrecorded else []),
            *(tallies(model, [version, *older]) + [""] if older else []),
            "## Verdict", "", *_verdicts(version, verdict, made.earlier, run),
            f"Known issues (`python -m harness qualify --known {known}`): `{known}`.", "",
            "## At a glance", "", f"Every zoo model in every session, with the cause it met: [{zoo}]({zoo}).", "",
            f"## Causes ({len(found)})", "", *_placed(found), "",
            f"Reproducers are under the run's folder (`{run.parent.name}/{run.name}/`), each with its README and, "
            "beside it, `source/source_repro.py` (the script `releases` ran at every release) and the issue draft.", "",
            "| # | kind | Paddle's words | cells | place | reproducer | releases | workaround |",
            "|---|---|---|---|---|---|---|---|"]
    table = [f"| {r.label} | {r.kind} | {_text(run_words(r.words, run))} | {len(r.cells)}: {_text(', '.join(r.cells), 200)} | "
             f"{_text(r.place, 200)} | {_text(r.reproducer, 200)} | {_text(r.released, 240)} | {_text(r.workaround, 200)} |"
             for r in found]
    missing = ([f"## Sessions not in it ({len(made.not_run)})", "", *[f"- {_text(line, 400)}" for line in made.not_run], ""]
               if made.not_run else [])
    between = [f"## {older[0]} and {version}, side by side", "", *side_by_side(model, found, version, older[0]), ""] \
        if older else []
    return "\n".join([*head, *table, "", *_short_form_list(found), *between, "## What changed", "",
                      *_changed(found, version), "", *missing])


def _verdicts(version: str, verdict: str, earlier: Sequence[Tuple[str, str]], run: Path) -> List[str]:
    """``qualify``'s words for the release qualified, then for each older release of the run (its own cells)."""
    said: List[str] = []
    for release, words in [(version, verdict), *earlier]:
        said += ([f"Paddle {release}, over its own cells:", ""] if earlier else []) + \
            ["```", run_words(words.strip(), run) or "(qualify printed nothing)", "```", ""]
    return said


__all__ = ["Made", "Row", "rows", "document"]
