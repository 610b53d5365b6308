"""Paddle's aliases in a standalone script, spelled by the names they alias (cell side).

Suite code written against Paddle 3.2+ reads its PyTorch-style aliases — ``nn.Conv2d``,
``nn.AdaptiveAvgPool2d``, ``paddle.cat`` — which are the very objects ``nn.Conv2D``,
``nn.AdaptiveAvgPool2D``, ``paddle.concat`` at the cell's release. Older releases have only the
latter, so a script that keeps the alias stops there on a name ("module 'paddle.nn' has no attribute
'Conv2d'": PaddleX's PP-LCNet and SLANet at 2.6.2–3.1.1, measured) and the release says nothing about
the cause. An attribute of a Paddle module is rewritten only where, at the cell's release, it is
the same object as the module's attribute of the object's own name; the script lists what it
rewrote. A name local to a function (a parameter ``nn``) is the function's own and stays.

The same holds for a keyword: 3.2+ layers take PyTorch's ``bias=False`` beside Paddle's
``bias_attr=False`` (``Conv2D.__init__``: ``if bias is False: bias_attr = False``); 2.6.2–3.1.1
refuse it ("unexpected keyword argument 'bias'": PaddleX's SLANet and PP-LCNet, measured). A literal
``bias=False`` is written ``bias_attr=False`` and ``bias=True`` ``bias_attr=None`` (the default),
only for a Paddle layer whose ``__init__`` at the cell's release takes both and where the call does not
pass ``bias_attr`` itself. The written script checks the rebuilt layer's weight names against the
recorded ones and is verified at the cell's release, so a rewrite that changed the parameters would
say "not built", never a different model."""

from __future__ import annotations

import ast
import inspect
import types
from typing import Any, Dict, List, Optional, Set, Tuple

from .renames import applied_edits, names_with_scope

_UNRESOLVED = object()


def _is_paddle(module: Any) -> bool:
    name = getattr(module, "__name__", "") if isinstance(module, types.ModuleType) else ""
    return name == "paddle" or name.startswith("paddle.")


def spelled_by_own_names(source: str, home: Optional[Dict[str, Any]]) -> Tuple[str, Set[str]]:
    """``source`` (its bare names bound as ``home``, its module's globals, binds them) with every
    ``<paddle module>.<alias>`` written by the aliased object's own name; and ``"nn.Conv2d as
    nn.Conv2D"`` for each rewrite."""
    if not home:
        return source, set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, set()
    local_names = {id(node) for node, local in names_with_scope(tree) if node.id in local}

    def resolved(node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            return home.get(node.id, _UNRESOLVED) if id(node) not in local_names else _UNRESOLVED
        if isinstance(node, ast.Attribute):
            owner = resolved(node.value)
            return getattr(owner, node.attr, _UNRESOLVED) if isinstance(owner, types.ModuleType) else _UNRESOLVED
        return _UNRESOLVED

    edits: List[Tuple[int, int, str, str]] = []
    said: Set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.end_lineno is None or node.end_col_offset is None:
            continue
        owner = resolved(node.value)
        if not _is_paddle(owner):
            continue
        obj = getattr(owner, node.attr, None)
        own = getattr(obj, "__name__", None)
        if not isinstance(own, str) or own == node.attr or not own.isidentifier() or getattr(owner, own, None) is not obj:
            continue
        edits.append((node.end_lineno, node.end_col_offset - len(node.attr), node.attr, own))
        written = ast.unparse(node.value)
        said.add(f"{written}.{node.attr} as {written}.{own}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            edits += _bias_keyword(node, resolved(node.func), source, said)
    return applied_edits(source, edits), said


def _takes_bias_and_attr(cls: Any) -> bool:
    """Whether ``cls`` is a Paddle layer whose ``__init__`` takes PyTorch's ``bias`` (default True) and
    Paddle's ``bias_attr``."""
    if not isinstance(cls, type) or not (getattr(cls, "__module__", "") or "").startswith("paddle."):
        return False
    try:
        parameters = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return False
    return "bias_attr" in parameters and "bias" in parameters and parameters["bias"].default is True


def _bias_keyword(call: ast.Call, cls: Any, source: str, said: Set[str]) -> List[Tuple[int, int, str, str]]:
    """The edit writing a literal ``bias=True|False`` of ``call`` as ``bias_attr=None|False``."""
    given = {keyword.arg: keyword for keyword in call.keywords}
    keyword = given.get("bias")
    if (keyword is None or "bias_attr" in given or not isinstance(keyword.value, ast.Constant)
            or not isinstance(keyword.value.value, bool) or keyword.end_lineno != keyword.lineno
            or not _takes_bias_and_attr(cls)):
        return []
    old = ast.get_source_segment(source, keyword) or ""
    new = "bias_attr=False" if keyword.value.value is False else "bias_attr=None"
    said.add(f"{cls.__name__}(bias={keyword.value.value}) as {cls.__name__}({new})")
    return [(keyword.lineno, keyword.col_offset, old, new)]


__all__ = ["spelled_by_own_names"]
