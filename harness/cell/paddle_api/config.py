"""A ``PredictorConfig`` as a ``paddle.inference.Config`` (the one place it becomes one), read
back through Paddle's getters, and TensorRT's shape collection and PIR conversion."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

from ...shared.config import GPU_INITIAL_MEMORY_MB, PredictorConfig, TensorRT
from ...shared.errors import Finding
from ...shared.vocab import ProgramFormat
from . import paddle, paddle_infer
from ...shared.json_types import JsonObject


_PRECISION = {
    "fp32": "Float32",
    "fp16": "Half",
    "bf16": "Bfloat16",
    "int8": "Int8",
}


def precision_type(precision: str) -> Any:
    return getattr(paddle_infer.PrecisionType, _PRECISION[precision])


class _Recorded:
    """A Config whose method calls are also written down as the plain Paddle code making them
    (what a reproducer replays: the same calls, in the same order, no harness)."""

    def __init__(self, config: Any, calls: List[str]):
        self._config, self._calls = config, calls

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._config, name)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            words = [_code(a) for a in args] + [f"{k}={_code(v)}" for k, v in kwargs.items()]
            self._calls.append(f"config.{name}({', '.join(words)})")
            return method(*args, **kwargs)

        return call


def _code(value: Any) -> str:
    if isinstance(value, paddle_infer.PrecisionType):
        return f"paddle.inference.{value}"  # e.g. PrecisionType.Half
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(repr(v) for v in value)) + "}" if value else "set()"
    return repr(value)


class _Spelling:
    """A stand-in Config whose every method does nothing: ``make_config`` run on it only spells its
    calls (a source reproducer's block for the other program format, whose calls may not exist in
    the Paddle writing it: 2.6.2 has no ``enable_new_ir``)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def make_config(files: Dict[str, str], cfg: PredictorConfig,
                input_shapes: Optional[Dict[str, Dict[str, List[int]]]] = None,
                shape_file: Optional[Path] = None, calls: Optional[List[str]] = None,
                spell_only: bool = False) -> "paddle_infer.Config":
    """The one place a ``PredictorConfig`` becomes a ``paddle.inference.Config``. ``input_shapes``:
    TensorRT's dynamic-shape profile per input (``{"min", "opt", "max"}``, from the shapes the
    cell runs: ``harness.shared.shapes.shape_range``); ``shape_file``: legacy TensorRT's dynamic
    shapes, collected by ``collect_shape_range``. ``calls``: when given, every call made on the
    config is appended to it as plain Paddle code."""
    if cfg.device == "gpu" and cfg.trt is not None and files.get("format") == ProgramFormat.PIR and not spell_only:
        files = pir_trt_convert(files, cfg.trt, input_shapes or {})
    # A program without parameters still names an (empty) params file: Config(path) alone reads
    # the path as a model directory (measured on 2.6.2 and 3.3.1).
    config = _Spelling() if spell_only else paddle_infer.Config(files["program"], files.get("params") or "")
    real = config
    if calls is not None:
        config = _Recorded(config, calls)
    config.switch_ir_optim(cfg.ir)
    if cfg.new_ir is not None:
        _require_method(config, "enable_new_ir")(cfg.new_ir)
    if cfg.new_executor is not None:
        config.enable_new_executor(cfg.new_executor)
    if cfg.opt_level is not None:
        _require_method(config, "set_optimization_level")(cfg.opt_level)
    if cfg.memory:
        config.enable_memory_optim()
    if cfg.device == "gpu":
        config.enable_use_gpu(GPU_INITIAL_MEMORY_MB, 0, precision_type(cfg.gpu_precision))
        if cfg.fp32_ops:
            config.exp_disable_mixed_precision_ops(set(cfg.fp32_ops))
        config.disable_mkldnn()
        if cfg.trt is not None and files.get("format") != ProgramFormat.PIR_TRT:
            _enable_trt(config, cfg.trt, input_shapes or {}, shape_file)
    else:
        config.disable_gpu()
        if cfg.onednn:
            config.enable_mkldnn()
            if cfg.bf16:
                config.enable_mkldnn_bfloat16()
                if cfg.bf16_ops is not None:
                    config.set_bfloat16_op(set(cfg.bf16_ops))
            if cfg.int8:
                config.enable_mkldnn_int8()
            if cfg.onednn_ops is not None:
                config.set_mkldnn_op(set(cfg.onednn_ops))
        else:
            config.disable_mkldnn()
        config.set_cpu_math_library_num_threads(cfg.threads)
    for name in cfg.deleted_passes:
        config.delete_pass(name)
    return real


def _require_method(config: Any, name: str):
    method = getattr(config, name, None)
    if method is None:
        raise Finding(f"Paddle {paddle.__version__} has no Config.{name}(); this stage's lever does not exist here")
    return method


