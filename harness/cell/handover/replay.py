"""What a model's factory module does to other modules when imported, replayed before a source
reproducer imports anything of the model (cell side; ``source_repro.Source.setup``)."""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any, List

from .source_repro import Writer, _names_read


def _changes_other_modules(node: ast.stmt) -> bool:
    """A module-level statement that changes what another module holds when the module is imported:
    an attribute or item assigned or deleted (``collections.Iterable = ...``, ``sys.modules[...] =``),
    a call made for its effect (``setattr(...)``, ``patch()``)."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(isinstance(t, (ast.Attribute, ast.Subscript)) for target in targets for t in ast.walk(target))
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)


def factory_setup(paddle: Any, factory_path: str) -> str:
    """What the model's factory module does to other modules when it is imported (a suite patched or
    stubbed so that it imports or builds here: PaddleTS 1.1.0 reads ``collections.Iterable``, gone in
    Python 3.10): those statements in the order the module has them, with the imports they read and
    the functions they name, to run before the script imports the suite. The zoo's own factory
    modules are no exception: ``harness.models.zoo_timeseries`` puts ``collections.Iterable`` back, and
    PaddleTS models' scripts stopped on its ImportError without it (N-HiTS's cause went unplaced). ""
    for a module that changes nothing; a patch made inside the factory's body is not replayed (it may
    read the factory's locals)."""
    module_name = factory_path.partition(":")[0]
    module = sys.modules.get(module_name)
    if module is None:
        return ""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return ""
    tree = ast.parse(source)
    effects = [node for node in tree.body if _changes_other_modules(node)]
    if not effects:
        return ""
    read = set().union(*(_names_read(ast.unparse(node)) for node in effects))
    kept: List[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if {(a.asname or a.name).split(".")[0] for a in node.names} & read:
                kept.append(node)
        elif node in effects:
            kept.append(node)
    imported = {(a.asname or a.name).split(".")[0] for n in kept if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    writer = Writer(paddle)
    for name in sorted(read - imported):
        writer._global(module, name, f"{module_name}'s module-level setup")
    lines = source.splitlines(keepends=True)
    statements = "".join("".join(lines[n.lineno - 1:n.end_lineno]) for n in kept)
    return (f"# What the model's factory module ({module_name}) does to other modules when imported, replayed\n"
            "# before anything of the model is imported:\n" + writer.header() + writer.body() + statements + "\n")


__all__ = ["factory_setup"]
