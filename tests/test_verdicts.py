"""Verdicts that say what a deployment would see, on real Paddle (the tests env's version).

Stages follow the deployment profile and carry evidence of what ran; a stage that ran the same
program as its reference is ``noop``; hazards are probed once and reported once; results that
share a cause are counted once; an unreadable model is bad input.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from .conftest import assert_exit_agrees, installed_paddle, one_line_error, run_harness


@pytest.fixture(scope="module")
def pir_mobilenet(tmp_path_factory):
    """mobilenet_v3_small exported by this Paddle, with its inputs."""
    installed_paddle()
    from harness.cell import paddle_api as api
    import harness.cell.paddle_api.config, harness.cell.paddle_api.export, harness.cell.paddle_api.predictor  # noqa: F401  (rooms of api)
    from harness.models import mobilenet_v3_small

    if not api.pir_default():
        pytest.skip("this Paddle writes legacy programs; the PIR levers are checked at 3.x")
    api.paddle.seed(0)
    layer, spec = mobilenet_v3_small()
    layer.eval()
    files = api.export.export(layer, spec, tmp_path_factory.mktemp("mnv3") / "model")
    feeds = {"image": np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype("float32")}
    return api, files, feeds


def _stage(api, files, feeds, config):
    predictor, evidence = api.predictor.build_predictor(files, config)
    _, outputs, ran = api.predictor.run_with_evidence(predictor, feeds)
    return outputs, dict(evidence, **ran)


def _plans(files):
    from harness.shared.backends import DeployOptions, plan_by_name, plan_stages

    return plan_by_name(plan_stages("cpu", "native", "fp32", files["format"], DeployOptions()))


def test_pir_ir_stage_runs_more_passes_and_fewer_ops_than_its_baseline(pir_mobilenet):
    api, files, feeds = pir_mobilenet
    plans = _plans(files)
    base_out, base = _stage(api, files, feeds, plans["baseline"].config)
    ir_out, ir = _stage(api, files, feeds, plans["ir"].config)
    # Measured on 3.3.1: level 0 runs 5 PIR passes and 292 ops, level 3 runs 10 and 245.
    assert len(ir["passes"]) > len(base["passes"]) > 0
    assert "constant_folding_pass" in ir["passes"] and "constant_folding_pass" not in base["passes"]
    assert ir["ops"] < base["ops"]
    assert ir["op_sequence_sha1"] != base["op_sequence_sha1"]
    assert base["config_read_back"]["onednn"] is False and base["config_read_back"]["new_ir"] is True
    np.testing.assert_allclose(ir_out[0], base_out[0], atol=1e-4, rtol=1e-4)


def test_a_lever_that_changes_nothing_makes_the_stage_noop(pir_mobilenet):
    """Under PIR, switch_ir_optim is not what selects passes: a stage built on it runs the
    baseline's program again, and its pass says nothing."""
    from harness.cell.stages.ladder import same_program, stage_status
    from harness.shared.compare import Comparison
    from harness.shared.vocab import Status

    api, files, feeds = pir_mobilenet
    baseline = _plans(files)["baseline"]
    switched = baseline.config.replace(ir=not baseline.config.ir)
    _, base = _stage(api, files, feeds, baseline.config)
    out, evidence = _stage(api, files, feeds, switched)
    assert same_program(evidence, base)
    noop_plan = _plans(files)["ir"].__class__(name="ir", config=switched, precision="fp32", reference="baseline",
                                            lever="switch_ir_optim(True)")
    outputs = {"output": Comparison((1,), "float32", 0.0, 0.0, Status.PASS)}
    assert stage_status(noop_plan, outputs, evidence, base) is Status.NOOP
    # A failing comparison is never hidden behind noop, and the real lever is not noop.
    failed = {"output": Comparison((1,), "float32", 0.0, 0.0, Status.FAIL)}
    assert stage_status(noop_plan, failed, evidence, base) is Status.FAIL
    _, ir = _stage(api, files, feeds, _plans(files)["ir"].config)
    assert not same_program(ir, base)


