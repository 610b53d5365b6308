"""The runtimes' descriptors (``harness.runtimes.<name>``) as the registry finds them: plain code."""

from __future__ import annotations

import dataclasses
import json


from harness.runtimes import REGISTRY
from harness.runtimes.paddle_inference import BF16_CPU
from harness.shared.backends import DeployOptions, plan_by_name, plan_stages
from harness.shared.config import PredictorConfig
from harness.shared.vocab import Precision


def test_the_registry_finds_every_runtime_package_and_paddles_backends():
    devices = REGISTRY.devices()
    assert devices["cpu"] == ("native", "onednn", "ort", "openvino") and devices["gpu"] == ("native", "trt")
    assert set(REGISTRY.runtimes()) == {"paddle_inference", "onnxruntime", "openvino"}
    assert REGISTRY.cell_module("onnxruntime") == "harness.runtimes.onnxruntime.session:OnnxRuntime"


def test_paddle_inference_is_a_runtime_package_like_the_others():
    """Its descriptor and its cell module, found the same way; first, since every ladder starts on it."""
    from harness.shared.runtime import Backend

    assert REGISTRY.cell_module("paddle_inference") == "harness.runtimes.paddle_inference.session:PaddleInference"
    assert Backend.cell == ""  # no runtime is the base class's default
    assert next(iter(REGISTRY.runtimes())) == "paddle_inference"
    assert REGISTRY.backend("cpu", "native", "pir").__module__ == "harness.runtimes.paddle_inference"


def test_onnx_runtime_plans_its_conversion_then_its_optimizations_with_its_own_config():
    from harness.runtimes.onnxruntime import OrtConfig

    plans = plan_by_name(plan_stages("cpu", "ort", "fp32", "pir", DeployOptions(reference_threads=1, deploy_threads=3)))
    assert list(plans) == ["baseline", "ort_convert", "ort_fp32"]
    convert, deploy = plans["ort_convert"].config, plans["ort_fp32"].config
    assert isinstance(convert, OrtConfig) and not hasattr(convert, "onednn")  # nothing of Paddle Inference's
    assert (convert.level, convert.threads, deploy.level, deploy.threads) == ("disabled", 1, "all", 3)
    assert plans["ort_fp32"].search.key == "ort_optimizers" and plans["ort_convert"].search is None
    assert {r.key for r in plans["ort_fp32"].requires} == {"paddle2onnx", "onnxruntime"}
    record = json.loads(json.dumps(plans["ort_fp32"].config.to_dict()))
    assert record == {"runtime": "onnxruntime", "device": "cpu", "level": "all", "threads": 3, "disabled_optimizers": [],
                      "opset": None, "converter_optimize": True}
    assert REGISTRY.config_from_dict(record) == plans["ort_fp32"].config
    # A record of schema 2 kept it beside Paddle's fields: it still reads as ONNX Runtime's.
    schema2 = dict(PredictorConfig().to_dict(), ort={"level": "all", "threads": 3, "disabled_optimizers": []})
    del schema2["runtime"]
    assert REGISTRY.config_from_dict(schema2) == plans["ort_fp32"].config
    # The runtime that runs a stage is the one its config is for: nothing to keep in step by hand.
    assert plans["ort_convert"].runtime == plans["ort_fp32"].runtime == "onnxruntime"
    assert dataclasses.replace(plans["ort_fp32"], config=PredictorConfig()).runtime == "paddle_inference"
    assert "not a precision" in plan_by_name(plan_stages("cpu", "ort", "bf16", "pir", DeployOptions()))["ort_bf16"].skip


def test_openvino_reads_onnx_at_paddle_3_and_the_pdmodel_at_2_6():
    pir = plan_by_name(plan_stages("cpu", "openvino", "bf16", "pir", DeployOptions()))
    legacy = plan_by_name(plan_stages("cpu", "openvino", "bf16", "legacy", DeployOptions()))
    assert list(pir) == ["baseline", "openvino_convert", "openvino_bf16"]
    assert {r.key for r in pir["openvino_convert"].requires} == {"openvino", "paddle2onnx"}
    assert {r.key for r in legacy["openvino_convert"].requires} == {"openvino"}
    assert BF16_CPU in pir["openvino_bf16"].requires and pir["openvino_bf16"].precision is Precision.BF16
    assert pir["openvino_convert"].config.precision_hint == "f32" and pir["openvino_convert"].config.runtime == "openvino"
    assert "ONNX" in pir["openvino_convert"].lever and ".pdmodel" in legacy["openvino_convert"].lever
