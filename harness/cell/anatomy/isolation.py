"""The op (cell side): from the smallest piece that reproduces a stage's failure, the one op that
reproduces it alone.

Every op a dygraph forward runs goes through ``paddle._C_ops.<op>(...)`` (Paddle 2.6–3.x), so the
piece's forward is run once with each ``_C_ops`` function wrapped, which records the op's name, its
tensor inputs (as arrays) and its other arguments (its attributes, as literals). A candidate is
written as a one-op layer whose forward calls the same ``_C_ops`` function on fed inputs with the
same attributes; under PIR (Paddle >= 3.0) ``to_static`` writes it as a program of that one op
(plus its feeds), exported and judged like any piece. Legacy programs (2.6) cannot be built this way
(``_C_ops`` takes no legacy static Variable); the record says so.

Candidates are tried in the order the failure's own words suggest: the op named in the message,
an attribute kind the message names (``ArrayAttribute<DoubleAttribute>`` → a list of floats), an
input shape the message prints; for a numeric failure, the op type of the per-tensor table's first
divergence; then the forward's order. An input that was a parameter or buffer of the model stays a
parameter of the op's program. When no op reproduces alone, adjacent ops do: pairs where the
second reads the first's output, then chains of three (a fusion needs both of its ops).
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...shared.json_types import JsonObject
from .pieces import Slot
from .op_source import ONE_OP, Written, side_by_side, written
from .public_api import PublicCall, PublicRecorder, tensors_in

# Ops that make tensors from nothing (initializers, constants): never "the op".
CREATION = {"full", "full_", "full_like", "full_int_array", "uniform", "gaussian", "assign_value", "assign_value_",
            "arange", "zeros", "ones", "empty", "eye", "linspace", "randint", "randperm", "truncated_gaussian_random"}

# Tensor operators (``a * b``, ``x > 0``) run their op in C++ without ``_C_ops``: recorded as the
# ``_C_ops`` call that builds the same op (its name, whether the operands are swapped, its extra
# attributes).
OPERATORS: Dict[str, Tuple[str, bool, Tuple[Any, ...]]] = {
    "__add__": ("add", False, ()), "__radd__": ("add", True, ()),
    "__sub__": ("subtract", False, ()), "__rsub__": ("subtract", True, ()),
    "__mul__": ("multiply", False, ()), "__rmul__": ("multiply", True, ()),
    "__truediv__": ("divide", False, ()), "__rtruediv__": ("divide", True, ()),
    "__matmul__": ("matmul", False, (False, False)), "__pow__": ("elementwise_pow", False, ()),
    "__gt__": ("greater_than", False, ()), "__ge__": ("greater_equal", False, ()),
    "__lt__": ("less_than", False, ()), "__le__": ("less_equal", False, ()),
}

# The most one-op programs one reduction builds per op type (every type gets one before any gets a
# second: a cap on the first N ops in order would never reach a piece's later op types).
PER_TYPE = 2

@dataclasses.dataclass
class OpCall:
    """One ``_C_ops`` call in the dygraph forward of a piece."""

    name: str
    order: int
    args: List[Any]                       # positional arguments, tensors as Slot
    arrays: List[np.ndarray]
    returns: List[Tuple[Tuple[int, ...], bool]] = dataclasses.field(default_factory=list)  # (access, is an input)
    unspellable: str = ""
    operator: str = ""  # the Tensor operator the forward used (``__gt__``), when that is how it ran
    # Which tensors these were in the forward (``id``s, kept alive while recording): the inputs,
    # in ``arrays`` order, and the outputs, in ``returns`` order. They chain ops into pairs.
    input_ids: List[int] = dataclasses.field(default_factory=list)
    output_ids: List[int] = dataclasses.field(default_factory=list)
    held: Tuple[int, ...] = ()  # indices of ``arrays`` that were the model's parameters or buffers
    branched_before: Optional[int] = None  # the forward branched on its output before this op index
    public: Optional[PublicCall] = None  # the public function the forward called that ran it
    in_sublayer: bool = False  # ran inside one of the sublayers ``record_ops`` was told of (``within``)
    at: str = ""  # ``file:line`` of the model's code that ran it (outside Paddle and the harness)

    @property
    def op_type(self) -> str:
        return f"pd_op.{self.name}"  # PIR's name (an inplace op keeps its trailing underscore)

    def attributes(self) -> Dict[int, Any]:
        return {i: a for i, a in enumerate(self.args) if not _holds_slot(a)}

    def inputs(self) -> List[str]:
        return [f"{a.dtype}{list(a.shape)}" for a in self.arrays]

    def signature(self) -> Tuple[Any, ...]:
        return (self.name, repr(self.attributes()), tuple(self.inputs()))

    def describe(self) -> str:
        attrs = ", ".join(f"{v!r}" for v in self.attributes().values())
        return f"{self.op_type} with attributes ({attrs}) on inputs {', '.join(self.inputs()) or 'none'}"


def _holds_slot(value: Any) -> bool:
    return isinstance(value, Slot) or (isinstance(value, (list, tuple)) and any(_holds_slot(v) for v in value))


def _recorded(paddle: Any, value: Any, arrays: List[np.ndarray], ids: List[int]) -> Any:
    if isinstance(value, paddle.Tensor):
        arrays.append(value.numpy())
        ids.append(id(value))
        return Slot(len(arrays) - 1)
    if isinstance(value, (list, tuple)):
        return [_recorded(paddle, v, arrays, ids) for v in value]  # paddle.Size too
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "DataType":
        return _DataType(value.name)
    raise TypeError(f"an argument of type {type(value).__name__}")


class _DataType:
    """A ``DataType`` argument, spelled as Paddle's own enum member."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"paddle.base.libpaddle.DataType.{self.name}"


