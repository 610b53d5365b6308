"""Known answers from real Paddle (CPU): every test runs the harness as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from harness.shared.machine import has, label

from .conftest import ROOT, load_record, one_line_error, run_harness, stages_by_name


def _run(matrix, results, session="cpu_fp32", *extra):
    return run_harness("run", "--matrix", str(matrix), "--session", session, "--results", str(results), *extra)


def _cell(record_dir, session, version, model):
    return load_record(record_dir, f"{session}/{version}/normal/{model}")


def test_clean_model_passes_every_stage_and_says_why_it_skips_one(write_matrix, tmp_path, paddle_version):
    matrix = write_matrix({"clean": "tests.factories:clean"})
    proc = _run(matrix, tmp_path / "r")
    record = _cell(tmp_path / "r" / "default", "cpu_fp32", paddle_version, "clean")
    stages = stages_by_name(record)
    assert list(stages) == ["baseline", "memory", "ir", "cpu_fp32"]
    assert stages["baseline"]["status"] == "pass", proc.stdout
    assert stages["baseline"]["reference"] == "dygraph"
    assert stages["baseline"]["worst"]["max_abs"] <= 1e-5
    assert record["launches"] == 1  # nothing crashed: one worker, one import of paddle
    pir = record["setup"]["export"]["format"] == "pir"
    if pir:
        # No memory-optimization lever exists for PIR programs: skipped with the reason and its source.
        assert stages["memory"]["status"] == "skip"
        assert "new executor" in stages["memory"]["message"] and "analysis_predictor.cc" in stages["memory"]["message"]
        assert stages["baseline"]["config"]["opt_level"] == 0 and stages["ir"]["config"]["opt_level"] == 3
    else:
        assert stages["memory"]["status"] == "pass"
        assert "memory_optimize_pass" in stages["memory"]["evidence"]["analysis_passes"]
    for name in ("ir", "cpu_fp32"):
        assert stages[name]["status"] == "pass", stages[name]
        # Evidence that the stage ran something else than the baseline: more passes.
        assert len(stages[name]["evidence"]["passes"]) > len(stages["baseline"]["evidence"]["passes"])
    assert stages["cpu_fp32"]["evidence"]["config_read_back"]["threads"] == 2
    # The machine, seen from inside the cell's environment: the CPU, its numeric flags, the ISA
    # oneDNN chose, the math threads the stages used; shown once under the table.
    machine = record["machine"]
    assert machine["seen_from"] == "cell" and machine["cpu"] and "avx2" in machine["flags"]
    assert machine["onednn"]["isa"] and machine["onednn"]["version"]
    assert machine["threads"] == [1, 2] and machine["usable_cores"] >= 1 and len(machine["key"]) == 12
    assert proc.stdout.count("Machine: ") == 1 and f"isa {machine['onednn']['isa']}" in proc.stdout
    assert record["verdict"]["status"] == "pass" and proc.returncode == 0
    assert not record["analysis"]
    assert "cpu_fp32/" in proc.stdout and "baseline" in proc.stdout  # the terminal table


def test_python_side_state_baked_in_by_to_static_fails_the_consistency_check(write_matrix, tmp_path, paddle_version):
    matrix = write_matrix({"stateful": "tests.factories:python_state"})
    proc = _run(matrix, tmp_path / "r", "cpu_fp32", "--no-root-cause")  # the check's verdict, not its analysis
    record = _cell(tmp_path / "r" / "default", "cpu_fp32", paddle_version, "stateful")
    baseline = stages_by_name(record)["baseline"]
    assert baseline["status"] == "fail"
    assert baseline["worst"]["max_rel"] > 0.05  # the call count differs by at least one in a handful
    assert baseline["worst"]["mismatched"] > 0
    assert record["verdict"] == {"status": "fail", "first_failing_stage": "baseline",
                                 "message": record["verdict"]["message"]}
    assert proc.returncode == 1
    assert "FIRST FAILURE" in proc.stdout
    # The merged report is rebuilt from the records alone.
    report = run_harness("report", "--results", str(tmp_path / "r"))
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "r" / "default" / "report.md").read_text()
    assert f"cpu_fp32/{paddle_version}/normal/stateful" in text
    row = next(ln for ln in text.splitlines() if "/stateful" in ln and "| baseline" in ln)
    assert "fail" in row and "FIRST FAILURE" in row
    assert "per-output error statistics" in text


def test_tiny_outputs_are_vacuous_not_pass_and_start_no_root_cause(write_matrix, tmp_path, paddle_version):
    matrix = write_matrix({"tiny": "tests.factories:tiny_outputs"})
    proc = _run(matrix, tmp_path / "r")
    record = _cell(tmp_path / "r" / "default", "cpu_fp32", paddle_version, "tiny")
    stages = stages_by_name(record)
    assert stages["baseline"]["status"] == "vacuous"
    assert stages["baseline"]["outputs"]["output"]["vacuous"] is True
    assert "vacuous" in stages["baseline"]["worst"]["note"]
    # Every later stage compares 1e-7 outputs with atol 1e-4 too: vacuous, never pass, and no
    # per-tensor diff or culprit search hunts for a divergence that cannot be seen.
    assert stages["ir"]["status"] == "vacuous" and stages["cpu_fp32"]["status"] == "vacuous"
    assert record["analysis"] == {}
    assert record["verdict"]["status"] == "vacuous"
    assert proc.returncode == 1


def test_detector_inputs_are_fed_by_name_and_dict_outputs_matched_by_key(tmp_path, paddle_version):
    results = tmp_path / "r"
    proc = run_harness("run", "--session", "cpu_fp32", "--paddle", paddle_version, "--model", "detector",
                       "--results", str(results), "--matrix", str(ROOT / "matrix" / "default.toml"))
    assert "error:" not in proc.stderr, proc.stderr
    record = _cell(results / "default", "cpu_fp32", paddle_version, "detector")
    assert record["setup"]["signature_order"] == ["image", "im_shape", "scale_factor"]
    baseline = stages_by_name(record)["baseline"]
    assert baseline["feed_order"] == ["im_shape", "image", "scale_factor"]
    assert list(baseline["outputs"]) == ["bbox", "bbox_num", "scores"]
    assert baseline["outputs"]["bbox"]["shape"] == [2, 8, 4]
    assert baseline["outputs"]["bbox_num"].get("exact") is True
    assert baseline["status"] == "pass"
    # Meaningful magnitudes: boxes are in pixels, so fp32's atol cannot swallow them.
    assert baseline["outputs"]["bbox"]["ref_absmax"] > 1.0


def test_bf16_backend_is_judged_against_what_bf16_explains_or_says_why_it_cannot(write_matrix, tmp_path, paddle_version):
    """A bf16 stage's error against fp32 is judged against the floor measured for this model and
    these inputs (weights, inputs and every op's output rounded to bf16), not a fixed tolerance: a
    tolerance 200 times tighter than the shipped one changes nothing of the verdict."""
    models = {"resnet": "harness.models:resnet18"}
    extra = "inputs.image = { shape = [1, 3, 32, 32] }"
    strict = write_matrix(models, name="strict.toml", bf16_tol=1e-4, extra=extra)
    _run(strict, tmp_path / "strict", "cpu_onednn_bf16")
    record = _cell(tmp_path / "strict" / "default", "cpu_onednn_bf16", paddle_version, "resnet")
    bf16 = stages_by_name(record)["onednn_bf16"]
    machine = record["machine"]
    if has(machine, "avx512_bf16") or has(machine, "amx_bf16"):
        assert bf16["status"] != "skip", bf16  # the CPU has bf16: Paddle must run it
    if bf16["status"] == "skip":
        # Without AVX512-BF16/AMX Paddle logs "CPU does not support BFLOAT16" and runs fp32:
        # the harness must say so rather than pass fp32-vs-fp32 as a bf16 result.
        assert "does not support bfloat16" in bf16["message"]
        pytest.skip(f"this CPU has no bfloat16 (record: {label(machine)}); the bf16 stage is correctly a skip")
    # A real bf16 error: far beyond fp32 noise, around 1e-2 of the output's scale ...
    scale_error = bf16["worst"]["max_abs"] / bf16["worst"]["ref_absmax"]
    assert 1e-4 < scale_error < 5e-2, scale_error
    # ... which bf16 itself explains: the floor, its method and k in the record, the stage within it.
    floor = bf16["floor"]
    assert floor["format"] == "bf16" and "rounded to bf16" in floor["method"] and floor["k"] == 3.0
    assert floor["floor"]["0"]["output"] > 0
    verdict = bf16["floor_verdict"]
    assert verdict["verdict"] == "within" and verdict["outputs"]["output"]["ratio"] <= floor["k"], verdict
    assert bf16["status"] == "pass" and "within what bf16 explains" in bf16["message"], bf16
    assert all(s["status"] == "pass" for s in bf16.get("shapes") or []), bf16.get("shapes")


def test_answers_bf16_itself_changes_are_a_risk_said_apart_from_the_runtime(write_matrix, tmp_path, paddle_version):
    """Two classes closer than bf16 resolves at their scale: the runtime is within the floor (no
    bug of its), and the floor's own answers changed — said as the precision's risk, apart."""
    matrix = write_matrix({"tied": "tests.factories:nearly_tied"}, inputs={"tied": "x = { shape = [4, 8] }"},
                          tasks={"tied": '"classifier"'})
    _run(matrix, tmp_path / "r", "cpu_onednn_bf16")
    record = _cell(tmp_path / "r" / "default", "cpu_onednn_bf16", paddle_version, "tied")
    bf16 = stages_by_name(record)["onednn_bf16"]
    if bf16["status"] in ("skip", "noop"):
        pytest.skip(f"bf16 did not run on this CPU ({label(record['machine'])}): {bf16.get('message', '')[:120]}")
    assert bf16["status"] == "pass" and bf16["floor_verdict"]["verdict"] == "within", bf16
    changed = bf16["floor"]["answers_changed"]
    assert changed["shapes"]["0"]["changed"] is True, changed
    assert "bf16 itself changes what the model answers" in bf16["message"] and "not a bug of the runtime" in bf16["message"]


def test_a_runtime_worse_than_its_precision_fails_as_beyond_the_floor_and_is_reduced(write_matrix, tmp_path, paddle_version):
    """The floor's other side: oneDNN's in-place cumsum read by its sibling mean is wrong by ~half a
    row's total, thousands of times what bf16 rounding moves the mean: a failure said as beyond
    the floor, root-caused like any other (no reduction is spent on a stage within it)."""
    matrix = write_matrix({"summean": "tests.factories:cumsum_beside_mean",
                           "behind": "tests.factories:rounded_then_cumsum_beside_mean"},
                          inputs={"summean": "x = { shape = [2, 16] }", "behind": "x = { shape = [2, 16] }"})
    _run(matrix, tmp_path / "r", "cpu_onednn_bf16")
    record = _cell(tmp_path / "r" / "default", "cpu_onednn_bf16", paddle_version, "summean")
    bf16 = stages_by_name(record)["onednn_bf16"]
    if bf16["status"] in ("skip", "noop"):
        pytest.skip(f"bf16 did not run on this CPU ({label(record['machine'])}): {bf16.get('message', '')[:120]}")
    verdict = bf16["floor_verdict"]
    assert bf16["status"] == "fail" and verdict["verdict"] == "beyond", bf16
    mean = verdict["outputs"]["1"]
    assert mean["ratio"] > 10 * bf16["floor"]["k"] and mean["floor"] > 0, verdict
    assert "beyond what bf16 explains" in bf16["message"] and "bfloat16" in bf16["evidence"]["output_dtypes"]
    analysis = record["analysis"]
    assert analysis["diff"]["first_divergence"]["op"].startswith("pd_op.mean"), analysis["diff"]
    assert analysis["reproducer"]["source"]["verified"] is True, analysis["reproducer"]
    # The per-op precision switch asked only after reading what it does: with every op type kept at
    # fp32, whether an op still produced bf16 (3.3.1's PIR placement reads no config: ignored).
    kept = analysis["fp32_ops"]
    assert kept["evidence"]["switch"] == "set_bfloat16_op" and "mean" in kept["evidence"]["kept_at_fp32"], kept
    if kept["honoured"] is False:
        assert kept["evidence"]["reduced_outputs_left"] and "ignores the switch" in kept["message"], kept
        assert any("set_bfloat16_op" in n for n in analysis["workaround"]["not_tried"]), analysis["workaround"]
    else:
        assert kept["honoured"] is True and kept["builds"] >= 2, kept
    # Behind a piece bf16 moves past the tolerance (not past its own floor), the reduction places the
    # bug: each piece is judged against a floor of its own, as the stage was.
    behind = _cell(tmp_path / "r" / "default", "cpu_onednn_bf16", paddle_version, "behind")["analysis"]["reduce"]
    trials = {tuple(t["members"]): t for t in behind["trials"]}
    noise = trials[("rounded",)]
    assert noise["reproduces"] is False and "out of tolerance, within the piece's bf16 floor" in noise["note"], noise
    assert trials[("bug",)]["reproduces"] is True and "beyond the piece's bf16 floor" in trials[("bug",)]["note"]
    assert behind["members"] == ["bug"] or behind["path"] == "bug", behind


def test_a_factory_that_kills_its_process_is_a_crash_and_other_cells_finish(write_matrix, tmp_path, paddle_version):
    matrix = write_matrix({"dies": "tests.factories:dies_in_factory", "clean": "tests.factories:clean"})
    proc = _run(matrix, tmp_path / "r")
    results = tmp_path / "r" / "default"
    dead = _cell(results, "cpu_fp32", paddle_version, "dies")
    assert dead["verdict"]["status"] == "crash"
    assert dead["verdict"]["first_failing_stage"] == "setup"
    assert dead["setup"]["signal"] == "SIGSEGV"
    assert all(s["status"] == "skip" for s in dead["stages"])
    clean = _cell(results, "cpu_fp32", paddle_version, "clean")
    assert stages_by_name(clean)["baseline"]["status"] == "pass"
    assert proc.returncode == 1
    assert "crash" in proc.stdout


def _first_built_after_baseline(stages):
    return next(n for n, s in stages.items() if n != "baseline" and s["status"] != "skip")


def test_a_crash_inside_a_stage_is_recorded_and_the_next_stages_still_run(write_matrix, tmp_path, paddle_version):
    matrix = write_matrix({"dies": "tests.factories:dies_after_baseline"})
    _run(matrix, tmp_path / "r")
    record = _cell(tmp_path / "r" / "default", "cpu_fp32", paddle_version, "dies")
    stages = stages_by_name(record)
    crashed = [n for n, s in stages.items() if s["status"] == "crash"]
    assert crashed == [_first_built_after_baseline(stages)], stages
    assert stages[crashed[0]]["signal"] == "SIGKILL"
    assert stages["baseline"]["status"] == "pass"
    after = list(stages)[list(stages).index(crashed[0]) + 1:]
    assert after and all(stages[n]["status"] == "pass" for n in after), stages
    assert record["launches"] == 2  # one restart, after the crash only
    assert record["verdict"] == {"status": "crash", "first_failing_stage": crashed[0],
                                 "message": record["verdict"]["message"]}
    assert "SIGKILL" in record["verdict"]["message"]


def test_a_hung_stage_times_out_and_the_cell_goes_on(write_matrix, tmp_path, paddle_version):
    matrix = write_matrix({"hangs": "tests.factories:hangs_after_baseline"}, stage_timeout=15)
    _run(matrix, tmp_path / "r")
    record = _cell(tmp_path / "r" / "default", "cpu_fp32", paddle_version, "hangs")
    stages = stages_by_name(record)
    timed_out = [n for n, s in stages.items() if s["status"] == "timeout"]
    assert timed_out == [_first_built_after_baseline(stages)], stages
    assert "ran over 15 s" in stages[timed_out[0]]["message"]
    assert stages[list(stages)[-1]]["status"] == "pass"


def test_killing_a_run_loses_no_finished_cell_and_a_rerun_resumes(write_matrix, tmp_path, paddle_version):
    matrix = write_matrix({"a": "tests.factories:clean", "b": "tests.factories:clean", "c": "tests.factories:clean"})
    results = tmp_path / "r"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--session",
                             "cpu_fp32", "--results", str(results)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    first = results / "default" / "cpu_fp32" / paddle_version / "normal" / "a.json"
    deadline = time.monotonic() + 300
    while not first.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert first.exists()
    os.killpg(proc.pid, signal.SIGKILL)  # host and worker, mid-cell b
    proc.wait()
    kept = first.read_text()
    rerun = _run(matrix, results)
    assert "a: pass (recorded earlier" in rerun.stdout, rerun.stdout
    assert first.read_text() == kept
    for model in "bc":
        assert _cell(results / "default", "cpu_fp32", paddle_version, model)["verdict"]["status"] == "pass"
    forced = _run(matrix, results, "cpu_fp32", "--force", "--model", "a")
    assert "recorded earlier" not in forced.stdout
    assert first.read_text() != kept


def test_a_factory_that_cannot_be_imported_is_a_user_error_and_loses_nothing(write_matrix, tmp_path, paddle_version):
    good = write_matrix({"clean": "tests.factories:clean"}, name="good.toml")
    results = tmp_path / "r"
    _run(good, results)
    record = results / "default" / "cpu_fp32" / paddle_version / "normal" / "clean.json"
    kept = record.read_text()
    bad = write_matrix({"clean": "tests.factories:clean", "ghost": "no_such_package.models:net"}, name="bad.toml")
    line = one_line_error(_run(bad, results))
    assert "models.ghost.factory" in line and "no_such_package" in line
    assert record.read_text() == kept
    garbage = write_matrix({"garbage": "tests.factories:returns_garbage"}, name="garbage.toml")
    assert "must return (paddle.nn.Layer" in one_line_error(_run(garbage, results))
