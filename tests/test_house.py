"""The shape of the house, checked: three tiers with one-way arrows and no circle.

* **shared** (``harness.shared``): vocabulary, spec, records, protocol, compare, search, causes,
  inputs, machine — standard library and numpy only; imports nothing else of the harness.
* **cell side** (``harness.cell``, ``harness.models``, the TIPC hook loaded into a repository's
  processes, the plain-script benchmark): runs inside a Paddle environment; imports the shared
  tier and itself, never the host side.
* **host side** (everything else: CLI, matrix, runner, launchers, CI shards, reports, TIPC
  planning): never imports the cell side (it starts it through a launcher) nor Paddle.

Arrows are read from the source (every ``import`` and ``from ... import``, also the ones inside
functions), so a lazy import that crosses a tier is caught as well as a top-level one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

from .conftest import ROOT

CELL_SIDE = ("harness.cell", "harness.models", "harness.tipc.capture", "harness.tipc.hook", "harness.bench.plain_cell")


def _modules() -> Dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "harness").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            for candidate in [target] + [f"{target}.{alias.name}" for alias in node.names]:
                if candidate in modules:
                    out.add(candidate)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in modules)
    return out


def tier(name: str) -> str:
    if name.startswith("harness.shared"):
        return "shared"
    if name.startswith(CELL_SIDE):
        return "cell"
    return "host"


def _graph() -> Dict[str, Set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) - {name} for name, path in modules.items()}


ALLOWED = {"shared": {"shared"}, "cell": {"cell", "shared"}, "host": {"host", "shared"}}


def wrong_arrows(graph: Dict[str, Set[str]]) -> List[str]:
    return [f"{module} ({tier(module)}) -> {target} ({tier(target)})"
            for module, targets in sorted(graph.items()) for target in sorted(targets)
            if target != "harness" and tier(target) not in ALLOWED[tier(module)]]  # "harness": its version


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_arrows_run_one_way_between_the_tiers():
    wrong = wrong_arrows(_graph())
    assert not wrong, "\n".join(wrong)


def test_no_module_reaches_itself_through_others():
    assert circles(_graph()) == []


def test_the_checks_can_fail_on_a_planted_circle_and_a_planted_upward_arrow():
    graph = {"harness.a": {"harness.b"}, "harness.b": {"harness.c"}, "harness.c": {"harness.a"},
             "harness.shared.x": {"harness.runner"}, "harness.cell.y": {"harness.report.html"},
             "harness.runner": {"harness.cell.stages"}}
    assert circles(graph) == [["harness.a", "harness.b", "harness.c"]]
    assert wrong_arrows(graph) == ["harness.cell.y (cell) -> harness.report.html (host)",
                                   "harness.runner (host) -> harness.cell.stages (cell)",
                                   "harness.shared.x (shared) -> harness.runner (host)"]


def test_shared_and_host_tiers_import_without_paddle_docker_or_jinja2():
    """Polygraphy's dependency test, here: every shared and host module (and the noxfile)
    imports in a process where paddle, the Docker SDK and Jinja2 cannot be imported; they are
    needed only by the code paths that use them."""
    names = [m for m in _modules() if tier(m) != "cell" and m != "harness.bench.plain_cell"]
    blocked = ["paddle", "docker", "jinja2"]
    code = (
        "import importlib, sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        f"for name in {names!r}: importlib.import_module(name)\n"
        "import runpy; runpy.run_path('noxfile.py')\n"
        "print('ok', len(" + repr(names) + "))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().startswith("ok") and len(names) > 30
