"""Deployment profiles, backends and the stage plan: plain code, testable without Paddle.

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
import enum
from typing import Dict, List, Optional, Tuple

from .config import OnnxRuntime, OpenVino, PredictorConfig, TensorRT
from .spec import DEFAULTS
from .vocab import ProgramFormat, Reference, Stage, backend_stage_name, session_name

PIR, LEGACY = ProgramFormat.PIR, ProgramFormat.LEGACY


def program_format(program: "str | object") -> str:
    """The IR a saved program is in, from its file: PIR ``.json`` or legacy ``.pdmodel``."""
    return PIR if str(program).endswith(".json") else LEGACY
# The optimization level Paddle's deploy code sets for PIR programs, and the lowest one.
PIR_DEPLOY_LEVEL = 3
PIR_LOWEST_LEVEL = 0

MEMORY_UNDER_PIR = (
    "no memory-optimization lever for PIR programs: with the new executor (which the PIR deploy "
    "profile enables) the predictor switches memory optimization off in its constructor "
    "(Paddle's analysis_predictor.cc), and without it enable_memory_optim() raises "
    "(Paddle issue 75496; probed as a hazard)"
)


class Requirement(str, enum.Enum):
    GPU = "a CUDA device visible to a CUDA build of Paddle"
    TENSORRT = "a Paddle build with TensorRT"
    PIR_TENSORRT = "paddle.tensorrt (Paddle 3.x GPU builds)"
    BF16_CPU = "a CPU with bfloat16 (AVX512-BF16 or AMX)"
    PADDLE2ONNX = ("paddle2onnx and what its optimizer imports (onnx, onnx-graphsurgeon, sympy) in the environment "
                   "(paddle2onnx 2.x for Paddle 3's PIR programs, 1.x for 2.6's .pdmodel)")
    ONNXRUNTIME = "onnxruntime in the environment"
    OPENVINO = "the openvino package in the environment"


class SearchSpace(str, enum.Enum):
    PASSES = "passes"
    TENSORRT_OPS = "tensorrt_ops"
    ORT_OPTIMIZERS = "ort_optimizers"  # ONNX Runtime's graph transformers and rewrite rules

    @property
    def verdict_words(self) -> str:
        """How a culprit reads in a verdict ("onednn_fp32 fails when pass X runs")."""
        return {SearchSpace.PASSES: "when pass {} runs", SearchSpace.TENSORRT_OPS: "when op type {} runs in TensorRT",
                SearchSpace.ORT_OPTIMIZERS: "when ONNX Runtime's optimizer {} runs"}[self]


@dataclasses.dataclass(frozen=True)
class StagePlan:
    name: str
    config: PredictorConfig
    precision: str
    reference: Reference  # what the stage's outputs are compared with
    lever: str  # the call(s) this stage adds to its reference, for the record and the README
    skip: Optional[str] = None  # the lever does not exist here: reason and source
    requires: Tuple[Requirement, ...] = ()
    search: Optional[SearchSpace] = None
    runtime: str = "paddle_inference"  # the cell side's runtime that runs it (harness.cell.runtimes)


@dataclasses.dataclass(frozen=True)
class DeployOptions:
    """The matrix's run settings a plan needs."""

    reference_threads: int = 1
    deploy_threads: int = 2
    trt_workspace_mb: int = DEFAULTS.trt_workspace_mb
    trt_min_subgraph_size: int = DEFAULTS.trt_min_subgraph_size


class Backend:
    """One deployment path: how its stage is configured, what it needs, what the search varies."""

    device = "cpu"
    word = "native"  # the session's backend word
    search: Optional[SearchSpace] = SearchSpace.PASSES
    precisions: Tuple[str, ...] = ("fp32",)

    def deploy(self, fmt: str, precision: str, options: DeployOptions) -> PredictorConfig:
        raise NotImplementedError

    def requires(self, fmt: str, precision: str) -> Tuple[Requirement, ...]:
        return ()

    def stage_name(self, precision: str) -> str:
        return backend_stage_name(self.device, self.word, precision)

    def _profile(self, fmt: str, **changes) -> PredictorConfig:
        base = dict(device=self.device, ir=True, memory=True)
        if fmt == PIR:
            base.update(new_ir=True, new_executor=True, opt_level=PIR_DEPLOY_LEVEL)
        base.update(changes)
        return PredictorConfig(**base)


