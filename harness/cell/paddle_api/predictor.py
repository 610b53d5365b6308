"""A predictor built and run: inputs fed by name, the passes its build printed, and from an
output hook that reads no tensor, the ops it executed and the dtypes they produced."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ...shared.config import PredictorConfig
from ...shared.errors import Finding, calling
from ...shared.vocab import ProgramFormat
from . import paddle, paddle_infer
from .config import make_config, read_back
from .export import export
from ...shared.json_types import JsonObject


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


def create_predictor(config: "paddle_infer.Config") -> Any:
    with calling("paddle.inference.create_predictor()"):
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
        with calling("handle.copy_from_cpu()"):
            handle.reshape(list(array.shape))
            handle.copy_from_cpu(array)
    with calling("predictor.run()"):
        predictor.run()
    out_names = list(predictor.get_output_names())
    with calling("handle.copy_to_cpu()"):
        return out_names, [predictor.get_output_handle(n).copy_to_cpu() for n in out_names]


# -- passes ------------------------------------------------------------------

_PASS_LINE = re.compile(r"--- Running (PIR pass|IR pass|analysis) \[([A-Za-z0-9_]+)\]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Captured:
    text = ""


@contextlib.contextmanager
def captured_native_output():
    """What native code writes to fds 1 and 2 while the block runs. Where both are regular files
    (the worker's log), it is read back from them after the block: written there as it is printed,
    so a build that kills the process leaves Paddle's last words (its C++ traceback, the passes that
    ran) in the log the host reads — a temporary file in between died with the process, and a
    SIGSEGV in a pass was said "worker died with SIGSEGV" and nothing else (measured: a oneDNN
    fusion in Paddle 3.3.1). Elsewhere (a pipe, a terminal) through a temporary file, written back."""
    sys.stdout.flush()
    sys.stderr.flush()
    holder = _Captured()
    files = _regular_files((1, 2))
    if files is not None:
        try:
            yield holder
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            holder.text = "".join(_written_since(fd, start) for fd, start in files)
        return
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


def _regular_files(fds: Tuple[int, ...]) -> Optional[List[Tuple[int, int]]]:
    """Each distinct file behind ``fds`` with its size now, or None unless every one is a regular file."""
    seen: Dict[Tuple[int, int], Tuple[int, int]] = {}
    for fd in fds:
        try:
            st = os.fstat(fd)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        seen.setdefault((st.st_dev, st.st_ino), (fd, st.st_size))
    return list(seen.values())


def _written_since(fd: int, start: int) -> str:
    """What was appended to the file behind ``fd`` after it held ``start`` bytes."""
    try:
        with open(f"/proc/self/fd/{fd}", "rb") as again:
            again.seek(start)
            return again.read().decode("utf-8", "replace")
    except OSError:
        return ""


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
                    shape_file: Optional[Path] = None) -> Tuple[Any, JsonObject]:
    """A predictor and the evidence of its build: the passes that ran and Paddle's read-back."""
    config = make_config(files, cfg, input_shapes, shape_file)
    with captured_native_output() as out:
        predictor = create_predictor(config)
    evidence = _passes_in(out.text)
    evidence["config_read_back"] = read_back(config)
    return predictor, evidence


def run_with_evidence(predictor: Any, feeds: Dict[str, Any]) -> Tuple[List[str], List[Any], JsonObject]:
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


def probe_passes(cfg: PredictorConfig, folder: Path) -> Dict[str, Any]:
    """The passes a build under ``cfg`` prints on a probe program (a conv, a batch norm, a relu, a
    bilinear interpolate): the search space of a stage whose own build raised before printing
    its passes. Builds print every pass they run whether it matches or not (measured on 2.6.2
    and 3.3.1), so the probe's list is the config's. When the probe's build raises too, the passes
    it printed before raising are kept (``raised``: Paddle's message)."""
    layer = _ProbeLayer()
    layer.eval()
    files = export(layer, [paddle.static.InputSpec([1, 3, 8, 8], "float32", "x")], Path(folder) / "model")
    config = make_config(files, cfg, None, None)
    raised = ""
    with captured_native_output() as out:
        try:
            create_predictor(config)
        except Exception as exc:  # what it printed before raising is still what ran
            raised = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return {**_passes_in(out.text), "raised": raised}


class _ProbeLayer(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(3, 4, 3, padding=1)
        self.bn = paddle.nn.BatchNorm2D(4)

    def forward(self, x):
        return paddle.nn.functional.interpolate(paddle.nn.functional.relu(self.bn(self.conv(x))), scale_factor=2,
                                                mode="bilinear")


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
