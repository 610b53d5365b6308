"""Reduction (cell side): the smallest sublayer of the model that reproduces a stage's failure.

The model is rebuilt from its source with the cell's trained weights and run once in dygraph at
the shape the stage failed at, with a hook on every sublayer that keeps its first call's inputs.
A *piece* is a group of sublayers exported on its own (``to_static`` + ``jit.save`` of a small
generated layer that calls each member on its captured inputs and returns their outputs) and run
on the same stage pair as the failing stage:

* an ``error`` reproduces when the piece raises the same cause (the same normalized message);
* a numeric ``fail`` reproduces when the stage's config is out of tolerance against the
  reference config (the baseline predictor) on the piece — or, for ``baseline`` itself, against
  the dygraph forward of the piece run just before its export (what ``to_static`` traced).

The descent starts at the whole model (the stage failed on it) and at each layer splits its
sublayers, in call order, into two halves of about equal leaf count: the half that reproduces is
descended into; when neither does, the failure needs the layer's own ops (an op its forward calls
directly, such as ``F.interpolate``) or ops across its sublayers (a fusion), and the layer is the
answer — said so, never pinned on a sublayer. Each level costs at most two sub-exports per
halving (the halves split the leaves, so the halvings down a path add up to about ``log2 L``) and at
most two at the answer to show that no half of its sublayers reproduces: a path of ``depth`` layers
(the model and the answer included) in a model of ``L`` leaves costs at most
``2·⌈log2 L⌉ + 2·depth`` sub-exports; the count is recorded beside that budget.

The op types the answer's program contains are read from a run of it under the reference config;
those not in any of its sublayers' programs are its own ops, and when exactly one op type is left
it is named as the op (by elimination: its sublayers do not reproduce). Elimination cannot tell an
own op from a fusion across sublayers; when the culprit search named a fusion pass (``*fuse*``)
for the same stage, the answer says the fusion instead and names no op.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..shared.causes import paddle_message, raised_status
from ..shared.compare import compare_tol
from ..shared.runtime import StagePlan
from ..shared.spec import OUTPUTS
from ..shared.vocab import Analysis, Reference, Stage, Status
from .context import CellContext
from .pieces import SMALL_INT_INPUT, Call, capture, load_piece, piece_source, specs, unique_tensors, unused_inputs
from .runtime import runtime
from .structure import build_call_args

# Ops every program has (feeding, fetching, parameters): never "the op".
BOOKKEEPING = {"feed", "fetch", "data", "parameter", "shadow_output", "fetch_v2", "pd_op.feed", "pd_op.fetch",
               "pd_op.data", "builtin.parameter", "builtin.shadow_output", "pd_op.full", "full",
               "pd_op.full_int_array", "full_int_array",
               "onednn_to_paddle_layout", "pd_op.onednn_to_paddle_layout", "transfer_layout"}


@dataclasses.dataclass
class Trial:
    """One sub-export and what the stage pair said on it."""

    members: List[str]
    reproduces: bool
    note: str = ""
    untestable: bool = False  # the piece could not be exported or run alone: it says nothing
    op_types: Dict[str, int] = dataclasses.field(default_factory=dict)
    margin: Optional[float] = None
    files: Optional[Dict[str, str]] = None
    feeds: Optional[Dict[str, np.ndarray]] = None
    expected: Optional[List[np.ndarray]] = None


# -- the descent -----------------------------------------------------------------------------------

def budget(leaves: int, depth: int) -> int:
    return 2 * math.ceil(math.log2(max(leaves, 1))) + 2 * depth


def split(paths: List[str], calls: Dict[str, Call]) -> Tuple[List[str], List[str]]:
    """Two contiguous halves (call order) of about equal leaf count."""
    weights = [calls[p].leaves for p in paths]
    total, run, best, cut = sum(weights), 0, None, 1
    for i in range(1, len(paths)):
        run += weights[i - 1]
        gap = abs(total - 2 * run)
        if best is None or gap < best:
            best, cut = gap, i
    return paths[:cut], paths[cut:]


def descend(calls: Dict[str, Call], reproduces: Callable[[List[str]], Trial]) -> Dict[str, Any]:
    """Walk down from the model to the smallest piece that reproduces: a called sublayer, or a
    group of its sublayers that reproduces together when no one of them does alone.

    ``below`` are the tried pieces inside the answer that did not reproduce and together hold all
    of its sublayers (what the own-op elimination subtracts); empty when they do not cover it."""
    node, trials, depth = "", [], 0
    tested: Dict[Tuple[str, ...], Trial] = {}

    def test(paths: List[str]) -> Trial:
        key = tuple(paths)
        if key not in tested:
            tested[key] = reproduces(paths)
            trials.append(tested[key])
        return tested[key]

    while True:
        kids = [c for c in calls[node].children if not calls[c].unreplayable]
        unreplayable = [c for c in calls[node].children if calls[c].unreplayable]
        if not kids:
            why = ("it calls no sublayer" if not unreplayable else
                   f"its sublayers cannot be replayed alone ({unreplayable[0]}: {calls[unreplayable[0]].unreplayable})")
            return {"node": node, "members": [node], "depth": depth + 1, "why": why, "trials": trials, "below": []}
        # ``known``: the group was seen to reproduce (the node's own sublayers: the node did).
        group, below, known, unknown = kids, [], True, []
        while len(group) > 1:
            first, second = split(group, calls)
            a = test(first)
            if a.reproduces:
                group, known = first, True
                continue
            b = test(second)
            if b.reproduces:
                group, known = second, True
                continue
            # A half that could not be exported alone says nothing: look inside it.
            blind = next((h for h, t in ((second, b), (first, a)) if t.untestable and len(h) > 1), None)
            if blind is not None:
                unknown.append(", ".join(blind))
                group, known = blind, False
                continue
            below = [a, b]
            break
        untested = [t for t in below if t.untestable]
        if len(group) > 1 or (not known and test(group).untestable):
            if not known or untested:
                cannot = untested[0] if untested else test(group)
                why = (f"{', '.join(cannot.members)} could not be exported alone ({cannot.note}); the failure "
                       f"may be inside it, so this layer is the smallest piece shown to reproduce")
                return {"node": node, "members": [node], "depth": depth + 1, "why": why, "trials": trials, "below": []}
            whole = group == kids
            why = ((f"neither half of its {len(kids)} sublayers reproduces alone: the failure needs this "
                    f"layer's own ops or ops across its sublayers (a fusion)") if whole else
                   f"{', '.join(group)} reproduce together, neither half alone: the failure crosses them (a fusion)")
            return {"node": node, "members": [node] if whole else group, "depth": depth + 1, "why": why,
                    "trials": trials, "below": below if not unreplayable or not whole else []}
        alone = test(group)
        if not alone.reproduces:
            if alone.untestable or not known:
                why = (f"its sublayer {group[0]} could not be exported alone ({alone.note}); the failure may be "
                       f"inside it, so this layer is the smallest piece shown to reproduce") if alone.untestable else (
                       f"none of its sublayers reproduces alone (the halves that could not be exported were "
                       f"looked into: {'; '.join(unknown)})")
                return {"node": node, "members": [node], "depth": depth + 1, "trials": trials, "below": [], "why": why}
            return {"node": node, "members": [node], "depth": depth + 1, "trials": trials,
                    "below": [alone] if not unreplayable else [],
                    "why": f"its sublayer {group[0]} does not reproduce alone: the failure needs this layer's own ops"}
        node, depth = group[0], depth + 1


def own_op_types(node_types: Dict[str, int], below: Sequence[Trial]) -> List[str]:
    """Op types of the node's program not in any program of its sublayers tried below it."""
    inside: Set[str] = set()
    for trial in below:
        inside.update(trial.op_types)
    return sorted(t for t in node_types if t not in inside and _bare(t) not in BOOKKEEPING and t not in BOOKKEEPING)


