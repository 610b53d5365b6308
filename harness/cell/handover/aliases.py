"""Paddle's aliases in a standalone script, spelled by the names they alias (cell side).

Suite code written against Paddle 3.2+ reads its PyTorch-style aliases — ``nn.Conv2d``,
``nn.AdaptiveAvgPool2d``, ``paddle.cat`` — which are the very objects ``nn.Conv2D``,
``nn.AdaptiveAvgPool2D``, ``paddle.concat`` at the cell's release. Older releases have only the
latter, so a script that keeps the alias stops there on a name ("module 'paddle.nn' has no attribute
'Conv2d'": PaddleX's PP-LCNet and SLANet at 2.6.2–3.1.1, measured) and the release says nothing about
the cause. An attribute of a Paddle module is rewritten only where, at the cell's release, it is
the same object as the module's attribute of the object's own name; the script lists what it
rewrote. A name local to a function (a parameter ``nn``) is the function's own and stays."""

from __future__ import annotations

import ast
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
    return applied_edits(source, edits), said


__all__ = ["spelled_by_own_names"]
