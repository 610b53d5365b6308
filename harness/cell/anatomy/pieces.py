"""Pieces of a model (cell side): every sublayer's first call captured in the dygraph forward, and a
group of sublayers written as a small layer of its own that calls each member on what it received and
returns their outputs (``to_static`` + ``jit.save`` export it like any model).

A piece is faithful to the model's dataflow: a member whose input was, in the model's forward, the
very tensor another member of the piece returned (paired by identity while the capture holds every
tensor alive) is fed that member's output inside the piece, so that the ops a fusion pass joins
across sublayers (a conv in one, its batch norm in the next) meet in the piece as in the model; only
inputs from outside the piece are fed. The piece returns each tensor once: what a later member
consumes stays inside, an input passed through is not returned, and a tensor returned twice (a
stage's output also in the list of stages) is returned once — a program that writes one name as two
outputs is refused by Paddle 3.x ("More than one shadow output named ...").

A piece is fed what the model was fed: a tensor the model received as its own input (token ids,
masks, images) stays an input of every piece that uses it, whatever its size; only a small integer
tensor the model computed (a shape, a level offset) may be written into the piece as its value.
A member's structured output (lists, dicts, dataclasses, the suites' ``ModelOutput``) is read in
dygraph, where each tensor was found, and the piece reaches each by that path — by attribute where
the container also holds it as one: under ``to_static`` a container that keeps an item only when
``isinstance(value, paddle.Tensor)`` (the suites' ``ModelOutput``) drops every item, since a traced
value is no ``paddle.Tensor``, while the attribute stays."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..base.structure import flatten_tensors

# What a captured argument may be besides a tensor: literals the generated forward can spell.
LITERALS = (type(None), bool, int, float, str)


class Slot:
    """A tensor argument's place: ``in<index>`` of the piece's forward."""

    def __init__(self, index: int):
        self.index = index


class Attr(str):
    """A step of an access path read as an attribute (``.name``), not a subscript."""


class Held:
    """An argument that was an object holding tensors (a graph of a graph-learning suite, a
    suite's input container): the captured object itself (``Call.objects[index]``) with each
    attribute that held tensors replaced by what the piece feeds it (``fields``)."""

    def __init__(self, index: int, fields: Dict[str, Any]):
        self.index = index
        self.fields = fields


# Where a tensor sits in a call's output: the steps that reach it (() for the output itself).
Access = Tuple[Any, ...]


@dataclasses.dataclass
class Call:
    """One sublayer's first call in the dygraph forward."""

    path: str
    layer: Any
    order: int
    args: Any = None                      # positional args, tensors replaced by Slot
    kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)  # keyword args (Paddle >= 3)
    arrays: List[np.ndarray] = dataclasses.field(default_factory=list)
    ids: List[int] = dataclasses.field(default_factory=list)  # identity of each captured input tensor
    model_inputs: Set[int] = dataclasses.field(default_factory=set)  # captured inputs the model itself was fed
    outputs: Optional[List[Tuple[Access, int]]] = None        # the first call's output tensors: (access, identity)
    objects: List[Any] = dataclasses.field(default_factory=list)  # objects holding tensors it was called with
    unreplayable: str = ""                # why the generated forward cannot repeat this call
    children: List[str] = dataclasses.field(default_factory=list)
    leaves: int = 1


def _literal(value: Any) -> bool:
    if isinstance(value, LITERALS):
        return True
    return isinstance(value, (list, tuple)) and all(_literal(v) for v in value)


def _slots(paddle: Any, value: Any, call: Call, alive: List[Any], fed: Set[int]) -> Any:
    """``value`` with every tensor replaced by a Slot (its array and identity kept, and whether the
    model itself was fed it: ``fed`` holds those identities); raises TypeError on anything the
    generated forward could not spell."""
    if isinstance(value, paddle.Tensor):
        call.arrays.append(value.numpy())
        call.ids.append(id(value))
        if id(value) in fed:
            call.model_inputs.add(len(call.arrays) - 1)
        alive.append(value)
        return Slot(len(call.arrays) - 1)
    if isinstance(value, (list, tuple)):
        return type(value)(_slots(paddle, v, call, alive, fed) for v in value)
    if isinstance(value, dict):
        return {k: _slots(paddle, v, call, alive, fed) for k, v in value.items()}
    if _literal(value):
        return value
    fields = _tensor_fields(paddle, value)
    if fields is not None:  # an object holding tensors: itself, its tensors fed
        call.objects.append(value)
        return Held(len(call.objects) - 1, {k: _slots(paddle, v, call, alive, fed) for k, v in fields.items()})
    raise TypeError(f"an argument of type {type(value).__name__}")


