"""What produced a record (host side): a digest of each input of a cell, so that a rerun redoes a
cell whose model, matrix entry or harness changed since its record was written, and says why.

The parts: the model's source (the factory module's file contents, found without importing it —
the host imports no Paddle; for a TIPC capture, its saved program), the model's matrix entry (its
factory, inputs, family and that family's pinned packages), the session, the train mode, the
tolerances, the run's settings, the Paddle version and the harness version. A part that cannot be
read (a factory module not on this interpreter's path) is recorded as such and never counts as a
change: the record says it could not tell.
"""

from __future__ import annotations

import hashlib
import json
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any, Dict, Optional

from .. import __version__
from ..shared.record_model import CellRecord
from ..shared.spec import CellSpec

UNREADABLE = "unreadable:"
# Part name -> the words a rerun says when it changed.
CHANGES = {
    "model_source": "model source changed",
    "model_entry": "the model's matrix entry changed",
    "session": "the session changed",
    "mode": "the train mode's entry changed",
    "tolerances": "tolerances changed",
    "run": "the run settings changed (seed, steps, threads, timeouts)",
    "paddle": "the Paddle version changed",
    "harness": "the harness version changed",
}


def _sha(data: "bytes | str") -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


def _json(value: Any) -> str:
    return _sha(json.dumps(value, sort_keys=True, default=str))


def module_file(module: str) -> Optional[Path]:
    """The file of ``module`` as an import would find it on ``sys.path``, without importing it
    (nor its packages: a user's package may import Paddle at its top)."""
    parts = module.split(".")
    search = None
    spec = None
    for i in range(len(parts)):
        spec = PathFinder.find_spec(".".join(parts[:i + 1]), search)
        if spec is None:
            return None
        search = spec.submodule_search_locations
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and Path(origin).is_file() else None


def model_source(model: Dict[str, Any]) -> str:
    """The digest of the model's own code: its factory module file, or a capture's program."""
    if model.get("capture"):
        programs = sorted(Path(model["capture"]).glob("export/*")) if Path(model["capture"]).is_dir() else []
        return _sha(b"".join(p.read_bytes() for p in programs if p.is_file())) if programs else f"{UNREADABLE} capture"
    module = str(model.get("factory", "")).partition(":")[0]
    path = module_file(module) if module else None
    if path is None:
        return f"{UNREADABLE} {module or '?'} is not on this interpreter's path"
    return f"{path.name}:{_sha(path.read_bytes())}"


def digest(spec: CellSpec) -> Dict[str, str]:
    """Every part of what produces the cell's record, each as a short digest."""
    run = {k: getattr(spec, k) for k in ("seed", "train_steps", "reference_threads", "deploy_threads",
                                         "stage_timeout", "trt_workspace_mb", "trt_min_subgraph_size")}
    return {
        "model_source": model_source(spec.model),
        "model_entry": _json({k: v for k, v in spec.model.items() if k != "capture"}),
        "session": _json({"session": spec.session.to_dict(), "stages": spec.stages}),
        "mode": _json({"mode": spec.mode, "packages": spec.mode_packages, "device": spec.mode_requires_device}),
        "tolerances": _json({"tolerances": spec.tolerances, "outputs": spec.output_tolerances}),
        "run": _json(run),
        "paddle": spec.paddle,
        "harness": __version__,
    }


def why_redo(record: CellRecord, now: Dict[str, str]) -> Optional[str]:
    """Why a cell's record no longer describes what is on disk, or None when it still does."""
    then = record.cell.produced_by
    if not isinstance(then, dict):
        return "its record does not say what produced it (an older harness)"
    changed = [CHANGES.get(part, f"{part} changed") for part, value in now.items()
               if then.get(part) != value and not str(value).startswith(UNREADABLE)
               and not str(then.get(part, "")).startswith(UNREADABLE)]
    return "; ".join(changed) or None
