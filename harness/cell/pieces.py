"""Pieces of a model (cell side): every sublayer's first call captured in the dygraph forward, and a
group of sublayers written as a small layer of its own that calls each member on what it received and
returns their outputs (``to_static`` + ``jit.save`` export it like any model)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from .structure import flatten_tensors

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


def load_piece(source: str, folder: Path, members: Sequence[Call]) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    module_path = folder / "piece.py"
    module_path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"harness_piece_{folder.name}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    piece = module.Piece([m.layer for m in members])
    piece.eval()
    return piece


def specs(paddle: Any, arrays: List[np.ndarray]) -> List[Any]:
    return [paddle.static.InputSpec(list(a.shape), str(a.dtype), f"in{k}") for k, a in enumerate(arrays)]