class CpuNative(Backend):
    def deploy(self, fmt, precision, options):
        return self._profile(fmt, onednn=False, threads=options.deploy_threads)


class OneDNN(Backend):
    word = "onednn"
    precisions = ("fp32", "bf16", "int8")

    def deploy(self, fmt, precision, options):
        return self._profile(fmt, onednn=True, bf16=precision == "bf16", int8=precision == "int8",
                             threads=options.deploy_threads)

    def requires(self, fmt, precision):
        return (Requirement.BF16_CPU,) if precision == "bf16" else ()


class Gpu(Backend):
    device = "gpu"
    precisions = ("fp32", "fp16", "bf16")

    def deploy(self, fmt, precision, options):
        fp32_ops = ("feed", "fetch") if precision != "fp32" and fmt == PIR else ()
        return self._profile(fmt, gpu_precision=precision, fp32_ops=fp32_ops)

    def requires(self, fmt, precision):
        return (Requirement.GPU,)


class TensorRTLegacy(Gpu):
    """``enable_tensorrt_engine`` on ``.pdmodel`` programs, dynamic shapes from a collected
    shape-range file (``collect_shape_range_info`` + ``enable_tuned_tensorrt_dynamic_shape``)."""

    word = "trt"
    search = SearchSpace.TENSORRT_OPS
    precisions = ("fp32", "fp16", "int8")

    def deploy(self, fmt, precision, options):
        trt = TensorRT(precision=precision, workspace_mb=options.trt_workspace_mb,
                       min_subgraph_size=options.trt_min_subgraph_size, calibration=precision == "int8")
        return self._profile(fmt, gpu_precision="fp32", trt=trt)

    def requires(self, fmt, precision):
        return (Requirement.GPU, Requirement.TENSORRT)


class TensorRTPir(TensorRTLegacy):
    """PIR ``.json`` programs: ``paddle.tensorrt.convert`` (``enable_tensorrt_engine`` serves
    ``.pdmodel`` programs only in 3.x), then the pir/gpu profile on the converted program."""

    def requires(self, fmt, precision):
        return (Requirement.GPU, Requirement.TENSORRT, Requirement.PIR_TENSORRT)


class OnnxRuntimeCpu(Backend):
    """The program converted by paddle2onnx and run by ONNX Runtime's CPU execution provider: the
    path PaddleX's high-performance inference ranks among the CPU backends."""

    word = "ort"
    search = SearchSpace.ORT_OPTIMIZERS
    runtime = "onnxruntime"

    def deploy(self, fmt, precision, options):
        return PredictorConfig(device="cpu", ort=OnnxRuntime(level="all", threads=options.deploy_threads))

    def requires(self, fmt, precision):
        return (Requirement.PADDLE2ONNX, Requirement.ONNXRUNTIME)


ORT_CONVERT = "ort_convert"  # the conversion checked with ONNX Runtime's optimizations off


class OpenVinoCpu(Backend):
    """The program read by OpenVINO and compiled by its CPU plugin: the path PaddleX's
    high-performance inference ranks first on x86 CPUs for many models. OpenVINO's Paddle
    frontend reads legacy ``.pdmodel`` programs only (openvino 2026.4.1; OpenVINO issue #30911):
    a PIR program reaches it as deployments take it there, through the ONNX paddle2onnx makes."""

    word = "openvino"
    search = None
    runtime = "openvino"
    precisions = ("fp32", "bf16")

    def deploy(self, fmt, precision, options):
        # fp32 as deployments run it: OpenVINO's defaults (no precision hint), whose precision is
        # then read back; bf16 asked for explicitly.
        hint = "bf16" if precision == "bf16" else None
        return PredictorConfig(device="cpu", openvino=OpenVino(precision_hint=hint, threads=options.deploy_threads))

    def requires(self, fmt, precision):
        needs = (Requirement.OPENVINO, Requirement.PADDLE2ONNX) if fmt == PIR else (Requirement.OPENVINO,)
        return needs + ((Requirement.BF16_CPU,) if precision == "bf16" else ())

    @staticmethod
    def reads(fmt: str) -> str:
        """What OpenVINO reads of a program in ``fmt`` (the stage's lever says it)."""
        return ("the ONNX paddle2onnx converts the PIR program into (the path of PaddleX's high-performance "
                "inference; OpenVINO's Paddle frontend reads .pdmodel only)" if fmt == PIR else
                "the .pdmodel, through OpenVINO's Paddle frontend")


