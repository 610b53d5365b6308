"""The methods of a suite class that nothing in a standalone script reads, left out (cell side).

A suite class copied whole brings every method it has, and each method the globals it reads: a
decoder's ``from_pretrained`` pulls the suite's download helpers, and through them an HTTP client
(PaddleFormers' Gemma 3: a script of 125,948 lines, most of it ``requests`` and ``urllib3``, and a
logger whose formatter module has no source form, so the script stopped before the model ran). A
method is kept when something can call it:

* a dunder, or a name a base from Paddle or Python defines (``forward``, ``state_dict``,
  ``extra_repr``): Paddle and the interpreter call those by name;
* a name read as an attribute (``self.x``, ``obj.x``, ``getattr(obj, "x")``) anywhere in the script's
  written definitions — the class's own kept methods, other classes, functions, module statements.

The writer prunes as it writes, then settles: a class written before something read one of its
left-out names is written again with it (``StandaloneWriter.settle``), until nothing left out is read.
A dynamic call this cannot see (``getattr(self, name)`` with a computed name) fails the script's
verification, which then says so; it never passes a wrong script."""

from __future__ import annotations

import ast
from typing import Callable, Dict, List, Set, Tuple

Node = ast.stmt


def attributes_read(source: str) -> Set[str]:
    """Every attribute name ``source`` reads or calls, and the names ``getattr``/``hasattr`` are given."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "getattr", "hasattr", "setattr") and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            found.add(str(node.args[1].value))
    return found


def _names(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def without_unread_methods(source: str, cls: type, read: Set[str], kept: Callable[[str], bool]) -> Tuple[str, Set[str]]:
    """``source`` (``cls``'s, dedented) without the methods nothing reads, and their names. ``read``:
    the attribute names the script's other definitions read; ``kept(module)``: whether a module is
    imported rather than written in (its classes' names are protocol the script does not see)."""
    tree = ast.parse(source)
    top = tree.body[0] if tree.body else None
    if not isinstance(top, ast.ClassDef):
        return source, set()
    methods: Dict[str, List[Node]] = {}
    for node in top.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods.setdefault(node.name, []).append(node)
    protocol = {name for base in cls.__mro__[1:] if kept(getattr(base, "__module__", "") or "") for name in vars(base)}
    keep = {name for name in methods if _is_dunder(name) or name in protocol or name in read}
    others = [node for node in top.body if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    # A class-level statement or a method's decorator names a method of the class body bare
    # (``__call__ = _forward``, ``@_cached``); a method's body reads bare names from the module.
    reads = set().union(*(attributes_read(ast.unparse(node)) | _names(node) for node in others)) if others else set()
    while True:
        for name in keep:
            for node in methods[name]:
                reads |= attributes_read(ast.unparse(node))
                reads |= set().union(*(_names(d) for d in node.decorator_list)) if node.decorator_list else set()
        grown = keep | (reads & set(methods))
        if grown == keep:
            break
        keep = grown
    dropped = set(methods) - keep
    if not dropped or any(node.lineno == top.lineno for node in top.body):  # a one-line class: as it is
        return source, set()
    lines = source.splitlines(keepends=True)
    gone: Set[int] = set()
    for name in dropped:
        for node in methods[name]:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            gone.update(range(first - 1, node.end_lineno))
    if all(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in dropped for node in top.body):
        first = top.body[0]
        start = min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])]) - 1
        lines[start] = " " * first.col_offset + "pass\n"
        gone.discard(start)
    return "".join(line for i, line in enumerate(lines) if i not in gone), dropped


__all__ = ["attributes_read", "without_unread_methods"]