def _bare(op_type: str) -> str:
    return op_type.split(".", 1)[-1]


# -- the cell's entry --------------------------------------------------------------------------------

class PieceTrials:
    """What the descent asks of a piece: export the members alone, run it on the failing stage and
    its reference, and say whether the stage's failure reproduces (a ``Trial``); counts its exports."""

    def __init__(self, ctx: CellContext, plan: StagePlan, plans: Dict[str, StagePlan], stage: Dict[str, Any],
                 calls: Dict[str, Call]):
        self.ctx, self.plan, self.calls = ctx, plan, calls
        self.failed = Status.of(stage["status"])
        self.paddle = ctx.paddle
        self.engine = runtime(plan.runtime)
        self.cause = self.engine.cause_words(str(stage.get("message", "")))  # the runtime's own words of the cause
        self.reference_plan = plans.get(Stage.BASELINE.value) if plan.reference == Reference.BASELINE else None
        # The run that names the piece's op types: the baseline config (the stage's own when it is the baseline).
        self.typing_plan = self.reference_plan or plans.get(Stage.BASELINE.value) or plan
        self.tolerance = ctx.tolerance(plan)
        self.folder = ctx.work / "reduction"
        self.tried = 0
        self.exports = 0

    def __call__(self, paths: List[str]) -> Trial:
        self.tried += 1
        trial = Trial(members=list(paths), reproduces=False)
        built = self._build([self.calls[p] for p in paths], self.folder / f"piece{self.tried}", trial)
        if built is None:
            return trial
        files, feeds, traced = built
        trial.files, trial.feeds = files, feeds
        return self._judge(trial, files, feeds, traced, self.folder / f"piece{self.tried}")

    def _export(self, piece: Any, arrays: List[np.ndarray], where: Path):
        paddle = self.paddle
        with paddle.no_grad():
            traced = [t.numpy() for t in unique_tensors(paddle, piece(*[paddle.to_tensor(a) for a in arrays]))]
        self.exports += 1
        return self.ctx.saved.export(piece, specs(paddle, arrays), where / "model"), arrays, traced

    def _build(self, members: List[Call], where: Path, trial: Trial):
        """The piece's program, feeds and dygraph outputs; None (the trial says why) when it cannot
        be exported alone."""
        # Small integer inputs (shapes, level offsets) are written in as the values the piece was
        # called with, in every piece alike: fed or folded, they would make different programs.
        captured = [a for m in members for a in m.arrays]
        constants = {k for k, a in enumerate(captured) if a.dtype.kind in "iub" and a.size <= SMALL_INT_INPUT}
        source, arrays = piece_source(members, constants=constants)
        try:
            piece = load_piece(source, where, members)
            try:
                files, arrays, traced = self._export(piece, arrays, where)
            except Exception as exc:
                if "not involved in the target_vars" not in str(exc):
                    raise
                # A floating input no output needs (autograd says which): made inside the piece.
                fed_at = [k for k in range(len(captured)) if k not in constants]  # fed index -> captured index
                unused = {fed_at[i] for i in unused_inputs(self.paddle, piece, arrays)}
                if not unused:
                    raise
                source, arrays = piece_source(members, unused, constants)
                files, arrays, traced = self._export(load_piece(source, where / "fed", members), arrays, where / "fed")
                trial.note = f"{len(unused)} unused input(s) made as zeros inside the piece (Paddle refuses unused feeds); "
        except Exception as exc:
            trial.note = f"could not be exported alone: {paddle_message(exc)[:300]}"
            trial.untestable = True
            return None
        return files, {f"in{k}": a for k, a in enumerate(arrays)}, traced

    def _judge(self, trial: Trial, files: Dict[str, str], feeds: Dict[str, np.ndarray], traced: List[np.ndarray],
               where: Path) -> Trial:
        # The reference: the baseline config on the piece, or (baseline's own failure) dygraph.
        # The baseline config's run also names the piece's op types; when the failing stage is the
        # baseline itself, that one run is the stage's run too.
        plan, typing_plan = self.plan, self.typing_plan
        expected: Optional[List[np.ndarray]] = traced
        got: Optional[List[np.ndarray]] = None
        try:
            ref = runtime(typing_plan.runtime).session(files, typing_plan.config, feeds, where / "reference")
            _, ref_out, evidence = ref.run_with_evidence(feeds)
            trial.op_types = dict(evidence.get("op_types") or {})
            if self.reference_plan is not None:
                expected = ref_out
            if typing_plan.name == plan.name:
                got = ref_out
        except Exception as exc:
            if self.reference_plan is not None and self.failed is Status.FAIL:
                # No reference, no comparison: the piece says nothing either way.
                trial.note += f"the reference config raised on it: {paddle_message(exc)[:300]}"
                trial.untestable = True
                return trial
            if typing_plan.name == plan.name:  # the stage itself raised on the piece
                return _raised(trial, exc, self.failed, self.cause, self.engine)
        trial.expected = expected
        try:
            if got is None:
                _, got = self.engine.session(files, plan.config, feeds, where / "stage").run(feeds)
        except Exception as exc:
            return _raised(trial, exc, self.failed, self.cause, self.engine)
        return self._compared(trial, expected, got)

    def _compared(self, trial: Trial, expected: List[np.ndarray], got: List[np.ndarray]) -> Trial:
        if self.failed is Status.ERROR:
            trial.note += "runs without raising"
            return trial
        if len(got) != len(expected):  # outputs that cannot be paired say nothing either way
            trial.note += f"could not be compared alone: the program returns {len(got)} outputs, dygraph {len(expected)}"
            trial.untestable = True
            return trial
        stats = [compare_tol(e, g, self.tolerance) for e, g in zip(expected, got)]
        trial.reproduces = any(Status.of(s["status"]) is Status.FAIL for s in stats)
        trial.margin = max((s.get("max_abs") or 0.0) for s in stats) if stats else None
        trial.note += "out of tolerance" if trial.reproduces else "within tolerance"
        return trial


