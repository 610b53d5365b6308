"""Where a cell's model comes from (cell side): a ``module:function`` factory.

The built-in models (``harness.models``) and a user's own (``my_package.models:build``) are both
factories: no argument, returns ``(paddle.nn.Layer, [InputSpec | {name: InputSpec}])``. A model
source that brings other architectures (a package's model zoo) is one more module of factories;
the matrix names them.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import time
from typing import Any, Dict, List, Tuple

from ..shared.errors import UserError
from .construction import recording_construction


# What the last ``build`` of this process imported, measured: the modules new in ``sys.modules``
# after it (a suite's package and what it pulls in) and the seconds the import and the build took.
# The fork server of the environment preloads them for the family's next cells (``cell.forkserve``).
LAST_BUILD: Dict[str, Any] = {}


def imported_since(before: "set[str]") -> List[str]:
    """Modules imported since ``before`` that an import can load again by name: those with a file
    (not the modules a converter or dy2static makes in memory)."""
    found = []
    for name, module in list(sys.modules.items()):
        if name in before or module is None:
            continue
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None) if spec is not None else None
        if spec is not None and spec.name == name and origin and origin not in ("built-in", "frozen"):
            found.append(name)
    return found  # in the order they were first imported: the order a preload imports them again


def build(factory_path: str, paddle: Any, seed: int, where: str) -> Tuple[Any, List[Any]]:
    """Import the factory, seed Paddle, build; a factory that cannot be imported or returns the
    wrong thing is the matrix's fault: one line naming ``where``."""
    module_name, _, attr = factory_path.partition(":")
    before, started = set(sys.modules), time.perf_counter()
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"{where}: cannot import {module_name!r} ({exc}); install it or fix the module path.") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UserError(f"{where}: {module_name!r} has no callable {attr!r}; fix the function name.")
    paddle.seed(seed)
    try:
        with recording_construction(paddle):  # a source reproducer rebuilds the layers from these
            built = factory()
    except Exception as exc:
        exc.phase = "build"  # type: ignore[attr-defined]
        raise
    LAST_BUILD.clear()
    LAST_BUILD.update(factory=factory_path, modules=imported_since(before), seconds=round(time.perf_counter() - started, 3))
    if not (isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], paddle.nn.Layer)
            and isinstance(built[1], (list, tuple))):
        raise UserError(f"{where}: {factory_path} must return (paddle.nn.Layer, [InputSpec or dict of InputSpec]).")
    return built[0], list(built[1])


# Never the model's own: what every cell environment holds already, and the harness.
_OURS = {"paddlepaddle", "paddlepaddle-gpu", "numpy", "harness"}


def model_packages(layer: Any, factory_path: str) -> List[str]:
    """The installed distributions the model's code lives in — the modules of its layers' classes
    and of its factory — and every distribution they require that this environment holds, as pip
    requirements at this environment's versions (``name==version``; ``name @ url`` for one installed
    from a path or URL, as PEP 610 recorded it): what a release's environment installs, without
    resolving again (``--no-deps``), for a reproducer that builds the model's pieces (``harness
    releases``). A suite's own pins may not resolve at all (PaddleTS 1.1.0's do not build on
    Python 3.11, measured): what ran here is what is asked."""
    from importlib import metadata

    tops = {type(sub).__module__.partition(".")[0] for sub in layer.sublayers(include_self=True)}
    tops.add(factory_path.partition(":")[0].partition(".")[0])
    owners = metadata.packages_distributions()
    waiting = sorted({d for top in tops for d in owners.get(top, [])}, key=str.lower)
    seen: Dict[str, Any] = {}
    while waiting:
        name = _canonical(waiting.pop())
        if name in seen or name in _OURS:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a requirement this environment does without (an optional one): not asked either
        seen[name] = dist
        for requirement in dist.requires or []:
            if "extra ==" in requirement.replace('"', "").replace("'", ""):
                continue  # an extra the model's package was not installed with
            found = re.match(r"[A-Za-z0-9._-]+", requirement)
            if found:
                waiting.append(found.group(0))
    said = []
    for name in sorted(seen):
        dist = seen[name]
        direct = dist.read_text("direct_url.json")
        url = json.loads(direct).get("url") if direct else None
        said.append(f"{dist.metadata['Name']} @ {url}" if url else f"{dist.metadata['Name']}=={dist.version}")
    return said


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
