"""Whose bug a converted program's failure is (``runtimes/paddle2onnx/reference.py``): the judging
script the reproducer writes, run on real ONNX files with the real ``onnx`` package — a file that
is not valid ONNX and one whose own semantics differ from Paddle's are the converter's, one that
computes Paddle's outputs leaves the bug with the runtime. (The whole path, from a planted model
through both runtimes' sessions to one cause, is ``test_ort.py``'s.)"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from harness.cell.handover.reproducer import judge_script  # noqa: E402
from harness.runtimes.paddle2onnx.reference import ConversionJudge  # noqa: E402
from harness.shared.vocab import Owner  # noqa: E402

JUDGE = ConversionJudge("paddle2onnx 9.9", "a runtime")
EXPECTED = {"reference": "baseline", "tolerances": [{"atol": 1e-6, "rtol": 1e-6}]}


def _judged(folder, graph, paddle_outputs):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, folder / "model.onnx")
    np.savez(folder / "inputs.npz", x=np.array([[-1.0, 0.25, 0.75, 2.0]], "float32"))
    np.savez(folder / "expected.npz", o0=paddle_outputs)
    (folder / JUDGE.script).write_text(judge_script(JUDGE, EXPECTED))
    proc = subprocess.run([sys.executable, JUDGE.script], cwd=folder, capture_output=True, text=True, timeout=120)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    judged = JUDGE.judged({"exit": proc.returncode, "output": proc.stdout + proc.stderr,
                           "last_line": lines[-1] if lines else ""}, "pd_op.thresholded_relu")
    return {**judged, "output": proc.stdout + proc.stderr}


def _relu_graph(alpha=None, out_type=TensorProto.FLOAT):
    node = helper.make_node("ThresholdedRelu", ["x"], ["y"], **({"alpha": alpha} if alpha is not None else {}))
    return helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                             [helper.make_tensor_value_info("y", out_type, [1, 4])])


def test_a_file_that_computes_what_paddle_computes_leaves_the_bug_with_the_runtime(tmp_path):
    # Paddle's thresholded_relu(x, threshold=0.5) with the default value 0: what ONNX's op means.
    judged = _judged(tmp_path, _relu_graph(alpha=0.5), np.array([[0.0, 0.0, 0.75, 2.0]], "float32"))
    assert judged["owner"] == Owner.RUNTIME.value and "a runtime's bug" in judged["words"], judged


def test_a_file_whose_semantics_differ_from_paddles_is_the_converters(tmp_path):
    # Paddle's thresholded_relu(x, threshold=0.5, value=0.3): ONNX's op has no value to write.
    judged = _judged(tmp_path, _relu_graph(alpha=0.5), np.array([[0.3, 0.3, 0.75, 2.0]], "float32"))
    assert judged["owner"] == Owner.CONVERTER.value, judged
    assert judged["words"].startswith("paddle2onnx 9.9 converts pd_op.thresholded_relu into ONNX that computes otherwise")
    assert "max abs 0.3" in judged["output"]


def test_a_file_that_is_not_valid_onnx_is_the_converters_whatever_a_runtime_made_of_it(tmp_path):
    # A declared output type the op cannot produce: a runtime may refuse it, another may run it.
    judged = _judged(tmp_path, _relu_graph(alpha=0.5, out_type=TensorProto.INT64), np.zeros([1, 4], "float32"))
    assert judged["owner"] == Owner.CONVERTER.value, judged
    assert "ONNX's checker rejects" in judged["words"] and judged["last_line"].startswith("INVALID ONNX:")
