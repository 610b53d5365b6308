"""A trial's death is that trial's outcome (real Paddle, real processes): a trial killed by a signal
is recorded with Paddle's last words and the search goes on; the one-op program a reduction writes
calls the public API the model called."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cell.base.sandbox import Death, in_child
from harness.shared.vocab import Analysis

from .conftest import load_record, run_harness, stages_by_name

REDUCE = Analysis.REDUCE.journal_key


def _run(write_matrix, tmp_path, name, factory, inputs, session="cpu_fp32"):
    matrix = write_matrix({name: factory}, inputs={name: inputs})
    proc = run_harness("run", "--matrix", str(matrix), "--session", session, "--results", str(tmp_path / "r"))
    return tmp_path / "r" / "default", proc


def test_a_trial_killed_by_a_signal_is_recorded_and_the_descent_goes_on(write_matrix, tmp_path, paddle_version):
    results, proc = _run(write_matrix, tmp_path, "dies", "tests.factories:trial_dies", "x = { shape = [2, 8] }")
    record = load_record(results, f"cpu_fp32/{paddle_version}/normal/dies")
    assert stages_by_name(record)["baseline"]["status"] == "fail", proc.stdout[-2000:]
    reduce = record["analysis"]["reduce"]
    # The worker lived on: the reduction ended, at the planted failure beside the dying half.
    assert reduce["status"] == "pass" and reduce["outcome"] == "localized", reduce
    assert reduce["path"] == "last" and reduce["layer"] == "ExportedOtherwise", reduce
    died = [t for t in reduce["trials"] if t.get("died")]
    assert died and all("first" in t["members"] for t in died), reduce["trials"]
    death = died[0]["died"]
    assert death["how"] == "SIGSEGV" and death["phase"] == "export", death
    assert death["by"] == "paddle" and not died[0]["reproduces"], death  # the model's own layer: not the harness's
    assert reduce["deaths"][0]["how"] == "SIGSEGV"
    assert record["launches"] == 1, "the cell's worker was never restarted: no death reached it"
    # Counted once as a crash of its own in the run's findings, apart from the cell's numeric failure.
    assert "SIGSEGV" in proc.stdout and "(a trial of the reduce)" in proc.stdout, proc.stdout[-3000:]


def _unique_in_its_dygraph_form():
    """The six-argument dygraph form of ``_C_ops.unique`` traced by ``to_static`` (FIELD_NOTES:
    SIGSEGV in ``paddle::pybind::static_api_unique`` at 3.3.1)."""
    import tempfile

    import paddle

    class OneOp(paddle.nn.Layer):
        def forward(self, x):
            return paddle._C_ops.unique(x, False, True, False, [], paddle.base.libpaddle.DataType.INT64)[0]

    layer = OneOp()
    spec = [paddle.static.InputSpec([8], "int64", "x")]
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec), tempfile.mkdtemp() + "/m")
    return "saved"


def test_a_dying_paddle_call_in_a_child_is_a_death_with_paddles_last_words(tmp_path, paddle_version):
    """The dygraph form reads a seventh argument that is not there: whatever lies in memory. Measured
    at 3.3.1: most runs SIGSEGV in ``static_api_unique``; some raise "argument (position 7) must be
    bool, but got str". A death is read back with Paddle's frame; a raise comes back as a raise."""
    if paddle_version != "3.3.1":
        pytest.skip(f"measured at 3.3.1 (FIELD_NOTES); Paddle here is {paddle_version}")
    try:
        outcome = in_child(_unique_in_its_dygraph_form, tmp_path / "trial", timeout=120)
    except RuntimeError as exc:  # the other way it goes: Paddle's own words about the argument it read
        assert "argument (position 7)" in str(exc), exc
    else:
        assert isinstance(outcome, Death), outcome
        assert outcome.how == "SIGSEGV" and outcome.frame == "paddle::pybind::static_api_unique", outcome
        assert "SIGSEGV in paddle::pybind::static_api_unique" in outcome.words()
    # The caller lives on, and the next trial runs.
    assert in_child(lambda: 6 * 7, tmp_path / "next", timeout=60) == 42


