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
import importlib.util
import math
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..shared.backends import StagePlan
from ..shared.causes import paddle_message, raised_status
from ..shared.compare import compare_tol
from ..shared.spec import OUTPUTS
from ..shared.vocab import Analysis, Reference, Stage, Status
from .context import CellContext
from .runtime import runtime
from .structure import build_call_args, flatten_tensors

# Ops every program has (feeding, fetching, parameters): never "the op".
BOOKKEEPING = {"feed", "fetch", "data", "parameter", "shadow_output", "fetch_v2", "pd_op.feed", "pd_op.fetch",
               "pd_op.data", "builtin.parameter", "builtin.shadow_output", "pd_op.full", "full",
               "pd_op.full_int_array", "full_int_array",
               "onednn_to_paddle_layout", "pd_op.onednn_to_paddle_layout", "transfer_layout"}
# What a captured argument may be besides a tensor: literals the generated forward can spell.
LITERALS = (type(None), bool, int, float, str)


class Slot:
    """A tensor argument's place: ``in<index>`` of the piece's forward."""

    def __init__(self, index: int):
        self.index = index


@dataclasses.dataclass
class Call:
    """One sublayer's first call in the dygraph forward."""

    path: str
    layer: Any
    order: int
    args: Any = None                      # positional args, tensors replaced by Slot
    kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)  # keyword args (Paddle >= 3)
    arrays: List[np.ndarray] = dataclasses.field(default_factory=list)
    unreplayable: str = ""                # why the generated forward cannot repeat this call
    children: List[str] = dataclasses.field(default_factory=list)
    leaves: int = 1


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


def _literal(value: Any) -> bool:
    if isinstance(value, LITERALS):
        return True
    return isinstance(value, (list, tuple)) and all(_literal(v) for v in value)


def _slots(paddle: Any, value: Any, arrays: List[np.ndarray]) -> Any:
    """``value`` with every tensor replaced by a Slot (its array kept); raises TypeError on
    anything the generated forward could not spell."""
    if isinstance(value, paddle.Tensor):
        arrays.append(value.numpy())
        return Slot(len(arrays) - 1)
    if isinstance(value, (list, tuple)):
        return type(value)(_slots(paddle, v, arrays) for v in value)
    if isinstance(value, dict):
        return {k: _slots(paddle, v, arrays) for k, v in value.items()}
    if _literal(value):
        return value
    raise TypeError(f"an argument of type {type(value).__name__}")


def capture(paddle: Any, model: Any, call_args: List[Any]) -> Dict[str, Call]:
    """Every sublayer's first call (path → Call), and the tree of called sublayers under the
    model (path ``""``): a sublayer's parent is its nearest called ancestor."""
    calls: Dict[str, Call] = {"": Call("", model, -1)}
    hooks = []

    def hook_for(path: str):
        def pre(layer: Any, inputs: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]] = None) -> None:
            if path in calls:
                return
            call = Call(path, layer, len(calls))
            try:
                call.args = _slots(paddle, tuple(inputs), call.arrays)
                call.kwargs = _slots(paddle, dict(kwargs or {}), call.arrays)
            except TypeError as exc:
                call.unreplayable = f"called with {exc}"
            calls[path] = call
        return pre

    for path, sub in model.named_sublayers():
        try:  # keyword arguments reach a pre-hook only with with_kwargs (Paddle 3.x)
            hooks.append(sub.register_forward_pre_hook(hook_for(path), with_kwargs=True))
        except TypeError:
            hooks.append(sub.register_forward_pre_hook(hook_for(path)))
    try:
        with paddle.no_grad():
            model(*call_args)
    finally:
        for handle in hooks:
            handle.remove()
    for path in sorted(calls, key=lambda p: (p.count("."), calls[p].order)):
        if not path:
            continue
        parent = _parent(path, calls)
        calls[parent].children.append(path)
    for call in calls.values():
        call.children.sort(key=lambda p: calls[p].order)
    for path in sorted(calls, key=lambda p: -p.count(".") if p else 1):
        call = calls[path]
        call.leaves = max(1, sum(calls[c].leaves for c in call.children))
    return calls


