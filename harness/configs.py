"""Named predictor configurations for on-demand diffs (``python -m harness diff``).

Plain data (no paddle) so the host side can validate names; the cell side turns the knobs into
a ``paddle.inference.Config`` (``harness.cell.compat.make_config``). Session names mean the
configuration that session deploys, except ``cpu_fp32`` which, as a diff base, means Paddle's
plain CPU kernels with IR off: the reference every other config is measured against.
"""

from __future__ import annotations

from typing import Any, Dict

NAMED: Dict[str, Dict[str, Any]] = {
    "baseline": {"device": "cpu", "ir": False, "onednn": False, "threads": 1},
    "cpu_fp32": {"device": "cpu", "ir": False, "onednn": False, "threads": 1},
    "cpu_ir": {"device": "cpu", "ir": True, "onednn": False, "threads": 1},
    "cpu_onednn_fp32": {"device": "cpu", "ir": True, "onednn": True, "threads": 1},
    "cpu_onednn_bf16": {"device": "cpu", "ir": True, "onednn": True, "bf16": True, "threads": 1},
    "gpu_fp32": {"device": "gpu", "ir": True, "gpu_precision": "fp32"},
    "gpu_fp16": {"device": "gpu", "ir": True, "gpu_precision": "fp16"},
    "gpu_trt_fp32": {"device": "gpu", "ir": True, "trt": {"precision": "fp32"}},
    "gpu_trt_fp16": {"device": "gpu", "ir": True, "trt": {"precision": "fp16"}},
    "gpu_trt_int8": {"device": "gpu", "ir": True, "trt": {"precision": "int8"}},
}
