"""Cell side of ``python -m harness diff``: load the model, make inputs, dump and compare."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict

import numpy as np

from ..errors import UserError


def _inputs(compat: Any, files: Dict[str, str], request: Dict[str, Any]) -> Dict[str, np.ndarray]:
    if request.get("inputs"):
        return dict(np.load(request["inputs"]))
    predictor = compat.create_predictor(compat.make_config(files, device="cpu", onednn=False))
    rng = np.random.default_rng(request.get("seed", 0))
    feeds = {}
    for name in compat.input_names(predictor):
        handle = predictor.get_input_handle(name)
        shape = request["shapes"].get(name) or list(handle.shape())
        if any(d < 1 for d in shape):
            raise UserError(f"--shape: input {name!r} has free dims {list(handle.shape())}; "
                            f"give --shape {name}=D1,D2,... or --inputs FILE.npz.")
        dtype = str(handle.type()).split(".")[-1].lower()
        if "int" in dtype:
            feeds[name] = rng.integers(0, 2, size=shape).astype("int32" if "32" in dtype else "int64")
        else:
            feeds[name] = rng.standard_normal(size=shape).astype("float32")
    unknown = sorted(set(request["shapes"]) - set(feeds))
    if unknown:
        raise UserError(f"--shape: the model has no input named {unknown}; its inputs are {sorted(feeds)}.")
    return feeds


def main(request_path: Path, out: Path) -> int:
    request = json.loads(Path(request_path).read_text())
    try:
        from . import compat, layerwise

        candidates = [Path(p) for p in request["model"]["candidates"]]
        preferred = ".json" if compat.pir_default() else ".pdmodel"
        program = next((p for p in candidates if p.suffix == preferred), candidates[0])
        files = {"program": str(program), "params": str(program.with_suffix(".pdiparams")),
                 "format": "pir" if program.suffix == ".json" else "legacy"}
        feeds = _inputs(compat, files, request)
        result = layerwise.run_diff(files, feeds, request["base"], request["test"], Path(out) / "dump",
                                    {k: request[k] for k in ("atol", "rtol", "scaled_atol") if k in request},
                                    request.get("selection"))
    except UserError as exc:
        print(f"error: {exc}", flush=True)
        return 2
    result["program"] = files
    (Path(out) / "result.json").write_text(json.dumps(result, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
    return 0
