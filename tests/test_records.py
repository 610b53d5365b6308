"""The journal and the verdict rules: pure logic, no Paddle."""

from __future__ import annotations

import json

from harness.launch import Outcome
from harness.running.runner import _ended_badly, verdict_of
from harness.shared.compare import Comparison
from harness.shared.record_model import SCHEMA, StageRecord
from harness.shared.records import Journal
from harness.shared.vocab import Status

from .conftest import as_record


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
    crashed = _ended_badly(Outcome(-11, log=log), "ir", 300, tmp_path)
    assert crashed["status"] is Status.CRASH and crashed["signal"] == "SIGSEGV"
    assert "segfault here" in crashed["stderr_tail"]
    assert _ended_badly(Outcome(-9, timed_out=True, log=log), "ir", 300, tmp_path)["status"] is Status.TIMEOUT
    # An analysis that died says so: which stage it analysed is unknown when it left nothing (None)...
    assert _ended_badly(Outcome(-9, log=log), "analysis:bisect", 300, tmp_path)["stage"] is None
    # ... and read from what it left (``cell/progress.py``) when it did, with the trials that had ended.
    from harness.cell.base import progress

    progress.begin(tmp_path, "reduce", "ort_convert")
    progress.ended(tmp_path, {"members": ["conv"], "reproduces": False, "note": "within tolerance"})
    left = _ended_badly(Outcome(-11, log=log), "analysis:reduce", 300, tmp_path)
    assert left["stage"] == "ort_convert" and left["trials_before"][0]["members"] == ["conv"], left
    assert _ended_badly(Outcome(-11, log=log), "analysis:bisect", 300, tmp_path)["stage"] is None  # another step's
    log.write_text("noise\nerror: models.x.factory: cannot import 'y'\n")
    assert Outcome(2, log=log).user_error == "models.x.factory: cannot import 'y'"
    log.write_text("ValueError: (InvalidArgument) bad\n")
    assert Outcome(3, log=log).describe() == {"status": Status.ERROR, "message": "ValueError: (InvalidArgument) bad"}


def _stage(name, status, **extra):
    return StageRecord.from_dict({"name": name, "status": status, **extra})


SETUP_PASSED = StageRecord.from_dict({"status": "pass"}, "setup")


def test_verdict_is_the_first_blocking_stage_else_vacuous_else_pass():
    worst = {"output": "logits", "mismatched": 3, "total": 10, "atol": 1e-4, "rtol": 1e-4, "status": "fail"}
    stages = [_stage("baseline", "pass"), _stage("memory", "skip", message="no lever"),
              _stage("ir", "fail", worst=worst), _stage("cpu_fp32", "error", message="boom")]
    verdict = verdict_of(SETUP_PASSED, stages)
    assert verdict.status is Status.FAIL and verdict.first_failing_stage == "ir"
    assert "logits: 3/10 out of atol" in verdict.message
    assert verdict_of(SETUP_PASSED, [_stage("baseline", "pass"), _stage("ir", "noop")]).status is Status.PASS
    assert verdict_of(SETUP_PASSED, [_stage("baseline", "vacuous"), _stage("ir", "pass")]).status is Status.VACUOUS
    skipped = verdict_of(SETUP_PASSED, [_stage("baseline", "skip", message="no GPU"), _stage("ir", "noop")])
    assert skipped.to_dict() == {"status": Status.SKIP, "first_failing_stage": None, "message": "no GPU"}
    crashed = StageRecord.from_dict({"status": "crash", "message": "SIGSEGV"}, "setup")
    assert verdict_of(crashed, []).first_failing_stage == "setup"
    assert json.loads(json.dumps(verdict.to_dict()))["status"] == "fail"


def test_a_setup_entry_reads_as_a_stage_result_and_writes_back_as_it_was():
    entry = {"status": "pass", "outputs": ["bbox", "scores"], "export": {"format": "pir"}}
    setup = StageRecord.from_dict(entry, "setup")
    assert setup.passed and setup.outputs == {} and setup.output_labels == ["bbox", "scores"]
    assert json.loads(json.dumps(setup.to_dict())) == entry


def test_a_low_precision_stage_whose_ops_ran_in_float_is_noop_not_pass():
    from harness.cell.stages.ladder import stage_status
    from harness.shared.backends import DeployOptions, plan_by_name, plan_stages

    plan = plan_by_name(plan_stages("cpu", "onednn", "int8", "legacy", DeployOptions(), quantized=True))["onednn_int8"]
    outputs = {"output": Comparison((1,), "float32", 0.0, 0.0, Status.PASS)}
    evidence = {"passes": ["a"], "analysis_passes": [], "op_sequence_sha1": "x", "output_dtypes": {"float32": 30}}
    baseline = dict(evidence, passes=[], op_sequence_sha1="y")
    assert stage_status(plan, outputs, evidence, baseline) is Status.NOOP
    ran = dict(evidence, output_dtypes={"float32": 12, "uint8": 13})
    assert stage_status(plan, outputs, ran, baseline) is Status.PASS
    failed = {"output": Comparison((1,), "float32", 0.0, 0.0, Status.FAIL)}
    assert stage_status(plan, failed, evidence, baseline) is Status.FAIL