def reduce_failure(ctx: CellContext, plan: StagePlan, plans: Dict[str, StagePlan], done: Dict[str, Dict[str, Any]],
                   model: Any, call_args: List[Any]) -> Dict[str, Any]:
    """Localize the failure of stage ``plan`` to the smallest piece of ``model``. When a piece
    smaller than the model reproduces, ``piece`` names its program, inputs and (numeric failures)
    the outputs it is held to: what the reproducer replays."""
    started = time.perf_counter()
    stage = done[plan.name]
    calls = capture(ctx.paddle, model, call_args)
    trials = PieceTrials(ctx, plan, plans, stage, calls)
    found = descend(calls, trials)
    members = found["members"]
    answer = next((t for t in found["trials"] if t.members == members and t.reproduces), None)
    result = _located(found, calls, answer, plan, stage, trials.exports)
    baseline_types = (done.get(Stage.BASELINE.value, {}).get("evidence") or {}).get("op_types") or {}
    result["op_types"] = dict(answer.op_types if answer is not None else baseline_types)
    result.update(_op_or_fusion(result["op_types"], found, answer, plan, done))
    if answer is not None:
        result["piece"] = _replayable(answer, trials.failed)
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def _located(found: Dict[str, Any], calls: Dict[str, Call], answer: Optional[Trial], plan: StagePlan,
             stage: Dict[str, Any], exports: int) -> Dict[str, Any]:
    node, members = found["node"], found["members"]
    leaves = calls[""].leaves
    return {
        "status": Status.PASS, "stage": plan.name, "shape": stage.get("failing_shape", 0),
        "outcome": "localized" if answer is not None else "whole model",
        "path": node, "members": members if members != [node] else [],
        "layer": type(calls[node].layer).__name__, "depth": found["depth"], "why_here": found["why"],
        "sub_exports": exports, "leaves": leaves, "budget": budget(leaves, found["depth"]),
        "trials": [{"members": t.members, "reproduces": t.reproduces, "untestable": t.untestable, "note": t.note,
                    **({"max_abs": t.margin} if t.margin is not None else {})} for t in found["trials"]],
    }