def read_back(config: "paddle_infer.Config") -> JsonObject:
    """What Paddle says the config is, through its own getters (a call can be ignored)."""
    getters = {"ir_optim": "ir_optim", "onednn": "mkldnn_enabled", "use_gpu": "use_gpu",
               "gpu_memory_mb": "memory_pool_init_size_mb", "tensorrt_precision": "tensorrt_precision_mode",
               "tensorrt": "tensorrt_engine_enabled", "new_ir": "new_ir_enabled",
               "threads": "cpu_math_library_num_threads", "tensorrt_dynamic_shape": "tensorrt_dynamic_shape_enabled"}
    out: JsonObject = {}
    for key, getter in getters.items():
        fn = getattr(config, getter, None)
        if callable(fn):
            try:
                value = fn()
            except Exception:  # a getter that needs a GPU build raises on CPU wheels
                continue
            # Some getters answer pybind enums (PrecisionType): keep the record plain JSON.
            out[key] = value if isinstance(value, (bool, int, float, str)) else str(value)
    return out


def _enable_trt(config: "paddle_infer.Config", trt: TensorRT, shapes: Dict[str, Dict[str, List[int]]],
                shape_file: Optional[Path] = None) -> None:
    """TensorRT through the legacy subgraph engine (``.pdmodel`` programs), dynamic shapes from a
    collected shape-range file (``enable_tuned_tensorrt_dynamic_shape``) or, without one, the
    min/opt/max of the shapes the cell feeds.

    Written against Paddle's documented API; it has not run on a GPU here.
    """
    config.enable_tensorrt_engine(
        workspace_size=int(trt.workspace_mb) << 20,
        max_batch_size=int(trt.max_batch),
        min_subgraph_size=int(trt.min_subgraph_size),
        precision_mode=precision_type(trt.precision),
        use_static=False,
        use_calib_mode=trt.calibration,
    )
    if shape_file is not None:
        config.enable_tuned_tensorrt_dynamic_shape(str(shape_file), True)
    elif shapes:
        # Paddle's order: min, max, opt.
        config.set_trt_dynamic_shape_info({n: r["min"] for n, r in shapes.items()},
                                          {n: r["max"] for n, r in shapes.items()},
                                          {n: r["opt"] for n, r in shapes.items()})
    if trt.disabled_ops:
        # Legacy programs only; PIR programs go through paddle.tensorrt.convert(disable_ops=...).
        config.exp_disable_tensorrt_ops(list(trt.disabled_ops))


def pir_trt_convert(files: Dict[str, str], trt: TensorRT, shapes: Dict[str, Dict[str, List[int]]]) -> Dict[str, str]:
    """TensorRT for PIR programs (3.x): ``paddle.tensorrt.convert`` writes a program whose
    subgraphs are ``pd_op.tensorrt_engine`` ops; ``disable_ops`` keeps op types out of them.

    Written against Paddle's documented API (GPU builds only; the CPU wheel has no
    ``paddle.tensorrt``); it has not run on a GPU here.
    """
    from paddle.tensorrt.export import Input, PrecisionMode, TensorRTConfig, convert

    out = Path(tempfile.mkdtemp(prefix="harness-trt-"))
    args = pir_trt_arguments(trt, shapes)
    inputs = []
    for spec_args in args["inputs"]:
        spec_args = dict(spec_args)
        name = spec_args.pop("name")
        spec = Input(**spec_args)
        spec.name = name
        inputs.append(spec)
    config = TensorRTConfig(inputs=inputs, save_model_dir=str(out / "model"),
                            precision_mode=getattr(PrecisionMode, args["precision_mode"]),
                            min_subgraph_size=args["min_subgraph_size"], disable_ops=args["disable_ops"] or None,
                            workspace_size=args["workspace_size"])
    convert(str(Path(files["program"]).with_suffix("")), config)
    return {"program": str(out / "model.json"), "params": str(out / "model.pdiparams"), "format": ProgramFormat.PIR_TRT}


def pir_trt_arguments(trt: TensorRT, shapes: Dict[str, Dict[str, List[int]]]) -> Dict[str, Any]:
    """The arguments ``paddle.tensorrt`` gets, as data: one ``Input`` per feed with the min, opt and
    max of the shapes the cell runs, the precision, the smallest subgraph TensorRT takes, the op
    types kept out of engines (the culprit search's lever), the workspace."""
    return {
        "inputs": [{"name": name, "min_input_shape": tuple(r["min"]), "optim_input_shape": tuple(r["opt"]),
                    "max_input_shape": tuple(r["max"])} for name, r in shapes.items()],
        "precision_mode": trt.precision.upper(),
        "min_subgraph_size": trt.min_subgraph_size,
        "disable_ops": list(trt.disabled_ops),
        "workspace_size": int(trt.workspace_mb) << 20,
    }