def test_a_death_reads_paddles_report_and_the_phase_it_was_in(tmp_path):
    """A child killed by a signal (here its own SIGABRT after announcing a phase) is a Death with the
    signal and the phase; Paddle's fatal-signal report, when printed, gives the frame and summary."""
    import os
    import signal

    from harness.cell.base.sandbox import phase
    from harness.shared.causes import last_words

    def dies():
        phase("stage")
        os.kill(os.getpid(), signal.SIGABRT)

    outcome = in_child(dies, tmp_path / "t", timeout=60)
    assert isinstance(outcome, Death) and outcome.how == "SIGABRT" and outcome.phase == "stage", outcome
    report = ("C++ Traceback (most recent call last):\n--------\n0   paddle::pybind::eager_api_x(_object*)\n"
              "1   paddle::pybind::static_api_unique(_object*, _object*, _object*)\n\n----\nError Message Summary:\n"
              "----\nFatalError: `Segmentation fault` is detected by the operating system.\n"
              "  [SignalInfo: *** SIGSEGV (@0x0) received by PID 1 ***]\n")
    assert last_words(report) == ("paddle::pybind::static_api_unique", "Segmentation fault")


def test_a_planted_segment_head_is_reduced_to_unique_and_its_reproducer_calls_paddle_unique(
        write_matrix, tmp_path, paddle_version):
    if paddle_version != "3.3.1":
        pytest.skip(f"constant_folding_pass over unique on a buffer raises from 3.0.0; measured at 3.3.1, here {paddle_version}")
    results, proc = _run(write_matrix, tmp_path, "seg", "tests.factories:segment_head", "tokens = { shape = [2, 8, 8] }")
    record = load_record(results, f"cpu_fp32/{paddle_version}/normal/seg")
    stages = stages_by_name(record)
    assert stages["ir"]["status"] == "error", stages["ir"]
    assert "does not match the type of data (int64)" in stages["ir"]["message"]
    reduce = record["analysis"]["reduce"]
    assert reduce["path"] == "pool" and reduce["layer"] == "SegmentPool", reduce
    assert reduce["op"] == "pd_op.unique" and reduce["op_api_reproduces"] is True, reduce
    assert "return_inverse=True" in reduce["op_api"][0]
    repro = record["analysis"]["reproducer"]
    assert repro["status"] == "pass" and repro["verified"] is True, repro
    script = open(repro["script"], encoding="utf-8").read()
    assert "paddle.unique(" in script and "_C_ops" not in script, script
    # The source reproducer is that op in Paddle's API alone; the piece beside it for releases the op cannot be
    # asked at (2.6.2 does not run a program of no feed: measured, its fetch op raises).
    source = repro["source"]
    assert source["program"] == "ops" and source["verified"] is True, source
    assert source["larger"]["program"] == "piece" and source["larger"]["verified"] is None, source["larger"]


