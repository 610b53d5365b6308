"""A failure ends in a reproducer: a folder with the program, the inputs and a plain-Paddle script
that a Paddle developer runs alone; the harness runs it once and records whether it reproduced."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import load_record, run_harness, stages_by_name


def _run(write_matrix, tmp_path, models, session):
    matrix = write_matrix(models)
    run_harness("run", "--matrix", str(matrix), "--session", session, "--results", str(tmp_path / "r"))
    return tmp_path / "r" / "default"


def test_the_onednn_interpolate_error_gets_a_verified_reproducer_that_raises_alone(write_matrix, tmp_path, paddle_version):
    """A conv and F.interpolate(scale_factor=2): measured on 3.3.1, oneDNN raises on it."""
    if not paddle_version.startswith("3.3"):
        pytest.skip("measured on Paddle 3.3.x")
    results = _run(write_matrix, tmp_path, {"interp": "tests.factories:conv_interpolate"}, "cpu_onednn_fp32")
    record = load_record(results, f"cpu_onednn_fp32/{paddle_version}/normal/interp")
    stage = stages_by_name(record)["onednn_fp32"]
    words = "ConvertPirAttribute2RuntimeAttribute not support [pir::ArrayAttribute<pir::DoubleAttribute>]"
    assert stage["status"] == "error" and words in stage["message"]
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "onednn_fp32" and repro["verified"] is True and repro["exit"] != 0
    script = Path(repro["script"])
    text = script.read_text()
    assert "import harness" not in text and "from harness" not in text
    assert "config.enable_mkldnn()" in text and "config.set_optimization_level(3)" in text
    readme = (script.parent / "README.md").read_text()
    assert f"Paddle {paddle_version}" in readme and "isa " in readme and words in readme
    # Run alone, with the session's Python, from anywhere: Paddle's own message, a non-zero exit.
    alone = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert alone.returncode != 0 and words in alone.stderr
    report = run_harness("report", "--results", str(tmp_path / "r"))
    assert f"reproducer: {script} (verified)" in report.stdout


def test_a_consistency_failure_gets_a_reproducer_that_compares_with_dygraph(write_matrix, tmp_path, paddle_version):
    results = _run(write_matrix, tmp_path, {"stateful": "tests.factories:python_state",
                                            "clean": "tests.factories:clean"}, "cpu_fp32")
    record = load_record(results, f"cpu_fp32/{paddle_version}/normal/stateful")
    assert stages_by_name(record)["baseline"]["status"] == "fail"
    # Triage: Paddle's own executor (jit.load) runs the saved program as the predictor does, and
    # neither computes what the Python forward computes: the export is where it broke.
    triage = record["analysis"]["triage"]
    assert triage["outcome"] == "export", triage
    assert triage["executor_vs_dygraph"]["agree"] is False and triage["executor_vs_predictor"]["agree"] is True
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "baseline" and repro["verified"] is True
    assert repro["last_line"] == "MISMATCH: reproduced"
    assert (Path(repro["script"]).parent / "expected.npz").exists()
    # A cell that passes pays nothing: no reproducer, no analysis.
    clean = load_record(results, f"cpu_fp32/{paddle_version}/normal/clean")
    assert clean["verdict"]["status"] == "pass" and not clean["analysis"]
    assert not (results / f"cpu_fp32/{paddle_version}/normal/clean/reproducer").exists()
