"""Two releases side by side, per cause, from their own cells (host side): a run that holds the
release qualified and the release before it (the zoo's ``[zoo] versions``) says, for each cause the
publication counts, at which of the two its cells met it and what the same cells (session, mode,
model) did at the other — new in the newer release, gone from it, or in both. ``releases`` says
when a cause of the newer release appeared by asking its reproducer at every release; this says
what the older release's own cells met, the causes a reproducer of the newer release cannot show
(a cause fixed since, a failure of the older release's own).
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Protocol, Sequence

from ..shared.causes import at_word
from ..shared.record_model import CellRecord
from ..shared.vocab import Status
from .model import RunModel


class RowLike(Protocol):
    """What ``side_by_side`` reads of a publication's row (``report.publication.Row``)."""

    label: str
    words: str
    cells: List[str]


class Change:
    """How a cause stands between two releases (the words the publication prints)."""

    NEW = "new"
    GONE = "gone"
    BOTH = "in both"
    UNASKED = "unasked"  # met at one release; none of its cells ran at the other


def counterpart(record_id: str, version: str) -> str:
    """The same cell (session, mode, model) at another Paddle version."""
    session, _, mode, model = record_id.split("/", 3)
    return f"{session}/{version}/{mode}/{model}"


def _tally(records: Sequence[CellRecord]) -> str:
    counts = Counter(r.verdict.status.value for r in records)
    return ", ".join(f"{n} {status}" for status, n in counts.most_common())


def tallies(model: RunModel, versions: Sequence[str]) -> List[str]:
    """Each release's cells and their verdicts, one line per release."""
    return [f"- Paddle {v}: {len(of)} cells: {_tally(of)}" for v in versions
            for of in [[r for r in model.records if r.version == v]] if of]


def _label(value: str) -> str:
    return value.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def side_by_side(model: RunModel, rows: Sequence[RowLike], newer: str, older: str) -> List[str]:
    """One table row per cause met at either release: its cells at each, how it changed, and what
    the same cells did at the other release (their verdicts, with the cause each met)."""
    by_id = {r.id: r for r in model.records}
    labels: Dict[str, List[str]] = {}
    for row in rows:
        for cell in row.cells:
            labels.setdefault(cell, []).append(row.label)

    def there(cell: str) -> str:
        record = by_id.get(cell)
        if record is None:
            return "not run"
        met = labels.get(cell)
        return record.verdict.status.value + (f" [{', '.join(met)}]" if met and record.verdict.status is not Status.PASS
                                             else "")

    lines = [f"| # | Paddle's words | cells at {newer} | cells at {older} | change | the same cells at the other release |",
             "|---|---|---|---|---|---|"]
    counts: Counter = Counter()
    for row in rows:
        at_new = [c for c in row.cells if c in by_id and by_id[c].version == newer]
        at_old = [c for c in row.cells if c in by_id and by_id[c].version == older]
        asked = [counterpart(c, older) for c in at_new if counterpart(c, older) not in at_old] + \
                [counterpart(c, newer) for c in at_old if counterpart(c, newer) not in at_new]
        change = _change(at_new, at_old, any(cell in by_id for cell in asked))
        if change is None:
            continue
        counts[change] += 1
        other = Counter(there(cell) for cell in asked)
        said = "; ".join(f"{n} {what}" for what, n in other.most_common()) or "the same cells"
        lines.append(f"| {row.label} | {_label(at_word(' '.join(row.words.split()), 100))} | {len(at_new)} | "
                     f"{len(at_old)} | {_words(change, newer)} | {_label(said)} |")
    head = (f"Per cause, from the cells of both releases (the same session, mode and model at each): "
            f"{counts[Change.NEW]} new in {newer}, {counts[Change.GONE]} gone from it (met at {older} only), "
            f"{counts[Change.BOTH]} in both, {counts[Change.UNASKED]} met at one release whose cells did not run "
            f"at the other.")
    return [head, "", *lines] if len(lines) > 2 else [head]


def _change(at_new: Sequence[str], at_old: Sequence[str], other_ran: bool) -> Optional[str]:
    """How a cause changed; met at one release only, it is new or gone only where its cells ran at the other."""
    if at_new and at_old:
        return Change.BOTH
    if not at_new and not at_old:
        return None
    if not other_ran:
        return Change.UNASKED
    return Change.NEW if at_new else Change.GONE


def _words(change: str, newer: str) -> str:
    return {Change.NEW: f"**new in {newer}**", Change.GONE: f"**gone in {newer}**", Change.BOTH: "in both",
            Change.UNASKED: "its cells did not run at the other release"}[change]


__all__ = ["Change", "counterpart", "side_by_side", "tallies"]