def _two_sessions(tmp_path, write_matrix, models):
    matrix = write_matrix(models)
    results = tmp_path / "r"
    for session in ("cpu_fp32", "cpu_onednn_fp32"):
        # causes and hazards are read from the stages: no analysis is needed (nor read)
        proc = run_harness("run", "--matrix", str(matrix), "--session", session, "--results", str(results),
                           "--no-root-cause")
        assert_exit_agrees(proc, results, session)
    return results, run_harness("report", "--results", str(results))


def test_hazards_are_probed_once_per_version_and_reported_once(tmp_path, write_matrix, paddle_version):
    results, report = _two_sessions(tmp_path, write_matrix, {"clean": "tests.factories:clean"})
    assert report.returncode == 0, report.stderr
    # One probe for both sessions, every backend's hazards in it, saying what it was made for.
    probes = sorted((results / "default").rglob("hazards*.json"))
    assert [p.relative_to(results / "default").as_posix() for p in probes] == [f"versions/{paddle_version}/hazards-cpu.json"]
    probe = json.loads(probes[0].read_text())
    assert probe["made_for"]["packages"] and probe["made_for"]["machine"]
    assert {h["id"] for h in probe["hazards"]} >= {"delete_onednn_placement_pass"}  # an onednn-only hazard too
    memory = [h for h in probe["hazards"] if h["id"] == "memory_optim_without_new_executor"]
    if probe["format"] == "pir":
        assert memory[0]["status"] == "hazard"
        assert "memory_optimize_pass" in memory[0]["message"] and memory[0]["issue"].endswith("/75496")
        lines = [ln for ln in report.stdout.splitlines() if "memory_optim_without_new_executor" in ln]
        assert len(lines) == 1, report.stdout
        assert f"Paddle {paddle_version} (cpu: every session)" in lines[0]
    else:
        assert memory == []  # legacy programs: the bare call works, nothing to report
    # A hazard is a finding about Paddle, never a cell's verdict.
    for record in (results / "default").glob("*/*/normal/clean.json"):
        assert json.loads(record.read_text())["verdict"]["status"] == "pass"
    text = (results / "default" / "report.md").read_text()
    assert text.index("## Matrix at a glance") < text.index("## Findings") < text.index("## cpu_fp32 · Paddle")


def test_one_cause_in_many_cells_is_one_line(tmp_path, write_matrix, paddle_version):
    results, report = _two_sessions(tmp_path, write_matrix, {"a": "tests.factories:truncated_params",
                                                             "b": "tests.factories:truncated_params"})
    causes = [ln for ln in report.stdout.splitlines() if ln.strip().startswith("[C")]
    assert len(causes) == 1, report.stdout
    for session in ("cpu_fp32", "cpu_onednn_fp32"):
        for model in "ab":
            assert f"{session}/{paddle_version}/normal/{model}" in causes[0]
    assert "in 4 cell(s)" in causes[0] and "Cannot read" in causes[0]
    from harness.report.model import RunModel

    model = RunModel.load(results / "default")
    assert [c.count for c in model.causes()] == [sum(
        1 for r in model.records for s in r.stages if s.status == "error")]


def test_a_truncated_params_file_is_bad_input_for_diff(tmp_path, write_matrix):
    matrix = write_matrix({"clean": "tests.factories:clean"})
    results = tmp_path / "r"
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(results))
    export = next(p for p in (results / "default").rglob("export") if p.is_dir())
    params = next(export.glob("*.pdiparams"))
    params.write_bytes(params.read_bytes()[: params.stat().st_size // 3])
    line = one_line_error(run_harness("diff", "--model-dir", str(export), "--test", "cpu_onednn_fp32",
                                      "--shape", "image=1,3,16,16", "--out", str(tmp_path / "d")))
    assert params.name in line and "Paddle cannot load" in line
