"""The per-op precision switch (``cell/fp32_ops.py``): which call keeps an op type at fp32 for which
stage, spelled into the config the predictor is built from (the search itself runs real Paddle in
``tests/test_cells.py``)."""

from harness.cell.rootcause.fp32_ops import NO_OP_TYPE, candidate, candidate_types, switch_of
from harness.shared.config import PredictorConfig, TensorRT
from harness.shared.record_model import AnalysisEntry
from harness.shared.runtime import StagePlan
from harness.shared.vocab import Precision, Reference


def _plan(config, precision):
    return StagePlan(name="stage", config=config, precision=Precision(precision), reference=Reference.BASELINE, lever="lever")


def test_each_reduced_precision_runtime_has_its_switch_and_fp32_runtimes_have_none():
    onednn = PredictorConfig(device="cpu", onednn=True, bf16=True)
    name, keep = switch_of(_plan(onednn, "bf16"), ["fc", "mean", "cumsum"])
    assert name == "set_bfloat16_op"
    assert keep(["mean"]).bf16_ops == ("fc", "cumsum")  # the op types that may stay bf16
    assert keep(["fc", "mean", "cumsum"]).bf16_ops == (NO_OP_TYPE,)  # none: an empty list would mean "all"
    gpu = PredictorConfig(device="gpu", gpu_precision="fp16", fp32_ops=("feed", "fetch"))
    name, keep = switch_of(_plan(gpu, "fp16"), ["conv2d", "softmax"])
    assert name == "exp_disable_mixed_precision_ops" and keep(["softmax"]).fp32_ops == ("feed", "fetch", "softmax")
    assert switch_of(_plan(PredictorConfig(device="cpu", onednn=True), "fp32"), ["fc"]) is None
    trt = PredictorConfig(device="gpu", gpu_precision="fp16", trt=TensorRT(precision="fp16"))
    assert switch_of(_plan(trt, "fp16"), ["conv2d"]) is None  # TensorRT's own disabled ops are the bisect's


def test_the_candidates_are_the_ops_the_stage_ran_on_the_backend_in_the_names_the_switch_takes():
    plan = _plan(PredictorConfig(device="cpu", onednn=True, bf16=True), "bf16")
    evidence = {"op_types": {"onednn_op.fc": 1, "pd_op.cumsum_": 1, "onednn_op.mean": 1, "pd_op.feed": 1}}
    assert candidate_types(plan, evidence) == ["fc", "mean"]
    found = AnalysisEntry.from_dict("fp32_ops", {"status": "pass", "stage": "stage", "honoured": True,
                                                 "items": ["fc", "mean"], "culprits": ["mean"]})
    words, config = candidate(plan, found)
    assert words == "op types kept at fp32 (set_bfloat16_op): mean" and config.bf16_ops == ("fc",)
    ignored = AnalysisEntry.from_dict("fp32_ops", {"status": "pass", "stage": "stage", "honoured": False})
    assert candidate(plan, ignored) is None
    assert PredictorConfig.from_dict(config.to_dict()) == config  # recorded and read back as it was built


def test_the_switch_is_spelled_into_the_reproducer_and_workaround_as_paddles_own_call():
    from harness.cell.base.registry import runtime

    kept = PredictorConfig(device="cpu", onednn=True, bf16=True, bf16_ops=("fc",))
    calls = runtime("paddle_inference").config_calls({"format": "pir", "program": "model.json"}, kept)
    assert calls.index("config.enable_mkldnn_bfloat16()") < calls.index("config.set_bfloat16_op({'fc'})"), calls
    plain = PredictorConfig(device="cpu", onednn=True, bf16=True)
    assert not any("set_bfloat16_op" in c for c in runtime("paddle_inference").config_calls({"format": "pir"}, plain))