def test_a_worker_killed_inside_an_analysis_step_leaves_what_the_step_had_found(write_matrix, tmp_path, paddle_version):
    """A trial whose child takes the worker with it (a stand-in for the OOM killer; here on ONNX
    Runtime, whose trials' conversions a launcher forks): the step's record is the crash, and the
    trials that had ended before it, with the stage it analysed."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    from .conftest import ORT_SESSION

    matrix = write_matrix({"dies": "tests.factories:unconvertible_then_dies"}, extra=ORT_SESSION)
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_ort_fp32", "--results", str(tmp_path / "r"))
    record = load_record(tmp_path / "r" / "default", f"cpu_ort_fp32/{paddle_version}/normal/dies")
    assert stages_by_name(record)["ort_convert"]["status"] == "error", proc.stdout[-3000:]
    reduce = record["analysis"]["reduce"]
    assert reduce["status"] == "crash" and "SIGKILL" in reduce["message"], reduce
    assert reduce["stage"] == "ort_convert", reduce  # which stage it analysed: from what it left
    assert reduce["trials_before"] and reduce["trials_before"][0]["members"] == ["conv", "bn"], reduce
    assert "trial(s) had ended before it" in reduce["ended_before"]
    assert "reduce of ?" not in proc.stdout and "reduce of ort_convert" in proc.stdout, proc.stdout[-3000:]


def test_a_worker_killed_in_lite_training_leaves_a_training_reproducer_that_dies_the_same_way(
        write_matrix, tmp_path, paddle_version):
    """grid_sample's CPU backward dies by SIGSEGV at 3.3 when the image needs no gradient (UVDoc's lite
    training, planted): the setup's crash says the phase it died in, a second worker writes the model
    as source with the lite training after it, and that script dies by the same signal in the same
    Paddle frame — a verified reproducer of the setup, and an issue draft that says training."""
    # Two sessions of one program, in one pool: the second takes the first's failed setup and reproducer.
    matrix = write_matrix({"warped": "tests.factories:warped_by_its_own_grid"},
                          inputs={"warped": "image = { shape = [2, 3, 16, 16] }"})
    proc = run_harness("pool", "--matrix", str(matrix), "--session", "cpu_fp32", "--session", "cpu_onednn_fp32",
                       "--results", str(tmp_path / "r"), "--jobs", "2", "--python", sys.executable)
    results = tmp_path / "r" / "default"
    record = load_record(results, f"cpu_fp32/{paddle_version}/normal/warped")
    setup = record["setup"]
    if setup["status"] == "pass":
        pytest.skip(f"grid_sample's backward does not die at Paddle {paddle_version}")
    assert setup["status"] == "crash" and setup["phase"] == "train", setup
    assert setup["message"].startswith("worker died with SIGSEGV in "), setup["message"]
    assert record["launches"] == 2, "a second worker writes the reproducer"
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "setup" and repro["verified"] is True, repro
    source = repro["source"]
    assert source["outcome"] == "reproduced", source
    assert source["cause_words"] == setup["message"].removeprefix("worker "), source
    script = Path(source["script"]).read_text()
    assert "optimizer.step()" in script and "class WarpedByItsOwnGrid" in script, script[:2000]
    other = load_record(results, f"cpu_onednn_fp32/{paddle_version}/normal/warped")
    assert other["setup"]["status"] == "crash" and other["setup"]["message"] == setup["message"], other["setup"]
    assert other["setup"]["program"]["made_by"] == record["id"], other["setup"]["program"]
    assert "its lite training died" in other["setup"]["program"]["words"]
    assert other["analysis"]["reproducer"]["reused_from"] == record["id"]
    assert other["analysis"]["reproducer"]["source"]["script"] == source["script"]
    run_harness("report", "--results", str(results))
    draft = (Path(source["script"]).parent / "issue.md").read_text()
    assert draft.startswith("# [cpu_fp32] the model's lite training in dygraph dies with SIGSEGV"), draft[:300]
    assert "Training the model in dygraph" in draft and "SIGSEGV" in draft, draft[:1500]


def test_a_lite_training_paddle_raises_in_leaves_a_training_reproducer_that_raises_the_same_words(
        write_matrix, tmp_path, paddle_version):
    """A PyLayer whose backward returns a gradient for its non-tensor input, as PaddleNLP's DeBERTa-v2
    dropout does: Paddle raises in the lite training. The setup's error says the phase, and the same
    worker writes the model as source with the lite training after it; that script raises Paddle's
    same words — a verified reproducer of the setup, which `releases` can bisect."""
    matrix = write_matrix({"dropped": "tests.factories:dropout_as_a_pylayer"},
                          inputs={"dropped": "x = { shape = [2, 8] }"})
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--model", "dropped",
                       "--results", str(tmp_path / "r"))
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    record = load_record(tmp_path / "r" / "default", f"cpu_fp32/{paddle_version}/normal/dropped")
    setup = record["setup"]
    assert setup["status"] == "error" and setup["phase"] == "train", setup
    assert "The number of outputs of `PyLayer.backward` should be 1, but received 2" in setup["message"]
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "setup" and repro["verified"] is True, repro
    source = repro["source"]
    assert source["outcome"] == "reproduced" and "PyLayer.backward" in source["last_line"], source
    script = Path(source["script"]).read_text()
    assert "optimizer.step()" in script and "class _ScaledDropout" in script, script[:2000]


def test_a_model_that_does_not_build_gets_the_call_its_code_made_into_paddle_as_its_reproducer(
        write_matrix, tmp_path, paddle_version):
    """A suite's layer passing Paddle's ``Conv2D`` more arguments by position than it takes: the model
    does not build. The setup's error says the phase; its reproducer is the call the suite's line made
    into Paddle with the values it passed, in Paddle's public names — a script of Paddle alone that
    raises the same words (what ``releases`` bisects: PaddleSpeech's, first bad 3.2.0)."""
    matrix = write_matrix({"conv": "tests.factories:built_with_too_many_positions"})
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--model", "conv",
                       "--results", str(tmp_path / "r"))
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    record = load_record(tmp_path / "r" / "default", f"cpu_fp32/{paddle_version}/normal/conv")
    assert record["setup"]["status"] == "error" and record["setup"]["phase"] == "build", record["setup"]
    repro = record["analysis"]["reproducer"]
    source = repro["source"]
    assert repro["verified"] is True and source["program"] == "ops", repro
    assert source["what"].startswith("the call tests/factories.py:") and "paddle.nn.Conv2D" in source["what"], source
    script = Path(source["script"]).read_text()
    assert "paddle.nn.Conv2D(3, 4, 3, 1, 1, 1, 1, 'zeros', None, None, 'NCHW', 'beyond')" in script, script
    assert "tests" not in script.split('"""')[-1] and "import paddle\n" in script  # Paddle alone


