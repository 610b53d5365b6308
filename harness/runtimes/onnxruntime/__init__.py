"""ONNX Runtime's descriptor: the program converted by paddle2onnx and run by ONNX Runtime's CPU
execution provider, the path PaddleX's high-performance inference ranks among the CPU backends.

Stages after the Paddle baseline: ``ort_convert`` (the conversion checked with ONNX Runtime's graph
optimizations off), then ``ort_fp32`` (``ORT_ENABLE_ALL``, deploy threads), whose culprit search
switches ONNX Runtime's optimizers off one by one. Cell side: ``session`` (the runtime),
``tensor_diff``; the conversion is ``harness.runtimes.paddle2onnx`` (shared with OpenVINO at Paddle 3).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict, List, Optional, Tuple

from ...shared.config import StageConfig
from ...shared.runtime import Backend, LadderContext, Requirement, StagePlan, register, search_space
from ...shared.vocab import Precision, Reference
from ..paddle2onnx import PADDLE2ONNX

ONNXRUNTIME = Requirement("onnxruntime", "onnxruntime in the environment")
ORT_OPTIMIZERS = search_space("ort_optimizers", "ONNX Runtime optimizers", "when ONNX Runtime's optimizer {} runs")
ORT_CONVERT = "ort_convert"  # the conversion checked with ONNX Runtime's optimizations off
LEVELS = ("disabled", "basic", "extended", "all")  # GraphOptimizationLevel.ORT_*


@dataclasses.dataclass(frozen=True)
class OrtConfig(StageConfig):
    """An ONNX Runtime session on the converted program: its graph optimization level (``LEVELS``),
    threads, and the optimizers switched off by name (the culprit search's lever); and the
    conversion's own options (``opset``: None is paddle2onnx's default; ``converter_optimize``: its
    optimizer), which only a workaround changes."""

    runtime: ClassVar[str] = "onnxruntime"
    title: ClassVar[str] = "paddle2onnx and ONNX Runtime"
    schema2_key: ClassVar[str] = "ort"
    device: str = "cpu"
    level: str = "all"
    threads: int = 1
    disabled_optimizers: Tuple[str, ...] = ()
    opset: Optional[int] = None
    converter_optimize: bool = True


@register
class OnnxRuntimeCpu(Backend):
    word = "ort"
    runtime = "onnxruntime"
    cell = "harness.runtimes.onnxruntime.session:OnnxRuntime"
    search = ORT_OPTIMIZERS
    config = OrtConfig
    packages = ("onnxruntime", "paddle2onnx", "onnx")

    def deploy(self, fmt, precision, options):
        return OrtConfig(level="all", threads=options.deploy_threads)

    def requires(self, fmt, precision):
        return (PADDLE2ONNX, ONNXRUNTIME)

    def stages(self, ladder: LadderContext) -> List[StagePlan]:
        # Paddle's own levers are not this deployment's: the conversion first, with ONNX Runtime's
        # graph optimizations off, then the runtime's optimizations on.
        options, precision = ladder.options, ladder.precision
        deploy = self.deploy(ladder.fmt, precision, options)
        skip = self.unsupported(precision)
        convert = deploy.replace(level="disabled", threads=options.reference_threads)
        needs = self.requires(ladder.fmt, precision)
        return [StagePlan(ORT_CONVERT, convert, Precision.FP32, Reference.BASELINE,
                          "paddle2onnx.export, ONNX Runtime with GraphOptimizationLevel.ORT_DISABLE_ALL",
                          skip=skip, requires=needs),
                StagePlan(self.stage_name(precision), deploy, precision, Reference.BASELINE,
                          f"GraphOptimizationLevel.ORT_ENABLE_ALL, {options.deploy_threads} thread(s)", skip=skip,
                          requires=needs, search=self.search)]

    def evidence_note(self, evidence: Dict[str, Any]) -> Optional[str]:
        """The converted graph and what the session made of it."""
        if "converted" not in evidence:
            return None
        providers = ",".join(p.replace("ExecutionProvider", "") for p in evidence.get("providers") or []) or "?"
        return (f"opset {evidence.get('opset')}, {evidence['converted'].get('nodes')} → {evidence.get('ops', '?')} "
                f"nodes, {providers}")
