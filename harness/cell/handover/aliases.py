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
say "not built", never a different model.

And zero-argument ``super()``: 2.6.2's dy2static rewrites a method into a new function without its
``__class__`` cell, so a converted ``forward`` calling ``super().forward(...)`` stopped there on
"super(): __class__ cell not found" (PaddleX's formula decoder, measured) — nothing about the cause.
In a method of a class the module binds by its own name it is written ``super(Class, self)``: the same
class and instance at every release."""

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


_NEW_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
               ast.DictComp, ast.GeneratorExp)


def _calls_in_scope(node: ast.AST) -> List[ast.Call]:
    """The calls in ``node``'s own scope (not in a nested function, class or comprehension)."""
    found: List[ast.Call] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call):
            found.append(child)
        if not isinstance(child, _NEW_SCOPES):
            found += _calls_in_scope(child)
    return found


def explicit_super(source: str, class_name: str) -> Tuple[str, bool]:
    """``source``, a class ``class_name`` (bound by that name in its module), with each zero-argument
    ``super()`` of its methods written ``super(class_name, <first parameter>)``; and whether any was."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, False
    top = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(top, ast.ClassDef) or top.name != class_name:
        return source, False
    edits: List[Tuple[int, int, str, str]] = []
    for method in top.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = [*method.args.posonlyargs, *method.args.args][:1]
        if not first or any(ast.unparse(d) == "staticmethod" for d in method.decorator_list):
            continue
        for call in _calls_in_scope(method):
            if (isinstance(call.func, ast.Name) and call.func.id == "super" and not call.args and not call.keywords
                    and ast.get_source_segment(source, call) == "super()"):
                edits.append((call.lineno, call.col_offset, "super()", f"super({class_name}, {first[0].arg})"))
    return applied_edits(source, edits), bool(edits)


__all__ = ["spelled_by_own_names", "explicit_super"]