OV_CONVERT = "openvino_convert"  # the program as OpenVINO reads it, checked at an explicit f32 hint


DEVICES: Dict[str, Tuple[str, ...]] = {"cpu": ("native", "onednn", "ort", "openvino"), "gpu": ("native", "trt")}


def backend_for(device: str, word: str, fmt: str) -> Backend:
    if (device, word) == ("gpu", "trt"):
        return TensorRTPir() if fmt == PIR else TensorRTLegacy()
    return {("cpu", "native"): CpuNative, ("cpu", "onednn"): OneDNN, ("cpu", "ort"): OnnxRuntimeCpu,
            ("cpu", "openvino"): OpenVinoCpu, ("gpu", "native"): Gpu}[(device, word)]()


QUANTIZED_MODES = ("qat", "pact")
# Modes whose cell imports a package before paddle (cell/modes.py, Pact.before_paddle: PaddleSlim
# on 2.6.2 needs cv2 first): their workers get a fresh interpreter, never the fork server.
IMPORT_ORDER_MODES = ("pact",)


def plan_stages(device: str, word: str, precision: str, fmt: str, options: DeployOptions,
                quantized: bool = False) -> List[StagePlan]:
    """The stage ladder of one session for a program format, in order. ``quantized``: the program
    comes from a quantization-aware mode (QAT/PACT) and carries its own int8 scales."""
    backend = backend_for(device, word, fmt)
    pir = fmt == PIR
    # Under PIR switch_ir_optim does not choose the passes (the optimization level does), so
    # the PIR baseline keeps the deploy code's default (on) and lowers the level.
    baseline = PredictorConfig(device=device, ir=pir, memory=False, onednn=False,
                               threads=options.reference_threads,
                               new_ir=True if pir else None, new_executor=True if pir else None,
                               opt_level=PIR_LOWEST_LEVEL if pir else None)
    lowest = f"set_optimization_level({PIR_LOWEST_LEVEL})" if pir else "switch_ir_optim(False)"
    # A quantized program against its fake-quant dygraph model: the two implementations of the
    # same rounding disagree by a quantization step where a value sits near a rounding edge, and
    # that propagates (measured: 2% of the output's scale on resnet18, Paddle 2.6.2). They are
    # compared at the int8 tolerance; later stages compare float programs with each other at fp32.
    consistency = "int8" if quantized else "fp32"
    plans = [StagePlan(Stage.BASELINE.value, baseline, consistency, Reference.DYGRAPH,
                       f"{lowest}, memory optimization off, oneDNN off, {options.reference_threads} thread(s)",
                       requires=(Requirement.GPU,) if device == "gpu" else ())]
    if pir:
        memory = StagePlan(Stage.MEMORY.value, baseline.replace(memory=True), "fp32", Reference.BASELINE,
                           "enable_memory_optim()", skip=MEMORY_UNDER_PIR)
        ir = StagePlan(Stage.IR.value, baseline.replace(opt_level=PIR_DEPLOY_LEVEL), "fp32", Reference.BASELINE,
                       f"set_optimization_level({PIR_DEPLOY_LEVEL})", search=SearchSpace.PASSES)
    else:
        memory = StagePlan(Stage.MEMORY.value, baseline.replace(memory=True), "fp32", Reference.BASELINE,
                           "enable_memory_optim()")
        ir = StagePlan(Stage.IR.value, baseline.replace(memory=True, ir=True), "fp32", Reference.BASELINE,
                       "switch_ir_optim(True)", search=SearchSpace.PASSES)
    gpu_needs = (Requirement.GPU,) if device == "gpu" else ()
    if isinstance(backend, OnnxRuntimeCpu):
        # Another runtime: Paddle's own levers are not this deployment's. The conversion first,
        # with ONNX Runtime's graph optimizations off, then the runtime's optimizations on.
        deploy = backend.deploy(fmt, precision, options)
        skip = (f"{precision} is not a precision of the ONNX Runtime CPU sessions (fp32)" if precision != "fp32"
                else None)
        convert = deploy.replace(ort=OnnxRuntime(level="disabled", threads=options.reference_threads))
        return plans + [
            StagePlan(ORT_CONVERT, convert, "fp32", Reference.BASELINE,
                      "paddle2onnx.export, ONNX Runtime with GraphOptimizationLevel.ORT_DISABLE_ALL",
                      skip=skip, requires=backend.requires(fmt, precision), runtime=backend.runtime),
            StagePlan(backend.stage_name(precision), deploy, precision, Reference.BASELINE,
                      f"GraphOptimizationLevel.ORT_ENABLE_ALL, {options.deploy_threads} thread(s)", skip=skip,
                      requires=backend.requires(fmt, precision), runtime=backend.runtime, search=backend.search)]
    if isinstance(backend, OpenVinoCpu):
        deploy = backend.deploy(fmt, precision, options)
        skip = (f"{precision} is not a precision of the OpenVINO CPU sessions (fp32, bf16)"
                if precision not in backend.precisions else None)
        convert = deploy.replace(openvino=OpenVino(precision_hint="f32", threads=options.reference_threads))
        lever = ("INFERENCE_PRECISION_HINT=bf16" if precision == "bf16" else
                 "OpenVINO's defaults (no precision hint; the precision it ran is read back)")
        return plans + [
            StagePlan(OV_CONVERT, convert, "fp32", Reference.BASELINE,
                      f"openvino.Core().read_model on {backend.reads(fmt)}, compiled with INFERENCE_PRECISION_HINT=f32",
                      skip=skip, requires=backend.requires(fmt, "fp32"), runtime=backend.runtime),
            StagePlan(backend.stage_name(precision), deploy, precision, Reference.BASELINE,
                      f"{lever}, {options.deploy_threads} thread(s)", skip=skip,
                      requires=backend.requires(fmt, precision), runtime=backend.runtime)]
    plans += [dataclasses.replace(memory, requires=gpu_needs), dataclasses.replace(ir, requires=gpu_needs)]
    skip = None
    deploy = backend.deploy(fmt, precision, options)
    if precision not in backend.precisions:
        skip = f"{precision} is not a precision of the {device} {word} backend ({', '.join(backend.precisions)})"
    elif precision == "int8" and word == "onednn" and not quantized:
        skip = ("oneDNN int8 (enable_mkldnn_int8) runs quantized programs: train the model in a "
                f"quantization-aware mode ({', '.join(QUANTIZED_MODES)})")
    elif precision == "int8" and deploy.trt is not None and quantized:
        # A QAT/PACT program carries its scales: TensorRT int8 uses them, no calibration.
        deploy = deploy.replace(trt=dataclasses.replace(deploy.trt, calibration=False))
    plans.append(StagePlan(backend.stage_name(precision), deploy, precision,
                           Reference.BASELINE, "the deployment profile of the session", skip=skip,
                           requires=backend.requires(fmt, precision), search=backend.search))
    return plans


