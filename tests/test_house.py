"""The shape of the house, checked: three tiers with one-way arrows and no circle.

* **shared** (``harness.shared``, and each runtime's descriptor ``harness.runtimes.<name>``):
  vocabulary, spec, records, protocol, compare, search, causes, inputs, machine, the Paddle ladder
  and the runtime registry — standard library and numpy only; imports nothing else of the harness.
* **cell side** (``harness.cell``, ``harness.models``, every module of a runtime's package beside its
  descriptor, the TIPC hook loaded into a repository's processes, the plain-script benchmark): runs inside a Paddle environment; imports the shared
  tier and itself, never the host side.
* **host side** (everything else: CLI, matrix, runner, launchers, CI shards, reports, TIPC
  planning): never imports the cell side (it starts it through a launcher) nor Paddle.

Arrows are read from the source (every ``import`` and ``from ... import``, also the ones inside
functions, and every ``importlib.import_module`` call), so a lazy import that crosses a tier is
caught as well as a top-level one.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from .conftest import ROOT

CELL_SIDE = ("harness.cell", "harness.models", "harness.tipc.hook")


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
        elif isinstance(node, ast.Call) and _calls_import_module(node) and node.args:
            out |= _dynamic_targets(node.args[0], modules)
    return out


def _calls_import_module(node: ast.Call) -> bool:
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module")


def _dynamic_targets(arg: ast.expr, modules: Dict[str, Path]) -> Set[str]:
    """What ``importlib.import_module(arg)`` can import: a constant name, or for an f-string
    ``f"harness.runtimes.{name}"`` every module one level under its constant prefix."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {arg.value} & set(modules)
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = str(arg.values[0].value)
        if prefix.endswith("."):
            return {m for m in modules if m.startswith(prefix) and "." not in m[len(prefix):]}
    return set()


def _cell_modules() -> Dict[str, Set[str]]:
    """The seam imports each runtime's cell module by the name its descriptor gives (``Backend.cell``)."""
    from harness.runtimes import REGISTRY

    named = {backend.cell.partition(":")[0] for backend in REGISTRY.runtimes().values()}
    return {"harness.cell.base.registry": named}


def tier(name: str) -> str:
    if name.startswith("harness.shared") or name == "harness.runtimes":
        return "shared"
    if name.startswith("harness.runtimes."):  # <name> is the descriptor; what lies beside it, the cell side
        return "shared" if name.count(".") == 2 else "cell"
    if name.startswith(CELL_SIDE):
        return "cell"
    return "host"


def _graph() -> Dict[str, Set[str]]:
    """Every arrow: static imports, ``importlib.import_module`` calls, and the seam's imports of
    the runtimes' cell modules by name."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) - {name} for name, path in modules.items()}
    for source, targets in _cell_modules().items():
        graph[source] |= targets & set(modules)
    return graph


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


def test_harness_reads_as_its_tiers_no_module_sits_loose_at_the_top():
    """Every module lives in a package that says what it does (matrix, running, artefacts, report,
    cell, ...); at the top only the package itself and its CLI."""
    loose = sorted(p.name for p in (ROOT / "harness").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert loose == [], loose


def test_arrows_run_one_way_between_the_tiers():
    wrong = wrong_arrows(_graph())
    assert not wrong, "\n".join(wrong)


def test_no_module_reaches_itself_through_others():
    graph = _graph()
    # The dynamic arrows are read: the runtimes' discovery and the seam's cell modules are in it.
    assert {"harness.runtimes.paddle_inference", "harness.runtimes.onnxruntime"} <= graph["harness.runtimes"]
    assert "harness.runtimes.paddle_inference.session" in graph["harness.cell.base.registry"]
    assert circles(graph) == []


def test_the_checks_can_fail_on_a_planted_circle_and_a_planted_upward_arrow():
    graph = {"harness.a": {"harness.b"}, "harness.b": {"harness.c"}, "harness.c": {"harness.a"},
             "harness.shared.x": {"harness.running.runner"}, "harness.cell.y": {"harness.report.html"},
             "harness.running.runner": {"harness.cell.stages.ladder"}}
    assert circles(graph) == [["harness.a", "harness.b", "harness.c"]]
    assert wrong_arrows(graph) == ["harness.cell.y (cell) -> harness.report.html (host)",
                                   "harness.running.runner (host) -> harness.cell.stages.ladder (cell)",
                                   "harness.shared.x (shared) -> harness.running.runner (host)"]


def cell_steps() -> List[str]:
    """The cell side's packages in the order its ``__init__`` lists them: the steps of one cell."""
    import harness.cell

    listed = re.findall(r"^    (\w+) {2,}", harness.cell.__doc__ or "", re.MULTILINE)
    return listed


