"""One predictor configuration as a value: what a stage asks Paddle Inference to do.

Plain data (no paddle) so that stage planning, records and the diff CLI share it; the cell side
turns it into a ``paddle.inference.Config`` in exactly one place (``compat.make_config``) and
reads the result back through Paddle's own getters, because a call can be ignored.

``None`` means "not called" (the Paddle default stands); the record keeps the value as planned
and, beside it, what Paddle reported back.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

from .spec import DEFAULTS

PRECISIONS = ("fp32", "fp16", "bf16", "int8")

# enable_use_gpu's first argument: the initial GPU memory pool in MB. Paddle grows the pool on
# demand, so this is a start size, not a cap; 100 is what Paddle's own deploy code passes.
GPU_INITIAL_MEMORY_MB = 100


@dataclasses.dataclass(frozen=True)
class TensorRT:
    """The TensorRT part of a GPU config (legacy subgraph engine or PIR ``paddle.tensorrt``)."""

    precision: str = "fp32"
    # Paddle's documented defaults; user-facing, so the matrix can override them ([run]).
    workspace_mb: int = DEFAULTS.trt_workspace_mb
    min_subgraph_size: int = DEFAULTS.trt_min_subgraph_size
    max_batch: int = 1
    # int8 on a quantized (QAT/PACT) program uses the model's scales; otherwise calibration.
    calibration: bool = False
    disabled_ops: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class OnnxRuntime:
    """An ONNX Runtime session on the program paddle2onnx converted: its graph optimization level
    (``disabled``, ``basic``, ``extended``, ``all``: ``GraphOptimizationLevel.ORT_*``) and threads."""

    level: str = "all"
    threads: int = 1
    disabled_optimizers: Tuple[str, ...] = ()


ORT_LEVELS = ("disabled", "basic", "extended", "all")


@dataclasses.dataclass(frozen=True)
class OpenVino:
    """An OpenVINO CPU compile of the program its Paddle frontend reads: the precision hint
    (``INFERENCE_PRECISION_HINT``; None: not set, OpenVINO's default, bf16 on bf16 CPUs) and
    threads (``INFERENCE_NUM_THREADS``)."""

    precision_hint: Optional[str] = None
    threads: int = 1


@dataclasses.dataclass(frozen=True)
class PredictorConfig:
    device: str = "cpu"
    # Legacy IR lever (``switch_ir_optim``); under PIR it does not decide which passes run.
    ir: bool = False
    # PIR lever (``set_optimization_level``, 3.x only); None: not called.
    opt_level: Optional[int] = None
    new_ir: Optional[bool] = None
    new_executor: Optional[bool] = None
    memory: bool = False
    onednn: bool = False
    bf16: bool = False
    # oneDNN int8 kernels for a quantized program (enable_mkldnn_int8).
    int8: bool = False
    threads: int = 1
    gpu_precision: str = "fp32"
    # exp_disable_mixed_precision_ops: ops kept in fp32 by a low-precision GPU predictor.
    fp32_ops: Tuple[str, ...] = ()
    trt: Optional[TensorRT] = None
    deleted_passes: Tuple[str, ...] = ()
    # set_mkldnn_op: the op types oneDNN may take (None: not called, every op). Whether a version
    # honours it is measured where it is used (under PIR 3.3.1 it changes nothing).
    onednn_ops: Optional[Tuple[str, ...]] = None
    # Not Paddle Inference: the program converted by paddle2onnx, run by ONNX Runtime.
    ort: Optional[OnnxRuntime] = None
    # Not Paddle Inference: the program read by OpenVINO's Paddle frontend, compiled for its CPU plugin.
    openvino: Optional[OpenVino] = None

    @property
    def low_precision(self) -> Optional[str]:
        """The low precision this config asks a backend to run in, or None for fp32."""
        if self.int8 or (self.trt is not None and self.trt.precision == "int8"):
            return "int8"
        if self.bf16 or (self.openvino is not None and self.openvino.precision_hint == "bf16"):
            return "bf16"
        if self.trt is not None and self.trt.precision != "fp32":
            return self.trt.precision
        if self.device == "gpu" and self.gpu_precision != "fp32":
            return self.gpu_precision
        return None

    def replace(self, **changes: Any) -> "PredictorConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> Dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("fp32_ops", "deleted_passes"):
            data[key] = list(data[key])
        if data["onednn_ops"] is not None:
            data["onednn_ops"] = list(data["onednn_ops"])
        if data["trt"] is not None:
            data["trt"]["disabled_ops"] = list(data["trt"]["disabled_ops"])
        if data["ort"] is not None:
            data["ort"]["disabled_optimizers"] = list(data["ort"]["disabled_optimizers"])
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "PredictorConfig":
        data = dict(data)
        trt = data.pop("trt", None)
        ort = data.pop("ort", None)
        openvino = data.pop("openvino", None)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"unknown predictor config keys {sorted(unknown)}")
        for key in ("fp32_ops", "deleted_passes"):
            if key in data:
                data[key] = tuple(data[key])
        if data.get("onednn_ops") is not None:
            data["onednn_ops"] = tuple(data["onednn_ops"])
        if trt is not None:
            trt = TensorRT(**dict(trt, disabled_ops=tuple(trt.get("disabled_ops", ()))))
        if ort is not None:
            ort = OnnxRuntime(**dict(ort, disabled_optimizers=tuple(ort.get("disabled_optimizers", ()))))
        openvino = OpenVino(**openvino) if openvino is not None else None
        return cls(trt=trt, ort=ort, openvino=openvino, **data)
