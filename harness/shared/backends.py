"""The stage ladder of a session: the Paddle baseline every session starts with (Paddle Inference's,
``harness.runtimes.paddle_inference``), then what the session's backend plans (its runtime's
descriptor, found by ``harness.runtimes``). Plain code, testable without Paddle."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..runtimes import REGISTRY
from ..runtimes.paddle_inference import PaddleBackend, baseline_plan
from .config import PredictorConfig
from .runtime import Backend, DeployOptions, LadderContext, StagePlan
from .vocab import Precision, ProgramFormat, session_name

PIR, LEGACY = ProgramFormat.PIR, ProgramFormat.LEGACY


def program_format(program: "str | object") -> str:
    """The IR a saved program is in, from its file: PIR ``.json`` or legacy ``.pdmodel``."""
    return PIR if str(program).endswith(".json") else LEGACY


def backend_for(device: str, word: str, fmt: str) -> Backend:
    return REGISTRY.backend(device, word, fmt)


def shared_step(device: str, word: str, precision: str) -> Optional[str]:
    """The step a backend's stages run that other backends run alike on the same program (a conversion
    into a format they all read: its requirement says so), in either program format, or None. Cells
    of one program whose sessions share it meet its failures alike: the pool runs the first of them
    before the others, which then take its analyses of such a failure (``cell.shared_setup``)."""
    for fmt in (PIR, LEGACY):
        for requirement in backend_for(device, word, fmt).requires(ProgramFormat(fmt), Precision(precision)):
            if requirement.shared_step:
                return requirement.key
    return None


def devices() -> Dict[str, Tuple[str, ...]]:
    """Every device's backend words (Paddle Inference's and every registered runtime's)."""
    return REGISTRY.devices()


def plan_stages(device: str, word: str, precision: str, fmt: str, options: DeployOptions,
                quantized: bool = False) -> List[StagePlan]:
    """The stage ladder of one session for a program format, in order: the Paddle baseline, then
    what the session's backend plans (its runtime's descriptor). ``quantized``: the program comes
    from a quantization-aware mode (QAT/PACT) and carries its own int8 scales."""
    backend = backend_for(device, word, fmt)
    baseline = baseline_plan(device, fmt, options, quantized)
    ladder = LadderContext(ProgramFormat(fmt), Precision(precision), options, baseline, quantized)
    return [baseline, *backend.stages(ladder)]


def plan_by_name(plans: List[StagePlan]) -> Dict[str, StagePlan]:
    return {p.name: p for p in plans}


def named_configs(fmt: str, options: DeployOptions) -> Dict[str, PredictorConfig]:
    """Configs the diff CLI accepts by name: the reference stages of a CPU session
    (``baseline``, ``memory``, ``ir``; ``cpu_fp32`` as a *base* means the baseline, as it always
    has) and every session's deployment profile under its session name."""
    named: Dict[str, PredictorConfig] = {}
    for device, words in devices().items():
        for word in words:
            backend = backend_for(device, word, fmt)
            if not isinstance(backend, PaddleBackend):  # the diff CLI runs Paddle Inference configs
                continue
            for precision in backend.precisions:
                named[session_name(device, word, precision)] = backend.deploy(fmt, precision, options)
    for plan in plan_stages("cpu", "native", "fp32", fmt, options)[:3]:
        named[plan.name] = plan.config
    named["cpu_ir"] = named["ir"]
    named["cpu_fp32"] = named["baseline"]
    return named


NAMED_CONFIGS = ("baseline", "memory", "ir", "cpu_ir", "cpu_fp32", "cpu_onednn_fp32", "cpu_onednn_bf16",
                 "gpu_fp32", "gpu_fp16", "gpu_bf16", "gpu_trt_fp32", "gpu_trt_fp16", "gpu_trt_int8")
