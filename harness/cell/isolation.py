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
divergence; then the forward's order.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .pieces import Slot

# Ops that make tensors from nothing (initializers, constants): never "the op".
CREATION = {"full", "full_", "full_like", "full_int_array", "uniform", "gaussian", "assign_value", "assign_value_",
            "arange", "zeros", "ones", "empty", "eye", "linspace", "randint", "randperm", "truncated_gaussian_random"}

# ``_C_ops`` functions that exist for dygraph alone (they take no PIR value, so ``to_static`` cannot
# write them): the public call that builds the same computation in a program.
DYGRAPH_ONLY = {"linear": "paddle.nn.functional.linear"}

# The most one-op programs one reduction builds per op type (every type gets one before any gets a
# second: a cap on the first N ops in order would never reach a piece's later op types).
PER_TYPE = 2
# The one-op layer's class name in its generated module.
ONE_OP = "OneOp"


@dataclasses.dataclass
class OpCall:
    """One ``_C_ops`` call in the dygraph forward of a piece."""

    name: str
    order: int
    args: List[Any]                       # positional arguments, tensors as Slot
    arrays: List[np.ndarray]
    returns: List[Tuple[Tuple[int, ...], bool]] = dataclasses.field(default_factory=list)  # (access, is an input)
    unspellable: str = ""

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


def record_ops(paddle: Any, forward: Callable[[], Any]) -> List[OpCall]:
    """The ``_C_ops`` calls of ``forward()`` (run under no_grad, in dygraph: a layer ``to_static``
    already converted would otherwise run its saved program instead of its ops), in order."""
    from paddle import _C_ops

    found: List[OpCall] = []
    originals = {n: getattr(_C_ops, n) for n in dir(_C_ops) if not n.startswith("_") and callable(getattr(_C_ops, n))}
    alive: List[Any] = []

    def wrapped(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            op = OpCall(name, len(found), [], [])
            ids: List[int] = []
            try:
                op.args = [_recorded(paddle, a, op.arrays, ids) for a in args]
                # ``out=None`` (Paddle 3.3's APIs pass it to their op) is the op's default: no argument.
                if any(v is not None for v in kwargs.values()):
                    raise TypeError(f"keyword arguments {sorted(kwargs)}")
            except TypeError as exc:
                op.unspellable = f"called with {exc}"
            outputs = [(acc, t) for acc, t in _tensors(paddle, result)]
            alive.extend([t for _, t in outputs] + [a for a in args if isinstance(a, paddle.Tensor)])
            op.returns = [(acc, id(t) in ids) for acc, t in outputs]
            found.append(op)
            return result
        return call

    for name, fn in originals.items():
        setattr(_C_ops, name, wrapped(name, fn))
    paddle.jit.enable_to_static(False)
    try:
        with paddle.no_grad():
            forward()
    finally:
        paddle.jit.enable_to_static(True)
        for name, fn in originals.items():
            setattr(_C_ops, name, fn)
        alive.clear()
    return found


def _tensors(paddle: Any, value: Any, access: Tuple[int, ...] = ()) -> List[Tuple[Tuple[int, ...], Any]]:
    if isinstance(value, paddle.Tensor):
        return [(access, value)]
    if isinstance(value, (list, tuple)):
        return [x for i, v in enumerate(value) for x in _tensors(paddle, v, access + (i,))]
    return []


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


def one_op_source(call: OpCall) -> str:
    """A module whose layer runs ``call`` alone on fed inputs ``in0, in1, ...`` (its tensor inputs,
    in order), returning its first output that is not one of its inputs: the op's main output.
    The others can be auxiliary buffers no kernel fills in inference (batch_norm's saved mean and
    variance, its reserve space), whose values would differ for no fault of the op."""
    names = {k: f"in{k}" for k in range(len(call.arrays))}

    def spell(value: Any) -> str:
        if isinstance(value, Slot):
            return names[value.index]
        if isinstance(value, list):
            return "[" + ", ".join(spell(v) for v in value) + "]"
        return repr(value)

    returned = [("result" + "".join(f"[{i}]" for i in access)) for access, is_input in call.returns if not is_input][:1]
    params = ", ".join(names.values())
    return (
        f'"""One op alone, written by the harness: {call.op_type} as the model\'s forward called it."""\n'
        "import paddle\n\n\n"
        f"class {ONE_OP}(paddle.nn.Layer):\n"
        f"    def forward(self{', ' if params else ''}{params}):\n"
        f"        result = {DYGRAPH_ONLY.get(call.name, 'paddle._C_ops.' + call.name)}"
        f"({', '.join(spell(a) for a in call.args)})\n"
        f"        return [{', '.join(returned)}]\n")


__all__ = ["OpCall", "record_ops", "schedule", "suspicion", "one_op_source", "PER_TYPE", "ONE_OP"]