def test_a_missing_interpreter_is_said_before_any_work(tmp_path):
    from harness.launch import LocalLauncher

    assert "no such interpreter" in LocalLauncher(str(tmp_path / "nope" / "python")).probe()
    assert LocalLauncher().probe() is None


def test_a_cell_whose_session_stage_skipped_reads_skip_with_that_stage_s_reason():
    setup = SETUP_PASSED
    ran = [_stage("baseline", "pass"), _stage("ir", "pass")]
    unrun = ran + [_stage("onednn_bf16", "skip", message="this CPU does not support bfloat16")]
    verdict = verdict_of(setup, unrun, "onednn_bf16")
    assert verdict.to_dict() == {"status": Status.SKIP, "first_failing_stage": None, "skipped_stage": "onednn_bf16",
                                 "message": "onednn_bf16 skipped: this CPU does not support bfloat16"}
    assert verdict_of(setup, ran + [_stage("onednn_bf16", "pass")], "onednn_bf16").status is Status.PASS
    # A failure before it is still the verdict; a skipped lever stage is not the session's own.
    failed = [_stage("baseline", "fail", worst={})] + unrun[1:]
    assert verdict_of(setup, failed, "onednn_bf16").status is Status.FAIL
    lever = [_stage("baseline", "pass"), _stage("memory", "skip", message="no lever"), _stage("cpu_fp32", "pass")]
    assert verdict_of(setup, lever, "cpu_fp32").status is Status.PASS


def test_records_hold_run_relative_paths_that_resolve_wherever_the_run_folder_goes(tmp_path, monkeypatch):
    from harness.shared.records import read_record, run_relative, write_record

    run = tmp_path / "results" / "xv"
    monkeypatch.chdir(tmp_path)  # the run started here with the default relative results/
    cell = "cpu_fp32/3.3.1/normal/m"
    record = as_record({"id": cell, "cell": {"matrix": "/elsewhere/matrix.toml"},
                        "setup": {"status": "pass",
                                  "export": {"program": f"results/xv/{cell}/export/model.json", "format": "pir"}},
                        "analysis": {"reproducer": {"status": "pass", "script": str(run / cell / "reproducer" / "repro.py"),
                                                    "message": "raised at results/xv/x.py"}}})
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
    assert kept.located(kept.analysis.reproducer.script) == run.resolve() / cell / "reproducer" / "repro.py"
    moved = tmp_path / "artefact" / "xv"
    moved.parent.mkdir()
    run.rename(moved)
    again, why = read_record(moved / f"{cell}.json")
    assert why == "" and again.located(again.setup.get("export")["program"]) == moved.resolve() / cell / "export" / "model.json"
    # A record written before paths were relative holds absolute ones: read as they are.
    assert again.located("/old/place/repro.py").as_posix() == "/old/place/repro.py"
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


def test_a_record_of_the_previous_schema_reads_through_the_same_loader(tmp_path):
    """Schema 2 wrote a failing shape's label over the worst output's tensor shape; read back, the
    label is in ``at_shape`` and the record writes as this schema, nothing else lost."""
    from harness.shared.records import read_record, write_record

    cell = "cpu_onednn_fp32/3.3.1/normal/m"
    worst = {"shape": "image=1x3x32x32", "dtype": "float32", "atol": 1e-4, "rtol": 1e-4, "total": 8, "mismatched": 2,
             "max_abs": 0.5, "max_rel": 0.1, "cosine": 0.99, "status": "fail", "output": "logits"}
    old = as_record({"id": cell}).to_dict()
    old.update(schema=2, stages=[{"name": "onednn_fp32", "status": "fail", "failing_shape": 1, "worst": worst,
                                  "lever": "enable_mkldnn()", "timings": {"run": 0.1}}],
               verdict={"status": "fail", "first_failing_stage": "onednn_fp32", "message": "at image=1x3x32x32"})
    path = tmp_path / "run" / f"{cell}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    record, why = read_record(path)
    assert why == "" and record.schema == 2
    stage = record.stage("onednn_fp32")
    assert stage.worst.at_shape == "image=1x3x32x32" and stage.worst.shape == () and stage.worst.max_abs == 0.5
    assert stage.get("lever") == "enable_mkldnn()" and stage.failing_shape == 1
    again = write_record(tmp_path / "run", record)
    written = json.loads(path.read_text())
    assert written["schema"] == SCHEMA == 3 and again.schema == SCHEMA
    assert written["stages"][0]["worst"]["at_shape"] == "image=1x3x32x32" and written["stages"][0]["worst"]["shape"] == []
    assert written["stages"][0]["timings"] == {"run": 0.1} and written["verdict"] == old["verdict"]
    old["schema"] = 1
    path.write_text(json.dumps(old))
    assert read_record(path)[0] is None and "schema 1" in read_record(path)[1]
