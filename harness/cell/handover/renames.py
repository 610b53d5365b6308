"""Two suite definitions of one name in one standalone script (cell side): the second renamed, and
every definition that reads it rewritten.

A standalone script (``inline.StandaloneWriter``) writes the suite's definitions into one namespace,
where each came from a module of its own: ``packaging``'s ``_UNSET`` beside another package's,
``urllib3``'s ``HTTPError`` beside ``requests``', a suite module named ``logging`` read as a
namespace beside the standard library's ``logging`` (all found on the zoo). The first definition of a
name keeps it; a later one is written as ``<name>_2`` (``_3``, ...). A definition's source reads
names as its own module sees them, so a bare name is rewritten where, in the module the definition
came from, it is the very object that was renamed (by identity: ``from .exceptions import HTTPError``
in another module of the suite is the same class). A name local to a function (a parameter, an
assignment, an import inside it) is the function's own and stays."""

from __future__ import annotations

import ast
import re
from typing import Any, Dict, List, Optional, Set, Tuple


class Renames:
    """The names a script's definitions hold (``claim``), and the sources rewritten for the renamed."""

    def __init__(self) -> None:
        self.named: Dict[str, str] = {}  # a bare name in the script -> the definition (key) it is
        self.of_object: Dict[Tuple[int, str], str] = {}  # (id(object), a name of it) -> the name the script gives it
        self.of_key: Dict[str, Tuple[str, str]] = {}  # a renamed definition's key -> (its name, the script's)
        self._kept: List[Any] = []  # the renamed objects, alive while their ids are keys

    def claim(self, name: str, key: str, obj: Any = None) -> str:
        """The name ``key``'s definition has in the script: ``name`` unless another definition holds it."""
        held = self.named.setdefault(name, key)
        if held == key:
            return name
        if key in self.of_key:
            return self.of_key[key][1]
        k = 2
        while f"{name}_{k}" in self.named:
            k += 1
        new = f"{name}_{k}"
        self.named[new] = key
        self.of_key[key] = (name, new)
        if obj is not None:
            self.of_object[(id(obj), name)] = new
            self._kept.append(obj)
        return new

    def name_of(self, obj: Any, name: str) -> str:
        """How the script names ``obj`` (written in as ``name``)."""
        return self.of_object.get((id(obj), name), name)

    def rewritten(self, key: str, source: str, home: Optional[Dict[str, Any]]) -> str:
        """``source`` (``key``'s, its bare names as ``home`` — its module's globals — binds them) with
        every renamed name it reads or defines at the top level in its new name."""
        if not self.of_object and not self.of_key:
            return source
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return source
        edits: List[Tuple[int, int, str, str]] = []
        top = tree.body[0] if tree.body else None
        if key in self.of_key and isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            old, new = self.of_key[key]
            header = _header_line(source, top)
            line = source.splitlines()[header - 1]
            found = re.search(rf"\b(def|class)\s+({re.escape(old)})\b", line)
            if found is not None:
                edits.append((header, len(line[:found.start(2)].encode()), old, new))
        if home is not None:
            for node, local in names_with_scope(tree):
                if node.id in local or node.id not in home:
                    continue
                new = self.of_object.get((id(home[node.id]), node.id))
                if new is not None:
                    edits.append((node.lineno, node.col_offset, node.id, new))
        return applied_edits(source, edits)


def _header_line(source: str, node: Any) -> int:
    """The line of a definition's ``def``/``class`` keyword (after its decorators)."""
    lines = source.splitlines()
    for number in range(node.lineno, getattr(node, "end_lineno", node.lineno) + 1):
        if re.match(r"\s*(async\s+)?(def|class)\b", lines[number - 1]):
            return number
    return node.lineno


def names_with_scope(tree: ast.AST) -> List[Tuple[ast.Name, Set[str]]]:
    """Every ``Name`` with the names local to the functions around it (their parameters, what they
    assign, define or import, less what they declare ``global``)."""
    found: List[Tuple[ast.Name, Set[str]]] = []

    def visit(node: ast.AST, local: Set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for part in ([*getattr(node, "decorator_list", []), *node.args.defaults,
                          *[d for d in node.args.kw_defaults if d]]
                         + ([node.returns] if getattr(node, "returns", None) else [])):
                visit(part, local)
            inner = local | _locals_of(node)
            for statement in node.body if isinstance(node.body, list) else [node.body]:
                visit(statement, inner)
            return
        if isinstance(node, ast.Name):
            found.append((node, local))
        for child in ast.iter_child_nodes(node):
            visit(child, local)

    visit(tree, set())
    return found


def _locals_of(function: Any) -> Set[str]:
    args = function.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared: Set[str] = set()
    body = function.body if isinstance(function.body, list) else [function.body]
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # its own scope
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Global):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return names - declared


def applied_edits(source: str, edits: List[Tuple[int, int, str, str]]) -> str:
    """``source`` with each ``(line, byte column, old, new)`` replaced (columns are UTF-8 offsets)."""
    if not edits:
        return source
    lines = source.splitlines(keepends=True)
    for number, column, old, new in sorted(set(edits), reverse=True):
        raw = lines[number - 1].encode()
        if raw[column:column + len(old.encode())] == old.encode():
            lines[number - 1] = (raw[:column] + new.encode() + raw[column + len(old.encode()):]).decode()
    return "".join(lines)


__all__ = ["Renames", "names_with_scope", "applied_edits"]