def _tensor_fields(paddle: Any, value: Any) -> Optional[Dict[str, Any]]:
    """The attributes of a plain object that hold tensors (directly or in lists, tuples, dicts), or
    None when it is no such object (a layer, a class, a function, an object without attributes)."""
    if isinstance(value, (paddle.nn.Layer, type)) or callable(value) or not hasattr(value, "__dict__"):
        return None
    found = {k: v for k, v in vars(value).items() if flatten_tensors(paddle, [v])}
    return found or None


def _output_tensors(paddle: Any, value: Any, access: Access = ()) -> List[Tuple[Access, Any]]:
    """Every tensor of a call's output (read in dygraph) and the path that reaches it: an index, a
    key, or an attribute — for a dataclass's fields, and for a mapping's items that the container
    also holds as attributes (what survives ``to_static``, see the module's docstring)."""
    if isinstance(value, paddle.Tensor):
        return [(access, value)]
    if isinstance(value, Mapping):
        return [x for k in value for x in _output_tensors(
            paddle, value[k], access + ((Attr(k),) if _attribute_of(value, k) else (k,)))]
    if isinstance(value, (list, tuple)):
        return [x for i, v in enumerate(value) for x in _output_tensors(paddle, v, access + (i,))]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [x for f in dataclasses.fields(value)
                for x in _output_tensors(paddle, getattr(value, f.name, None), access + (Attr(f.name),))]
    return []


def _attribute_of(container: Any, key: Any) -> bool:
    if not isinstance(key, str) or not key.isidentifier():
        return False
    try:
        return getattr(container, key) is container[key]
    except Exception:  # noqa: BLE001 - a container's own attribute lookup may raise anything
        return False


def capture(paddle: Any, model: Any, call_args: List[Any]) -> Dict[str, Call]:
    """Every sublayer's first call (path → Call), and the tree of called sublayers under the
    model (path ``""``): a sublayer's parent is its nearest called ancestor. Every tensor a hook
    sees is held until the forward ends, so that identities are never reused within it."""
    calls: Dict[str, Call] = {"": Call("", model, -1)}
    hooks, alive = [], []
    fed = {id(t) for _, t in flatten_tensors(paddle, list(call_args))}  # the model's own inputs

    def hook_for(path: str):
        def pre(layer: Any, inputs: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]] = None) -> None:
            if path in calls:
                return
            call = Call(path, layer, len(calls))
            try:
                call.args = _slots(paddle, tuple(inputs), call, alive, fed)
                call.kwargs = _slots(paddle, dict(kwargs or {}), call, alive, fed)
            except TypeError as exc:
                call.unreplayable = f"called with {exc}"
            calls[path] = call

        def post(layer: Any, inputs: Any, output: Any) -> None:
            call = calls.get(path)
            if call is not None and call.outputs is None:
                found = _output_tensors(paddle, output)
                alive.extend(t for _, t in found)
                call.outputs = [(access, id(t)) for access, t in found]
        return pre, post

    for path, sub in model.named_sublayers():
        pre, post = hook_for(path)
        try:  # keyword arguments reach a pre-hook only with with_kwargs (Paddle 3.x)
            hooks.append(sub.register_forward_pre_hook(pre, with_kwargs=True))
        except TypeError:
            hooks.append(sub.register_forward_pre_hook(pre))
        hooks.append(sub.register_forward_post_hook(post))
    # The exported instance's forward was converted by to_static in place: switched off, it runs
    # in dygraph and every sublayer's hooks see their calls.
    paddle.jit.enable_to_static(False)
    try:
        with paddle.no_grad():
            model(*call_args)
    finally:
        paddle.jit.enable_to_static(True)
        for handle in hooks:
            handle.remove()
        alive.clear()
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

def _spell(value: Any, offset: int, names: Dict[int, str], objects: int = 0) -> str:
    if isinstance(value, Slot):
        return names[value.index + offset]
    if isinstance(value, Held):
        fields = ", ".join(f"{k!r}: {_spell(v, offset, names, objects)}" for k, v in value.fields.items())
        return f"_with(self.objects[{value.index + objects}], {{{fields}}})"
    if isinstance(value, tuple):
        inner = ", ".join(_spell(v, offset, names, objects) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(_spell(v, offset, names, objects) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_spell(v, offset, names, objects)}" for k, v in value.items()) + "}"
    return repr(value)


# An integer input this small (shapes, level offsets) can be written into a piece as its value.
SMALL_INT_INPUT = 64


class VacuousPiece(Exception):
    """The piece would return no tensor of its own (its members pass their inputs through)."""


def _spelled(index: int, access: Access) -> str:
    return f"o{index}" + "".join(f".{a}" if isinstance(a, Attr) else f"[{a!r}]" for a in access)


