"""Inference runtimes behind one seam (cell side).

The ladder (``harness.cell.stages``) and the root cause (``harness.cell.analysis``) need from an
inference engine only what ``base.Runtime`` names: build a session for a stage's config (with the
evidence of the build), feed it by name and run it (with the evidence of what ran), say why a
requirement is unmet, offer its search spaces (what can be switched off one by one) and dump
per-tensor outputs. Paddle Inference (``paddle_inference.py``) is the first; everything it knows
about Paddle's versions stays in ``harness.cell.compat`` behind it.

Adding a runtime (ONNX Runtime through paddle2onnx, OpenVINO): one module here with a ``Runtime``
subclass, registered in ``RUNTIMES`` under the name stage plans carry (``StagePlan.runtime``), plus
its sessions in the matrix. Nothing else in the cell side changes.
"""

from __future__ import annotations

from typing import Dict, Type

from .base import Runtime, Session

RUNTIMES: Dict[str, str] = {
    # name -> "module:class", imported when a stage asks for it (a runtime's packages are only in
    # the environments of the sessions that use it)
    "paddle_inference": "harness.cell.runtimes.paddle_inference:PaddleInference",
    "onnxruntime": "harness.cell.runtimes.onnxruntime:OnnxRuntime",
    "openvino": "harness.cell.runtimes.openvino:OpenVino",
}
_LOADED: Dict[str, Runtime] = {}


def runtime(name: str) -> Runtime:
    """The runtime a stage plan names, one instance per process."""
    if name not in _LOADED:
        import importlib

        target = RUNTIMES.get(name)
        if target is None:
            raise KeyError(f"unknown runtime {name!r}; known: {', '.join(sorted(RUNTIMES))}")
        module, _, attr = target.partition(":")
        cls: Type[Runtime] = getattr(importlib.import_module(module), attr)
        _LOADED[name] = cls()
    return _LOADED[name]


__all__ = ["RUNTIMES", "Runtime", "Session", "runtime"]
