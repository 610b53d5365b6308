"""Culprit search over an ordered list of switchable items (IR passes, TensorRT op types).

Pure logic, no paddle: the caller supplies ``probe(disabled) -> "pass" | "fail" | "invalid"``
which builds a predictor with the items in ``disabled`` switched off and compares it with the
reference. ``"invalid"`` means that item set is not a valid configuration (Paddle raised), which
says nothing about the culprits.

Model: the output goes wrong while at least one culprit is enabled, and disabling every culprit
fixes it. The search keeps a set ``C`` of culprits found so far and the candidates ``R`` that
may still hold more. Disabling ``C`` plus a prefix ``R[:i]`` of the candidates fixes the output
for large enough ``i``; the smallest such ``i`` names a culprit ``R[i-1]`` (binary search,
``ceil(log2 |R|)`` builds). Then ``C`` alone is probed: if it fixes the output the search ends,
otherwise the next culprit lies in ``R[:i-1]``.

Cost: ``ceil(log2 N) + 1`` builds for one culprit among ``N`` items, ``k * (ceil(log2 N) + 1)``
at most for ``k`` (one by one costs ``N``). That "everything disabled fixes the output" is taken
from the earlier stage that passed with the feature off and not probed: if it is false, every
round ends at the last candidate, the candidates run out, and the result says so
(``not-a-culprit-set``) instead of naming culprits.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence

PASS, FAIL, INVALID = "pass", "fail", "invalid"


@dataclasses.dataclass
class SearchResult:
    culprits: List[str]
    builds: int
    status: str  # "found" | "not-a-culprit-set" | "unresolved"
    message: str = ""
    invalid: List[Dict[str, object]] = dataclasses.field(default_factory=list)
    trail: List[Dict[str, object]] = dataclasses.field(default_factory=list)

    def as_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


class _Budget(Exception):
    pass


def find_culprits(items: Sequence[str], probe: Callable[[List[str]], str],
                  max_builds: Optional[int] = None) -> SearchResult:
    items = list(dict.fromkeys(items))
    result = SearchResult(culprits=[], builds=0, status="found")
    cache: Dict[frozenset, str] = {}
    limit = max_builds if max_builds is not None else 4 * len(items) + 8

    def run(disabled: List[str]) -> str:
        key = frozenset(disabled)
        if key in cache:
            return cache[key]
        if result.builds >= limit:
            raise _Budget()
        result.builds += 1
        outcome = probe(list(disabled))
        cache[key] = outcome
        result.trail.append({"disabled": len(disabled), "outcome": outcome})
        if outcome == INVALID:
            result.invalid.append({"disabled": list(disabled)})
        return outcome

    def fixed(disabled: List[str]) -> Optional[bool]:
        """True/False when the probe answered, None when that set is invalid."""
        outcome = run(disabled)
        return None if outcome == INVALID else outcome == PASS

    culprits: List[str] = []
    candidates = items
    try:
        while True:
            if not candidates:
                # Only reached when "everything disabled fixes it" was false all along.
                result.status = "not-a-culprit-set"
                result.message = "the output is still wrong with every candidate disabled: not caused by these items"
                culprits = []
                break
            lo, hi = 0, len(candidates)  # fixed(C + R[:hi]) assumed; fixed(C + R[:lo]) is False
            while hi - lo > 1:
                mid = (lo + hi) // 2
                answer = _first_valid(fixed, culprits, candidates, mid, lo, hi)
                if answer is None:
                    break
                at, ok = answer
                if ok:
                    hi = at
                else:
                    lo = at
            if hi - lo > 1:
                result.status = "unresolved"
                result.message = (f"every split of {candidates[lo:hi]} is an invalid configuration; "
                                  f"the culprit is one of them")
                culprits.extend(candidates[lo:hi])
                break
            leaned = hi == len(candidates) and frozenset(culprits + candidates) not in cache
            everything = culprits + candidates
            culprits.append(candidates[hi - 1])
            candidates = candidates[: hi - 1]
            if fixed(culprits):
                break
            if leaned and fixed(everything) is not True:
                # The round leaned on "everything disabled fixes it" and that is false.
                result.status = "not-a-culprit-set"
                result.message = "the output is still wrong with every candidate disabled: not caused by these items"
                culprits = []
                break
    except _Budget:
        result.status = "unresolved"
        result.message = f"stopped after {result.builds} builds (budget)"
    result.culprits = culprits
    return result


def _first_valid(fixed, culprits, candidates, mid, lo, hi):
    """Probe the prefix at ``mid``; when that set is invalid, try its neighbours inside (lo, hi)."""
    for offset in range(0, min(hi - lo, 4)):
        for at in (mid + offset, mid - offset) if offset else (mid,):
            if lo < at < hi:
                ok = fixed(culprits + candidates[:at])
                if ok is not None:
                    return at, ok
    return None
