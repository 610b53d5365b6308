"""The Paddle ladder (``harness.shared.backends``): stage plans per format, backend and precision; plain code."""

from __future__ import annotations

import json

from harness.runtimes import REGISTRY
from harness.runtimes.paddle_inference import BF16_CPU, GPU, PASSES, PIR_TENSORRT, TENSORRT_OPS
from harness.shared.backends import DeployOptions, backend_for, named_configs, plan_by_name, plan_stages
from harness.shared.config import PredictorConfig, TensorRT
from harness.shared.vocab import Precision


def test_pir_ladder_uses_the_optimization_level_and_skips_memory_with_its_source():
    plans = plan_by_name(plan_stages("cpu", "onednn", "bf16", "pir", DeployOptions(reference_threads=1, deploy_threads=4)))
    assert list(plans) == ["baseline", "memory", "ir", "onednn_bf16"]
    base, ir, backend = plans["baseline"].config, plans["ir"].config, plans["onednn_bf16"].config
    assert (base.opt_level, base.onednn, base.memory, base.threads) == (0, False, False, 1)
    assert base.new_ir and base.new_executor
    assert ir == base.replace(opt_level=3)  # one lever
    assert "analysis_predictor.cc" in plans["memory"].skip and "75496" in plans["memory"].skip
    assert (backend.onednn, backend.bf16, backend.threads, backend.opt_level, backend.memory) == (True, True, 4, 3, True)
    assert plans["onednn_bf16"].requires == (BF16_CPU,)
    assert plans["ir"].search == PASSES


def test_legacy_ladder_uses_switch_ir_optim_and_memory_is_a_real_stage():
    plans = plan_by_name(plan_stages("cpu", "native", "fp32", "legacy", DeployOptions()))
    base = plans["baseline"].config
    assert (base.ir, base.opt_level, base.new_ir) == (False, None, None)
    assert plans["memory"].skip is None and plans["memory"].config == base.replace(memory=True)
    assert plans["ir"].config == base.replace(memory=True, ir=True)


def test_gpu_and_tensorrt_plans_follow_paddles_deploy_code():
    pir = plan_by_name(plan_stages("gpu", "native", "fp16", "pir", DeployOptions()))
    assert pir["baseline"].config.device == "gpu" and pir["baseline"].requires == (GPU,)
    assert pir["gpu_fp16"].config.fp32_ops == ("feed", "fetch") and pir["gpu_fp16"].config.gpu_precision == "fp16"
    trt = plan_by_name(plan_stages("gpu", "trt", "int8", "legacy", DeployOptions(trt_workspace_mb=512)))["trt_int8"]
    assert trt.config.trt == TensorRT(precision="int8", workspace_mb=512, min_subgraph_size=3, calibration=True)
    assert trt.config.gpu_precision == "fp32" and trt.search == TENSORRT_OPS
    assert PIR_TENSORRT in backend_for("gpu", "trt", "pir").requires("pir", "fp16")
    assert PIR_TENSORRT not in backend_for("gpu", "trt", "legacy").requires("legacy", "fp16")
    # A precision the backend does not have is a skip with the reason, not a silent fp32 run.
    assert "not a precision" in plan_by_name(plan_stages("cpu", "native", "fp16", "pir", DeployOptions()))["cpu_fp16"].skip


def test_named_configs_cover_every_diff_name_and_round_trip():
    from harness.shared.backends import NAMED_CONFIGS

    for fmt in ("pir", "legacy"):
        named = named_configs(fmt, DeployOptions())
        assert set(NAMED_CONFIGS) <= set(named)
        assert named["cpu_fp32"] == named["baseline"]
        for config in named.values():
            assert REGISTRY.config_from_dict(json.loads(json.dumps(config.to_dict()))) == config


def test_int8_plans_follow_the_program_a_mode_exported():
    plain = plan_by_name(plan_stages("cpu", "onednn", "int8", "pir", DeployOptions()))
    assert "quantization-aware mode" in plain["onednn_int8"].skip
    quantized = plan_by_name(plan_stages("cpu", "onednn", "int8", "legacy", DeployOptions(), quantized=True))
    assert quantized["onednn_int8"].skip is None and quantized["onednn_int8"].config.int8
    assert quantized["onednn_int8"].precision is Precision.INT8
    # The fake-quant dygraph model and the quantized program are compared at the int8 tolerance;
    # the baseline itself runs fp32 (its dtypes are not checked for int8).
    assert quantized["baseline"].precision is Precision.FP32 and quantized["baseline"].tolerance_precision is Precision.INT8
    assert quantized["ir"].tolerance_precision is Precision.FP32
    trt = plan_by_name(plan_stages("gpu", "trt", "int8", "legacy", DeployOptions(), quantized=True))["trt_int8"]
    assert trt.config.trt.calibration is False  # a QAT program carries its own scales


def test_precision_is_typed_end_to_end_and_trt_hides_its_dtypes():
    plans = plan_by_name(plan_stages("gpu", "trt", "fp16", "pir", DeployOptions()))
    assert plans["trt_fp16"].precision is Precision.FP16 and not plans["trt_fp16"].dtypes_visible
    assert plans["ir"].dtypes_visible and plans["baseline"].precision is Precision.FP32
    assert PredictorConfig().to_dict()["runtime"] == "paddle_inference"  # a record says whose config it is
