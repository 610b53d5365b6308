"""The one place that knows how Paddle releases differ (cell side).

Nothing else in the harness looks at ``paddle.__version__``: every difference between
2.6 and 3.x that the harness depends on is a function here. The differences, as measured
(see the project docs):

* export format: 2.6 writes ``<prefix>.pdmodel``; 3.x (PIR on by default) writes
  ``<prefix>.json``. Both come with ``<prefix>.pdiparams``.
* ``Config(dir, prefix)`` resolves the files in 3.x but in 2.6 treats its two arguments
  as file paths (and dies with ``std::bad_alloc``): always pass explicit files.
* ``to_static(full_graph=True)`` is needed for a whole-graph export in 2.6 and 3.x alike
  (2.6 takes it through ``**kwargs``).
* output names: ``save_infer_model/scale_N.tmp_M`` (2.6) or ``fetch_name_N`` (3.x); in both
  the outputs follow Paddle's flattening of the forward's return value (dicts in sorted
  key order), which is what the harness matches on.
* CPU predictors run oneDNN unless ``disable_mkldnn()`` is called; under PIR even
  ``switch_ir_optim(False)`` runs oneDNN passes, so a true baseline disables oneDNN.
"""

from __future__ import annotations

import contextlib
import importlib
import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

# glog INFO lines would bury the worker's log; set before Paddle's native side starts.
os.environ.setdefault("GLOG_minloglevel", "1")

import paddle  # noqa: E402
import paddle.inference as paddle_infer  # noqa: E402

from ..shared.backends import Requirement, program_format  # noqa: E402
from ..shared.config import GPU_INITIAL_MEMORY_MB, PredictorConfig, TensorRT  # noqa: E402
from ..shared.errors import Finding  # noqa: E402
from ..shared.spec import release  # noqa: E402
from ..shared.vocab import ProgramFormat  # noqa: E402


def _version_tuple() -> Tuple[int, int, int]:
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", paddle.__version__)
    if not match:  # develop builds report 0.0.0
        return (99, 0, 0)
    return tuple(int(g) for g in match.groups())  # type: ignore[return-value]


VERSION = _version_tuple()


def at_least(lowest: Optional[str]) -> bool:
    """Whether this Paddle is at least release ``lowest`` (e.g. "3.0.0"; None: any)."""
    return not lowest or VERSION >= release(lowest)


def pir_default() -> bool:
    """Whether ``jit.save`` writes a PIR program (``.json``) by default."""
    if VERSION < (3, 0, 0):
        return False
    flag = paddle.get_flags(["FLAGS_enable_pir_api"]).get("FLAGS_enable_pir_api")
    return bool(flag)


def paddle_info() -> Dict[str, Any]:
    """Version and build facts recorded in every result."""
    version = paddle.version
    info: Dict[str, Any] = {
        "version": paddle.__version__,
        "commit": getattr(version, "commit", None),
        "with_cuda": bool(paddle.is_compiled_with_cuda()),
        "pir": pir_default(),
    }
    for key, getter in (("cuda", "cuda"), ("cudnn", "cudnn"), ("tensorrt", "tensorrt")):
        fn = getattr(version, getter, None)
        try:
            value = fn() if callable(fn) else None
        except Exception:  # some builds raise instead of answering "False"
            value = None
        info[key] = _answered(value)
    try:
        info["with_mkldnn"] = bool(paddle.base.core.is_compiled_with_mkldnn())
    except AttributeError:
        info["with_mkldnn"] = None
    return info


def onednn_info() -> Optional[Dict[str, Any]]:
    """The ISA oneDNN chose on this machine, from the oneDNN library Paddle ships
    (``dnnl_get_effective_cpu_isa``, the same ISA ``ONEDNN_VERBOSE`` prints, and it honours
    ``ONEDNN_MAX_CPU_ISA``), with oneDNN's version. None when this build has no oneDNN library
    to ask; the reason is then in ``error``."""
    import ctypes
    import glob

    libs = os.path.join(os.path.dirname(paddle.__file__), "libs")
    found = sorted(glob.glob(os.path.join(libs, "libdnnl.so*")) + glob.glob(os.path.join(libs, "libmkldnn.so*")))
    for path in found:
        try:
            lib = ctypes.CDLL(path)
            effective = lib.dnnl_get_effective_cpu_isa
        except (OSError, AttributeError):
            continue
        effective.restype = ctypes.c_int
        isa = effective()
        name = None
        to_str = getattr(lib, "dnnl_cpu_isa2str", None)
        if to_str is not None:
            to_str.restype, to_str.argtypes = ctypes.c_char_p, [ctypes.c_int]
            raw = to_str(isa)
            name = raw.decode() if raw else None
        version = None
        get_version = getattr(lib, "dnnl_version", None)
        if get_version is not None:
            get_version.restype = ctypes.POINTER(ctypes.c_int * 3)
            version = ".".join(str(v) for v in get_version().contents)
        return {"isa": (name or hex(isa)).replace("cpu_isa_", ""), "isa_code": hex(isa), "version": version,
                "library": os.path.basename(path)}
    return {"isa": None, "error": f"no oneDNN library answering dnnl_get_effective_cpu_isa in {libs}"}