def plan_by_name(plans: List[StagePlan]) -> Dict[str, StagePlan]:
    return {p.name: p for p in plans}


def named_configs(fmt: str, options: DeployOptions) -> Dict[str, PredictorConfig]:
    """Configs the diff CLI accepts by name: the reference stages of a CPU session
    (``baseline``, ``memory``, ``ir``; ``cpu_fp32`` as a *base* means the baseline, as it always
    has) and every session's deployment profile under its session name."""
    named: Dict[str, PredictorConfig] = {}
    for device, words in DEVICES.items():
        for word in words:
            backend = backend_for(device, word, fmt)
            for precision in backend.precisions:
                named[session_name(device, word, precision)] = backend.deploy(fmt, precision, options)
    for plan in plan_stages("cpu", "native", "fp32", fmt, options)[:3]:
        named[plan.name] = plan.config
    named["cpu_ir"] = named["ir"]
    named["cpu_fp32"] = named["baseline"]
    return named


NAMED_CONFIGS = ("baseline", "memory", "ir", "cpu_ir", "cpu_fp32", "cpu_onednn_fp32", "cpu_onednn_bf16",
                 "gpu_fp32", "gpu_fp16", "gpu_bf16", "gpu_trt_fp32", "gpu_trt_fp16", "gpu_trt_int8")
