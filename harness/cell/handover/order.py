"""The order a standalone script's definitions are written in (cell side): each after what it reads
when the script runs it — a class after its bases, a module statement after the functions it calls
and what those read (``inline.StandaloneWriter.body``)."""

from __future__ import annotations

import ast
from typing import Any, Dict, List, Optional, Set


def _bound_and_needed(source: str) -> "tuple[Set[str], Set[str]]":
    """The names a definition binds at the script's top level, and the names it reads while the script
    runs it (a class's bases, decorators and class-level statements; a function's decorators and
    defaults; all of an assignment's) — not what bodies read later, when everything is defined."""
    tree = ast.parse(source)
    bound: Set[str] = set()
    needed: Set[str] = set()

    def reads(node: Any) -> None:
        needed.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))

    def at_definition(node: Any) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for part in [*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d]]:
                reads(part)
        elif isinstance(node, ast.ClassDef):
            for part in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
                reads(part)
            for statement in node.body:
                at_definition(statement)
        else:
            reads(node)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        else:
            bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        at_definition(node)
    return bound, needed - bound


def _body_reads(source: str) -> "Optional[Set[str]]":
    """What a function definition's body reads, and a class's methods (a statement that calls the
    class runs its ``__init__``: PaddleFormers' ``logger = Logger()`` reads colorlog's namespace
    through it, found on the zoo); None for a statement, which runs when the script reaches it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    top = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {n.id for n in ast.walk(top) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - {top.name}
    if isinstance(top, ast.ClassDef):
        return {n.id for f in top.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                for n in ast.walk(f) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - {top.name}
    return None


def in_definition_order(definitions: Dict[str, str]) -> Dict[str, str]:
    """``definitions`` ordered so that each comes after what it reads when the script runs it (a
    module-level table of classes after those classes: found on the zoo, where PaddleX's ``ACT2CLS``
    came before the classes it names), otherwise as written; a cycle keeps the written order. A
    statement that calls a function written in needs what that function's body reads too (PaddleX's
    ``gelu = get_activation('gelu')`` reads ``ACT2FN`` through it: found on the zoo)."""
    shapes = {}
    for key, source in definitions.items():
        try:
            shapes[key] = _bound_and_needed(source)
        except SyntaxError:
            shapes[key] = (set(), set())
    providers: Dict[str, List[str]] = {}
    for key, (bound, _) in shapes.items():
        for name in bound:
            providers.setdefault(name, []).append(key)
    bodies = {key: _body_reads(source) for key, source in definitions.items()}
    ordered: Dict[str, str] = {}
    visiting: Set[str] = set()

    def called(names: Set[str]) -> Set[str]:
        """``names`` and, through every function among them, what its body reads (transitively)."""
        found, frontier = set(names), set(names)
        while frontier:
            more = {read for name in frontier for provider in providers.get(name, [])
                    for read in bodies[provider] or ()} - found
            found |= more
            frontier = more
        return found

    def visit(key: str) -> None:
        if key in ordered or key in visiting:
            return
        visiting.add(key)
        needed = called(shapes[key][1]) if bodies[key] is None else shapes[key][1]
        for name in sorted(needed):
            for provider in providers.get(name, []):
                visit(provider)
        visiting.discard(key)
        ordered[key] = definitions[key]

    for key in definitions:
        visit(key)
    return ordered


__all__ = ["in_definition_order"]