def _parent(path: str, calls: Dict[str, Call]) -> str:
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in calls:
            return prefix
    return ""


# -- a piece: members exported as one program ------------------------------------------------------

def _spell(value: Any, offset: int, names: Dict[int, str]) -> str:
    if isinstance(value, Slot):
        return names[value.index + offset]
    if isinstance(value, tuple):
        inner = ", ".join(_spell(v, offset, names) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(_spell(v, offset, names) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_spell(v, offset, names)}" for k, v in value.items()) + "}"
    return repr(value)


# An integer input this small (shapes, level offsets) can be written into a piece as its value.
SMALL_INT_INPUT = 64


def piece_source(members: Sequence[Call], unused: "Set[int] | frozenset" = frozenset(),
                 constants: "Set[int] | frozenset" = frozenset()) -> Tuple[str, List[np.ndarray]]:
    """The generated module of a piece (a real file: ``to_static`` reads the forward's source in
    every version) and the inputs it is fed, in forward order. Captured inputs in ``unused`` (no
    output depends on them; Paddle refuses a feed no output needs) are made inside the forward as
    zeros of their shape and dtype, those in ``constants`` (small integer tensors) as their captured
    value, instead of being fed."""
    captured: List[np.ndarray] = [a for call in members for a in call.arrays]
    names: Dict[int, str] = {}
    fed: List[np.ndarray] = []
    for k, array in enumerate(captured):
        if k in unused:
            names[k] = f"paddle.zeros({list(array.shape)}, dtype={str(array.dtype)!r})"
        elif k in constants:
            names[k] = f"paddle.to_tensor({array.tolist()!r}, dtype={str(array.dtype)!r})"
        else:
            names[k] = f"in{len(fed)}"
            fed.append(array)
    lines, offset = [], 0
    for i, call in enumerate(members):
        args = ", ".join([_spell(a, offset, names) for a in call.args] +
                         [f"{k}={_spell(v, offset, names)}" for k, v in call.kwargs.items()])
        lines.append(f"        outputs.append(self.members[{i}]({args}))")
        offset += len(call.arrays)
    params = ", ".join(f"in{k}" for k in range(len(fed)))
    source = (
        '"""A piece of the model, written by the harness\'s reduction: its members called on the\n'
        'inputs they had in the dygraph forward."""\n'
        "import paddle\n\n\n"
        "class Piece(paddle.nn.Layer):\n"
        "    def __init__(self, members):\n"
        "        super().__init__()\n"
        "        self.members = paddle.nn.LayerList(members)\n\n"
        f"    def forward(self{', ' if params else ''}{params}):\n"
        "        outputs = []\n" + "\n".join(lines) + "\n        return outputs\n")
    return source, fed


def unused_inputs(paddle: Any, piece: Any, arrays: List[np.ndarray]) -> Set[int]:
    """Floating inputs no floating output depends on (autograd says None), by index."""
    tensors = [paddle.to_tensor(a) for a in arrays]
    floating = [k for k, t in enumerate(tensors) if t.dtype in (paddle.float16, paddle.float32, paddle.float64)]
    for k in floating:
        tensors[k].stop_gradient = False
    outputs = [t for _, t in flatten_tensors(paddle, piece(*tensors))
               if t.dtype in (paddle.float16, paddle.float32, paddle.float64) and not t.stop_gradient]
    if not outputs or not floating:
        return set()
    total = paddle.add_n([o.astype("float32").sum() for o in outputs])
    grads = paddle.grad([total], [tensors[k] for k in floating], allow_unused=True)
    return {k for k, g in zip(floating, grads) if g is None}


def unique_tensors(paddle: Any, value: Any) -> List[Any]:
    """The tensors of ``value`` in Paddle's flattening order, each once: a program returns a
    tensor returned twice (e.g. a backbone's last stage also in its list of stages) once."""
    seen, found = set(), []
    for _, tensor in flatten_tensors(paddle, value):
        if id(tensor) not in seen:
            seen.add(id(tensor))
            found.append(tensor)
    return found