def steps_backwards(graph: Dict[str, Set[str]], steps: List[str]) -> List[str]:
    """Arrows from a package of the cell side to one listed after it (a step reaching ahead)."""
    def step(name: str) -> Optional[str]:
        parts = name.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["harness", "cell"] and parts[2] in steps else None

    return [f"{module} -> {target}" for module, targets in sorted(graph.items()) for target in sorted(targets)
            if step(module) and step(target) and steps.index(step(target)) > steps.index(step(module))]


def test_the_cell_side_is_its_steps_and_each_imports_only_those_before_it():
    """``harness/cell/`` holds its steps as packages (and ``paddle_api``, the one place that knows
    Paddle versions); a package imports only the packages listed before it, so the tree reads in the
    order a cell runs. Checked on every static and dynamic import, and able to fail."""
    steps = cell_steps()
    assert steps[0] == "base" and steps[-1] == "worker" and len(steps) == len(set(steps)) >= 8, steps
    packages = sorted(p.name for p in (ROOT / "harness" / "cell").iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(steps + ["paddle_api"]), packages
    loose = sorted(p.name for p in (ROOT / "harness" / "cell").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert loose == [], loose
    graph = _graph()
    assert steps_backwards(graph, steps) == []
    assert not [t for t in graph["harness.cell.paddle_api"] if t.startswith("harness.cell.") and
                t.split(".")[2] in steps], "paddle_api takes from no step"
    planted = {"harness.cell.setup.build": {"harness.cell.rootcause.reduction"}}
    assert steps_backwards(planted, steps) == ["harness.cell.setup.build -> harness.cell.rootcause.reduction"]


def test_shared_and_host_tiers_import_without_paddle_docker_or_jinja2():
    """Polygraphy's dependency test, here: every shared and host module (and the noxfile)
    imports in a process where paddle, the Docker SDK and Jinja2 cannot be imported; they are
    needed only by the code paths that use them."""
    names = [m for m in _modules() if tier(m) != "cell"]
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


def test_a_runtimes_descriptor_is_shared_and_its_other_modules_are_the_cell_side():
    assert tier("harness.runtimes.onnxruntime") == "shared"
    assert tier("harness.runtimes.onnxruntime.session") == "cell"
    assert wrong_arrows({"harness.runtimes.onnxruntime": {"harness.runtimes.onnxruntime.session"}}) == [
        "harness.runtimes.onnxruntime (shared) -> harness.runtimes.onnxruntime.session (cell)"]


def _runtime_words() -> Set[str]:
    """Every word that names a runtime other than Paddle Inference: its runtime name, backend word,
    config's former record key, search spaces and the packages it imports, read from the registry."""
    from harness.runtimes import paddle_inference as backends
    from harness.runtimes import REGISTRY

    words: Set[str] = set()
    for device, names in REGISTRY.devices().items():
        for word in names:
            backend = REGISTRY.backend(device, word, "pir")
            if isinstance(backend, backends.PaddleBackend):
                continue
            words |= {backend.runtime, backend.word, *backend.packages}
            words |= {backend.config.runtime} | ({backend.config.schema2_key} if backend.config.schema2_key else set())
            words |= {backend.search.key} if backend.search else set()
    return words


def test_shared_names_no_runtime_but_through_the_registry():
    words = _runtime_words()
    assert {"onnxruntime", "ort", "openvino"} <= words  # the registry found the runtime packages
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, words))) + r")\b", re.IGNORECASE)
    named = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for path in sorted((ROOT / "harness" / "shared").glob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert named == [], "\n".join(named)


MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500
MAX_PARAMETERS = 7


def _sizes() -> Tuple[List[str], List[str], List[str]]:
    modules, functions, parameters = [], [], []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            modules.append(f"{where}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                functions.append(f"{where}:{node.lineno} {node.name}: {length} lines")
            args = node.args
            count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
            count -= 1 if args.args and args.args[0].arg in ("self", "cls") else 0
            if count > MAX_PARAMETERS:
                parameters.append(f"{where}:{node.lineno} {node.name}: {count} parameters")
    return modules, functions, parameters


def test_no_module_over_500_lines_no_function_over_80_no_parameter_list_over_7():
    modules, functions, parameters = _sizes()
    assert (modules, functions, parameters) == ([], [], []), "\n".join(modules + functions + parameters)


def _top_level_names(path: Path) -> Set[str]:
    names: Set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_every_relative_import_names_a_module_of_the_harness():
    """A relative import that points nowhere fails only when its line runs (a lazy import inside a
    function may hide for a whole run): every one must resolve to a module that exists."""
    modules = _modules()
    dangling = []
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                if target not in modules:
                    dangling.append(f"{path.relative_to(ROOT)}:{node.lineno} {target}")
                elif node.module is None:  # ``from .. import x``: x a module of that package or a name of its own
                    known = _top_level_names(modules[target])
                    dangling += [f"{path.relative_to(ROOT)}:{node.lineno} {target}.{alias.name}"
                                 for alias in node.names
                                 if f"{target}.{alias.name}" not in modules and alias.name not in known]
    assert dangling == [], "\n".join(dangling)


def test_the_cell_side_imports_paddle_only_when_a_cell_asks():
    """The cell's entry and lifecycle import where ``paddle`` cannot be: Paddle loads when the cell
    asks for it, after its train mode's ``before_paddle`` (an import order some modes need) and after
    ``harness.cell.paddle_api`` set what must precede Paddle (glog level, zlib)."""
    code = ("import sys\nsys.modules['paddle'] = None\n"
            "import harness.cell.__main__, harness.cell.worker.lifecycle, harness.cell.worker.analysis\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


UNTYPED = re.compile(r"(Dict|dict|Mapping)\[str, *Any\]")


def test_records_are_typed_at_the_json_edge():
    """What crosses the JSON (or TOML) edge is named so (``JsonObject``, ``JsonMapping``, ``TomlTable``);
    ``shared``'s signatures hold no untyped dictionary, and the rest of the harness fewer than 120."""
    counts = {path.relative_to(ROOT): len(UNTYPED.findall(path.read_text(encoding="utf-8")))
              for path in (ROOT / "harness").rglob("*.py")}
    in_shared = {str(p): n for p, n in counts.items() if p.parts[1] == "shared" and n}
    assert in_shared == {}, in_shared
    assert sum(counts.values()) < 120, sorted(((n, str(p)) for p, n in counts.items() if n), reverse=True)[:10]


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub spells it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_docs_links_lead_somewhere():
    """Every relative link in README.md and docs/ names a file that exists, and an anchor one of its
    headings; the README links every guide and the measurement log."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        prose = re.sub(r"`[^`\n]*`", "", page.read_text(encoding="utf-8"))  # code spans hold no links
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve()
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.MULTILINE)
                if anchor not in {_slug(h) for h in headings}:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == [], broken
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for guide in sorted((ROOT / "docs" / "guides").glob("*.md")):
        assert f"docs/guides/{guide.name}" in readme, guide.name
    assert "docs/measurements.md" in readme
