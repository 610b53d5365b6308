"""The reduction's descent (pure logic, no Paddle): from the whole model down to the smallest piece
that reproduces a stage's failure, asking a ``reproduces(paths) -> Trial`` predicate.

At each layer known to reproduce, its called sublayers (call order) are minimized as delta debugging
does (Zeller's ddmin): two contiguous halves of about equal leaf count first; a part that reproduces
is kept and split again; when no part reproduces, the complements of the parts, then finer parts
(4, 8, ... up to each sublayer alone), then adjacent pairs (a fusion of two neighbours). A single
sublayer that reproduces is descended into. The halvings along a path add up to about ``log2 L``
for a model of ``L`` leaves, so a path of ``depth`` layers costs at most ``2·⌈log2 L⌉ + 2·depth``
trials when a half reproduces at every level (``budget``); the finer trials, spent only where no
half reproduces, are capped by ``fine_limit`` and counted apart.

Where no half of a layer's sublayers reproduces, the ops of the layer's own forward are asked first
(``own_op``, the reduction's one-op programs): on the zoo's 34 reductions the finer groups never
reproduced where the halves did not, and the op was then isolated inside that layer in most of them
(an upsample in a neck's forward); an own op that reproduces alone ends the descent at that layer.

A trial that *says nothing* — the piece could not be built or run alone — is never taken as a
non-reproduction: the answer then stays at the layer shown to reproduce, and says why. Where the
culprit search named passes, each trial says whether they fired in it; a group whose members do not
reproduce alone because the pass does not fire in any one of them is a fusion across them, and the
answer says so.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    from ..anatomy.pieces import Call

# The most trials finer than halves one reduction spends (the answer's layer, where no half reproduces).
FINE_LIMIT = 24
# Groups up to this size go from halves straight to each member alone.
FINEST_AT = 8


@dataclasses.dataclass
class Trial:
    """One sub-export and what the stage pair said on it."""

    members: List[str]
    reproduces: bool
    note: str = ""
    untestable: bool = False  # the piece could not be built or run alone: it says nothing
    vacuous: bool = False     # the piece has no op of its own (its members pass their inputs through)
    culprit_fired: Optional[bool] = None  # did the culprit pass change the piece's program (None: not asked)
    masked: str = ""  # another error the piece raised first (its words): the failure sought may hide behind it
    written_in: List[str] = dataclasses.field(default_factory=list)  # captured inputs written in as values
    finer: bool = False  # a trial finer than halves (ddmin's complements, parts, pairs)
    op_types: Dict[str, int] = dataclasses.field(default_factory=dict)
    margin: Optional[float] = None
    files: Optional[Dict[str, str]] = None
    feeds: Optional[Dict[str, np.ndarray]] = None
    expected: Optional[List[np.ndarray]] = None
    death: Optional[Any] = None  # how the trial's process died (``sandbox.Death``): it says nothing of the failure

    @property
    def says_nothing(self) -> bool:
        """Not a trial of the members: a piece with no op of its own cannot hold the failure, so
        a vacuous one does say something (nothing fails there); a masked one does not (another
        error came first)."""
        return not self.reproduces and ((self.untestable and not self.vacuous) or bool(self.masked))

    def to_dict(self) -> Dict[str, Any]:
        said: Dict[str, Any] = {"members": self.members, "reproduces": self.reproduces,
                                "untestable": self.untestable, "note": self.note}
        if self.culprit_fired is not None:
            said["culprit_fired"] = self.culprit_fired
        if self.finer:
            said["finer"] = True
        if self.vacuous:
            said["vacuous"] = True
        if self.margin is not None:
            said["max_abs"] = self.margin
        if self.masked:
            said["masked"] = self.masked
        if self.written_in:
            said["written_in"] = self.written_in
        if self.death is not None:
            said["died"] = self.death.to_dict()
        return said


@dataclasses.dataclass(frozen=True)
class Found:
    """Where the descent stopped: the smallest piece shown to reproduce (``members``: the layer at
    ``node`` itself, or a group of its sublayers), why there, and every trial it took."""

    node: str
    members: List[str]
    depth: int
    why: str
    trials: List[Trial]
    below: List[Trial]  # the answer's sublayers alone, none reproducing, when they cover all of it
    fine_trials: int
    fine_limit: int
    unmasked: List[str]
    own_op: Optional[Any] = None  # what ``own_op`` found at ``node`` (its op alone reproduces), when it did


def budget(leaves: int, depth: int) -> int:
    return 2 * math.ceil(math.log2(max(leaves, 1))) + 2 * depth


def parts(paths: List[str], weights: Sequence[int], n: int) -> List[List[str]]:
    """``n`` contiguous parts (call order) of about equal total weight, none empty."""
    n = max(1, min(n, len(paths)))
    total = sum(weights)
    cuts, run, k = [], 0, 1
    for i, weight in enumerate(weights[:-1]):
        run += weight
        # cut after i when the running weight reaches the k-th share, leaving a path per part to come
        if k < n and (run * n >= k * total or len(paths) - (i + 1) == n - k):
            cuts.append(i + 1)
            k += 1
    bounds = [0, *cuts, len(paths)]
    return [paths[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def split(paths: List[str], calls: Mapping[str, Call]) -> Tuple[List[str], List[str]]:
    """Two contiguous halves (call order) of about equal leaf count."""
    weights = [calls[p].leaves for p in paths]
    total, run, best, cut = sum(weights), 0, None, 1
    for i in range(1, len(paths)):
        run += weights[i - 1]
        gap = abs(total - 2 * run)
        if best is None or gap < best:
            best, cut = gap, i
    return paths[:cut], paths[cut:]


class Descent:
    def __init__(self, calls: Mapping[str, Call], reproduces: Callable[[List[str]], Trial], fine_limit: int,
                 own_op: Optional[Callable[[str], Optional[Any]]] = None):
        self.calls, self.reproduces, self.fine_limit = calls, reproduces, fine_limit
        self.own_op = own_op
        self.own_found: Dict[str, Any] = {}  # node -> its own op that reproduces alone
        self.trials: List[Trial] = []
        self.tested: Dict[Tuple[str, ...], Trial] = {}
        self.fine_spent = 0
        self.fine_ran_out = False
        self.unmasked: List[str] = []  # masked members the descent went into and found the failure inside

    def test(self, paths: List[str], finer: bool = False) -> Optional[Trial]:
        key = tuple(paths)
        if key not in self.tested:
            if finer and self.fine_spent >= self.fine_limit:
                self.fine_ran_out = True
                return None
            trial = self.reproduces(list(paths))
            trial.finer = finer
            self.fine_spent += int(finer)
            self.tested[key] = trial
            self.trials.append(trial)
        return self.tested[key]

    def minimize(self, kids: List[str], node: Optional[str] = None) -> List[str]:
        """ddmin over a reproducing layer's sublayers: the smallest group found reproducing (the
        whole list when no smaller one does). Groups of up to ``FINEST_AT`` go from halves straight
        to each sublayer alone (what a conclusion needs: none alone reproduces); larger ones double
        the number of parts first. Adjacent pairs (a fusion of neighbours) come before complements.
        ``node``: the layer whose sublayers ``kids`` are; where neither half reproduces, its own ops
        are asked before any finer group, and one that reproduces alone keeps the whole list."""
        group, n = kids, 2
        while len(group) > 1:
            chunks = list(split(group, self.calls)) if n == 2 else parts(
                group, [self.calls[p].leaves for p in group], n)
            hit = self._first_reproducing(chunks, finer=n > 2)
            if hit is None and n == 2 and group is kids and len(kids) > 2 and self._own_op_reproduces(node):
                return kids
            if hit is None and n >= len(group) and len(group) > 2:
                hit = self._first_reproducing([group[i:i + 2] for i in range(len(group) - 1)], finer=True)
            if hit is None and n > 2:
                hit = self._first_reproducing([[p for p in group if p not in c] for c in chunks if len(c) < len(group) - 1],
                                              finer=True)
                if hit is not None:
                    group, n = hit, max(min(n - 1, len(hit)), 2)
                    continue
            if hit is not None:
                group, n = hit, 2
                continue
            if n >= len(group):
                break
            n = len(group) if len(group) <= FINEST_AT else min(len(group), 2 * n)
        return group

    def _own_op_reproduces(self, node: Optional[str]) -> bool:
        if self.own_op is None or node is None:
            return False
        found = self.own_op(node)
        if found is not None:
            self.own_found[node] = found
        return found is not None

    def _first_reproducing(self, groups: List[List[str]], finer: bool) -> Optional[List[str]]:
        for group in groups:
            trial = self.test(group, finer)
            if trial is not None and trial.reproduces:
                return group
        return None

    def run(self) -> Found:
        node, depth = "", 0
        while True:
            depth += 1
            kids = [c for c in self.calls[node].children if not self.calls[c].unreplayable]
            unreplayable = [c for c in self.calls[node].children if self.calls[c].unreplayable]
            if not kids:
                why = ("it calls no sublayer" if not unreplayable else
                       f"its sublayers cannot be replayed alone ({unreplayable[0]}: "
                       f"{self.calls[unreplayable[0]].unreplayable})")
                return self._answer(node, [node], depth, why, [])
            group = self.minimize(kids, node)
            alone = self.test(group, finer=False) if len(group) == 1 else None
            if alone is not None and alone.reproduces:
                node = group[0]
                continue
            inside = self._inside_masked(group)
            if inside is not None:  # found behind another error: go on from there
                node, group, levels = inside
                depth += levels
                if len(group) == 1:
                    node = group[0]
                    continue
                kids = [c for c in self.calls[node].children if not self.calls[c].unreplayable]
                return self._conclude(node, kids, group, depth, False)
            return self._conclude(node, kids, group, depth, bool(unreplayable))

    def _inside_masked(self, group: List[str]) -> Optional[Tuple[str, List[str], int]]:
        """A member that raised another error first (masked) may still hold the failure sought:
        its own sublayers are minimized in turn (a part of it without the masking error can
        reproduce). The member, the reproducing group inside it and how many levels below
        ``group`` that member is; or None."""
        for path in group:
            single = self.tested.get((path,))
            kids = [c for c in self.calls[path].children if not self.calls[c].unreplayable]
            if single is None or not single.masked or not kids:
                continue
            inner = self.minimize(kids)
            trial = self.test(inner, finer=True)
            if trial is not None and trial.reproduces:
                self.unmasked.append(path)
                return path, inner, 1
            deeper = self._inside_masked(inner)
            if deeper is not None:
                self.unmasked.append(path)
                return deeper[0], deeper[1], deeper[2] + 1
        return None

    def _conclude(self, node: str, kids: List[str], group: List[str], depth: int, partial: bool) -> Found:
        """No smaller group than ``group`` reproduces: say why, and whether a trial that said nothing
        leaves the failure possibly inside one of its members."""
        singles = [self.tested.get((k,)) for k in group]
        tried_alone = all(t is not None for t in singles)
        pool = [t for t in singles if t is not None] if tried_alone else [
            t for t in self.trials if set(t.members) <= set(group)]
        mute = next((t for t in pool if t.says_nothing), None)
        own = self.tested.get((node,))
        # the layer itself is the answer only when its own piece reproduced (not when it was masked
        # and the group of all its sublayers is what reproduces)
        whole = group == kids and not (own is not None and own.masked)
        members = [node] if whole else group
        if whole and node in self.own_found:
            why = (f"neither half of its {len(kids)} sublayers reproduces alone, and an op of its own forward "
                   f"does ({self.own_found[node].get('op')}, alone on the tensors it received): the failure is "
                   f"this layer's own op, so no finer group of its sublayers was tried")
            return self._answer(node, members, depth, why, [])
        if mute is not None:
            said = "is masked" if mute.masked else "could not be tested alone"
            why = (f"{', '.join(mute.members)} {said} ({mute.note}); the failure may be "
                   f"inside it, so {'this layer' if whole else 'this group'} is the smallest piece shown to reproduce")
            return self._answer(node, members, depth, why, [])
        aside = (f" (the budget of {self.fine_limit} finer trials ran out before each was tried alone)"
                   if not tried_alone and self.fine_ran_out else "")
        below = [t for t in singles if t is not None] if tried_alone and not partial else []
        unfired = [t.members[0] for t in singles if t is not None and t.culprit_fired is False]
        if unfired:
            aside += f"; the culprit pass does not fire in {', '.join(unfired)} alone"
        if whole and len(kids) == 1:
            why = f"its sublayer {kids[0]} does not reproduce alone: the failure needs this layer's own ops"
        elif whole:
            said = "no one of its" if tried_alone else "neither half of its"
            why = (f"{said} {len(kids)} sublayers reproduces alone{aside}, nor a smaller group of them: the "
                   f"failure needs this layer's own ops or ops across its sublayers (a fusion)")
        else:
            why = (f"{', '.join(group)} reproduce together, no one of them alone{aside}: the failure crosses "
                   f"them (a fusion)")
        return self._answer(node, members, depth, why, below)

    def _answer(self, node: str, members: List[str], depth: int, why: str, below: List[Trial]) -> Found:
        return Found(node, members, depth, why, self.trials, below, self.fine_spent, self.fine_limit,
                     list(self.unmasked), self.own_found.get(node) if members == [node] else None)


def descend(calls: Mapping[str, Call], reproduces: Callable[[List[str]], Trial],
            fine_limit: int = FINE_LIMIT, own_op: Optional[Callable[[str], Optional[Any]]] = None) -> Found:
    """Walk down from the model to the smallest piece that reproduces: a called sublayer, or a
    group of its sublayers that reproduces together when no one of them does alone.

    ``below`` are the trials inside the answer that did not reproduce, each sublayer alone, when
    they cover all of it (what the own-op elimination subtracts); empty otherwise."""
    return Descent(calls, reproduces, fine_limit, own_op).run()


__all__ = ["Found", "Trial", "budget", "parts", "split", "descend", "FINE_LIMIT"]
