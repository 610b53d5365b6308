"""Stage planning, backends, vocabulary and causes: plain code, no Paddle."""

from __future__ import annotations

import json

import pytest

from harness.shared.backends import (DeployOptions, Requirement, SearchSpace, backend_for, named_configs,
                                     plan_by_name, plan_stages)
from harness.shared.causes import cause_of, group
from harness.shared.config import PredictorConfig, TensorRT
from harness.shared.vocab import Status, verdict_status


def test_pir_ladder_uses_the_optimization_level_and_skips_memory_with_its_source():
    plans = plan_by_name(plan_stages("cpu", "onednn", "bf16", "pir", DeployOptions(reference_threads=1, deploy_threads=4)))
    assert list(plans) == ["baseline", "memory", "ir", "onednn_bf16"]
    base, ir, backend = plans["baseline"].config, plans["ir"].config, plans["onednn_bf16"].config
    assert (base.opt_level, base.onednn, base.memory, base.threads) == (0, False, False, 1)
    assert base.new_ir and base.new_executor
    assert ir == base.replace(opt_level=3)  # one lever
    assert "analysis_predictor.cc" in plans["memory"].skip and "75496" in plans["memory"].skip
    assert (backend.onednn, backend.bf16, backend.threads, backend.opt_level, backend.memory) == (True, True, 4, 3, True)
    assert plans["onednn_bf16"].requires == (Requirement.BF16_CPU,)
    assert plans["ir"].search is SearchSpace.PASSES


def test_legacy_ladder_uses_switch_ir_optim_and_memory_is_a_real_stage():
    plans = plan_by_name(plan_stages("cpu", "native", "fp32", "legacy", DeployOptions()))
    base = plans["baseline"].config
    assert (base.ir, base.opt_level, base.new_ir) == (False, None, None)
    assert plans["memory"].skip is None and plans["memory"].config == base.replace(memory=True)
    assert plans["ir"].config == base.replace(memory=True, ir=True)


def test_gpu_and_tensorrt_plans_follow_paddles_deploy_code():
    pir = plan_by_name(plan_stages("gpu", "native", "fp16", "pir", DeployOptions()))
    assert pir["baseline"].config.device == "gpu" and pir["baseline"].requires == (Requirement.GPU,)
    assert pir["gpu_fp16"].config.fp32_ops == ("feed", "fetch") and pir["gpu_fp16"].config.gpu_precision == "fp16"
    trt = plan_by_name(plan_stages("gpu", "trt", "int8", "legacy", DeployOptions(trt_workspace_mb=512)))["trt_int8"]
    assert trt.config.trt == TensorRT(precision="int8", workspace_mb=512, min_subgraph_size=3, calibration=True)
    assert trt.config.gpu_precision == "fp32" and trt.search is SearchSpace.TENSORRT_OPS
    assert Requirement.PIR_TENSORRT in backend_for("gpu", "trt", "pir").requires("pir", "fp16")
    assert Requirement.PIR_TENSORRT not in backend_for("gpu", "trt", "legacy").requires("legacy", "fp16")
    # A precision the backend does not have is a skip with the reason, not a silent fp32 run.
    assert "not a precision" in plan_by_name(plan_stages("cpu", "native", "fp16", "pir", DeployOptions()))["cpu_fp16"].skip


def test_named_configs_cover_every_diff_name_and_round_trip():
    from harness.shared.backends import NAMED_CONFIGS

    for fmt in ("pir", "legacy"):
        named = named_configs(fmt, DeployOptions())
        assert set(NAMED_CONFIGS) <= set(named)
        assert named["cpu_fp32"] == named["baseline"]
        for config in named.values():
            assert PredictorConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


def test_statuses_read_back_from_json_and_decide_the_verdict():
    assert json.dumps({"s": Status.NOOP}) == '{"s": "noop"}' and Status.of("noop") is Status.NOOP
    assert Status.of("whatever") is Status.CRASH
    assert verdict_status([Status.PASS, Status.SKIP, Status.ERROR, Status.FAIL]) is Status.ERROR
    assert verdict_status([Status.PASS, Status.NOOP, Status.VACUOUS]) is Status.VACUOUS
    assert verdict_status([Status.PASS, Status.NOOP]) is Status.PASS
    assert verdict_status([Status.NOOP, Status.SKIP]) is None  # nothing really passed


@pytest.mark.parametrize("a, b", [
    ("ValueError: (InvalidArgument) Not find predictor_id 0 and pass_name memory_optimize_pass",
     "ValueError: (InvalidArgument) Not find predictor_id 17 and pass_name memory_optimize_pass"),
    ("RuntimeError: (NotFound) Cannot find constant_folding@_179538630108626625411 in scope.",
     "RuntimeError: (NotFound) Cannot find constant_folding@_179538647014530138311 in scope."),
    ("worker died with SIGSEGV at 0x7f3a2b", "worker died with SIGSEGV at 0x55d0"),
    ("cannot open /tmp/pytest-of-root/a/export/model.json", "cannot open /work/results/b/export/model.json"),
])
def test_messages_that_differ_only_in_ids_share_a_cause(a, b):
    assert cause_of(a) == cause_of(b)
    causes = group([("error", a, "cell1"), ("error", b, "cell2"), ("error", a, "cell1")])
    assert len(causes) == 1 and causes[0].count == 3 and causes[0].places == ["cell1", "cell2"]


def test_different_messages_or_kinds_are_different_causes():
    assert cause_of("(NotFound) a") != cause_of("(InvalidArgument) a")
    assert len(group([("error", "x", "c"), ("crash", "x", "c")])) == 2


def test_int8_plans_follow_the_program_a_mode_exported():
    plain = plan_by_name(plan_stages("cpu", "onednn", "int8", "pir", DeployOptions()))
    assert "quantization-aware mode" in plain["onednn_int8"].skip
    quantized = plan_by_name(plan_stages("cpu", "onednn", "int8", "legacy", DeployOptions(), quantized=True))
    assert quantized["onednn_int8"].skip is None and quantized["onednn_int8"].config.int8
    assert quantized["onednn_int8"].config.low_precision == "int8"
    # The fake-quant dygraph model and the quantized program are compared at the int8 tolerance.
    assert quantized["baseline"].precision == "int8" and quantized["ir"].precision == "fp32"
    assert quantized["baseline"].config.low_precision is None
    trt = plan_by_name(plan_stages("gpu", "trt", "int8", "legacy", DeployOptions(), quantized=True))["trt_int8"]
    assert trt.config.trt.calibration is False  # a QAT program carries its own scales