def test_a_stage_that_kills_the_worker_is_said_with_paddles_last_words(write_matrix, tmp_path, paddle_version):
    """A oneDNN predictor dying while its passes build a fused convolution (Paddle 3.3.x: SIGSEGV in
    ``FusedConv2dOp::Build``): the passes' output is read from the worker's log, where it was written
    as Paddle printed it, so the crash is said with its innermost frame and the log keeps the traceback."""
    if not paddle_version.startswith("3.3"):
        pytest.skip("the fused convolution's SIGSEGV is measured at Paddle 3.3.0 and 3.3.1")
    results, proc = _run(write_matrix, tmp_path, "clr", "tests.factories:conv_leaky_relu_onednn",
                         "x = { shape = [1, 4, 8, 8] }", session="cpu_onednn_fp32")
    record = load_record(results, f"cpu_onednn_fp32/{paddle_version}/normal/clr")
    stage = stages_by_name(record)["onednn_fp32"]
    assert stage["status"] == "crash" and stage["signal"] == "SIGSEGV", stage
    assert stage["message"] == "worker died with SIGSEGV in pir::FloatAttribute::data", stage["message"]
    log = (results / f"cpu_onednn_fp32/{paddle_version}/normal/clr/worker.log").read_text()
    assert "FusedConv2dOp::Build" in log and "Running PIR pass [conv_activation_mkldnn_fuse_pass]" in log
    # Reduced in children, a trial's death the same as the stage's its answer: the bias-free
    # convolution and the activation, not the stem; and a reproducer that dies the same way.
    reduce, repro = record["analysis"]["reduce"], record["analysis"]["reproducer"]
    assert reduce["status"] == "pass" and reduce["op"] == "pd_op.conv2d -> pd_op.leaky_relu", reduce
    dying = [t for t in reduce["trials"] if t["reproduces"]]
    assert dying and all("stem" not in t["members"] for t in dying), reduce["trials"]
    assert all(t["died"]["how"] == "SIGSEGV" for t in dying)
    assert repro["verified"] is True and repro["last_line"] == "died with SIGSEGV in pir::FloatAttribute::data", repro
    for kind in ("bisect", "workaround"):  # said, not run
        assert record["analysis"][kind]["status"] == "skip" and "killed its worker" in record["analysis"][kind]["message"]
    assert "conv_activation_mkldnn_fuse_pass" in " ".join(t["died"]["tail"] for t in dying)  # the pass it died in
    assert "deaths" not in reduce  # the stage's own cause: no death of a trial counted apart
    assert "(a trial of the reduce)" not in proc.stdout and "pd_op.conv2d -> pd_op.leaky_relu" in proc.stdout
    assert record["launches"] == 2 and record["verdict"]["message"] == stage["message"]
