"""The op programs a reduction writes (cell side): one op the model ran, or a short chain of them, as a
layer of its own — the public call the model made where it made one (``public_api``), ``paddle._C_ops``
where there is none — fed the tensors it received and holding the model's parameters as parameters.
``isolation.py`` records the ops and chooses which to write; this module writes them."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .equivalents import public_equivalent
from .pieces import Slot

# ``_C_ops`` functions that exist for dygraph alone (they take no PIR value, so ``to_static`` cannot
# write them): the public call that builds the same computation in a program.
DYGRAPH_ONLY = {"linear": "paddle.nn.functional.linear"}

# A Tensor operator as Python writes it: a program of ``a > b`` builds at every release, as the model's
# own code does; ``paddle._C_ops.greater_than`` under a legacy trace (2.6) does not ("must be OpResult").
OPERATOR_SYMBOLS = {"__add__": "+", "__radd__": "+", "__sub__": "-", "__rsub__": "-", "__mul__": "*",
                    "__rmul__": "*", "__truediv__": "/", "__rtruediv__": "/", "__matmul__": "@", "__pow__": "**",
                    "__gt__": ">", "__ge__": ">=", "__lt__": "<", "__le__": "<="}

# The one-op layer's class name in its generated module.
ONE_OP = "OneOp"


@dataclasses.dataclass
class Written:
    """An op, or a short chain of ops, as a layer of its own: its module's source, the arrays fed
    to its forward (``in0, in1, ...``) and those it holds as parameters (``self.p0, ...``: the
    model's parameters and buffers stay parameters of the program)."""

    calls: List[Any]
    source: str
    fed: List[np.ndarray]
    held: Dict[str, np.ndarray]
    branched_at: Optional[int] = None
    harness_form: bool = True  # some op is written as ``paddle._C_ops`` (no public call ran it alone)
    every_end: bool = False
    public: bool = True  # asked to speak public calls where the model made them
    pool: List[int] = dataclasses.field(default_factory=list)  # each candidate's op count (``side_by_side``)

    def as_c_ops(self) -> Optional["Written"]:
        """The same ops, every one as ``paddle._C_ops``: the fallback where a public form says
        nothing (it could not be exported alone); None when this is that form already, or a pool
        (one that says nothing is split, each part asked again)."""
        if not self.public or self.pool:
            return None
        other = written(self.calls, self.branched_at, self.every_end, public=False)
        return other if other.source != self.source else None

    @property
    def op_types(self) -> List[str]:
        """The program's ops in order, the ``if`` where the model branched."""
        types = [c.op_type for c in self.calls]
        return types if self.branched_at is None else types[:self.branched_at] + ["pd_op.if"] + types[self.branched_at:]

    @property
    def op_type(self) -> str:
        if self.pool:
            starts = [sum(self.pool[:k]) for k in range(len(self.pool))]
            return f"{len(self.pool)} side by side: " + " | ".join(
                " -> ".join(c.op_type for c in self.calls[start:start + size]) for start, size in zip(starts, self.pool))
        return " -> ".join(self.op_types)

    @property
    def kind(self) -> str:
        return (f"{len(self.pool)} candidates side by side" if self.pool else
                "an if the model took on an op's output" if self.branched_at is not None else
                "one op alone" if len(self.calls) == 1 else f"{len(self.calls)} adjacent ops")

    def describe(self) -> str:
        if self.pool:
            return f"{len(self.pool)} candidates side by side, each on the tensors it received"
        return " -> ".join(c.describe() for c in self.calls)


def written(calls: Sequence[Any], branched_at: Optional[int] = None, every_end: bool = False,
            public: bool = True) -> Written:
    """``calls`` (one op, or ops each reading an output of the one before) as one layer: an input an
    earlier op of the chain produced is wired from it; a held one (a parameter or buffer of the
    model) becomes a parameter of the layer; every other one is fed. It returns the last op's first
    output that is not one of its inputs: the op's main output. The others can be auxiliary buffers
    no kernel fills in inference (batch_norm's saved mean and variance, its reserve space), whose
    values would differ for no fault of the op.

    ``public``: each op is written as the public call the model made when that call ran this op
    alone (``paddle.unique(x, return_inverse=True, dtype="int64")``, recorded while the model ran),
    and as ``paddle._C_ops`` only where there is none — a ``_C_ops`` signature is the dygraph one
    and changes between releases (at 3.3.1 ``_C_ops.unique``'s six-argument dygraph form segfaults
    under ``to_static``; ``paddle.unique`` passes a seventh). ``Written.harness_form`` says whether
    any op kept the ``_C_ops`` form.

    ``every_end``: return the main output of every op that no later op of ``calls`` reads (a run of
    the forward's ops can end in several places: a rotary table's cos and its sin).

    ``branched_at``: the model branched (a Python ``if``) on the output of ``calls[branched_at - 1]``
    and ran ``calls[branched_at:]`` in the branch taken: the layer does the same, so that
    ``to_static`` writes the same control flow (``pd_op.if``); the branch's result replaces its first
    input, which the branch not taken returns."""
    layer = _LayerText()
    lines: List[str] = []
    harness_form = False
    for j, call in enumerate(calls):
        indent = "        "
        if branched_at is not None and j == branched_at:
            lines += [f"        out = {layer.name_of(call.input_ids[0], call.arrays[0], 0 in call.held)}",
                      f"        if r{j - 1}:"]
        if branched_at is not None and j >= branched_at:
            indent = "            "
        expression, harness_made = layer.spoken(call, j, public)
        lines.append(f"{indent}r{j} = {expression}")
        harness_form = harness_form or harness_made
    ends = _ends(calls) if every_end and branched_at is None else []
    returned = [layer.produced[t] for t in (ends or [_main_output(calls[-1])]) if t in layer.produced][:None if ends else 1]
    if branched_at is not None:
        lines.append(f"            out = {', '.join(returned)}")
        returned = ["out"]
    what = ("an if on an op's output, as the model branched" if branched_at is not None else
            "one op alone" if len(calls) == 1 else f"{len(calls)} ops, each reading the one before")
    source = _module(layer, lines, returned, f'{what}, written by the harness: {" -> ".join(c.op_type for c in calls)}')
    return Written(list(calls), source, layer.fed, layer.held, branched_at, harness_form, every_end, public)


def side_by_side(groups: Sequence[Sequence[Any]], public: bool = True) -> Written:
    """Several candidates (each one op, or ops each reading the one before) in one layer, none wired
    to another: each is fed the tensors it received, even one another candidate produced, and
    returns its main output. An op that fails alone fails here too — its own inputs, its own
    output fetched — unless another candidate's error comes first (then the pool says nothing and is
    split); so a pool that runs clean and within tolerance clears every candidate in one program."""
    layer = _LayerText()
    lines: List[str] = []
    returned: List[str] = []
    harness_form = False
    j = 0
    for group in groups:
        layer.produced = {}  # nothing a candidate made is read by another
        for call in group:
            expression, harness_made = layer.spoken(call, j, public)
            lines.append(f"        r{j} = {expression}")
            harness_form = harness_form or harness_made
            j += 1
        main = _main_output(group[-1])
        if main in layer.produced:
            returned.append(layer.produced[main])
    calls = [c for group in groups for c in group]
    source = _module(layer, lines, returned, f"{len(groups)} candidates side by side, written by the harness")
    return Written(calls, source, layer.fed, layer.held, None, harness_form, False, public, pool=[len(g) for g in groups])


def _module(layer: "_LayerText", lines: List[str], returned: List[str], what: str) -> str:
    """The generated module of a written layer: ``lines`` its forward's body."""
    params = ", ".join(f"in{k}" for k in range(len(layer.fed)))
    init = ["    def __init__(self):", "        super().__init__()"] + [
        f"        self.register_buffer({name!r}, paddle.zeros({list(a.shape)}, dtype={str(a.dtype)!r}), persistable=True)"
        for name, a in layer.held.items()] + [""] if layer.held else []
    return (
        f'"""{what[0].upper() + what[1:]} as the model\'s forward called it."""\n'
        "import paddle\n\n\n"
        f"class {ONE_OP}(paddle.nn.Layer):\n"
        + "".join(f"{line}\n" for line in init)
        + f"    def forward(self{', ' if params else ''}{params}):\n"
        + "".join(f"{line}\n" for line in lines)
        + f"        return [{', '.join(returned)}]\n")


class _LayerText:
    """The names a written layer gives tensors: produced by an earlier op of it, held (a parameter
    or buffer of the model, kept one), or fed (``in0, in1, ...``); a tensor read twice, one name."""

    def __init__(self) -> None:
        self.produced: Dict[int, str] = {}
        self.fed: List[np.ndarray] = []
        self.held: Dict[str, np.ndarray] = {}

    def spoken(self, call: Any, j: int, public: bool) -> tuple:
        """``call`` as the right-hand side of ``r<j> = ...``, its outputs named after ``r<j>``; and
        whether that is the harness's own form (``paddle._C_ops``): the public call the model made
        when it ran this op alone, else the Tensor operator it used, else the public call that builds
        the op from its attributes (``equivalents.py``), else ``_C_ops``."""
        spoken = call.public if public and _alone(call) else None
        if spoken is not None:
            held = {call.input_ids[k] for k in call.held if k < len(call.input_ids)}
            names = {k: self.name_of(i, a, i in held) for k, (i, a) in enumerate(zip(spoken.ids, spoken.arrays))}
            for access, tensor in spoken.outputs:
                self.produced.setdefault(tensor, f"r{j}" + "".join(f"[{i}]" for i in access))
            return spoken.call_line(names), False
        names = {k: self.name_of(call.input_ids[k] if k < len(call.input_ids) else None, array, k in call.held)
                 for k, array in enumerate(call.arrays)}
        equivalent = public_equivalent(call.name, call.args, lambda v: _spelled(v, names)) if public else None
        if equivalent is not None and _main_output(call) is not None:  # it returns the main output alone
            self.produced.setdefault(_main_output(call), f"r{j}")
            return equivalent, False
        for (access, is_input), tensor in _outputs(call):
            if not is_input:
                self.produced.setdefault(tensor, f"r{j}" + "".join(f"[{i}]" for i in access))
        symbol = OPERATOR_SYMBOLS.get(call.operator) if public else None
        slots = [a for a in call.args if isinstance(a, Slot)]
        if symbol and len(slots) == 2:  # the operator as the model wrote it (operands in the op's order)
            return f"{names[slots[0].index]} {symbol} {names[slots[1].index]}", False

        function = DYGRAPH_ONLY.get(call.name, "paddle._C_ops." + call.name)
        return f"{function}({', '.join(_spelled(a, names) for a in call.args)})", call.name not in DYGRAPH_ONLY

    def name_of(self, tensor: Optional[int], array: np.ndarray, held: bool) -> str:
        if tensor is not None and tensor in self.produced:
            return self.produced[tensor]
        if held:
            name = f"self.p{len(self.held)}"
            self.held[f"p{len(self.held)}"] = array
        else:
            name = f"in{len(self.fed)}"
            self.fed.append(array)
        if tensor is not None:
            self.produced[tensor] = name
        return name


def _spelled(value: Any, names: Dict[int, str]) -> str:
    """An argument of an op as Python: a tensor by its name in the layer, a list item by item."""
    if isinstance(value, Slot):
        return names[value.index]
    if isinstance(value, list):
        return "[" + ", ".join(_spelled(v, names) for v in value) + "]"
    return repr(value)


def _alone(call: Any) -> bool:
    """Whether the public call the model made ran this op and no other, and returns its main output
    (then writing the call is writing the op)."""
    spoken = call.public
    return (spoken is not None and spoken.ops == 1 and spoken.outputs is not None
            and _main_output(call) in {t for _, t in spoken.outputs})


def _outputs(call: Any) -> List[Any]:
    """``((access, is_input), tensor)`` per output: the tensor's ``id``, or where it sits in the op's
    result when ids were not recorded."""
    ids = call.output_ids or [("out", call.order, access) for access, _ in call.returns]
    return list(zip(call.returns, ids))


def _main_output(call: Any) -> Any:
    return next((t for (_, is_input), t in _outputs(call) if not is_input), None)


def _ends(calls: Sequence[Any]) -> List[int]:
    """The main output of every op of ``calls`` that no later op of them reads."""
    read = {t for call in calls for t in call.input_ids}
    return [t for t in (_main_output(c) for c in calls) if t is not None and t not in read]


__all__ = ["Written", "written", "side_by_side", "DYGRAPH_ONLY", "ONE_OP"]
