"""The journal and the verdict rules: pure logic, no Paddle."""

from __future__ import annotations

import json

from harness.launch import Outcome
from harness.running.runner import _ended_badly, verdict_of
from harness.shared.records import Journal
from harness.shared.vocab import Status


def test_journal_tells_which_stage_was_running_and_ignores_a_torn_line(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    journal.start("setup")
    journal.finish("setup", {"status": Status.PASS})
    journal.start("baseline")
    assert journal.running()[0] == "baseline"
    with open(journal.path, "a") as handle:
        handle.write('{"event": "end", "stage": "base')  # the process died mid-write
    assert journal.running()[0] == "baseline"
    assert journal.finished() == {"setup": {"status": "pass"}}


def test_a_dead_worker_is_recorded_before_the_journal_is_written(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("Traceback\nsegfault here\n")
    crashed = _ended_badly(Outcome(-11, log=log), "ir", 300)
    assert crashed["status"] is Status.CRASH and crashed["signal"] == "SIGSEGV"
    assert "segfault here" in crashed["stderr_tail"]
    assert _ended_badly(Outcome(-9, timed_out=True, log=log), "ir", 300)["status"] is Status.TIMEOUT
    # An analysis that died says so: which stage it analysed is unknown, and the record says None.
    assert _ended_badly(Outcome(-9, log=log), "analysis:bisect", 300)["stage"] is None
    log.write_text("noise\nerror: models.x.factory: cannot import 'y'\n")
    assert Outcome(2, log=log).user_error == "models.x.factory: cannot import 'y'"
    log.write_text("ValueError: (InvalidArgument) bad\n")
    assert Outcome(3, log=log).describe() == {"status": Status.ERROR, "message": "ValueError: (InvalidArgument) bad"}


def _stage(name, status, **extra):
    return {"name": name, "status": status, **extra}


def test_verdict_is_the_first_blocking_stage_else_vacuous_else_pass():
    setup = {"status": "pass"}
    worst = {"output": "logits", "mismatched": 3, "total": 10, "atol": 1e-4, "rtol": 1e-4}
    stages = [_stage("baseline", "pass"), _stage("memory", "skip", message="no lever"),
              _stage("ir", "fail", worst=worst), _stage("cpu_fp32", "error", message="boom")]
    verdict = verdict_of(setup, stages)
    assert verdict["status"] is Status.FAIL and verdict["first_failing_stage"] == "ir"
    assert "logits: 3/10 out of atol" in verdict["message"]
    assert verdict_of(setup, [_stage("baseline", "pass"), _stage("ir", "noop")])["status"] is Status.PASS
    assert verdict_of(setup, [_stage("baseline", "vacuous"), _stage("ir", "pass")])["status"] is Status.VACUOUS
    skipped = verdict_of(setup, [_stage("baseline", "skip", message="no GPU"), _stage("ir", "noop")])
    assert skipped == {"status": Status.SKIP, "first_failing_stage": None, "message": "no GPU"}
    assert verdict_of({"status": "crash", "message": "SIGSEGV"}, [])["first_failing_stage"] == "setup"
    assert json.loads(json.dumps(verdict))["status"] == "fail"


def test_a_setup_entry_reads_as_a_stage_result():
    from harness.shared.results import StageResult

    setup = StageResult.from_dict({"status": "pass", "outputs": ["bbox", "scores"]}, "setup")
    assert setup.passed and setup.outputs == ()


def test_a_low_precision_stage_whose_ops_ran_in_float_is_noop_not_pass():
    from harness.cell.stages import stage_status
    from harness.shared.backends import DeployOptions, plan_by_name, plan_stages

    plan = plan_by_name(plan_stages("cpu", "onednn", "int8", "legacy", DeployOptions(), quantized=True))["onednn_int8"]
    outputs = {"output": {"status": Status.PASS}}
    evidence = {"passes": ["a"], "analysis_passes": [], "op_sequence_sha1": "x", "output_dtypes": {"float32": 30}}
    baseline = {"evidence": dict(evidence, passes=[], op_sequence_sha1="y")}
    assert stage_status(plan, outputs, evidence, baseline) is Status.NOOP
    ran = dict(evidence, output_dtypes={"float32": 12, "uint8": 13})
    assert stage_status(plan, outputs, ran, baseline) is Status.PASS
    assert stage_status(plan, {"output": {"status": Status.FAIL}}, evidence, baseline) is Status.FAIL


def test_a_missing_interpreter_is_said_before_any_work(tmp_path):
    from harness.launch import LocalLauncher

    assert "no such interpreter" in LocalLauncher(str(tmp_path / "nope" / "python")).probe()
    assert LocalLauncher().probe() is None


def test_a_cell_whose_session_stage_skipped_reads_skip_with_that_stage_s_reason():
    setup = {"status": "pass"}
    ran = [_stage("baseline", "pass"), _stage("ir", "pass")]
    unrun = ran + [_stage("onednn_bf16", "skip", message="this CPU does not support bfloat16")]
    verdict = verdict_of(setup, unrun, "onednn_bf16")
    assert verdict == {"status": Status.SKIP, "first_failing_stage": None, "skipped_stage": "onednn_bf16",
                       "message": "onednn_bf16 skipped: this CPU does not support bfloat16"}
    assert verdict_of(setup, ran + [_stage("onednn_bf16", "pass")], "onednn_bf16")["status"] is Status.PASS
    # A failure before it is still the verdict; a skipped lever stage is not the session's own.
    failed = [_stage("baseline", "fail", worst={})] + unrun[1:]
    assert verdict_of(setup, failed, "onednn_bf16")["status"] is Status.FAIL
    lever = [_stage("baseline", "pass"), _stage("memory", "skip", message="no lever"), _stage("cpu_fp32", "pass")]
    assert verdict_of(setup, lever, "cpu_fp32")["status"] is Status.PASS


def test_records_hold_run_relative_paths_that_resolve_wherever_the_run_folder_goes(tmp_path, monkeypatch):
    from harness.shared.records import located, read_record, run_relative, write_record

    run = tmp_path / "results" / "xv"
    monkeypatch.chdir(tmp_path)  # the run started here with the default relative results/
    cell = "cpu_fp32/3.3.1/normal/m"
    record = {"schema": 2, "id": cell, "cell": {"matrix": "/elsewhere/matrix.toml"},
              "setup": {"export": {"program": f"results/xv/{cell}/export/model.json", "format": "pir"}},
              "analysis": {"reproducer": {"script": str(run / cell / "reproducer" / "repro.py"),
                                          "message": "raised at results/xv/x.py"}}}
    for made in (run / cell / "export" / "model.json", run / cell / "reproducer" / "repro.py"):
        made.parent.mkdir(parents=True)
        made.write_text("")
    kept = write_record(run, record)
    written = json.loads((run / f"{cell}.json").read_text())
    assert written["setup"]["export"]["program"] == f"{cell}/export/model.json"
    assert written["analysis"]["reproducer"]["script"] == f"{cell}/reproducer/repro.py"
    assert written["cell"]["matrix"] == "/elsewhere/matrix.toml"  # outside the run: as it was
    assert written["analysis"]["reproducer"]["message"] == "raised at results/xv/x.py"  # names no file: words
    assert written["setup"]["export"]["format"] == "pir" and "_run" not in written
    assert located(kept, kept["analysis"]["reproducer"]["script"]) == run.resolve() / cell / "reproducer" / "repro.py"
    moved = tmp_path / "artefact" / "xv"
    moved.parent.mkdir()
    run.rename(moved)
    again, why = read_record(moved / f"{cell}.json")
    assert why == "" and located(again, again["setup"]["export"]["program"]) == moved.resolve() / cell / "export" / "model.json"
    # A record written before paths were relative holds absolute ones: read as they are.
    assert located(again, "/old/place/repro.py").as_posix() == "/old/place/repro.py"
    assert run_relative({"a": [str(moved / cell / "export")]}, moved) == {"a": [f"{cell}/export"]}


def test_every_session_of_the_shipped_matrix_names_its_own_stage_in_its_ladder():
    """The stage whose skip makes a cell's verdict skip exists in every session's ladder."""
    from pathlib import Path

    from harness import matrix
    from harness.shared.spec import CellSpec

    shipped = matrix.load(Path(__file__).resolve().parents[1] / "matrix" / "default.toml")
    for name, session in shipped.sessions.items():
        spec = next(iter(shipped.expand(name, session.versions[0])))
        assert isinstance(spec, CellSpec) and spec.session_stage == spec.stages[-1], (name, spec.stages)