def machine() -> Dict[str, Any]:
    """The machine block of the record, seen from inside this Paddle environment."""
    from ..shared.machine import describe

    return describe(onednn_info())


def _answered(value: Any) -> Optional[str]:
    """A ``paddle.version`` answer, or None where the build says "none" in one of its ways
    (False, "False", "None", "", measured on the 2.6-3.3 CPU wheels)."""
    return None if value in (None, False, "", "False", "None", "0") else str(value)


def gpu_available() -> bool:
    if not paddle.is_compiled_with_cuda():
        return False
    try:
        return paddle.device.cuda.device_count() > 0
    except Exception:
        return False


def trt_available() -> bool:
    return gpu_available() and _has_trt()


def bf16_supported() -> bool:
    """Whether oneDNN bfloat16 really runs here.

    Without AVX512-BF16/AMX (or AVX512 emulation) ``enable_mkldnn_bfloat16()`` only logs
    "CPU does not support BFLOAT16 calculations" and the predictor runs fp32: a bf16
    stage on such a CPU would compare fp32 with fp32 and pass for nothing.
    """
    core = paddle.base.core if hasattr(paddle, "base") else paddle.fluid.core
    check = getattr(core, "supports_bfloat16", None)
    return bool(check()) if callable(check) else False


def _has_trt() -> bool:
    """``paddle.version.tensorrt()`` answers a version string, or the *string* "None" on builds
    without TensorRT (a plain truth test would call that a TensorRT build)."""
    fn = getattr(paddle.version, "tensorrt", None)
    try:
        value = fn() if callable(fn) else None
    except Exception:
        return False
    return _answered(value) is not None


# -- export -------------------------------------------------------------

def export(layer: "paddle.nn.Layer", input_spec: List[Any], prefix: Path) -> Dict[str, str]:
    """to_static + jit.save, once per cell; returns the files that were written."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    static = paddle.jit.to_static(layer, input_spec=input_spec, full_graph=True)
    paddle.jit.save(static, str(prefix))
    return model_files(prefix)


def model_files(prefix: Path) -> Dict[str, str]:
    """The program and params files behind ``prefix`` (PIR ``.json`` or legacy ``.pdmodel``)."""
    prefix = Path(prefix)
    params = prefix.with_name(prefix.name + ".pdiparams")
    candidates = [prefix.with_name(prefix.name + ".json"), prefix.with_name(prefix.name + ".pdmodel")]
    if not pir_default():
        candidates.reverse()
    for program in candidates:
        if program.exists():
            return {
                "program": str(program),
                "params": str(params) if params.exists() else "",
                "format": program_format(program),
            }
    raise Finding(f"jit.save wrote no {prefix.name}.json or {prefix.name}.pdmodel in {prefix.parent}")


# -- capabilities ---------------------------------------------------------

def unmet(requirement: "Requirement") -> Optional[str]:
    """Why this build or machine cannot meet a backend's requirement, or None."""
    if requirement is Requirement.GPU and not gpu_available():
        return ("no CUDA device visible to this Paddle build (paddle.is_compiled_with_cuda() is "
                f"{paddle.is_compiled_with_cuda()} or the device count is 0)")
    if requirement is Requirement.TENSORRT and not _has_trt():
        return "this Paddle build has no TensorRT (paddle.version.tensorrt() is empty)"
    if requirement is Requirement.PIR_TENSORRT:
        try:
            importlib.import_module("paddle.tensorrt")
        except ImportError as exc:
            return f"this Paddle build has no paddle.tensorrt ({exc})"
    if requirement is Requirement.BF16_CPU and not bf16_supported():
        return ("this CPU does not support bfloat16 (paddle supports_bfloat16() is False); "
                "enable_mkldnn_bfloat16 would silently run fp32")
    return None


# -- predictor configs ---------------------------------------------------

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


