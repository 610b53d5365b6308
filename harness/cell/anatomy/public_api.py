"""The public call behind each op (cell side): which ``paddle.nn.functional`` or ``paddle`` function
the model's forward (or a Paddle layer's) called when the op ran, with what.

``_C_ops`` signatures change between releases (FIELD_NOTES: ``nearest_interp`` took other
positional attributes at 3.0 and 3.3); the public API is what a Paddle developer reads and what
stays. While ``isolation.record_ops`` runs the forward, every public function of those two
namespaces is wrapped; the outermost one running when an op is recorded is that op's ``public``
call (a public function calling another is one call: ``F.conv2d`` running ``conv2d`` then ``add``).

A call whose arguments are tensors and literals is spelled two ways: as Python
(``paddle.nn.functional.interpolate(in0, scale_factor=2, mode="bilinear")``) for a one-op
reproducer, and as a PaddleAPITest config line
(``paddle.nn.functional.interpolate(Tensor([2, 8, 16, 16],"float32"), scale_factor=2, mode="bilinear", )``),
which Paddle's API checker replays."""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .pieces import Slot


@dataclasses.dataclass
class PublicCall:
    name: str                       # "paddle.nn.functional.interpolate"
    args: List[Any]                 # tensors as Slot (into ``arrays``), literals as they were
    kwargs: Dict[str, object]
    arrays: List[np.ndarray]
    ids: List[int]                  # which tensors of the forward (``id``) each array was
    returns_tensor: bool = True
    ops: int = 0                    # how many ops the call ran (1: writing the call is writing the op)
    # The tensors it returned: (where in its result, ``id``); None when unknown.
    outputs: Optional[List[Tuple[Tuple[int, ...], int]]] = None

    def _spell(self, value: Any, tensor: Callable[[int], str], quote: Callable[[str], str]) -> str:
        if isinstance(value, Slot):
            return tensor(value.index)
        if isinstance(value, list):
            return "[" + ", ".join(self._spell(v, tensor, quote) for v in value) + "]"
        if isinstance(value, tuple):
            return "(" + ", ".join(self._spell(v, tensor, quote) for v in value) + ("," if len(value) == 1 else "") + ")"
        if isinstance(value, str):
            return quote(value)
        return repr(value)

    def config_line(self) -> str:
        """The call as a PaddleAPITest config line."""
        def tensor(k: int) -> str:
            return f'Tensor({list(self.arrays[k].shape)},"{self.arrays[k].dtype}")'

        def quote(text: str) -> str:
            return '"' + text.replace('"', '\\"') + '"'
        words = [self._spell(a, tensor, quote) for a in self.args]
        words += [f"{k}={self._spell(v, tensor, quote)}" for k, v in self.kwargs.items()]
        return f"{self.name}({''.join(w + ', ' for w in words)})"

    def call_line(self, names: Dict[int, str]) -> str:
        """The call as Python, its tensors by ``names`` (array index -> name)."""
        words = [self._spell(a, names.__getitem__, repr) for a in self.args]
        words += [f"{k}={self._spell(v, names.__getitem__, repr)}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(words)})"

    def describe(self) -> str:
        def tensor(k: int) -> str:
            return f"{self.arrays[k].dtype}{list(self.arrays[k].shape)}"
        return self.call_line({k: tensor(k) for k in range(len(self.arrays))})


def _spelled(paddle: Any, value: Any, arrays: List[np.ndarray], ids: List[int]) -> Any:
    if isinstance(value, paddle.Tensor):
        arrays.append(value.numpy())
        ids.append(id(value))
        return Slot(len(arrays) - 1)
    if isinstance(value, (list, tuple)):
        inner = [_spelled(paddle, v, arrays, ids) for v in value]
        return inner if isinstance(value, list) else tuple(inner)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if type(value).__name__ in ("DataType", "VarType", "dtype"):
        return str(value).split(".")[-1].lower()
    raise TypeError(f"an argument of type {type(value).__name__}")


def public_functions(paddle: Any) -> List[Tuple[str, Any, str, Callable[..., Any]]]:
    """``(public name, namespace, attribute, function)`` for the Python functions of
    ``paddle.nn.functional`` and ``paddle`` (Paddle's own, not re-exported builtins), and for the
    ``paddle.Tensor`` methods that are one of those functions (``x.transpose(perm)`` runs
    ``paddle.transpose``: 385 of 523 at 3.3.1). A method call is spelled as the function's call,
    ``paddle.transpose(in0, perm)``: the form every release traces (``_C_ops.transpose`` under 2.6's
    ``to_static`` raises "must be OpResult, but got Variable")."""
    found: List[Tuple[str, Any, str, Callable[..., Any]]] = []
    by_identity: Dict[int, str] = {}
    for prefix, namespace in (("paddle.nn.functional", paddle.nn.functional), ("paddle", paddle)):
        for attribute in dir(namespace):
            if attribute.startswith("_"):
                continue
            fn = getattr(namespace, attribute, None)
            if isinstance(fn, types.FunctionType) and (fn.__module__ or "").startswith("paddle"):
                found.append((f"{prefix}.{attribute}", namespace, attribute, fn))
                if attribute == fn.__name__ or id(fn) not in by_identity:  # an alias yields to the own name
                    by_identity[id(fn)] = f"{prefix}.{attribute}"
    for attribute in dir(paddle.Tensor):
        fn = getattr(paddle.Tensor, attribute, None)
        if not attribute.startswith("_") and isinstance(fn, types.FunctionType) and id(fn) in by_identity:
            found.append((by_identity[id(fn)], paddle.Tensor, attribute, fn))
    return found


_NO_DEFAULT = object()


def _literal_defaults(fn: Callable[..., Any]) -> Dict[str, Any]:
    """``fn``'s keyword defaults that are literals (None, a bool, a number, a string)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters
            if p.default is None or type(p.default) in (bool, int, float, str)}


def _is_default(value: Any, default: Any) -> bool:
    """A keyword the caller passed at its default (Paddle's ``Embedding`` hands ``F.embedding`` its
    ``max_norm=None``): left out of the written call, which means the same at this release and runs at
    releases without that keyword (``embedding()`` at 2.6.2 has no ``max_norm``: measured on the zoo)."""
    return default is not _NO_DEFAULT and type(value) is type(default) and value == default


class PublicRecorder:
    """Wraps the public functions while a forward runs; sets ``public`` on the ops recorded inside
    the outermost call (``ops``: the op recorder's list, appended to as ops run)."""

    def __init__(self, paddle: Any, ops: List[Any]):
        self.paddle, self.ops = paddle, ops
        self.depth = 0
        self.functions = public_functions(paddle)
        self.alive: List[Any] = []  # what the calls returned: their ``id`` names them while recording

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        defaults = _literal_defaults(fn)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.depth:
                return fn(*args, **kwargs)
            start = len(self.ops)
            arrays: List[np.ndarray] = []
            ids: List[int] = []
            try:
                spelled: Optional[PublicCall] = PublicCall(
                    name, [_spelled(self.paddle, a, arrays, ids) for a in args],
                    {k: _spelled(self.paddle, v, arrays, ids) for k, v in kwargs.items()
                     if not _is_default(v, defaults.get(k, _NO_DEFAULT))}, arrays, ids)
            except TypeError:
                spelled = None  # an argument with no literal form: the ops keep their _C_ops form only
            self.depth += 1
            try:
                result = fn(*args, **kwargs)
            finally:
                self.depth -= 1
            if spelled is not None:
                spelled.returns_tensor = isinstance(result, self.paddle.Tensor)
                spelled.ops = len(self.ops) - start
                returned = tensors_in(self.paddle, result)
                self.alive.extend(t for _, t in returned)
                spelled.outputs = [(access, id(t)) for access, t in returned]
                for op in self.ops[start:]:
                    if getattr(op, "public", None) is None:
                        op.public = spelled
            return result
        return call

    def __enter__(self) -> "PublicRecorder":
        for name, namespace, attribute, fn in self.functions:
            setattr(namespace, attribute, self._wrap(name, fn))
        return self

    def __exit__(self, *exc: Any) -> None:
        for _, namespace, attribute, fn in self.functions:
            setattr(namespace, attribute, fn)
        self.alive.clear()


def tensors_in(paddle: Any, value: Any, access: Tuple[int, ...] = ()) -> List[Tuple[Tuple[int, ...], Any]]:
    """The tensors in ``value`` (a tensor, or lists and tuples of them), each with where it sits."""
    if isinstance(value, paddle.Tensor):
        return [(access, value)]
    if isinstance(value, (list, tuple)):
        return [x for i, v in enumerate(value) for x in tensors_in(paddle, v, access + (i,))]
    return []


def written_public(call: PublicCall, held_ids: Sequence[int], class_name: str) -> Optional[tuple]:
    """A one-op layer calling the public function instead of ``_C_ops``: ``(source, fed, held)`` as
    ``isolation.written`` makes them (a tensor that was a model parameter stays one), or None when
    the call returns something other than a tensor or a list of them."""
    names: Dict[int, str] = {}
    fed: List[np.ndarray] = []
    held: Dict[str, np.ndarray] = {}
    seen: Dict[int, str] = {}
    for k, array in enumerate(call.arrays):
        identity = call.ids[k]
        if identity in seen:
            names[k] = seen[identity]
        elif identity in held_ids:
            names[k] = f"self.p{len(held)}"
            held[f"p{len(held)}"] = array
        else:
            names[k] = f"in{len(fed)}"
            fed.append(array)
        seen[identity] = names[k]
    params = ", ".join(f"in{k}" for k in range(len(fed)))
    init = ["    def __init__(self):", "        super().__init__()"] + [
        f"        self.register_buffer({name!r}, paddle.zeros({list(a.shape)}, dtype={str(a.dtype)!r}), persistable=True)"
        for name, a in held.items()] + [""] if held else []
    result = "[out]" if call.returns_tensor else "list(out)"
    source = (f'"""One public call, written by the harness as the model\'s forward made it: {call.name}."""\n'
              "import paddle\n\n\n"
              f"class {class_name}(paddle.nn.Layer):\n"
              + "".join(f"{line}\n" for line in init)
              + f"    def forward(self{', ' if params else ''}{params}):\n"
              + f"        out = {call.call_line(names)}\n"
              + f"        return {result}\n")
    return source, fed, held


__all__ = ["PublicCall", "PublicRecorder", "public_functions", "written_public", "tensors_in"]
