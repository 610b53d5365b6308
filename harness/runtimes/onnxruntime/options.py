"""A stage's ``OrtConfig`` as ONNX Runtime's own ``SessionOptions`` (cell side)."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from ...shared.config import StageConfig
from . import OrtConfig

# The descriptor's levels as ONNX Runtime's GraphOptimizationLevel members.
LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
          "all": "ORT_ENABLE_ALL"}


def ort_options(config: StageConfig) -> OrtConfig:
    """A stage's config as ONNX Runtime's (a plan that hands it another runtime's is the harness's fault)."""
    if not isinstance(config, OrtConfig):
        raise TypeError(f"an ONNX Runtime stage was planned with a {type(config).__name__}, not an OrtConfig")
    return config


def session_options(config: StageConfig) -> Tuple[Any, Dict[str, Any]]:
    """The SessionOptions and InferenceSession keywords of a stage's config (``config_calls``
    writes the same as code for reproducers)."""
    import onnxruntime as ort

    ours = ort_options(config)
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[ours.level])
    options.intra_op_num_threads = ours.threads
    options.inter_op_num_threads = 1
    kwargs = {"disabled_optimizers": list(ours.disabled_optimizers)} if ours.disabled_optimizers else {}
    return options, kwargs
