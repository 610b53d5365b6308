"""Compile the bytecode of what a Paddle environment imports, once, when the environment is made
(``python -m harness.cell.worker.bytecode [--stamp KEY] [MODULE ...]`` with the environment's Python;
with ``--stamp`` it does nothing when the environment was compiled for the same KEY, its package list).

Every cell worker, TIPC command, reproducer, hazard probe and load is a Python process that
imports Paddle. Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machines this project runs
on) Python never writes ``__pycache__``, and installers such as uv do not compile either, so each of
those processes compiles Paddle's ~1,000 modules from source again: measured on a 2-core AMD EPYC
(AVX2), ``import paddle`` (3.3.1) 5.9 s uncompiled, 2.0 s once the packages it loads are compiled
(``nox -s bench`` measures it side by side). Python reads a ``.pyc`` whatever that variable says, so
compiling the packages that ``import paddle`` (and the modules named on the command line) loads —
whole top-level packages, since the harness reaches parts of them a bare import does not — makes
every later process start at the compiled speed. Packages it never loads are left alone (compiling
a whole environment takes a minute here).
"""

from __future__ import annotations

import compileall
import importlib
import importlib.util
import sys
import sysconfig
import time
from pathlib import Path
from typing import Iterable, List, Set, Tuple


def loaded_packages(site: Path) -> List[Path]:
    """The top-level package folders (and single-file modules) under ``site`` that this process has imported."""
    found: Set[Path] = set()
    for module in list(sys.modules.values()):
        where = getattr(module, "__file__", None)
        if not where:
            continue
        path = Path(where)
        try:
            relative = path.resolve().relative_to(site)
        except ValueError:
            continue
        found.add(site / relative.parts[0])
    return sorted(found)


def compile_imported(modules: Iterable[str]) -> List[Path]:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # a module this environment lacks (or cannot import) compiles nothing: the cell
            continue       # that imports it records what it raised, as a finding, not this speed-up
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    packages = loaded_packages(site)
    for package in packages:
        if package.is_dir():
            compileall.compile_dir(str(package), quiet=2, workers=0)
        elif package.suffix == ".py":
            compileall.compile_file(str(package), quiet=2)
    return packages


STAMP = ".harness-bytecode"
# What a cell's processes import besides Paddle where the environment has it (a runtime's packages).
RUNTIME_MODULES = ("paddle2onnx", "onnxruntime", "openvino")
# What paddle2onnx 2.x's export imports later than its own import: it folds constants with
# Polygraphy, which reaches onnx_graphsurgeon and ONNX Runtime's symbolic shape inference (sympy,
# mpmath). Left uncompiled, every process that converts compiled ~560 of their modules again: a
# one-op conversion in a fresh interpreter took 6.6 CPU-s, 3.4 of them in ``compile``, and 3.5-3.9
# once compiled (paddle2onnx 2.1, 2-core AMD EPYC; cProfile, and a logging ``source_to_code``
# over a test: 28 of its 80 CPU-s). A cell converts twice, its reproducers twice more.
# Only where Polygraphy is installed: paddle2onnx 1.x (Paddle 2.6) never goes through it, and
# compiling sympy for nothing costs 12 CPU-s.
CONVERSION_MODULES = ("polygraphy.backend.onnx", "onnx_graphsurgeon", "onnxruntime.tools.symbolic_shape_infer")


def conversion_modules() -> Tuple[str, ...]:
    return CONVERSION_MODULES if importlib.util.find_spec("polygraphy") is not None else ()


HARNESS = Path(__file__).resolve().parents[1]


def compile_harness() -> bool:
    """The harness's own modules, beside their sources (``harness/**/__pycache__``): every harness
    CLI, fork server and cell imports a hundred of them, and compiled nothing where
    PYTHONDONTWRITEBYTECODE is set (0.17 s of each ``python -m harness run`` on these machines).
    Up-to-date files are skipped, so every environment may ask; a read-only checkout compiles
    nothing (Python then compiles in memory, as before)."""
    try:
        return bool(compileall.compile_dir(str(HARNESS), quiet=2, workers=0))
    except OSError:
        return False


def main(argv: List[str]) -> int:
    key = argv[argv.index("--stamp") + 1] if "--stamp" in argv else None
    modules = [a for i, a in enumerate(argv) if a != "--stamp" and (i == 0 or argv[i - 1] != "--stamp")]
    compile_harness()  # whatever the stamp says: the sources may have changed since
    stamp = Path(sys.prefix) / STAMP
    if key is not None and stamp.is_file() and stamp.read_text(encoding="utf-8") == key:
        return 0
    started = time.perf_counter()
    packages = compile_imported(["paddle", *RUNTIME_MODULES, *conversion_modules(), *modules])
    if key is not None:
        stamp.write_text(key, encoding="utf-8")
    print(f"[harness] bytecode compiled for {len(packages)} package(s) in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
