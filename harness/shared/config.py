"""What a stage asks its runtime to do, as a value: a ``StageConfig`` of the runtime's own type.

Paddle Inference's is ``PredictorConfig`` (here: the other runtimes' sessions start from Paddle's
export, and the baseline every session compares with is Paddle Inference's); every other runtime's
is defined by its descriptor (``harness.runtimes.<name>``), its own fields and nothing of another
runtime's. In records a config is its fields and ``runtime``, the runtime that
reads it (``Registry.config_from_dict`` turns a record's back into the type).

Plain data (no paddle) so that stage planning, records and the diff CLI share it; the cell side
turns a ``PredictorConfig`` into a ``paddle.inference.Config`` in exactly one place
(``harness.cell.paddle_api.config.make_config``) and reads the result back through Paddle's own
getters, because a call can be ignored.

``None`` means "not called" (the Paddle default stands); the record keeps the value as planned
and, beside it, what Paddle reported back.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional, Tuple

from .spec import DEFAULTS
from .json_types import JsonObject

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


class StageConfig:
    """A runtime's stage config (a frozen dataclass per runtime with at least ``device`` and
    ``threads``); ``runtime`` names it in records. ``schema2_key``: where a record of schema 2 kept
    it (beside Paddle's fields), so that such records still read."""

    runtime: ClassVar[str] = ""
    title: ClassVar[str] = ""  # how people name what it configures, in reports
    schema2_key: ClassVar[str] = ""
    device: str
    threads: int

    def replace(self, **changes: Any) -> "StageConfig":
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to_dict(self) -> JsonObject:
        return {"runtime": self.runtime,
                **{f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: JsonObject) -> "StageConfig":
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = set(data) - names - {"runtime"}
        if unknown:
            raise ValueError(f"unknown {cls.runtime} config keys {sorted(unknown)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names})


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclasses.dataclass(frozen=True)
class PredictorConfig(StageConfig):
    """A Paddle Inference predictor's config."""

    runtime: ClassVar[str] = "paddle_inference"
    title: ClassVar[str] = "Paddle Inference"
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
    # set_bfloat16_op: the op types oneDNN may run in bf16 (None: not called, every op it can). Whether
    # a version honours it is measured where it is used (``cell/fp32_ops``).
    bf16_ops: Optional[Tuple[str, ...]] = None

    def replace(self, **changes: Any) -> "PredictorConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> JsonObject:
        data: JsonObject = {"runtime": self.runtime, **dataclasses.asdict(self)}
        for key in ("fp32_ops", "deleted_passes"):
            data[key] = list(data[key])
        for key in ("onednn_ops", "bf16_ops"):
            if data[key] is not None:
                data[key] = list(data[key])
        if data["trt"] is not None:
            data["trt"]["disabled_ops"] = list(data["trt"]["disabled_ops"])
        return data

    @classmethod
    def from_dict(cls, data: JsonObject) -> "PredictorConfig":
        """A config from its record."""
        data = {k: v for k, v in data.items() if k != "runtime"}
        trt = data.pop("trt", None)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"unknown predictor config keys {sorted(unknown)}")
        for key in ("fp32_ops", "deleted_passes"):
            if key in data:
                data[key] = tuple(data[key])
        for key in ("onednn_ops", "bf16_ops"):
            if data.get(key) is not None:
                data[key] = tuple(data[key])
        if trt is not None:
            trt = TensorRT(**dict(trt, disabled_ops=tuple(trt.get("disabled_ops", ()))))
        return cls(trt=trt, **data)
