"""Paddle Inference's descriptor: its deployment profiles, backends and stage ladder, and the
baseline every session starts with. Plain code, testable without Paddle; its cell side is
``session`` (``paddle.inference.Config`` + ``create_predictor``, through ``harness.cell.paddle_api``).

**Deployment profile.** What Paddle's own deploy code configures for a program format on a
device (PaddleX's static inference and PaddleOCR's ``tools/infer/utility.py`` for PIR ``.json``
programs; PaddleClas' ``python/predict_*.py`` for legacy ``.pdmodel`` programs):

=========  =====================================================================================
pir, cpu   ``disable_gpu``, oneDNN on/off (+``enable_mkldnn_bfloat16``), threads,
           ``enable_new_ir``, ``enable_new_executor``, ``set_optimization_level(3)``,
           ``enable_memory_optim``
pir, gpu   ``enable_use_gpu(100, 0, precision)``, ``exp_disable_mixed_precision_ops({feed,
           fetch})`` below fp32, ``disable_mkldnn``, new IR, new executor, level 3, memory optim
legacy     ``switch_ir_optim(True)``, ``enable_memory_optim``, oneDNN on/off, threads (CPU) or
           ``enable_use_gpu`` (GPU); TensorRT through ``enable_tensorrt_engine``
pir, trt   ``paddle.tensorrt.convert`` writes a new program, loaded with the pir/gpu profile
=========  =====================================================================================

**Stages.** Each stage is the profile plus the one lever the stage is about, and the lever is
the one that really exists for the program's format (measured, see ``docs``/README):

* ``baseline``: lowest optimization on the session's device at fp32, oneDNN off, memory off,
  reference threads. Legacy: ``switch_ir_optim(False)``. PIR: ``set_optimization_level(0)``
  (``switch_ir_optim(False)`` runs the same passes as ``True`` under PIR).
* ``memory``: + ``enable_memory_optim``. Legacy only: for PIR programs the predictor turns memory
  optimization off when the new executor is on, and without the new executor the call raises:
  the stage is ``skip`` with that reason and its source.
* ``ir``: + the IR lever (legacy ``switch_ir_optim(True)``; PIR the deploy optimization level).
* the backend stage (``cpu_fp32``, ``onednn_bf16``, ``gpu_fp16``, ``trt_fp16``...): the full
  deployment profile of the session's backend, precision and deploy threads.

The capabilities a backend needs are named (``Requirement``) and checked on the cell side
against the Paddle build and the machine; an unmet one makes the stage ``skip`` with the reason.
"""

from __future__ import annotations

import dataclasses
from typing import List, Tuple

from ...shared.config import PredictorConfig, TensorRT
from ...shared.runtime import Backend, DeployOptions, LadderContext, Requirement, StagePlan, register, search_space
from ...shared.vocab import QUANTIZED_MODES, Device, Precision, ProgramFormat, Reference, Stage, runs_quantized_only

PIR, LEGACY = ProgramFormat.PIR, ProgramFormat.LEGACY

# The optimization level Paddle's deploy code sets for PIR programs, and the lowest one.
PIR_DEPLOY_LEVEL = 3
PIR_LOWEST_LEVEL = 0

MEMORY_UNDER_PIR = (
    "no memory-optimization lever for PIR programs: with the new executor (which the PIR deploy "
    "profile enables) the predictor switches memory optimization off in its constructor "
    "(Paddle's analysis_predictor.cc), and without it enable_memory_optim() raises "
    "(Paddle issue 75496; probed as a hazard)"
)


# Paddle's own requirements (another runtime's are in its descriptor).
GPU = Requirement("gpu", "a CUDA device visible to a CUDA build of Paddle")
TENSORRT = Requirement("tensorrt", "a Paddle build with TensorRT")
PIR_TENSORRT = Requirement("pir_tensorrt", "paddle.tensorrt (Paddle 3.x GPU builds)")
BF16_CPU = Requirement("bf16_cpu", "a CPU with bfloat16 (AVX512-BF16 or AMX)")

PASSES = search_space("passes", "IR passes", "when pass {} runs")
TENSORRT_OPS = search_space("tensorrt_ops", "TensorRT op types", "when op type {} runs in TensorRT")


class PaddleBackend(Backend):
    """A Paddle Inference backend: after the baseline, the memory and IR levers of the program's
    format, then the deployment profile of the session's backend and precision."""

    search = PASSES
    cell = "harness.runtimes.paddle_inference.session:PaddleInference"

    def stages(self, ladder: LadderContext) -> List[StagePlan]:
        gpu_needs = (GPU,) if self.device == Device.GPU else ()
        memory, ir = _levers(ladder.fmt, ladder.baseline.config)
        plans = [dataclasses.replace(memory, requires=gpu_needs), dataclasses.replace(ir, requires=gpu_needs)]
        return plans + [self._deploy_stage(ladder)]

    def _deploy_stage(self, ladder: LadderContext) -> StagePlan:
        precision = ladder.precision
        deploy = self.deploy(ladder.fmt, precision, ladder.options)
        skip = self.unsupported(precision)
        if skip is None and runs_quantized_only(self.word, precision) and not ladder.quantized:
            skip = ("oneDNN int8 (enable_mkldnn_int8) runs quantized programs: train the model in a "
                    f"quantization-aware mode ({', '.join(QUANTIZED_MODES)})")
        elif skip is None and precision == Precision.INT8 and deploy.trt is not None and ladder.quantized:
            # A QAT/PACT program carries its scales: TensorRT int8 uses them, no calibration.
            deploy = deploy.replace(trt=dataclasses.replace(deploy.trt, calibration=False))
        return StagePlan(self.stage_name(precision), deploy, precision, Reference.BASELINE,
                         "the deployment profile of the session", skip=skip,
                         requires=self.requires(ladder.fmt, precision), search=self.search,
                         dtypes_visible=deploy.trt is None)

    def _profile(self, fmt: str, **changes) -> PredictorConfig:
        base = dict(device=self.device.value, ir=True, memory=True)
        if fmt == PIR:
            base.update(new_ir=True, new_executor=True, opt_level=PIR_DEPLOY_LEVEL)
        base.update(changes)
        return PredictorConfig(**base)


