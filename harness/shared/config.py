"""One predictor configuration as a value: what a stage asks Paddle Inference to do.

Plain data (no paddle) so that stage planning, records and the diff CLI share it; the cell side
turns it into a ``paddle.inference.Config`` in exactly one place (``harness.cell.paddle_api.config.make_config``) and
reads the result back through Paddle's own getters, because a call can be ignored.

``None`` means "not called" (the Paddle default stands); the record keeps the value as planned
and, beside it, what Paddle reported back.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, ClassVar, Mapping, Optional, Tuple, Type

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


class RuntimeOptions:
    """A runtime's own part of a stage's config (a frozen dataclass per runtime, defined by its
    descriptor): ``key`` is the record's key for it."""

    key: ClassVar[str] = ""

    def to_dict(self) -> JsonObject:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: JsonObject) -> "RuntimeOptions":
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in kinds})


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


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
    # Another runtime's own options (its descriptor's RuntimeOptions): the stage is not run by
    # Paddle Inference, whose fields above then say nothing.
    runtime_options: Optional[RuntimeOptions] = None

    def replace(self, **changes: Any) -> "PredictorConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> JsonObject:
        data = dataclasses.asdict(self)
        for key in ("fp32_ops", "deleted_passes"):
            data[key] = list(data[key])
        if data["onednn_ops"] is not None:
            data["onednn_ops"] = list(data["onednn_ops"])
        if data["trt"] is not None:
            data["trt"]["disabled_ops"] = list(data["trt"]["disabled_ops"])
        data.pop("runtime_options")
        if self.runtime_options is not None:
            data[self.runtime_options.key] = self.runtime_options.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: JsonObject,
                  options_types: "Mapping[str, Type[RuntimeOptions]]" = MappingProxyType({})) -> "PredictorConfig":
        """A config from its record; ``options_types``: the runtimes' options by record key (the
        registry's ``config_from_dict`` passes them all)."""
        data = dict(data)
        trt = data.pop("trt", None)
        runtime_options = None
        for key, kind in options_types.items():
            value = data.pop(key, None)
            if value is not None:
                runtime_options = kind.from_dict(value)
        fields = {f.name for f in dataclasses.fields(cls)} - {"runtime_options"}
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
        return cls(trt=trt, runtime_options=runtime_options, **data)
