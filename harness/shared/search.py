"""Culprit search over an ordered list of switchable items (IR passes, TensorRT op types).

Pure logic, no paddle: the caller supplies ``probe(disabled) -> Probe`` (pass, fail or invalid)
which builds a predictor with the items in ``disabled`` switched off and compares it with the
reference. ``"invalid"`` means that item set is not a valid configuration (Paddle raised), which
says nothing about the culprits.

Model: the output goes wrong while at least one culprit is enabled, and disabling every culprit
fixes it. The search keeps the culprits ``C`` found so far and the candidates ``R`` that may still
hold more, and works in rounds. A round finds the *last* culprit in ``R`` with threshold probes
"does disabling ``C + R[:i]`` fix it?", or learns that ``R`` holds none; the next round searches
only the items before it.

Each round is a decision tree over its outcomes (none left, or the last culprit at position p),
built so that the whole search costs at most ``k * L + 2`` predictor builds for ``k`` culprits,
``L = ceil(log2 N)``, whatever ``k`` turns out to be (one by one costs ``N``). The trees trade
depth between outcomes: ``_needs`` gives, for ``m`` candidates left, the spare builds a round must
hold back so that every later round still fits; leaf depths follow from that, and a leaf sequence
is realisable as a tree of threshold probes iff its aligned dyadic intervals pack into [0, 1) in
order (``_pack``). The first round also has the outcome "nothing fixes it" (disabling every item
does not help), reached within ``L + 2`` builds, so a failure the items do not cause is never
pinned on one of them and every culprit set reported was seen to fix the output.

Invalid item sets void the guarantee: the search then probes neighbouring thresholds and records
each invalid set.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .vocab import Probe, SearchOutcome

EXTRA_BUILDS = 2  # the "+2" of the k * ceil(log2 N) + 2 budget
# A search that keeps meeting invalid item sets could probe forever: after this many builds per
# item (plus a few) it stops as "unresolved"; the budget above holds whenever no set is invalid.
MAX_BUILDS_PER_ITEM = 4
MAX_BUILDS_EXTRA = 8
# Neighbouring thresholds tried around an invalid item set before a round gives up.
INVALID_NEIGHBOURS = 5


@dataclasses.dataclass
class SearchResult:
    culprits: List[str]
    builds: int
    status: SearchOutcome
    message: str = ""
    invalid: List[Dict[str, object]] = dataclasses.field(default_factory=list)


class _Budget(Exception):
    pass


def build_budget(n_items: int, n_culprits: int) -> int:
    return n_culprits * _depth(n_items) + EXTRA_BUILDS


def _depth(n_items: int) -> int:
    return max(1, math.ceil(math.log2(max(n_items, 1))))


def _pack(limits: Sequence[int]) -> Optional[List[int]]:
    """Start offsets (in units of 2**-top) of leaves at the given depth limits packed left to
    right into [0, 1), each at its deepest allowed depth; None when they do not fit."""
    if any(limit < 0 for limit in limits):
        return None
    top = max(limits)
    position, starts = 0, []
    for limit in limits:
        width = 1 << (top - limit)
        start = -(-position // width) * width
        starts.append(start)
        position = start + width
        if position > 1 << top:
            return None
    return starts


@functools.lru_cache(maxsize=16)
def _needs(n_items: int, depth: int) -> Tuple[int, ...]:
    """need[m]: spare builds a round with m candidates must start with (outcome "none" costs at
    most that; a culprit at p leaves need[p-1] spare for the rounds after it)."""
    need = [0]
    for m in range(1, n_items + 1):
        spare = need[-1]
        while _pack([spare] + [depth + spare - need[p - 1] for p in range(1, m + 1)]) is None:
            spare += 1
        need.append(spare)
    return tuple(need)


def _threshold(limits: Sequence[int]) -> Optional[int]:
    """Index of the first outcome on the right of the tree's first probe, or None when the
    limits cannot be met any more (an invalid set cost a detour)."""
    starts = _pack(limits)
    if starts is None:
        return None
    top = max(limits)
    half = 1 << top
    ends = [s + (1 << (top - lim)) for s, lim in zip(starts, limits)]
    # Skip levels where every leaf already sits in the left half: no probe is needed there.
    while half > 1 and max(ends) <= half // 2:
        half //= 2
    half //= 2
    for index, start in enumerate(starts):
        if start >= half:
            return index
    return None


def find_culprits(items: Sequence[str], probe: Callable[[List[str]], str],
                  max_builds: Optional[int] = None) -> SearchResult:
    items = list(dict.fromkeys(items))
    result = SearchResult(culprits=[], builds=0, status=SearchOutcome.FOUND)
    cache: Dict[frozenset, str] = {}
    limit = max_builds if max_builds is not None else MAX_BUILDS_PER_ITEM * len(items) + MAX_BUILDS_EXTRA
    depth = _depth(len(items))
    need = _needs(len(items), depth)

    def fixed(disabled: List[str]) -> Optional[bool]:
        """True/False when the probe answered, None when that set is invalid."""
        key = frozenset(disabled)
        if key not in cache:
            if result.builds >= limit:
                raise _Budget()
            result.builds += 1
            cache[key] = Probe(probe(list(disabled)))
            if cache[key] is Probe.INVALID:
                result.invalid.append({"disabled": list(disabled)})
        return None if cache[key] is Probe.INVALID else cache[key] is Probe.PASS

    culprits: List[str] = []
    candidates = items
    first_round = True
    spare = EXTRA_BUILDS
    try:
        while True:
            m = len(candidates)
            low, high, limits = _outcome_limits(m, first_round, spare, depth, need)
            outcome, spent = _round(fixed, culprits, candidates, low, high, limits)
            if first_round and outcome == m + 1:
                result.status = SearchOutcome.NOT_A_CULPRIT_SET
                result.message = "the output is still wrong with every candidate disabled: not caused by these items"
                culprits = []
                break
            if outcome == 0:
                break
            culprits.append(candidates[outcome - 1])
            candidates = candidates[: outcome - 1]
            spare = spare + depth - spent
            first_round = False
    except _Unresolved as exc:
        result.status = SearchOutcome.UNRESOLVED
        result.message = str(exc)
    except _Budget:
        result.status = SearchOutcome.UNRESOLVED
        result.message = f"stopped after {result.builds} builds (budget)"
    result.culprits = culprits
    return result


class _Unresolved(Exception):
    pass


def _outcome_limits(m: int, first_round: bool, spare: int, depth: int, need: Sequence[int]):
    """A round's outcomes and the depth each may cost: 0 = no culprit left in the candidates,
    1..m = the last one is candidates[p-1], m+1 (first round only) = disabling everything does
    not fix it."""
    limits = {p: depth + spare - need[p - 1] for p in range(1, m + 1)}
    if first_round:
        limits[m + 1] = depth + EXTRA_BUILDS
        return 1, m + 1, limits
    limits[0] = spare
    return 0, m, limits


def _round(fixed, culprits: List[str], candidates: List[str], low: int, high: int,
           limits: Dict[int, int]) -> Tuple[int, int]:
    """Threshold probes until one outcome is left; returns (outcome, builds spent)."""
    spent = 0
    while low < high:
        order = list(range(low, high + 1))
        at = _threshold([limits[p] - spent for p in order])
        t = order[at] if at is not None else (low + high + 1) // 2
        answer = _first_valid(lambda th: fixed(culprits + candidates[: th - 1]), t, low, high)
        if answer is None:
            raise _Unresolved(f"every split of {candidates[max(low - 1, 0):high]} is an invalid "
                              f"configuration; a culprit may be among them")
        t, ok = answer
        spent += 1
        if ok:
            high = t - 1
        else:
            low = t
    return low, spent


def _first_valid(fixed_below, t, low, high):
    """Probe threshold ``t`` (outcome >= t?); when that set is invalid, try its neighbours
    inside (low, high]. Returns (threshold, fixed) or None."""
    for offset in range(0, min(high - low + 1, INVALID_NEIGHBOURS)):
        for at in (t + offset, t - offset) if offset else (t,):
            if low < at <= high:
                ok = fixed_below(at)
                if ok is not None:
                    return at, ok
    return None


@dataclasses.dataclass
class Alternatives:
    """Other culprit sets whose disabling alone fixes the output, the found ones kept enabled:
    the failure then needs all of them together (one transformer makes the pattern another
    rewrites, e.g. a runtime's identity elimination before its Div/Mul fusion)."""

    sets: List[List[str]]
    builds: int
    budget: int


def find_alternatives(items: Sequence[str], found: Sequence[str], probe: Callable[[List[str]], str]) -> Alternatives:
    """After ``find_culprits`` found ``found``: each further set among the other items that
    fixes the output while ``found`` stays enabled. One build per round asks whether disabling
    every remaining item fixes it (when not, no set is left); when it does, a search over the
    remaining items names the set. Costs ``sum(|set| * L + 2 + 1) + 1`` builds."""
    sets: List[List[str]] = []
    builds = 0
    budget = 1
    taken = set(found)
    while True:
        rest = [i for i in dict.fromkeys(items) if i not in taken]
        if not rest:
            break
        builds += 1
        if Probe(probe(list(rest))) is not Probe.PASS:
            break
        more = find_culprits(rest, probe)
        builds += more.builds
        budget += build_budget(len(rest), max(len(more.culprits), 1)) + 1
        if more.status != SearchOutcome.FOUND or not more.culprits:
            break
        sets.append(more.culprits)
        taken.update(more.culprits)
    return Alternatives(sets, builds, budget)