def _load_piece(source: str, folder: Path, members: Sequence[Call]) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    module_path = folder / "piece.py"
    module_path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"harness_piece_{folder.name}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    piece = module.Piece([m.layer for m in members])
    piece.eval()
    return piece


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

def reduce_failure(ctx: CellContext, plan: StagePlan, plans: Dict[str, StagePlan], done: Dict[str, Dict[str, Any]],
                   model: Any, call_args: List[Any]) -> Dict[str, Any]:
    """Localize the failure of stage ``plan`` to the smallest piece of ``model``. When a piece
    smaller than the model reproduces, ``piece`` names its program, inputs and (numeric failures)
    the outputs it is held to: what the reproducer replays."""
    started = time.perf_counter()
    paddle = ctx.paddle
    stage = done[plan.name]
    failed = Status.of(stage["status"])
    engine = runtime(plan.runtime)
    cause = engine.cause_words(str(stage.get("message", "")))  # the runtime's own words of the cause
    reference_plan = plans.get(Stage.BASELINE.value) if plan.reference == Reference.BASELINE else None
    tolerance = ctx.tolerance(plan)
    calls = capture(paddle, model, call_args)
    folder = ctx.work / "reduction"
    counter = [0]
    exports = [0]

    def export_piece(piece: Any, arrays: List[np.ndarray], where: Path):
        with paddle.no_grad():
            traced = [t.numpy() for t in unique_tensors(paddle, piece(*[paddle.to_tensor(a) for a in arrays]))]
        exports[0] += 1
        return ctx.saved.export(piece, _specs(paddle, arrays), where / "model"), arrays, traced

    def reproduces(paths: List[str]) -> Trial:
        counter[0] += 1
        members = [calls[p] for p in paths]
        where = folder / f"piece{counter[0]}"
        trial = Trial(members=list(paths), reproduces=False)
        # Small integer inputs (shapes, level offsets) are written in as the values the piece was
        # called with, in every piece alike: fed or folded, they would make different programs.
        captured = [a for m in members for a in m.arrays]
        constants = {k for k, a in enumerate(captured) if a.dtype.kind in "iub" and a.size <= SMALL_INT_INPUT}
        source, arrays = piece_source(members, constants=constants)
        try:
            piece = _load_piece(source, where, members)
            try:
                files, arrays, traced = export_piece(piece, arrays, where)
            except Exception as exc:
                if "not involved in the target_vars" not in str(exc):
                    raise
                # A floating input no output needs (autograd says which): made inside the piece.
                fed_at = [k for k in range(len(captured)) if k not in constants]  # fed index -> captured index
                unused = {fed_at[i] for i in unused_inputs(paddle, piece, arrays)}
                if not unused:
                    raise
                source, arrays = piece_source(members, unused, constants)
                files, arrays, traced = export_piece(_load_piece(source, where / "fed", members), arrays, where / "fed")
                trial.note = f"{len(unused)} unused input(s) made as zeros inside the piece (Paddle refuses unused feeds); "
        except Exception as exc:
            trial.note = f"could not be exported alone: {paddle_message(exc)[:300]}"
            trial.untestable = True
            return trial
        feeds = {f"in{k}": a for k, a in enumerate(arrays)}
        trial.files, trial.feeds = files, feeds
        # The reference: the baseline config on the piece, or (baseline's own failure) dygraph.
        # The baseline config's run also names the piece's op types; when the failing stage is the
        # baseline itself, that one run is the stage's run too.
        expected: Optional[List[np.ndarray]] = traced
        ref_plan = reference_plan or plans.get(Stage.BASELINE.value) or plan
        got: Optional[List[np.ndarray]] = None
        try:
            ref = runtime(ref_plan.runtime).session(files, ref_plan.config, feeds, where / "reference")
            _, ref_out, evidence = ref.run_with_evidence(feeds)
            trial.op_types = dict(evidence.get("op_types") or {})
            if reference_plan is not None:
                expected = ref_out
            if ref_plan.name == plan.name:
                got = ref_out
        except Exception as exc:
            if reference_plan is not None and failed is Status.FAIL:
                # No reference, no comparison: the piece says nothing either way.
                trial.note += f"the reference config raised on it: {paddle_message(exc)[:300]}"
                trial.untestable = True
                return trial
            if ref_plan.name == plan.name:  # the stage itself raised on the piece
                return _raised(trial, exc, failed, cause, engine)
        trial.expected = expected
        try:
            if got is None:
                _, got = engine.session(files, plan.config, feeds, where / "stage").run(feeds)
        except Exception as exc:
            return _raised(trial, exc, failed, cause, engine)
        if failed is Status.ERROR:
            trial.note += "runs without raising"
            return trial
        if len(got) != len(expected):  # outputs that cannot be paired say nothing either way
            trial.note += f"could not be compared alone: the program returns {len(got)} outputs, dygraph {len(expected)}"
            trial.untestable = True
            return trial
        stats = [compare_tol(e, g, tolerance) for e, g in zip(expected, got)]
        trial.reproduces = any(Status.of(s["status"]) is Status.FAIL for s in stats)
        trial.margin = max((s.get("max_abs") or 0.0) for s in stats) if stats else None
        trial.note += "out of tolerance" if trial.reproduces else "within tolerance"
        return trial

    found = descend(calls, reproduces)
    node, members = found["node"], found["members"]
    trials: List[Trial] = found["trials"]
    answer = next((t for t in trials if t.members == members and t.reproduces), None)
    leaves = calls[""].leaves
    result: Dict[str, Any] = {
        "status": Status.PASS, "stage": plan.name, "shape": stage.get("failing_shape", 0),
        "outcome": "localized" if answer is not None else "whole model",
        "path": node, "members": members if members != [node] else [],
        "layer": type(calls[node].layer).__name__, "depth": found["depth"], "why_here": found["why"],
        "sub_exports": exports[0], "leaves": leaves, "budget": budget(leaves, found["depth"]),
        "trials": [{"members": t.members, "reproduces": t.reproduces, "untestable": t.untestable, "note": t.note,
                    **({"max_abs": t.margin} if t.margin is not None else {})} for t in trials],
    }
    baseline_types = (done.get(Stage.BASELINE.value, {}).get("evidence") or {}).get("op_types") or {}
    result["op_types"] = dict(answer.op_types if answer is not None else baseline_types)
    fusions = [c for c in ((done.get(Analysis.BISECT.journal_key) or {}).get("culprits") or [])
               if "fuse" in c and (done.get(Analysis.BISECT.journal_key) or {}).get("stage") == plan.name]
    if fusions and answer is not None and found["below"]:
        # Its sublayers do not reproduce alone and a fusion pass is the culprit: the failure is
        # the fusion across them, not an op of this layer's own.
        result["why_here"] = (f"its sublayers do not reproduce alone and the culprit search names "
                              f"{', '.join(fusions)}: the fusion across its sublayers")
        result["fusion"] = fusions
    elif found["below"]:
        own = own_op_types(result["op_types"], found["below"])
        result["own_op_types"] = own
        if len(own) == 1:
            result["op"] = own[0]
            result["op_by"] = ("elimination: the one op type of this piece's program that the programs of its "
                               "sublayers, which do not reproduce, do not have")
    if answer is not None:
        # What the reproducer replays: the piece's program, its inputs and the outputs it is held to.
        home = Path(answer.files["program"]).parent
        np.savez(home / "inputs.npz", **answer.feeds)
        if failed is Status.FAIL:
            OUTPUTS.save(home / "expected.npz", answer.expected)
        result["piece"] = {"files": answer.files, "inputs": str(home / "inputs.npz"),
                           "expected": str(home / "expected.npz") if failed is Status.FAIL else None,
                           "outputs": len(answer.expected or [])}
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


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


def _specs(paddle: Any, arrays: List[np.ndarray]) -> List[Any]:
    return [paddle.static.InputSpec(list(a.shape), str(a.dtype), f"in{k}") for k, a in enumerate(arrays)]


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