def piece_source(members: Sequence[Call], unused: "Set[int] | frozenset" = frozenset(),
                 constants: "Set[int] | frozenset" = frozenset()) -> Tuple[str, List[np.ndarray], List[int]]:
    """The generated module of a piece (a real file: ``to_static`` reads the forward's source in
    every version), the inputs it is fed in forward order, and for each fed input the index of the
    captured input it is. Captured inputs (indexed over the members' inputs in call order) that an
    earlier member returned are that member's output; those in ``unused`` (no output depends on them;
    Paddle refuses a feed no output needs) are made inside the forward as zeros of their shape and
    dtype, those in ``constants`` (small integer tensors) as their captured value; the rest are fed."""
    names: Dict[int, str] = {}
    fed: List[np.ndarray] = []
    fed_at: List[int] = []
    made: Dict[int, str] = {}       # tensor identity -> where a member of the piece returned it
    consumed: Set[int] = set()
    lines, offset, objects = [], 0, 0
    for i, call in enumerate(members):
        for local, array in enumerate(call.arrays):
            k, identity = offset + local, call.ids[local] if local < len(call.ids) else None
            if identity in made:
                names[k] = made[identity]
                consumed.add(identity)
            elif k in unused:
                names[k] = f"paddle.zeros({list(array.shape)}, dtype={str(array.dtype)!r})"
            elif k in constants:
                names[k] = f"paddle.to_tensor({array.tolist()!r}, dtype={str(array.dtype)!r})"
            else:
                names[k] = f"in{len(fed)}"
                fed.append(array)
                fed_at.append(k)
        args = ", ".join([_spell(a, offset, names, objects) for a in call.args] +
                         [f"{k}={_spell(v, offset, names, objects)}" for k, v in call.kwargs.items()])
        lines.append(f"        o{i} = self.members[{i}]({args})")
        for access, identity in call.outputs or []:
            made.setdefault(identity, _spelled(i, access))
        offset += len(call.arrays)
        objects += len(call.objects)
    returned = _returned(members, made, consumed)
    if not returned:
        raise VacuousPiece("the piece returns no tensor of its own: its members pass their inputs through")
    params = ", ".join(f"in{k}" for k in range(len(fed)))
    source = (
        '"""A piece of the model, written by the harness\'s reduction: its members called on the\n'
        'inputs they had in the dygraph forward (an earlier member\'s output where the model fed them one)."""\n'
        "import copy\n\nimport paddle\n\n\n"
        "@paddle.jit.not_to_static\n"
        "def _with(held, fields):\n"
        "    \"\"\"An object the model passed (a graph), its tensors replaced by the piece's.\"\"\"\n"
        "    fresh = copy.copy(held)\n"
        "    for name, value in fields.items():\n"
        "        setattr(fresh, name, value)\n"
        "    return fresh\n\n\n"
        "class Piece(paddle.nn.Layer):\n"
        "    def __init__(self, members, objects=()):\n"
        "        super().__init__()\n"
        "        self.members = paddle.nn.LayerList(members)\n"
        "        self.objects = list(objects)\n\n"
        f"    def forward(self{', ' if params else ''}{params}):\n" + "\n".join(lines) +
        f"\n        return [{', '.join(returned)}]\n")
    return source, fed, fed_at


def _returned(members: Sequence[Call], made: Dict[int, str], consumed: Set[int]) -> List[str]:
    """Each output tensor once: not an input passed through, not one a later member consumes (it
    stays inside, as in the model) — unless nothing else is left to return."""
    inputs = {identity for call in members for identity in call.ids}
    outputs = list(dict.fromkeys(identity for call in members for _, identity in call.outputs or []))
    kept = [made[i] for i in outputs if i not in inputs and i not in consumed]
    return kept or [made[i] for i in outputs if i not in inputs or i in consumed]


def unique_tensors(paddle: Any, value: Any) -> List[Any]:
    """The tensors of ``value`` in Paddle's flattening order, each once: a program returns a
    tensor returned twice (e.g. a backbone's last stage also in its list of stages) once."""
    seen, found = set(), []
    for _, tensor in flatten_tensors(paddle, value):
        if id(tensor) not in seen:
            seen.add(id(tensor))
            found.append(tensor)
    return found


def source_path(folder: Path, class_name: str) -> Path:
    """Where ``load_source`` writes the module of ``class_name``."""
    return folder / f"{class_name.lower()}.py"


def load_source(source: str, folder: Path, class_name: str, *args: Any) -> Any:
    """The layer class ``class_name`` of a generated module written to ``folder`` (a real file:
    ``to_static`` reads the forward's source), built with ``args``, in eval mode."""
    folder.mkdir(parents=True, exist_ok=True)
    module_path = source_path(folder, class_name)
    module_path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"harness_{class_name.lower()}_{folder.name}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    layer = getattr(module, class_name)(*args)
    layer.eval()
    return layer


def load_piece(source: str, folder: Path, members: Sequence[Call]) -> Any:
    return load_source(source, folder, "Piece", [m.layer for m in members], [o for m in members for o in m.objects])


def specs(paddle: Any, arrays: List[np.ndarray]) -> List[Any]:
    return [paddle.static.InputSpec(list(a.shape), str(a.dtype), f"in{k}") for k, a in enumerate(arrays)]
