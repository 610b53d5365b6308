"""The fork server: a child forked from a process that imported Paddle once computes what a fresh
interpreter computes, and dies alone (real Paddle; crash and timeout cells are in test_cells)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, load_record, stages_by_name


def _run(matrix: Path, results: Path, fork: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HARNESS_FORK=fork)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--session", "cpu_fp32",
                           "--results", str(results), "--jobs", "2"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)


def test_forked_cells_equal_fresh_interpreter_cells_number_for_number(tmp_path, write_matrix, paddle_version):
    matrix = write_matrix({"clean": "tests.factories:clean", "dies": "tests.factories:dies_after_baseline"})
    forked = _run(matrix, tmp_path / "forked", "1")
    fresh = _run(matrix, tmp_path / "fresh", "0")
    assert forked.returncode == fresh.returncode == 1, forked.stdout[-2000:] + fresh.stdout[-2000:]
    for model in ("clean", "dies"):
        cell = f"cpu_fp32/{paddle_version}/normal/{model}"
        a = load_record(tmp_path / "forked" / "default", cell)
        b = load_record(tmp_path / "fresh" / "default", cell)
        assert a["runner"]["start"].startswith("fork server") and b["runner"]["start"] == "a fresh interpreter per child"
        assert a["verdict"]["status"] == b["verdict"]["status"]
        assert a["launches"] == b["launches"]
        for name, stage in stages_by_name(a).items():
            other = stages_by_name(b)[name]
            assert stage["status"] == other["status"], name
            assert stage.get("outputs") == other.get("outputs"), name
            for key in ("passes", "ops", "op_sequence_sha1", "op_histogram", "output_dtypes"):
                assert stage.get("evidence", {}).get(key) == other.get("evidence", {}).get(key), (name, key)
    # the child that killed itself was a crash of its own stage; the server went on forking
    dies = stages_by_name(load_record(tmp_path / "forked" / "default", f"cpu_fp32/{paddle_version}/normal/dies"))
    assert any(s["status"] == "crash" for s in dies.values())
    assert stages_by_name(load_record(tmp_path / "forked" / "default",
                                      f"cpu_fp32/{paddle_version}/normal/clean"))["baseline"]["status"] == "pass"
    # The matrix benchmark's record-by-record comparison agrees, and can fail: one number moved is a difference.
    from harness.bench.matrix import compare, fingerprint

    forked_prints = fingerprint(tmp_path / "forked" / "default")
    assert len(forked_prints) == 2 and compare(forked_prints, fingerprint(tmp_path / "fresh" / "default")) == []
    path = tmp_path / "fresh" / "default" / f"cpu_fp32/{paddle_version}/normal/clean.json"
    record = json.loads(path.read_text())
    first_output = next(iter(record["stages"][0]["outputs"].values()))
    first_output["max_abs"] = (first_output["max_abs"] or 0.0) + 1e-7
    path.write_text(json.dumps(record))
    assert compare(forked_prints, fingerprint(tmp_path / "fresh" / "default")) == [
        f"differs: cpu_fp32/{paddle_version}/normal/clean"]
