"""Read the layer outputs of a TensorRT engine from an inspector file (no paddle, no TensorRT).

Paddle's ``enable_tensorrt_inspector`` writes ``engine_info_*.json``: the engine as TensorRT's
IEngineInspector describes it. Its tensor names are the Paddle variables the engine's layers
produce, so they select the tensors to compare in a per-tensor diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

from .errors import UserError


def engine_output_names(path: Path) -> List[str]:
    """Output tensor names of every layer in a TensorRT inspector ``engine_info_*.json``.

    The inspector writes ``{"Layers": [...], "Bindings": [...]}`` (TensorRT <= 10) or ``"I/O
    Tensors"`` (11); with detailed verbosity each layer is an object with ``Outputs`` (each with
    a ``Name``); with names-only verbosity layers are plain strings, which name no tensor.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"--engine-info: {path} not found.") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"--engine-info: {path} is not JSON ({exc}).") from None
    layers = data.get("Layers") if isinstance(data, dict) else None
    if not isinstance(layers, list):
        raise UserError(f"--engine-info: {path} has no \"Layers\" list; is it a TensorRT inspector file?")
    names: List[str] = []
    for layer in layers:
        if isinstance(layer, dict):
            for output in layer.get("Outputs", []):
                name = output.get("Name") if isinstance(output, dict) else output
                if isinstance(name, str) and name not in names:
                    names.append(name)
    if not names:
        raise UserError(f"--engine-info: {path} names no layer outputs (built with names-only verbosity?); "
                        f"rebuild the engine with detailed profiling verbosity.")
    return names