def make_config(files: Dict[str, str], cfg: PredictorConfig,
                input_shapes: Optional[Dict[str, Dict[str, List[int]]]] = None,
                shape_file: Optional[Path] = None, calls: Optional[List[str]] = None) -> "paddle_infer.Config":
    """The one place a ``PredictorConfig`` becomes a ``paddle.inference.Config``. ``input_shapes``:
    TensorRT's dynamic-shape profile per input (``{"min", "opt", "max"}``, from the shapes the
    cell runs: ``harness.shared.shapes.shape_range``); ``shape_file``: legacy TensorRT's dynamic
    shapes, collected by ``collect_shape_range``. ``calls``: when given, every call made on the
    config is appended to it as plain Paddle code."""
    if cfg.device == "gpu" and cfg.trt is not None and files.get("format") == ProgramFormat.PIR:
        files = pir_trt_convert(files, cfg.trt, input_shapes or {})
    # A program without parameters still names an (empty) params file: Config(path) alone reads
    # the path as a model directory (measured on 2.6.2 and 3.3.1).
    config = paddle_infer.Config(files["program"], files.get("params") or "")
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


def read_back(config: "paddle_infer.Config") -> Dict[str, Any]:
    """What Paddle says the config is, through its own getters (a call can be ignored)."""
    getters = {"ir_optim": "ir_optim", "onednn": "mkldnn_enabled", "use_gpu": "use_gpu",
               "gpu_memory_mb": "memory_pool_init_size_mb", "tensorrt_precision": "tensorrt_precision_mode",
               "tensorrt": "tensorrt_engine_enabled", "new_ir": "new_ir_enabled",
               "threads": "cpu_math_library_num_threads", "tensorrt_dynamic_shape": "tensorrt_dynamic_shape_enabled"}
    out: Dict[str, Any] = {}
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


def collect_shape_range(files: Dict[str, str], cfg: PredictorConfig, feeds: "Dict[str, Any] | List[Dict[str, Any]]",
                        path: Path) -> Path:
    """Every tensor's min/opt/max shape, as Paddle documents for legacy TensorRT's dynamic shapes:
    runs of the program without TensorRT under ``collect_shape_range_info(path)``, one per shape
    the cell feeds (works on CPU builds too, measured on 2.6.2 and 3.3.1)."""
    config = make_config(files, cfg.replace(trt=None))
    config.collect_shape_range_info(str(path))
    predictor = create_predictor(config)
    for one in feeds if isinstance(feeds, list) else [feeds]:
        run_predictor(predictor, one)
    del predictor  # the file is complete once the predictor is gone
    return path


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


def create_predictor(config: "paddle_infer.Config") -> Any:
    return paddle_infer.create_predictor(config)


def register_output_hook(predictor: Any, hook: Any) -> None:
    """``hook(op_type, var_name, tensor)`` after every op, every run (2.6-3.3)."""
    predictor.register_output_hook(hook)


def input_names(predictor: Any) -> List[str]:
    return list(predictor.get_input_names())


def run_predictor(predictor: Any, feeds: Dict[str, Any]) -> Tuple[List[str], List[Any]]:
    """Feed every input by name, run once, fetch every output in the predictor's order."""
    names = list(predictor.get_input_names())
    missing = [n for n in names if n not in feeds]
    if missing:
        raise Finding(
            f"the predictor wants inputs {missing} that the model's InputSpecs do not name "
            f"(it has {sorted(feeds)})"
        )
    for name in names:
        handle = predictor.get_input_handle(name)
        array = feeds[name]
        handle.reshape(list(array.shape))
        handle.copy_from_cpu(array)
    predictor.run()
    out_names = list(predictor.get_output_names())
    return out_names, [predictor.get_output_handle(n).copy_to_cpu() for n in out_names]


# -- passes ------------------------------------------------------------------

