"""ONNX Runtime through paddle2onnx (``cpu_ort_fp32``): real conversions, real ORT sessions.

The tests env installs the session's pinned packages (noxfile ``tests``). What each stage claims
is read back: the level ORT's SessionOptions hold, the providers the session uses, the graph
before and after ORT's optimizations.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import NOX, OPENVINO_SESSION, ORT_SESSION, ROOT, exact_cells_at_2_6, exact_fp32, load_record, run_harness, stages_by_name

pytestmark = pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None
                                or importlib.util.find_spec("paddle2onnx") is None,
                                reason="needs the cpu_ort_fp32 session's packages (nox -s tests installs them)")


def _run_exact(write_matrix, tmp_path, paddle_version, name, factory):
    """One model through cpu_ort_fp32 at zero fp32 tolerance; its record."""
    matrix = write_matrix({name: factory}, extra=ORT_SESSION)
    matrix.write_text(exact_fp32(matrix.read_text()))
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_ort_fp32", "--results", str(tmp_path / "r"))
    return load_record(tmp_path / "r" / "default", f"cpu_ort_fp32/{paddle_version}/normal/{name}")


def _run(write_matrix, tmp_path, models):
    matrix = write_matrix(models, extra=ORT_SESSION)
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_ort_fp32", "--results", str(tmp_path / "r"))
    return tmp_path / "r" / "default", proc


def test_the_conversion_and_ort_optimizations_run_and_say_what_they_did(write_matrix, tmp_path, paddle_version):
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    elsewhere = tmp_path / "elsewhere"  # the working directory: a user's repository
    elsewhere.mkdir()
    matrix = write_matrix({"clean": "tests.factories:clean"}, extra=ORT_SESSION)
    # The results given relative to it (``--results r``, as a user types it): the conversion's child
    # works in its own folder and still finds the program (before, it looked for `r/...` there).
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_ort_fp32", "--results", "r", cwd=elsewhere)
    results = elsewhere / "r" / "default"
    record = load_record(results, f"cpu_ort_fp32/{paddle_version}/normal/clean")
    stages = stages_by_name(record)
    assert list(stages) == ["baseline", "ort_convert", "ort_fp32"]
    # Each conversion runs in its own folder (what paddle2onnx's constant folding saves lands there), none
    # in the working directory.
    logs = sorted(results.rglob("*.convert.log"))
    assert logs and all(log.read_text().startswith(f"converting in {log.parent}\n") for log in logs), logs
    assert [p.name for p in elsewhere.iterdir()] == ["r"]
    convert, optimized = stages["ort_convert"], stages["ort_fp32"]
    assert convert["status"] == "pass" and optimized["status"] == "pass"
    for stage, level, threads in ((convert, "ORT_DISABLE_ALL", 1), (optimized, "ORT_ENABLE_ALL", 2)):
        evidence = stage["evidence"]
        assert evidence["providers"] == ["CPUExecutionProvider"]  # what the session says it uses
        assert evidence["config_read_back"] == {"graph_optimization_level": f"GraphOptimizationLevel.{level}",
                                                "intra_op_num_threads": threads}
        assert evidence["converter"].startswith("paddle2onnx ") and isinstance(evidence["opset"], int)
        assert evidence["converted"]["nodes"] > 0 and "Conv" in evidence["converted"]["op_types"]
        assert stage["reference"] == "baseline" and stage["outputs"]["output"]["max_abs"] is not None
    # ORT's optimizations did something here: fewer nodes than the converted graph (conv+bn+relu fuse).
    assert optimized["evidence"]["ops"] < optimized["evidence"]["converted"]["nodes"]
    assert "not_as_claimed" not in optimized["evidence"]


def test_an_op_paddle2onnx_cannot_convert_is_a_finding_with_the_op_and_a_verified_reproducer(
        write_matrix, tmp_path, paddle_version):
    """paddle2onnx 2.1.0 aborts its process (SIGABRT) on cumprod: the cell survives (the conversion
    runs in a child), the finding names the op, the reproducer makes the same calls and dies alike."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    results, proc = _run(write_matrix, tmp_path, {"unconv": "tests.factories:unconvertible"})
    record = load_record(results, f"cpu_ort_fp32/{paddle_version}/normal/unconv")
    stages = stages_by_name(record)
    assert stages["baseline"]["status"] == "pass"  # Paddle runs it: the conversion is what fails
    message = stages["ort_convert"]["message"]
    assert stages["ort_convert"]["status"] == "error" and "died by signal 6" in message
    assert "Due to the unsupported operators, the conversion is aborted" in message
    assert message.endswith("missing from paddle2onnx's supported list: cumprod")
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "ort_convert" and repro["verified"] is True
    text = Path(repro["script"]).read_text()
    assert "paddle2onnx.export(" in text and "ort.InferenceSession(" in text and "harness" not in text.split('"""')[2]
    alone = subprocess.run([sys.executable, repro["script"]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert alone.returncode != 0 and "Due to the unsupported operators" in alone.stdout + alone.stderr
    assert "cumprod" in proc.stdout  # the terminal's cause line names the op
    # its reduction's trials ran in children of the worker (their conversions forked by the launcher)
    trial_logs = list((results / f"cpu_ort_fp32/{paddle_version}/normal/unconv/reduction").glob("*/trial.log"))
    assert trial_logs and record["analysis"]["reduce"]["status"] == "pass", record["analysis"]["reduce"]
    # Trials of the converter's own words convert once: a second conversion (memory) cannot bear on them.
    reduction = results / f"cpu_ort_fp32/{paddle_version}/normal/unconv/reduction"
    assert list(reduction.glob("*/model.convert.log")) and not list(reduction.glob("*/*perturbed*"))


def test_a_conversion_that_fails_at_its_default_opset_gets_the_converters_own_option_as_workaround(
        write_matrix, tmp_path, paddle_version):
    """paddle2onnx 2.1.0 aborts on ``Tensor.mean()`` with no axis below opset 18 (measured): the
    workaround search tries the converter's own options, smallest first, and verifies opset 18, read
    back from the ONNX it wrote; the change is the conversion call a user writes."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    results, proc = _run(write_matrix, tmp_path, {"centred": "tests.factories:centred_by_its_mean"})
    record = load_record(results, f"cpu_ort_fp32/{paddle_version}/normal/centred")
    stage = stages_by_name(record)["ort_convert"]
    assert stage["status"] == "error" and "Can not get input 'axis(dim)' value" in stage["message"], stage
    found = record["analysis"]["workaround"]
    assert found["verified"] is True and found["change"] == "paddle2onnx: opset_version=18", found
    tried = [t["change"] for t in found["tried"]]
    assert tried[0] == "paddle2onnx: its optimizer off (enable_optimize=False)" and tried[-1] == found["change"], tried
    assert all("pass" not in t["verdicts"].values() for t in found["tried"][:-1]), found["tried"]
    assert found["changes"]["opset"] == 18 and "not_as_claimed" not in found["changes"], found["changes"]
    assert found["change_lines"] == ["paddle2onnx.export(program, params, onnx_file, opset_version=18)"], found
    run_harness("workarounds", "--results", str(tmp_path / "r"))
    table = (results / "workarounds.md").read_text()
    # the converter's words lead the row; the lines are said to be paddle2onnx's and ONNX Runtime's
    assert "| paddle2onnx 2.1.0 said: Can not get input 'axis(dim)' value" in table, table
    assert "paddle2onnx and ONNX Runtime:" in table and "Paddle Inference:" not in table, table


def test_an_ort_optimizer_that_changes_the_numbers_is_found_by_name(write_matrix, tmp_path, paddle_version):
    """A planted model every op of which is exact: at zero tolerance the conversion (ORT's
    optimizations off) agrees with Paddle bit for bit and ``ort_fp32`` does not. The search runs
    over what ORT's own log says changed the graph and names the pair that does it: paddle2onnx
    puts an Identity between the Div and the Mul, so ``DivMulFusion`` only meets its pattern
    after ``EliminateIdentity`` removed it; switching off either one fixes the output."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    record = _run_exact(write_matrix, tmp_path, paddle_version, "recip", "tests.factories:reciprocal_times")
    stages = stages_by_name(record)
    assert stages["ort_convert"]["status"] == "pass", stages["ort_convert"]
    assert stages["ort_fp32"]["status"] == "fail"
    applied = stages["ort_fp32"]["evidence"]["optimizers_applied"]
    assert "Level1_RuleBasedTransformer" in applied  # read from ORT's log, not assumed
    assert stages["ort_convert"]["evidence"]["optimizers_applied"] == []  # ORT_DISABLE_ALL applies none
    bisect = record["analysis"]["bisect"]
    assert bisect["kind"] == "ort_optimizers" and bisect["outcome"] == "found", bisect
    found = bisect["culprits"] + [c for s in bisect["also_fixed_by"] for c in s]
    assert sorted(found) == ["DivMulFusion", "EliminateIdentity"], bisect
    assert len(bisect["culprits"]) == 1 and "the failure needs both" in bisect["verdict"]
    assert bisect["verdict"].startswith("ort_fp32 fails when ONNX Runtime's optimizer ")
    assert bisect["builds"] <= bisect["budget"] and bisect["follow_up_builds"] <= bisect["follow_up_budget"]
    # The converted file itself, as ONNX's reference evaluator computes it, is Paddle's arithmetic:
    # ONNX Runtime's bug, not the converter's.
    judged = record["analysis"]["reproducer"]["conversion"]
    assert judged["owner"] == "runtime" and "agrees with Paddle" in judged["words"], judged


def test_a_converters_bug_met_by_two_runtimes_is_one_cause_with_both_cells(write_matrix, tmp_path, paddle_version):
    """paddle2onnx 2.1.0 converts ``thresholded_relu(value=0.3)`` to ONNX's ThresholdedRelu, which has
    no value: ONNX Runtime and OpenVINO read the same wrong file. ONNX's own semantics (its checker
    and reference evaluator, on the file the reproducer converted) are beyond the tolerance from
    Paddle, so the cause is the converter's: one cause keyed by converter and op, both sessions'
    cells in it, one issue draft addressed to the converter — not a numeric failure per session."""
    pytest.importorskip("openvino")
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    matrix = write_matrix({"thr": "tests.factories:thresholded_value"}, extra=ORT_SESSION + OPENVINO_SESSION,
                          one_shape=["thr"])
    results = tmp_path / "r"
    for session in ("cpu_ort_fp32", "cpu_openvino_fp32"):
        run_harness("run", "--matrix", str(matrix), "--session", session, "--results", str(results))
    cells = {session: load_record(results / "default", f"{session}/{paddle_version}/normal/thr")
             for session in ("cpu_ort_fp32", "cpu_openvino_fp32")}
    for session, record in cells.items():
        repro = record["analysis"]["reproducer"]
        assert repro["verified"] is True and record["analysis"]["reduce"]["op"] == "pd_op.thresholded_relu"
        judged = repro["conversion"]
        assert judged["owner"] == "converter" and judged["op"] == "pd_op.thresholded_relu", judged
        judge = subprocess.run([sys.executable, judged["script"]], capture_output=True, text=True, timeout=120)
        assert judge.returncode == 1 and "MISMATCH" in judge.stdout  # the file itself is wrong, said alone
    run_harness("report", "--results", str(results), "--run", "default")
    report = (results / "default" / "report.md").read_text()
    from harness.report.model import RunModel

    causes = RunModel.load(results / "default").causes()
    assert [(c.kind, sorted(c.places)) for c in causes] == [
        ("converter", sorted(f"{s}/{paddle_version}/normal/thr" for s in cells))], causes
    assert "paddle2onnx 2.1.0 converts pd_op.thresholded_relu into ONNX that computes otherwise" in report
    drafts = sorted((results / "default").rglob("issue.md"))
    assert len(drafts) == 1, drafts  # one cause, one draft
    text = drafts[0].read_text()
    assert text.startswith("# [paddle2onnx 2.1.0] pd_op.thresholded_relu converted into ONNX")
    assert "`cpu_ort_fp32`" in text and "`cpu_openvino_fp32`" in text and "onnx_reference.py" in text
    # No config change helps a converter that drops an attribute; the model's own code can: the op
    # respelled (paddle.where), verified in each cell as every workaround is, one cause in workarounds.md.
    for record in cells.values():
        found = record["analysis"]["workaround"]
        assert found["verified"] is True and found["model_side"]["api"] == "paddle.nn.functional.thresholded_relu", found
        assert found["shapes"] == 1  # the one shape this test's matrix runs (the zoo's cells verify at three)
        assert found["model_side"]["calls_respelled"] == 1 and all(
            not t.get("model_side") for t in found["tried"][:-1]), found["tried"]  # config changes first
        # the reproducer judged the file the converter's (it runs first): the converter's own options were tried
        assert any("opset_version" in t["change"] for t in found["tried"]), found["tried"]
    run_harness("workarounds", "--results", str(results), "--run", "default")
    table = (results / "default" / "workarounds.md").read_text()
    assert table.count("### paddle2onnx 2.1.0 converts pd_op.thresholded_relu") == 1 and "| 2 of 2 |" in table, table
    assert "paddle.where(x > threshold, x, paddle.full_like(x, value))" in table


def test_a_converter_that_reads_memory_it_never_wrote_is_a_finding_with_the_op(write_matrix, tmp_path, paddle_version):
    """paddle2onnx 2.1.0's pad3d converter writes the Pad value from uninitialised memory (found on
    PP-HGNetV2, whose ONNX output differed by process). The harness converts each program a second
    time with glibc's malloc perturbation: the two files differ, the finding names the node and the
    Paddle op, and the reproducer (the same two conversions with MALLOC_PERTURB_) shows it alone."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    results, proc = _run(write_matrix, tmp_path, {"pad": "tests.factories:pad_then_conv"})
    record = load_record(results, f"cpu_ort_fp32/{paddle_version}/normal/pad")
    stages = stages_by_name(record)
    assert stages["baseline"]["status"] == "pass"
    message = stages["ort_convert"]["message"]
    assert stages["ort_convert"]["status"] == "error"
    assert "paddle2onnx's output depends on memory it never wrote" in message and "from pd_op.pad3d" in message
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "ort_convert" and repro["verified"] is True
    alone = subprocess.run([sys.executable, repro["script"]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert alone.returncode != 0 and "depends on memory it never wrote" in alone.stdout + alone.stderr
    # Trials of a failure of memory convert twice, as the stage did.
    reduction = results / f"cpu_ort_fp32/{paddle_version}/normal/pad/reduction"
    assert list(reduction.glob("*/model.perturbed.onnx")), sorted(reduction.glob("*/*"))


def test_the_per_tensor_diff_pairs_every_converted_tensor_with_paddles(write_matrix, tmp_path, paddle_version):
    """At zero tolerance the conversion fails (ORT's conv and Paddle's sum in other orders); the
    per-tensor diff pairs every value paddle2onnx named after a Paddle op with the tensor that op
    wrote in Paddle's predictor, and the first divergence is the first pair out of tolerance."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    record = _run_exact(write_matrix, tmp_path, paddle_version, "clean", "tests.factories:clean")
    assert stages_by_name(record)["ort_convert"]["status"] == "fail"
    diff = record["analysis"]["diff"]
    assert diff["stage"] == "ort_convert" and diff["outcome"] == "diverges"
    table = json.loads(Path(diff["result"]).read_text())
    assert table["test_tensors"] >= 5 and table["pairs"] == table["test_tensors"]  # every ONNX value paired
    assert not [u for u in table["unmatched"] if u["side"] == "test"]
    assert {r["test_op"] for r in table["rows"]} >= {"pd_op.conv2d", "pd_op.relu"}
    assert all(r["op"].split(":")[0] == r["test_op"] for r in table["rows"])  # same Paddle op on both sides
    first = next(r for r in table["rows"] if r["status"] != "pass" and not r.get("suspect"))
    assert diff["first_divergence"]["index"] == first["index"]
    assert table["final_outputs"][0]["status"] == "fail" and table["hooks_changed_output"] == {"base": False, "test": False}


@pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")
def test_paddle_2_6_programs_convert_with_paddle2onnx_1_and_diff_by_name(tmp_path, nox_envdir):
    """At Paddle 2.6.2 the session's env gets the matrix's ``packages_before."3.0.0"`` pins
    (paddle2onnx 1.x, which converts .pdmodel); the converted values carry the legacy variable
    names, so the per-tensor diff (zero tolerance: the conversion fails) pairs them by name. What
    1.x cannot convert ends as its own words, not as an import error of the 2.x-only op list."""
    import tomllib

    with (ROOT / "matrix" / "default.toml").open("rb") as fh:
        pins = tomllib.load(fh)["sessions"]["cpu_ort_fp32"]["packages_before"]["3.0.0"]
    results = exact_cells_at_2_6(tmp_path, nox_envdir, "cpu_ort_fp32",
                                 {"clean": "tests.factories:clean", "masked": "tests.factories:masked_conv"},
                                 ORT_SESSION + f'packages_before."3.0.0" = {json.dumps(pins)}\n')
    record = load_record(results, "cpu_ort_fp32/2.6.2/normal/clean")
    stages = stages_by_name(record)
    convert = stages["ort_convert"]
    assert convert["status"] == "fail" and convert["evidence"]["converter"].startswith("paddle2onnx 1.")
    assert convert["evidence"]["converted"]["nodes"] > 0 and convert["evidence"]["converted_twice"] is True
    assert stages["ort_fp32"]["evidence"]["providers"] == ["CPUExecutionProvider"]
    diff = record["analysis"]["diff"]
    table = json.loads(Path(diff["result"]).read_text())
    assert diff["outcome"] == "diverges" and table["pairs"] >= 3  # conv, bn, relu, matmul here
    assert all(r["matched_by"] == "name" and r["name"] for r in table["rows"])
    assert {r["op"] for r in table["rows"]} >= {"conv2d", "relu"}
    assert record["analysis"]["reproducer"]["verified"] is True
    # What 1.x cannot convert is a finding in its own words (found on PaddleClas's Swin at 2.6.2).
    masked = load_record(results, "cpu_ort_fp32/2.6.2/normal/masked")
    message = stages_by_name(masked)["ort_convert"]["message"]
    assert "paddle2onnx 1.3.1 said:" in message and "set_value" in message, message
    assert masked["analysis"]["reproducer"]["verified"] is True


CONVERT_AND_COUNT = '''
import sys, sysconfig
from importlib import _bootstrap_external as external
site, compiled = sysconfig.get_paths()["purelib"], []
source_to_code = external.SourceLoader.source_to_code
def counted(self, data, path, *args, **kwargs):
    if str(path).startswith(site):
        compiled.append(str(path)[len(site) + 1:])
    return source_to_code(self, data, path, *args, **kwargs)
external.SourceLoader.source_to_code = counted
import paddle, paddle2onnx
layer = paddle.nn.Linear(4, 2)
spec = [paddle.static.InputSpec([1, 4], "float32", "x")]
paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), sys.argv[1] + "/m")
paddle2onnx.export(sys.argv[1] + "/m.json", sys.argv[1] + "/m.pdiparams", sys.argv[1] + "/m.onnx")
print(len(compiled), compiled[:5])
'''


def test_a_conversion_process_compiles_nothing_of_the_environment_once_it_is_compiled(tmp_path, paddle_version):
    """paddle2onnx 2.x's export imports Polygraphy, onnx_graphsurgeon and sympy only when it runs
    (not at its import); with PYTHONDONTWRITEBYTECODE every converting process compiled ~560 of
    their modules again. After the environment's bytecode step, a fresh interpreter that exports
    and converts compiles no module of the environment."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    from harness.cell.worker import bytecode

    if not (Path(sys.prefix) / bytecode.STAMP).is_file():
        pytest.skip(f"{sys.prefix}: its bytecode step has not run (`nox -s tests` runs it before the tests)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    ran = subprocess.run([sys.executable, "-c", CONVERT_AND_COUNT, str(tmp_path)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0 and (tmp_path / "m.onnx").exists(), ran.stderr[-2000:]
    assert ran.stdout.strip().splitlines()[-1] == "0 []", ran.stdout[-2000:]


def test_a_culprit_search_build_that_dies_is_recorded_and_counted_as_a_crash_of_its_own(write_matrix, tmp_path, paddle_version):
    """The culprit search builds ONNX Runtime sessions with optimizers switched off; one that kills its
    process (planted: a session without DivMulFusion dies by SIGSEGV) is that build's outcome (an
    invalid set: it says nothing of the failure), the search ends with what it could say and the
    worker lives on; the death, a config a user could write, is counted as a crash of its own in the
    run's causes, with the build it killed."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    matrix = write_matrix({"recip": "tests.factories:reciprocal_times_dies_without_divmul"}, extra=ORT_SESSION,
                          one_shape=["recip"])
    matrix.write_text(exact_fp32(matrix.read_text()))
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_ort_fp32", "--results", str(tmp_path / "r"))
    record = load_record(tmp_path / "r" / "default", f"cpu_ort_fp32/{paddle_version}/normal/recip")
    bisect = record["analysis"]["bisect"]
    assert bisect["status"] == "pass" and bisect["invalid_sets"] >= 1, bisect
    assert any("its process died: SIGSEGV" in m for m in bisect["invalid_messages"]), bisect
    assert bisect["deaths"] and all(d["trial"].startswith("ort_fp32.search/build") for d in bisect["deaths"])
    assert bisect["deaths"] and all(d["how"] == "SIGSEGV" and d["by"] == "paddle" for d in bisect["deaths"]), bisect
    assert record["launches"] == 1, "the cell's worker was never restarted: no death reached it"
    assert "(a trial of the bisect)" in proc.stdout, proc.stdout[-3000:]
