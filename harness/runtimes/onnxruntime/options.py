"""A stage's ``OrtOptions`` as ONNX Runtime's own ``SessionOptions`` (cell side)."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from ...shared.config import PredictorConfig
from . import OrtOptions

# The descriptor's levels as ONNX Runtime's GraphOptimizationLevel members.
LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
          "all": "ORT_ENABLE_ALL"}


def ort_options(config: PredictorConfig) -> OrtOptions:
    options = config.runtime_options
    if not isinstance(options, OrtOptions):
        raise TypeError(f"an ONNX Runtime stage's config carries {type(options).__name__}, not OrtOptions")
    return options


def session_options(config: PredictorConfig) -> Tuple[Any, Dict[str, Any]]:
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
