"""OpenVINO's descriptor: the program read by OpenVINO and compiled by its CPU plugin, the path
PaddleX's high-performance inference ranks first on x86 CPUs for many models.

OpenVINO's Paddle frontend reads legacy ``.pdmodel`` programs only (openvino 2026.4.1; OpenVINO
issue #30911): a PIR program reaches it as deployments take it there, through the ONNX paddle2onnx
makes (ONNX Runtime's conversion, hence its ``PADDLE2ONNX`` requirement). Stages after the Paddle
baseline: ``openvino_convert`` (the program as OpenVINO reads it, at an explicit f32 hint), then
``openvino_<precision>``. Cell side: ``session``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict, List, Optional

from ...shared.config import StageConfig
from ...shared.runtime import Backend, LadderContext, Requirement, StagePlan, register
from ...shared.vocab import Precision, ProgramFormat, Reference
from ..paddle2onnx import PADDLE2ONNX
from ..paddle_inference import BF16_CPU

OPENVINO = Requirement("openvino", "the openvino package in the environment")
OV_CONVERT = "openvino_convert"  # the program as OpenVINO reads it, checked at an explicit f32 hint


@dataclasses.dataclass(frozen=True)
class OpenVinoConfig(StageConfig):
    """A CPU compile: the precision hint (``INFERENCE_PRECISION_HINT``; None: not set, OpenVINO's
    default, bf16 on bf16 CPUs) and threads (``INFERENCE_NUM_THREADS``); at Paddle 3, the options of
    paddle2onnx's conversion it reads (as ``OrtConfig``'s: only a workaround changes them)."""

    runtime: ClassVar[str] = "openvino"
    title: ClassVar[str] = "OpenVINO"
    schema2_key: ClassVar[str] = "openvino"
    device: str = "cpu"
    precision_hint: Optional[str] = None
    threads: int = 1
    opset: Optional[int] = None
    converter_optimize: bool = True


@register
class OpenVinoCpu(Backend):
    word = "openvino"
    runtime = "openvino"
    cell = "harness.runtimes.openvino.session:OpenVino"
    precisions = (Precision.FP32, Precision.BF16)
    config = OpenVinoConfig
    packages = ("openvino", "paddle2onnx", "onnx")

    def deploy(self, fmt, precision, options):
        # fp32 as deployments run it: OpenVINO's defaults (no precision hint), whose precision is
        # then read back; bf16 asked for explicitly.
        hint = "bf16" if precision == Precision.BF16 else None
        return OpenVinoConfig(precision_hint=hint, threads=options.deploy_threads)

    def requires(self, fmt, precision):
        needs = (OPENVINO, PADDLE2ONNX) if fmt == ProgramFormat.PIR else (OPENVINO,)
        return needs + ((BF16_CPU,) if precision == Precision.BF16 else ())

    @staticmethod
    def reads(fmt: str) -> str:
        """What OpenVINO reads of a program in ``fmt`` (the stage's lever says it)."""
        return ("the ONNX paddle2onnx converts the PIR program into (the path of PaddleX's high-performance "
                "inference; OpenVINO's Paddle frontend reads .pdmodel only)" if fmt == ProgramFormat.PIR else
                "the .pdmodel, through OpenVINO's Paddle frontend")

    def stages(self, ladder: LadderContext) -> List[StagePlan]:
        fmt, options, precision = ladder.fmt, ladder.options, ladder.precision
        deploy = self.deploy(fmt, precision, options)
        skip = self.unsupported(precision)
        convert = deploy.replace(precision_hint="f32", threads=options.reference_threads)
        lever = ("INFERENCE_PRECISION_HINT=bf16" if precision == Precision.BF16 else
                 "OpenVINO's defaults (no precision hint; the precision it ran is read back)")
        return [StagePlan(OV_CONVERT, convert, Precision.FP32, Reference.BASELINE,
                          f"openvino.Core().read_model on {self.reads(fmt)}, compiled with INFERENCE_PRECISION_HINT=f32",
                          skip=skip, requires=self.requires(fmt, Precision.FP32)),
                StagePlan(self.stage_name(precision), deploy, precision, Reference.BASELINE,
                          f"{lever}, {options.deploy_threads} thread(s)", skip=skip,
                          requires=self.requires(fmt, precision))]

    def evidence_note(self, evidence: Dict[str, Any]) -> Optional[str]:
        """What the plugin's nodes ran in."""
        if "runtime_precisions" not in evidence:
            return None
        hint = (evidence.get("config_read_back") or {}).get("INFERENCE_PRECISION_HINT")
        ran = ", ".join(f"{v} {k}" for k, v in sorted(evidence["runtime_precisions"].items()) if k != "?")
        return f"hint {hint}; {evidence.get('ops', '?')} nodes: {ran}"