_PASS_LINE = re.compile(r"--- Running (PIR pass|IR pass|analysis) \[([A-Za-z0-9_]+)\]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Captured:
    text = ""


@contextlib.contextmanager
def captured_native_output():
    """Capture what native code writes to fds 1 and 2 (then write it back, so logs keep it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    holder = _Captured()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with tempfile.TemporaryFile() as tmp:
        for fd in (1, 2):
            os.dup2(tmp.fileno(), fd)
        try:
            yield holder
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            tmp.seek(0)
            data = tmp.read()
            os.write(2, data)
            holder.text = data.decode("utf-8", "replace")


def _passes_in(log: str) -> Dict[str, List[str]]:
    """IR passes (legacy ``--- Running IR pass [..]``, PIR ``--- Running PIR pass [..]``) and
    legacy analysis passes (``--- Running analysis [..]``, e.g. ``memory_optimize_pass``) that a
    predictor build printed, in order. No API lists the PIR passes that ran; these lines are
    printed whatever GLOG_minloglevel says (measured on 2.6.2 and 3.3.1)."""
    found: Dict[str, List[str]] = {"passes": [], "analysis_passes": []}
    for kind, name in _PASS_LINE.findall(_ANSI.sub("", log)):
        found["analysis_passes" if kind == "analysis" else "passes"].append(name)
    return found


def build_predictor(files: Dict[str, str], cfg: PredictorConfig,
                    input_shapes: Optional[Dict[str, List[int]]] = None,
                    shape_file: Optional[Path] = None) -> Tuple[Any, Dict[str, Any]]:
    """A predictor and the evidence of its build: the passes that ran and Paddle's read-back."""
    config = make_config(files, cfg, input_shapes, shape_file)
    with captured_native_output() as out:
        predictor = create_predictor(config)
    evidence = _passes_in(out.text)
    evidence["config_read_back"] = read_back(config)
    return predictor, evidence


def run_with_evidence(predictor: Any, feeds: Dict[str, Any]) -> Tuple[List[str], List[Any], Dict[str, Any]]:
    """Run once with an output hook that records only op types and output dtypes (no tensor data
    is read, so it costs a Python call per op): the executed op count, type histogram, a digest of
    the sequence, and which dtypes the ops produced (evidence that int8/bf16/fp16 really ran)."""
    ops: List[str] = []
    dtypes: Dict[str, int] = {}

    def hook(op_type: str, name: str, tensor: Any) -> None:
        ops.append(op_type.split(":")[0])
        try:  # an exception inside a hook aborts Paddle's run with a bare std::exception
            dtype = str(tensor.dtype).replace("paddle.", "")
        except Exception:
            dtype = "?"
        dtypes[dtype] = dtypes.get(dtype, 0) + 1

    register_output_hook(predictor, hook)
    names, outputs = run_predictor(predictor, feeds)
    histogram: Dict[str, int] = {}
    for op in ops:
        histogram[op] = histogram.get(op, 0) + 1
    digest = hashlib.sha1("\n".join(ops).encode()).hexdigest()[:16]
    return names, outputs, {"ops": len(ops), "op_types": histogram, "op_sequence_sha1": digest,
                            "output_dtypes": dtypes}


def onednn_op_list_evidence(cfg: PredictorConfig, folder: Path) -> Optional[Dict[str, Any]]:
    """What ``cfg``'s oneDNN op list (``set_mkldnn_op``) really does, read from a run: a small conv
    program built and run under ``cfg``, the executed op names counted. Under PIR an op that ran
    a oneDNN kernel is named ``onednn_op.*``; legacy programs do not say it in their op names
    (None: this run cannot tell)."""
    layer = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3, padding=1), paddle.nn.ReLU())
    layer.eval()
    files = export(layer, [paddle.static.InputSpec([1, 3, 8, 8], "float32", "x")], Path(folder) / "model")
    if files["format"] != ProgramFormat.PIR:
        return None
    import numpy as np

    predictor, _ = build_predictor(files, cfg)
    _, _, ran = run_with_evidence(predictor, {"x": np.ones([1, 3, 8, 8], "float32")})
    onednn = {op: n for op, n in ran["op_types"].items() if op.startswith("onednn_op.")}
    return {"onednn_ops_listed": list(cfg.onednn_ops or ()), "ops": ran["ops"], "onednn_ops_ran": onednn}


def run_saved_program(files: Dict[str, str], feeds: Dict[str, Any], order: List[str]) -> List[Any]:
    """The saved program run by Paddle's own executor, not the inference engine: ``paddle.jit.load``
    (a TranslatedLayer; .pdmodel in 2.6, PIR .json in 3.x), inputs in the forward's order, outputs
    flattened as ``jit.save`` flattens them."""
    from .structure import flatten_outputs

    prefix = str(Path(files["program"]).with_suffix(""))
    if Path(files["program"]).suffix == ".pdmodel" and at_least("3.0.0"):
        # A legacy program under Paddle 3 (PaddleSlim's save_quantized_model writes .pdmodel):
        # jit.load looks for the PIR .json only, so the legacy static executor runs it.
        from paddle import pir_utils

        paddle.enable_static()
        try:
            with pir_utils.OldIrGuard():
                exe = paddle.static.Executor(paddle.CPUPlace())
                program, feed_names, fetch = paddle.static.load_inference_model(prefix, exe)
                import numpy

                return [numpy.asarray(a) for a in exe.run(program, feed={n: feeds[n] for n in feed_names},
                                                       fetch_list=fetch)]
        finally:
            paddle.disable_static()
    layer = paddle.jit.load(prefix)
    layer.eval()
    with paddle.no_grad():
        out = layer(*[paddle.to_tensor(feeds[name]) for name in order])
    return [array for _, array in flatten_outputs(paddle, out)]


def set_flags_for_determinism() -> None:
    """Deterministic kernels where Paddle offers the switch (cuDNN); harmless on CPU."""
    try:
        paddle.set_flags({"FLAGS_cudnn_deterministic": True})
    except (ValueError, RuntimeError):
        pass
