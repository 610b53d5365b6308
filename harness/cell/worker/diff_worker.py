"""Cell side of ``python -m harness diff``: load the model, make inputs, dump and compare.

Exit 0 done; 2 bad input (one ``error: ...`` line: a model file Paddle cannot read, an input
the model does not have); anything else: the process died.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, Dict

import numpy as np

from ...runtimes.paddle_inference import BF16_CPU, GPU, TENSORRT
from ...shared.backends import DeployOptions, named_configs, program_format
from ...shared.compare import Tolerance
from ...shared.causes import paddle_message
from ...shared.errors import UserError
from ...shared.inputs import InputSpec, synthesize


def _inputs(predictor: Any, request: Dict[str, Any]) -> Dict[str, np.ndarray]:
    if request.get("inputs"):
        return dict(np.load(request["inputs"]))
    specs = []
    for name in predictor.get_input_names():
        handle = predictor.get_input_handle(name)
        shape = request["shapes"].get(name) or list(handle.shape())
        if any(d < 1 for d in shape):
            raise UserError(f"--shape: input {name!r} has free dims {list(handle.shape())}; "
                            f"give --shape {name}=D1,D2,... or --inputs FILE.npz.")
        dtype = str(handle.type()).split(".")[-1].lower()
        specs.append(InputSpec(name, shape, ("int32" if "32" in dtype else "int64") if "int" in dtype else "float32"))
    unknown = sorted(set(request["shapes"]) - {s.name for s in specs})
    if unknown:
        raise UserError(f"--shape: the model has no input named {unknown}; its inputs are {sorted(s.name for s in specs)}.")
    return synthesize(specs, request.get("seed", 0))


def _unmet(config: Any) -> str:
    from ..paddle_api import unmet

    needs = []
    if config.bf16:
        needs.append(BF16_CPU)
    if config.device == "gpu":
        needs.append(GPU)
    if config.trt is not None:
        needs.append(TENSORRT)
    return "; ".join(filter(None, (unmet(n) for n in needs)))


def main(request_path: Path, out: Path) -> int:
    request = json.loads(Path(request_path).read_text())
    try:
        from ..anatomy import layerwise
        from ..paddle_api import pir_default
        from ..paddle_api.config import make_config
        from ..paddle_api.predictor import create_predictor

        candidates = [Path(p) for p in request["model"]["candidates"]]
        preferred = ".json" if pir_default() else ".pdmodel"
        program = next((p for p in candidates if p.suffix == preferred), candidates[0])
        files = {"program": str(program), "params": str(program.with_suffix(".pdiparams")),
                 "format": program_format(program)}
        named = named_configs(files["format"], DeployOptions())
        try:
            probe = create_predictor(make_config(files, named["baseline"]))
        except Exception as exc:  # a truncated or corrupt file: the user's input, in Paddle's words
            raise UserError(f"--model-dir: Paddle cannot load {program.name} with {Path(files['params']).name} "
                            f"({paddle_message(exc)}); re-export the model or point at an intact copy.") from None
        feeds = _inputs(probe, request)
        del probe
        unmet = {side: reason for side, reason in
                 ((side, _unmet(named[request[f"{side}_name"]])) for side in ("base", "test")) if reason}
        result = layerwise.run_diff(files, feeds, named[request["base_name"]], named[request["test_name"]],
                                    Path(out) / "dump",
                                    Tolerance.of({k: request[k] for k in ("atol", "rtol", "scaled_atol") if k in request}),
                                    request.get("selection"))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    # A config whose requirement this machine lacks runs something else than its name says
    # (bf16 without a bf16 CPU runs fp32): the result says so instead of looking clean.
    layerwise.write_result(Path(out) / "result.json", dataclasses.replace(result, program=files, unmet=unmet))
    return 0
