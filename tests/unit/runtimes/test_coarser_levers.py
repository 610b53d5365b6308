"""The coarser levers a workaround may try (``Runtime.coarser``), per program format and runtime."""

from harness.cell.base.registry import runtime
from harness.shared.backends import plan_stages
from harness.shared.runtime import DeployOptions

OPTIONS = DeployOptions(reference_threads=1, deploy_threads=2)


def _plan(session_word: str, fmt: str, name: str):
    return next(p for p in plan_stages("cpu", session_word, "fp32", fmt, OPTIONS) if p.name == name)


def test_pir_lowers_the_level_and_onednn_turns_off_last():
    plan = _plan("onednn", "pir", "onednn_fp32")
    levers = runtime(plan.runtime).coarser(plan)
    assert [w for w, _ in levers] == ["set_optimization_level(2)", "set_optimization_level(1)",
                                      "set_optimization_level(0)", "oneDNN off (disable_mkldnn)"]
    assert levers[-1][1].onednn is False and levers[0][1].onednn is True and levers[0][1].opt_level == 2


def test_legacy_switches_ir_off():
    plan = _plan("native", "legacy", "ir")
    assert [(w, c.ir) for w, c in runtime(plan.runtime).coarser(plan)] == [("switch_ir_optim(False)", False)]


def test_onnx_runtime_lowers_its_graph_optimization_level():
    plan = _plan("ort", "pir", "ort_fp32")
    levels = [c.level for _, c in runtime(plan.runtime).coarser(plan)]
    assert levels == ["extended", "basic", "disabled"]