def not_the_model(paddle: Any) -> Tuple[str, ...]:
    """The folders whose files are Paddle's, the harness's or the standard library's: a model's line is
    in none of them. Each a folder with its separator: ``.../site-packages/paddle`` is also the start of
    paddlex's, paddleformers' and paddlespeech's paths, whose lines are the model's."""
    return tuple(os.path.join(folder, "") for folder in (
        os.path.dirname(paddle.__file__), os.path.dirname(os.path.dirname(__file__)), os.path.dirname(os.__file__)))


def caller_line(skip_roots: Tuple[str, ...]) -> str:
    """``file:line`` of the innermost frame outside ``skip_roots`` (Paddle, the harness): the model's
    line that made the current call."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(skip_roots) and not name.startswith("<"):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return ""



class _Recorder:
    """Records each op the forward runs: ``_C_ops`` calls, Tensor operators (which run their op in
    C++, past ``_C_ops``) and a Python ``if`` on a tensor (``Tensor.__bool__``: which op's output
    the forward branched on). Tensors stay alive while recording, so that their ``id`` names them."""

    def __init__(self, paddle: Any, held: Sequence[Any], outputs: Optional[Dict[int, List[np.ndarray]]] = None):
        self.paddle = paddle
        self.outputs = outputs  # op order -> its outputs' values as the op made them (in-place writes come later)
        self.held_ids = {id(t) for t in held}
        self.not_the_model = not_the_model(paddle)
        self.found: List[OpCall] = []
        self.alive: List[Any] = []
        self.branches: List[str] = []  # the model's lines that branched on a tensor (``if t:``), in order
        self.depth = 0  # how many of the ``within`` sublayers' forwards are running

    def _add(self, op: OpCall, ids: List[int], operands: Sequence[Any], result: Any) -> None:
        outputs = tensors_in(self.paddle, result)
        self.alive.extend([t for _, t in outputs] + [v for v in operands if isinstance(v, self.paddle.Tensor)])
        op.returns = [(acc, id(t) in ids) for acc, t in outputs]
        op.input_ids, op.output_ids = ids, [id(t) for _, t in outputs]
        op.held = tuple(sorted(set(op.held) | {k for k, i in enumerate(ids) if i in self.held_ids}))
        op.at = caller_line(self.not_the_model)
        op.in_sublayer = self.depth > 0
        if self.outputs is not None:
            self.outputs[op.order] = [np.array(t.numpy()) for _, t in outputs]
        self.found.append(op)

    def c_op(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            op, ids = OpCall(name, len(self.found), [], []), []
            try:
                op.args = [_recorded(self.paddle, a, op.arrays, ids) for a in args]
                # ``out=None`` (Paddle 3.3's APIs pass it to their op) is the op's default: no argument.
                if any(v is not None for v in kwargs.values()):
                    raise TypeError(f"keyword arguments {sorted(kwargs)}")
            except TypeError as exc:
                op.unspellable = f"called with {exc}"
            self._add(op, ids, args, result)
            return result
        return call

    def operator(self, method: str, original: Callable[..., Any], op_name: str, reflected: bool,
                 extra: Tuple[Any, ...]) -> Callable[..., Any]:
        def call(tensor: Any, *other: Any) -> Any:
            result = original(tensor, *other)
            operands = [tensor, *other][::-1] if reflected else [tensor, *other]
            op, ids = OpCall(op_name, len(self.found), [], [], operator=method), []
            try:
                for value in operands:
                    if isinstance(value, self.paddle.Tensor):
                        op.args.append(_recorded(self.paddle, value, op.arrays, ids))
                    elif isinstance(value, (bool, int, float)):
                        # A Python number beside a tensor: Paddle makes it a constant of the tensor's dtype.
                        op.arrays.append(np.array(value, dtype=tensor.numpy().dtype))
                        ids.append(-len(self.found) - 1)  # no tensor of the forward: never wired to another op
                        op.held = op.held + (len(op.arrays) - 1,)
                        op.args.append(Slot(len(op.arrays) - 1))
                    else:
                        raise TypeError(f"an operand of type {type(value).__name__}")
                op.args.extend(extra)
            except TypeError as exc:
                op.unspellable = f"called with {exc}"
            self._add(op, ids, operands, result)
            return result
        return call

    def branched(self, truth: Callable[[Any], bool]) -> Callable[[Any], bool]:
        def call(tensor: Any) -> bool:
            producer = next((op for op in reversed(self.found) if id(tensor) in op.output_ids), None)
            if producer is not None:
                producer.branched_before = len(self.found)
            at = caller_line(self.not_the_model)
            if at and at not in self.branches:
                self.branches.append(at)
            return truth(tensor)
        return call


def op_functions(paddle: Any) -> Tuple[Dict[str, Callable[..., Any]], Dict[str, Callable[..., Any]]]:
    """Every function a dygraph op runs through: the ``_C_ops`` functions and the Tensor operators
    (``a * b``, which run their op past ``_C_ops``), each by name, as Paddle has them now."""
    from paddle import _C_ops

    c_ops = {n: getattr(_C_ops, n) for n in dir(_C_ops) if not n.startswith("_") and callable(getattr(_C_ops, n))}
    return c_ops, {m: getattr(paddle.Tensor, m) for m in OPERATORS if hasattr(paddle.Tensor, m)}


def record_ops(paddle: Any, forward: Callable[[], Any], held: Sequence[Any] = (),
               branches: Optional[List[str]] = None,
               outputs: Optional[Dict[int, List[np.ndarray]]] = None, within: Sequence[Any] = ()) -> List[OpCall]:
    """The ops of ``forward()`` (run under no_grad, in dygraph: a layer ``to_static`` already
    converted would otherwise run its saved program instead of its ops), in order. ``held``: the
    layer's parameters and buffers; an input that is one of them stays one in the op's program (a
    constant-folding pass folds an op over a parameter, not over a feed). ``branches``: filled with
    the model's lines that branched on a tensor (what ``to_static`` makes a ``pd_op.if`` of).
    ``outputs``: filled with each op's output values (by its order) as it made them. ``within``:
    sublayers whose ops are marked ``in_sublayer`` (what is left is the calling layer's own ops)."""
    from paddle import _C_ops

    recorder = _Recorder(paddle, held, outputs)
    hooks = []
    for sublayer in within:
        hooks.append(sublayer.register_forward_pre_hook(lambda *_: setattr(recorder, "depth", recorder.depth + 1)))
        hooks.append(sublayer.register_forward_post_hook(lambda *_: setattr(recorder, "depth", recorder.depth - 1)))
    originals, operators = op_functions(paddle)
    truth = paddle.Tensor.__bool__
    for name, fn in originals.items():
        setattr(_C_ops, name, recorder.c_op(name, fn))
    for method, fn in operators.items():
        setattr(paddle.Tensor, method, recorder.operator(method, fn, *OPERATORS[method]))
    paddle.Tensor.__bool__ = recorder.branched(truth)
    paddle.jit.enable_to_static(False)
    try:
        with paddle.no_grad(), PublicRecorder(paddle, recorder.found):
            forward()
    finally:
        for hook in hooks:
            hook.remove()
        paddle.jit.enable_to_static(True)
        paddle.Tensor.__bool__ = truth
        for method, fn in operators.items():
            setattr(paddle.Tensor, method, fn)
        for name, fn in originals.items():
            setattr(_C_ops, name, fn)
        recorder.alive.clear()
    if branches is not None:
        branches.extend(recorder.branches)
    return recorder.found


# Ops that draw random numbers (``_C_ops`` names; dropout draws only in training).
RANDOM_OPS = {"gaussian", "uniform", "randint", "randperm", "bernoulli", "multinomial", "poisson", "dropout",
              "exponential", "truncated_gaussian_random", "binomial", "standard_gamma", "uniform_random"}


def random_draws(paddle: Any, model: Any, args: Sequence[Any]) -> List[JsonObject]:
    """The random ops the forward runs, each with the model's line that ran it (distinct)."""
    held = list(model.parameters()) + list(model.buffers())
    calls = record_ops(paddle, lambda: model(*args), held)
    found: List[JsonObject] = []
    for call in calls:
        name = call.name.split(".")[-1].rstrip("_")
        if name == "dropout" and len(call.args) > 3 and call.args[3] is True:
            continue  # is_test: dropout in eval is the identity, no draw
        if name in RANDOM_OPS:
            entry = {"op": call.name, "at": _shareable_line(call.at) if call.at else ""}
            if entry not in found:
                found.append(entry)
    return found


def _shareable_line(at: str) -> str:
    """``file:line`` with the file as a record says it (``causes.shareable_path``)."""
    from ...shared.causes import shareable_path

    path, _, line = at.rpartition(":")
    return f"{shareable_path(path)}:{line}"


def schedule(calls: Sequence[OpCall], message: str,
             first_divergence: Optional[str]) -> Tuple[List[OpCall], Dict[str, int]]:
    """The distinct ops that can be written alone, in the order their one-op programs are built,
    and how many candidates each rule produced: the op the failure's message names (``named``), the
    op type of the per-tensor diff's first divergence (``divergence``), an attribute kind or shape
    the message prints (``hints``), then every other op type of the piece in its forward's order
    (``rest``). Each type's first occurrence comes before any type's second; at most ``PER_TYPE``
    programs per type (``capped``: the distinct calls left out by that)."""
    distinct: Dict[Tuple[Any, ...], OpCall] = {}
    for call in calls:
        if call.unspellable or not call.arrays or call.name.rstrip("_") in CREATION:
            continue
        if not any(not is_input for _, is_input in call.returns):
            continue  # returns nothing of its own
        distinct.setdefault(call.signature(), call)
    score = {id(c): suspicion(c, message, first_divergence) for c in distinct.values()}
    scored = sorted(distinct.values(), key=lambda c: (-score[id(c)], c.order))
    seen: Dict[str, int] = {}
    rounds: List[List[OpCall]] = [[] for _ in range(PER_TYPE)]
    for call in scored:  # suspects first within each round: the sort above keeps them first
        n = seen.get(call.name.rstrip("_"), 0)
        if n < PER_TYPE:
            rounds[n].append(call)
        seen[call.name.rstrip("_")] = n + 1
    ordered = [c for r in rounds for c in r]
    rules = {"named": 0, "divergence": 0, "hints": 0, "rest": 0, "capped": len(scored) - len(ordered)}
    for call in ordered:
        rules[_rule(call, message, first_divergence, score[id(call)])] += 1
    return ordered, rules


def _named(call: OpCall, message: str) -> bool:
    return bool(re.search(rf"\b(pd_op\.)?{re.escape(call.name.rstrip('_'))}\b", message))


def _rule(call: OpCall, message: str, first_divergence: Optional[str], score: int) -> str:
    if _named(call, message):
        return "named"
    if first_divergence and first_divergence.split(".", 1)[-1] == call.name.rstrip("_"):
        return "divergence"
    return "hints" if score else "rest"


_ATTRIBUTE_KINDS = {"DoubleAttribute": float, "FloatAttribute": float, "Int64Attribute": int, "Int32Attribute": int,
                    "BoolAttribute": bool, "StrAttribute": str}
_SHAPE = re.compile(r"\[(-?\d+(?:, ?-?\d+)+)\]")


def suspicion(call: OpCall, message: str, first_divergence: Optional[str]) -> int:
    """How strongly the failure's words point at ``call``."""
    score = 0
    bare = call.name.rstrip("_")
    if first_divergence and first_divergence.split(".", 1)[-1] == bare:
        score += 6
    if _named(call, message):  # the failure's own words first
        score += 8
    else:  # Paddle's InferMeta names an op family: "Op(pool)" for pool2d
        named = re.findall(r"Op\((\w+)\)", message)
        if any(bare.startswith(n) for n in named):
            score += 5
    for word, kind in _ATTRIBUTE_KINDS.items():
        if word not in message:
            continue
        listed = f"ArrayAttribute<pir::{word}>" in message or f"ArrayAttribute<{word}>" in message
        for value in call.attributes().values():
            if listed and isinstance(value, list) and value and all(type(v) is kind for v in value):
                score += 4
            elif not listed and type(value) is kind:
                score += 1
    shapes = [tuple(int(x) for x in m.split(",")) for m in _SHAPE.findall(message)]
    if any(_same_shape(a.shape, s) for a in call.arrays for s in shapes):
        score += 2
    return score


def _same_shape(shape: Tuple[int, ...], printed: Tuple[int, ...]) -> bool:
    """A printed shape matches when every dimension agrees; -1 (dynamic) matches any."""
    return len(shape) == len(printed) and all(p in (-1, d) for d, p in zip(shape, printed))


def branches(calls: Sequence[OpCall]) -> List[Tuple[List[OpCall], int]]:
    """Each ``if`` the forward took on an op's output, as the op and the first op the branch ran
    (``written(group, branched_at=1)``): control flow, which no op alone and no chain makes."""
    found = []
    for call in calls:
        if call.branched_before is None or call.unspellable:
            continue
        body = next((c for c in calls if c.order >= call.branched_before and not c.unspellable and c.arrays
                     and c.name.rstrip("_") not in CREATION), None)
        if body is not None:
            found.append(([call, body], 1))
    return found


# The most ops a run of the forward's ops may span (the last rule): beyond it, the piece itself is
# the smallest program (its sublayers already did not reproduce alone).
MAX_WINDOW_OPS = 48


def in_order(calls: Sequence[OpCall]) -> List[OpCall]:
    """The forward's ops that a program can hold, in the order they ran."""
    return [c for c in calls if not c.unspellable and c.arrays and c.name.rstrip("_") not in CREATION]


# The most op pairs and three-op chains one isolation builds after no single op reproduced.
MAX_PAIRS = 24
MAX_CHAINS = 12


def chains(calls: Sequence[OpCall], message: str, first_divergence: Optional[str]) -> Tuple[List[List[OpCall]], Dict[str, int]]:
    """Adjacent ops, for when no op reproduces alone (a fusion needs two: matmul + add, a norm's
    reduce + scale): pairs where the second reads an output of the first, then chains of three,
    one per sequence of op types, the suspects first; how many each produced and how many the caps
    left out."""
    usable = [c for c in calls if not c.unspellable and c.arrays and c.name.rstrip("_") not in CREATION]
    producer: Dict[int, OpCall] = {}
    # Keyed by order, never compared as OpCalls (their fields hold arrays): a reader once per producer.
    reads: Dict[int, Dict[int, OpCall]] = {}
    for call in usable:
        for tensor in call.input_ids:
            if tensor in producer:
                reads.setdefault(producer[tensor].order, {})[call.order] = call
        for (_, is_input), tensor in zip(call.returns, call.output_ids):
            if not is_input:
                producer[tensor] = call
    pairs: Dict[Tuple[str, ...], List[OpCall]] = {}
    triples: Dict[Tuple[str, ...], List[OpCall]] = {}
    for first in usable:
        for second in reads.get(first.order, {}).values():
            pairs.setdefault((first.name, second.name), [first, second])
            for third in reads.get(second.order, {}).values():
                triples.setdefault((first.name, second.name, third.name), [first, second, third])

    def rank(found: Dict[Tuple[str, ...], List[OpCall]]) -> List[List[OpCall]]:
        return sorted(found.values(), key=lambda group: (-sum(suspicion(c, message, first_divergence) for c in group),
                                                          group[0].order))
    ranked_pairs, ranked_triples = rank(pairs), rank(triples)
    rules = {"pairs": min(len(ranked_pairs), MAX_PAIRS), "chains": min(len(ranked_triples), MAX_CHAINS),
             "capped_pairs": max(0, len(ranked_pairs) - MAX_PAIRS),
             "capped_chains": max(0, len(ranked_triples) - MAX_CHAINS)}
    return ranked_pairs[:MAX_PAIRS] + ranked_triples[:MAX_CHAINS], rules


__all__ = ["OpCall", "Written", "written", "side_by_side", "chains", "branches", "in_order", "MAX_WINDOW_OPS", "record_ops", "schedule", "suspicion",
           "PER_TYPE", "ONE_OP"]
