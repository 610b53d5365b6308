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
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import paddle
import paddle.inference as paddle_infer


def _version_tuple() -> Tuple[int, int, int]:
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", paddle.__version__)
    if not match:  # develop builds report 0.0.0
        return (99, 0, 0)
    return tuple(int(g) for g in match.groups())  # type: ignore[return-value]


VERSION = _version_tuple()


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
        info[key] = None if value in (False, "False", "", None) else str(value)
    try:
        info["with_mkldnn"] = bool(paddle.base.core.is_compiled_with_mkldnn())
    except AttributeError:
        info["with_mkldnn"] = None
    return info


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
    fn = getattr(paddle.version, "tensorrt", None)
    try:
        return bool(fn and fn())
    except Exception:
        return False


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
                "format": "pir" if program.suffix == ".json" else "legacy",
            }
    raise FileNotFoundError(f"no {prefix.name}.json or {prefix.name}.pdmodel in {prefix.parent}")


def find_model_prefix(model_dir: Path) -> Optional[Path]:
    """The prefix of the single model in a directory, preferring the format this version writes."""
    model_dir = Path(model_dir)
    suffixes = (".json", ".pdmodel") if pir_default() else (".pdmodel", ".json")
    for suffix in suffixes:
        found = sorted(p for p in model_dir.glob(f"*{suffix}") if p.with_suffix(".pdiparams").exists())
        if found:
            return found[0].with_suffix("")
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


def make_config(
    files: Dict[str, str],
    *,
    device: str = "cpu",
    ir: bool = False,
    memory: bool = False,
    onednn: bool = False,
    bf16: bool = False,
    threads: int = 1,
    gpu_precision: str = "fp32",
    trt: Optional[Dict[str, Any]] = None,
    input_shapes: Optional[Dict[str, List[int]]] = None,
    deleted_passes: Optional[List[str]] = None,
) -> "paddle_infer.Config":
    """One predictor configuration; every knob explicit so stages differ only where they say."""
    if device == "gpu" and trt is not None and files.get("format") == "pir":
        files = pir_trt_convert(files, trt, input_shapes or {})
    if files.get("params"):
        config = paddle_infer.Config(files["program"], files["params"])
    else:
        config = paddle_infer.Config(files["program"])
    config.switch_ir_optim(ir)
    if memory:
        config.enable_memory_optim()
    if device == "gpu":
        config.enable_use_gpu(256, 0, precision_type(gpu_precision if not trt else "fp32"))
        if trt is not None and files.get("format") != "pir-trt":
            _enable_trt(config, trt, input_shapes or {})
    else:
        config.disable_gpu()
        if onednn:
            config.enable_mkldnn()
            if bf16:
                config.enable_mkldnn_bfloat16()
        else:
            config.disable_mkldnn()
        config.set_cpu_math_library_num_threads(threads)
    for name in deleted_passes or []:
        config.delete_pass(name)
    return config


def _enable_trt(config: "paddle_infer.Config", trt: Dict[str, Any], shapes: Dict[str, List[int]]) -> None:
    """TensorRT through the legacy subgraph engine (``.pdmodel`` programs).

    Written against Paddle's documented API; it has not run on a GPU here.
    """
    config.enable_tensorrt_engine(
        workspace_size=int(trt.get("workspace", 1 << 30)),
        max_batch_size=int(trt.get("max_batch", 1)),
        min_subgraph_size=int(trt.get("min_subgraph", 3)),
        precision_mode=precision_type(trt.get("precision", "fp32")),
        use_static=False,
        use_calib_mode=trt.get("precision") == "int8",
    )
    if shapes:
        config.set_trt_dynamic_shape_info(shapes, shapes, shapes)
    if trt.get("disabled_ops"):
        # Legacy programs only; PIR programs go through paddle.tensorrt.convert(disable_ops=...).
        config.exp_disable_tensorrt_ops(list(trt["disabled_ops"]))


def pir_trt_convert(files: Dict[str, str], trt: Dict[str, Any], shapes: Dict[str, List[int]]) -> Dict[str, str]:
    """TensorRT for PIR programs (3.x): ``paddle.tensorrt.convert`` writes a program whose
    subgraphs are ``pd_op.tensorrt_engine`` ops; ``disable_ops`` keeps op types out of them.

    Written against Paddle's documented API (GPU builds only; the CPU wheel has no
    ``paddle.tensorrt``); it has not run on a GPU here.
    """
    from paddle.tensorrt.export import Input, PrecisionMode, TensorRTConfig, convert

    out = Path(tempfile.mkdtemp(prefix="harness-trt-"))
    inputs = []
    for name, shape in shapes.items():
        spec = Input(min_input_shape=tuple(shape), optim_input_shape=tuple(shape), max_input_shape=tuple(shape))
        spec.name = name
        inputs.append(spec)
    config = TensorRTConfig(inputs=inputs, save_model_dir=str(out / "model"),
                            precision_mode=getattr(PrecisionMode, trt.get("precision", "fp32").upper()),
                            disable_ops=list(trt.get("disabled_ops") or []) or None)
    convert(str(Path(files["program"]).with_suffix("")), config)
    return {"program": str(out / "model.json"), "params": str(out / "model.pdiparams"), "format": "pir-trt"}


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
        raise KeyError(
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

_PIR_PASS = re.compile(r"Running PIR pass \[([A-Za-z0-9_]+)\]")


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


def pass_list(files: Dict[str, str], knobs: Dict[str, Any]) -> Tuple[str, List[str]]:
    """The IR passes a predictor with ``knobs`` runs, in order, and which IR they belong to.

    Legacy programs: the config's pass builder lists them. PIR programs: no API lists them;
    they are read from the native log lines ``--- Running PIR pass [name]`` printed while the
    predictor is built.
    """
    config = make_config(files, **knobs)
    if files.get("format") == "pir":
        with captured_native_output() as out:
            predictor = create_predictor(config)
        del predictor
        return "pir", list(dict.fromkeys(_PIR_PASS.findall(re.sub(r"\x1b\[[0-9;]*m", "", out.text))))
    return "legacy", list(config.pass_builder().all_passes())


def program_op_types(files: Dict[str, str], knobs: Dict[str, Any], feeds: Dict[str, Any]) -> List[str]:
    """Op types the program executes (from an output hook), e.g. to bisect TensorRT op types."""
    predictor = create_predictor(make_config(files, **dict(knobs, trt=None, device="cpu", onednn=False)))
    seen: List[str] = []
    # PIR names keep their dialect (pd_op.conv2d), as paddle.tensorrt's disable_ops expects.
    register_output_hook(predictor, lambda op, name, t: seen.append(op.split(":")[0]))
    run_predictor(predictor, feeds)
    return list(dict.fromkeys(seen))


def set_flags_for_determinism() -> None:
    """Deterministic kernels where Paddle offers the switch (cuDNN); harmless on CPU."""
    try:
        paddle.set_flags({"FLAGS_cudnn_deterministic": True})
    except (ValueError, RuntimeError):
        pass


def silence_native_info_log() -> None:
    # glog INFO lines go to the worker's log file anyway; keep the volume down.
    os.environ.setdefault("GLOG_minloglevel", "1")