def _levers(fmt: str, baseline: PredictorConfig) -> Tuple[StagePlan, StagePlan]:
    """The memory and IR stages of a program format: the levers that really exist for it."""
    if fmt == PIR:
        return (StagePlan(Stage.MEMORY.value, baseline.replace(memory=True), Precision.FP32, Reference.BASELINE,
                          "enable_memory_optim()", skip=MEMORY_UNDER_PIR),
                StagePlan(Stage.IR.value, baseline.replace(opt_level=PIR_DEPLOY_LEVEL), Precision.FP32,
                          Reference.BASELINE, f"set_optimization_level({PIR_DEPLOY_LEVEL})", search=PASSES))
    return (StagePlan(Stage.MEMORY.value, baseline.replace(memory=True), Precision.FP32, Reference.BASELINE,
                      "enable_memory_optim()"),
            StagePlan(Stage.IR.value, baseline.replace(memory=True, ir=True), Precision.FP32, Reference.BASELINE,
                      "switch_ir_optim(True)", search=PASSES))


@register
class CpuNative(PaddleBackend):
    def deploy(self, fmt, precision, options):
        return self._profile(fmt, onednn=False, threads=options.deploy_threads)


@register
class OneDNN(PaddleBackend):
    word = "onednn"
    precisions = (Precision.FP32, Precision.BF16, Precision.INT8)

    def deploy(self, fmt, precision, options):
        return self._profile(fmt, onednn=True, bf16=precision == Precision.BF16, int8=precision == Precision.INT8,
                             threads=options.deploy_threads)

    def requires(self, fmt, precision):
        return (BF16_CPU,) if precision == Precision.BF16 else ()


@register
class Gpu(PaddleBackend):
    device = Device.GPU
    precisions = (Precision.FP32, Precision.FP16, Precision.BF16)

    def deploy(self, fmt, precision, options):
        fp32_ops = ("feed", "fetch") if precision != Precision.FP32 and fmt == PIR else ()
        return self._profile(fmt, gpu_precision=Precision(precision).value, fp32_ops=fp32_ops)

    def requires(self, fmt, precision):
        return (GPU,)


@register
class TensorRTLegacy(Gpu):
    """``enable_tensorrt_engine`` on ``.pdmodel`` programs, dynamic shapes from a collected
    shape-range file (``collect_shape_range_info`` + ``enable_tuned_tensorrt_dynamic_shape``)."""

    word = "trt"
    search = TENSORRT_OPS
    precisions = (Precision.FP32, Precision.FP16, Precision.INT8)

    def deploy(self, fmt, precision, options):
        trt = TensorRT(precision=Precision(precision).value, workspace_mb=options.trt_workspace_mb,
                       min_subgraph_size=options.trt_min_subgraph_size, calibration=precision == Precision.INT8)
        return self._profile(fmt, gpu_precision="fp32", trt=trt)

    def requires(self, fmt, precision):
        return (GPU, TENSORRT)

    def for_format(self, fmt):
        return TensorRTPir() if fmt == PIR else self


class TensorRTPir(TensorRTLegacy):
    """PIR ``.json`` programs: ``paddle.tensorrt.convert`` (``enable_tensorrt_engine`` serves
    ``.pdmodel`` programs only in 3.x), then the pir/gpu profile on the converted program."""

    def requires(self, fmt, precision):
        return (GPU, TENSORRT, PIR_TENSORRT)

    def for_format(self, fmt):
        return self if fmt == PIR else TensorRTLegacy()


def baseline_plan(device: str, fmt: str, options: DeployOptions, quantized: bool = False) -> StagePlan:
    """The stage every session starts with: Paddle Inference at its lowest optimization on the
    session's device at fp32, compared with the dygraph forward (the consistency check)."""
    pir = fmt == PIR
    # Under PIR switch_ir_optim does not choose the passes (the optimization level does), so
    # the PIR baseline keeps the deploy code's default (on) and lowers the level.
    config = PredictorConfig(device=device, ir=pir, memory=False, onednn=False, threads=options.reference_threads,
                             new_ir=True if pir else None, new_executor=True if pir else None,
                             opt_level=PIR_LOWEST_LEVEL if pir else None)
    lowest = f"set_optimization_level({PIR_LOWEST_LEVEL})" if pir else "switch_ir_optim(False)"
    # A quantized program against its fake-quant dygraph model: the two implementations of the
    # same rounding disagree by a quantization step where a value sits near a rounding edge, and
    # that propagates (measured: 2% of the output's scale on resnet18, Paddle 2.6.2). They are
    # compared at the int8 tolerance; later stages compare float programs with each other at fp32.
    return StagePlan(Stage.BASELINE.value, config, Precision.FP32, Reference.DYGRAPH,
                     f"{lowest}, memory optimization off, oneDNN off, {options.reference_threads} thread(s)",
                     requires=(GPU,) if device == Device.GPU else (),
                     tolerance_of=Precision.INT8 if quantized else None)