def _op_or_fusion(op_types: Dict[str, int], found: Dict[str, Any], answer: Optional[Trial], plan: StagePlan,
                  done: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The answer's own op (by elimination over its sublayers' programs), or the fusion the culprit
    search named when its sublayers do not reproduce alone."""
    search = done.get(Analysis.BISECT.journal_key) or {}
    fusions = [c for c in (search.get("culprits") or []) if "fuse" in c and search.get("stage") == plan.name]
    if fusions and answer is not None and found["below"]:
        # Its sublayers do not reproduce alone and a fusion pass is the culprit: the failure is
        # the fusion across them, not an op of this layer's own.
        return {"why_here": (f"its sublayers do not reproduce alone and the culprit search names "
                             f"{', '.join(fusions)}: the fusion across its sublayers"), "fusion": fusions}
    if not found["below"]:
        return {}
    own = own_op_types(op_types, found["below"])
    if len(own) != 1:
        return {"own_op_types": own}
    return {"own_op_types": own, "op": own[0],
            "op_by": ("elimination: the one op type of this piece's program that the programs of its "
                      "sublayers, which do not reproduce, do not have")}


def _replayable(answer: Trial, failed: Status) -> Dict[str, Any]:
    """What the reproducer replays: the piece's program, its inputs and the outputs it is held to."""
    home = Path(answer.files["program"]).parent
    np.savez(home / "inputs.npz", **answer.feeds)
    if failed is Status.FAIL:
        OUTPUTS.save(home / "expected.npz", answer.expected)
    return {"files": answer.files, "inputs": str(home / "inputs.npz"),
            "expected": str(home / "expected.npz") if failed is Status.FAIL else None,
            "outputs": len(answer.expected or [])}


def _raised(trial: Trial, exc: BaseException, failed: Status, cause: str, engine: Any) -> Trial:
    """The stage's config raised on the piece: the same cause reproduces an error; what the harness
    made itself (its own code raised) says nothing either way."""
    status, message = raised_status(exc)
    if status is Status.UNTESTABLE:
        trial.untestable = True
        trial.note += f"could not be run alone: {message[:300]}"
        return trial
    trial.reproduces = failed is Status.ERROR and bool(cause) and engine.cause_words(message) == cause
    trial.note += "raises the same cause" if trial.reproduces else f"raises otherwise: {message[:300]}"
    return trial


def model_and_args(ctx: CellContext, setup: Dict[str, Any], shape: int) -> Tuple[Any, List[Any]]:
    """The cell's model rebuilt from its source with the weights it was exported with, and the
    dygraph arguments at ``shape``."""
    from ..models import sources

    paddle = ctx.paddle
    layer, input_spec = sources.build(ctx.cell.model["factory"], paddle, ctx.cell.seed, f"{ctx.where}.factory")
    layer = ctx.mode.prepare(paddle, layer)
    with np.load(setup["weights"]["path"]) as data:
        layer.set_state_dict({k: paddle.to_tensor(data[k]) for k in data.files if k != "__meta__"})
    layer.eval()
    return layer, build_call_args(paddle, input_spec, ctx.feeds(shape))


__all__ = ["capture", "descend", "reduce_failure", "model_and_args", "budget", "split"]
