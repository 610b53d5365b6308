"""Paddle, behind one seam (cell side): what this Paddle is and can do.

The rooms beside it: ``export`` (``jit.save`` and the program it wrote), ``config`` (a
``PredictorConfig`` as a ``paddle.inference.Config``, read back), ``predictor`` (build, run, the
evidence of what ran), ``runtime`` (Paddle Inference behind the runtime seam).

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

import importlib
import os
import re
from typing import Any, Optional, Tuple

# glog INFO lines would bury the worker's log; set before Paddle's native side starts.
os.environ.setdefault("GLOG_minloglevel", "1")
# Python's zlib must be bound before Paddle's libraries load: Paddle 2.6.2 exports a zlib of its own,
# and a zlib extension loaded after it binds to that one (measured: the first np.load of an .npz in
# a worker forked from a server that imported Paddle first dies with SIGSEGV in inflateReset2).
import zlib  # noqa: E402,F401

import paddle  # noqa: E402
import paddle.inference as paddle_infer  # noqa: E402,F401  (the rooms beside use it)

from ...runtimes.paddle_inference import BF16_CPU, GPU, PIR_TENSORRT, TENSORRT  # noqa: E402
from ...shared.runtime import Requirement  # noqa: E402
from ...shared.spec import release  # noqa: E402
from ...shared.json_types import JsonObject


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


def _numpy_version() -> Optional[str]:
    try:
        import numpy
    except ImportError:
        return None
    return str(numpy.__version__)


def paddle_info() -> JsonObject:
    """Version and build facts recorded in every result."""
    version = paddle.version
    info: JsonObject = {
        "version": paddle.__version__,
        "commit": getattr(version, "commit", None),
        "with_cuda": bool(paddle.is_compiled_with_cuda()),
        "pir": pir_default(),
        # numpy changes what Paddle does (3.3.1's F.pad with Tensor paddings gives -1 under numpy 2.x,
        # not under 1.26): ``releases`` asks a standalone script beside the numpy the cell had.
        "numpy": _numpy_version(),
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


def onednn_info() -> Optional[JsonObject]:
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


def machine() -> JsonObject:
    """The machine block of the record, seen from inside this Paddle environment."""
    from ...shared.machine import describe

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


def unmet(requirement: "Requirement") -> Optional[str]:
    """Why this build or machine cannot meet a backend's requirement, or None."""
    if requirement == GPU and not gpu_available():
        return ("no CUDA device visible to this Paddle build (paddle.is_compiled_with_cuda() is "
                f"{paddle.is_compiled_with_cuda()} or the device count is 0)")
    if requirement == TENSORRT and not _has_trt():
        return "this Paddle build has no TensorRT (paddle.version.tensorrt() is empty)"
    if requirement == PIR_TENSORRT:
        try:
            importlib.import_module("paddle.tensorrt")
        except ImportError as exc:
            return f"this Paddle build has no paddle.tensorrt ({exc})"
    if requirement == BF16_CPU and not bf16_supported():
        return ("this CPU does not support bfloat16 (paddle supports_bfloat16() is False); "
                "enable_mkldnn_bfloat16 would silently run fp32")
    return None


def set_flags_for_determinism() -> None:
    """Deterministic kernels where Paddle offers the switch (cuDNN); harmless on CPU."""
    try:
        paddle.set_flags({"FLAGS_cudnn_deterministic": True})
    except (ValueError, RuntimeError):
        pass
