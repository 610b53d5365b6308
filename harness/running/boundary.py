"""Host side: where a cause's answers change among the releases (``releases.place``): the bisection
over the release order, the boundary confirmed, and what an intermittent cause's runs can tell (the
rules are in ``releases``' docstring)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

from ..shared.releases import ReleaseSpan, RunOutcome, SpanOutcome
from ..shared.spec import version_order


class Bisection(Protocol):
    """What runs a cause's script at a release and remembers the answers (``releases.Bisection``)."""

    answers: Dict[str, List[Tuple[RunOutcome, str]]]

    def first(self, version: str) -> RunOutcome: ...

    def judged(self, version: str) -> RunOutcome: ...

    def confirmed(self, version: str, times: int) -> List[RunOutcome]: ...

    def tried(self) -> Any: ...

CONFIRMATIONS = 3
MOST_RUNS = 12  # the most runs a release is asked to tell that an intermittent cause is absent there
MISS = 0.05  # how unlikely a cause reproducing at the first bad's rate must be to stay unseen at the last good


def _boundary(bisect: Bisection, ordered: List[str], good_is: RunOutcome) -> Tuple[str, str]:
    """Between ``ordered[0]`` (which answers ``good_is``) and ``ordered[-1]`` (the other answer):
    the adjacent pair where the answer changes, skipping releases that say nothing."""
    candidates = list(ordered)
    lo, hi = 0, len(candidates) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        answer = bisect.judged(candidates[mid])
        if not answer.says:
            del candidates[mid]
            hi -= 1
        elif answer is good_is:
            lo = mid
        else:
            hi = mid
    return candidates[lo], candidates[hi]


def place(cause: Any, releases: Sequence[str], bisect: Bisection, confirm: int = CONFIRMATIONS) -> ReleaseSpan:
    """The release span of one cause, ``bisect`` running its script at a release (its runs and answers)."""
    own = cause.home.version
    ordered = sorted(set(releases) | {own}, key=version_order)
    older = [v for v in ordered if version_order(v) < version_order(own)]
    newer = [v for v in ordered if version_order(v) > version_order(own)]
    run = cause.home.run
    common = dict(cause=cause.key, reproducer=str(cause.script.relative_to(run)) if run else cause.script.name,
                  releases=tuple(ordered), confirmations=confirm, needs_suite=cause.needs_suite)
    if bisect.first(own) is not RunOutcome.REPRODUCED:
        return ReleaseSpan(SpanOutcome.NOT_AT_ITS_RELEASE, tried=bisect.tried(),
                           note=f"its script does not reproduce at {own} in a fresh environment: "
                                f"{bisect.answers[own][0][1][:200]}", **common)
    oldest = next((v for v in older if bisect.first(v).says), None)  # the oldest release that runs it
    fixed_in, newest = _fixed(bisect, own, newer)
    span = [v for v in ordered if oldest is not None and version_order(oldest) <= version_order(v) <= version_order(own)]
    while True:
        if oldest is None or bisect.judged(oldest) is RunOutcome.REPRODUCED:
            return ReleaseSpan(SpanOutcome.IN_EVERY_RELEASE, tried=bisect.tried(), first_bad=oldest or own,
                               fixed_in=fixed_in, newest=newest, note=_intermittent(bisect), **common)
        last_good, first_bad = _boundary(bisect, span, RunOutcome.NOT_REPRODUCED)
        bad = bisect.confirmed(first_bad, confirm)
        rate = bad.count(RunOutcome.REPRODUCED) / len(bad)
        needed = _runs_to_see(rate, confirm)
        good = bisect.confirmed(last_good, min(needed, MOST_RUNS))
        if RunOutcome.REPRODUCED not in good:
            break
        # Seen at the last good on a further run: it is bad too, and the boundary is older.
    note = _intermittent(bisect, (first_bad, last_good, needed))
    flaky = needed > MOST_RUNS
    return ReleaseSpan(SpanOutcome.FLAKY if flaky else SpanOutcome.FOUND, tried=bisect.tried(), first_bad=first_bad,
                       last_good=last_good, fixed_in=fixed_in, newest=newest, note=note, **common)


def _runs_to_see(rate: float, least: int) -> int:
    """Runs after which a cause reproducing at ``rate`` per run stays unseen with a chance under ``MISS``."""
    if rate >= 1.0:
        return least
    return max(least, math.ceil(math.log(MISS) / math.log(1.0 - rate)))


def _intermittent(bisect: Bisection, boundary: Optional[Tuple[str, str, int]] = None) -> str:
    """How often the cause reproduced where it did not every time, and, at a boundary of such a cause,
    how many runs the last good was asked (and whether that was enough to tell); "" for a cause that
    reproduced at every run."""
    mixed = []
    for version in sorted(bisect.answers, key=version_order):
        answers = [a for a, _ in bisect.answers[version]]
        seen = answers.count(RunOutcome.REPRODUCED)
        if 0 < seen < len(answers):
            mixed.append(f"{version} reproduced in {seen} of {len(answers)} runs")
    if not mixed:
        return ""
    said = "reproduces intermittently: " + ", ".join(mixed)
    if boundary is not None:
        first_bad, last_good, needed = boundary
        asked = len(bisect.answers[last_good])
        said += (f"; {last_good} in none of {asked} (a miss at {first_bad}'s rate under {MISS:.0%} in {needed})"
                 if needed <= MOST_RUNS else
                 f"; {last_good} in none of {asked}, too few to tell at {first_bad}'s rate ({needed} needed)")
    return said


def _fixed(bisect: Bisection, own: str, newer: List[str]) -> Tuple[Optional[str], str]:
    """The first newer release where it no longer reproduces (None: it still does at the newest)."""
    newest = next((v for v in reversed(newer) if bisect.first(v).says), None)
    if newest is None:
        return None, own
    if bisect.first(newest) is RunOutcome.REPRODUCED:
        return None, newest
    span = [own] + [v for v in newer if version_order(v) <= version_order(newest)]
    _, fixed = _boundary(bisect, span, RunOutcome.REPRODUCED)
    return fixed, newest
