"""The call a model's code made into Paddle when building the model raised (cell side): the innermost
frame of the traceback outside Paddle and the harness — the suite's line — and on that line the call
whose callee is Paddle's, re-evaluated in that frame for its callee and the values it passed.

PaddleSpeech 1.5.0's ``Conv2D`` subclass passes eleven arguments to ``paddle.nn.Conv2D.__init__`` by
position, which Paddle 3.3 made keyword-only after ``groups``: the model does not build, and the place
is ``super(Conv2D, self).__init__(in_channels, ..., data_format)`` in ``s2t/modules/align.py``. The
reproducer is that call with those values, in Paddle's public names: ``paddle.nn.Conv2D(1, 64, 3, 2,
0, 1, 1, 'zeros', None, None, 'NCHW')``. Argument expressions are names and attributes a constructor
read, evaluated once more after the failure; a call whose callee or arguments cannot be told is None.
"""

from __future__ import annotations

import ast
import dataclasses
import linecache
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HARNESS_ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass
class PaddleCall:
    """``target(*args, **kwargs)``: ``target`` Paddle's function, or the Paddle class whose ``__init__``
    was called; ``where`` the model's line that made the call (``file:line``)."""

    target: Any
    args: List[Any]
    kwargs: Dict[str, Any]
    where: str


def _frames(exc: BaseException) -> List[Tuple[Any, int]]:
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _calls_on(filename: str, lineno: int) -> List[ast.Call]:
    """The calls of the statement at ``lineno``, innermost (shortest) first."""
    text = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and node.lineno <= lineno <= (node.end_lineno or node.lineno)]
    return sorted(calls, key=lambda n: ((n.end_lineno or n.lineno) - n.lineno, (n.end_col_offset or 0) - n.col_offset))


def _evaluate(node: ast.expr, frame: Any, filename: str) -> Any:
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "super" and not node.value.args):
        # ``super()`` with no arguments reads its frame's ``__class__`` cell and first argument: spelled out.
        first = frame.f_code.co_varnames[0] if frame.f_code.co_argcount else None
        owner, instance = frame.f_locals.get("__class__"), frame.f_locals.get(first) if first else None
        if owner is None or instance is None:
            raise ValueError("super() without its class")
        return getattr(super(owner, instance), node.attr)
    return eval(compile(ast.Expression(body=node), filename, "eval"), frame.f_globals, dict(frame.f_locals))


def _arguments(call: ast.Call, frame: Any, filename: str) -> Tuple[List[Any], Dict[str, Any]]:
    args: List[Any] = []
    for node in call.args:
        if isinstance(node, ast.Starred):
            args.extend(_evaluate(node.value, frame, filename))
        else:
            args.append(_evaluate(node, frame, filename))
    kwargs: Dict[str, Any] = {}
    for keyword in call.keywords:
        value = _evaluate(keyword.value, frame, filename)
        if keyword.arg is None:
            kwargs.update(value)
        else:
            kwargs[keyword.arg] = value
    return args, kwargs


def _paddle_target(callee: Any) -> Optional[Any]:
    """Paddle's function, or Paddle's class for a bound ``__init__`` of it; None for anything else."""
    func = getattr(callee, "__func__", callee)
    module = str(getattr(func, "__module__", "") or "")
    if module.split(".")[0] != "paddle":
        return None
    if getattr(callee, "__self__", None) is not None and getattr(func, "__name__", "") == "__init__":
        owner: Any = __import__(module, fromlist=["_"])
        for part in func.__qualname__.split(".")[:-1]:
            owner = getattr(owner, part, None)
        return owner if isinstance(owner, type) else None
    return callee if callable(callee) and getattr(callee, "__self__", None) is None else None


def paddle_call(exc: BaseException, paddle: Any) -> Optional[PaddleCall]:
    """The call into Paddle the model's innermost line made when ``exc`` was raised, or None."""
    paddle_root = Path(paddle.__file__).resolve().parent
    for frame, lineno in reversed(_frames(exc)):
        path = Path(frame.f_code.co_filename).resolve()
        if path.is_relative_to(paddle_root) or path.is_relative_to(HARNESS_ROOT) or not path.is_file():
            continue
        for call in _calls_on(str(path), lineno):
            try:
                target = _paddle_target(_evaluate(call.func, frame, str(path)))
                if target is None:
                    continue
                args, kwargs = _arguments(call, frame, str(path))
            except Exception:  # noqa: BLE001 - an expression that does not evaluate again names no call
                continue
            return PaddleCall(target, args, kwargs, f"{path}:{lineno}")
        return None  # the model's innermost line made no call into Paddle that can be told
    return None


__all__ = ["PaddleCall", "paddle_call"]
