"""The nox layer, run for real: listing, a whole session in a fresh env, GPU skips, bad input."""

from __future__ import annotations

import json
import shutil

import pytest

from .conftest import assert_exit_agrees, NOX, nox_run

pytestmark = pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")


def test_nox_lists_every_session_with_its_tags():
    proc = nox_run("-l", "--json")
    assert proc.returncode == 0, proc.stderr
    sessions = {s["name"]: s for s in json.loads(proc.stdout)}
    for name in ("cpu_fp32", "cpu_onednn_fp32", "cpu_onednn_bf16", "gpu_fp32", "gpu_fp16",
                 "gpu_trt_fp32", "gpu_trt_fp16", "gpu_trt_int8", "tests", "report"):
        assert name in sessions, name
    assert {"cpu", "native", "fp32", "default"} <= set(sessions["cpu_fp32"]["tags"])
    assert "cpu_fp32@2.6.2" in sessions and "default" not in sessions["cpu_fp32@2.6.2"]["tags"]
    # GPU sessions exist at every Paddle version (in Paddle's official GPU images), and images build.
    assert {"gpu_trt_fp16@3.0.0", "gpu_fp16@2.6.2", "images"} <= set(sessions)
    assert "paddle-2.6.2" in sessions["cpu_fp32@2.6.2"]["tags"]
    assert sessions["gpu_trt_fp16"]["tags"][:3] == ["gpu", "trt", "fp16"]


def test_gpu_sessions_skip_with_a_reason_when_there_is_no_gpu(nox_envdir):
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU driver is present: the GPU session would really run")
    proc = nox_run("-s", "gpu_trt_fp16", "--envdir", str(nox_envdir))
    assert proc.returncode == 0, proc.stderr
    assert "no NVIDIA driver on this machine (nvidia-smi not found)" in proc.stderr
    assert "skipped" in proc.stderr.lower()


def test_a_session_runs_end_to_end_in_its_own_env(tmp_path, write_matrix, nox_envdir):
    matrix = write_matrix({"clean": "tests.factories:clean"})
    results = tmp_path / "results"
    proc = nox_run("-s", "cpu_onednn_fp32", "--envdir", str(nox_envdir), "--",
                "--results", str(results), matrix=matrix)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert_exit_agrees(proc, results)
    records = list(results.rglob("clean.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert [s["name"] for s in record["stages"]] == ["baseline", "memory", "ir", "onednn_fp32"]
    assert len(list((results / "default").glob("summary-cpu_onednn_fp32-*.md"))) == 1
    assert "cpu_onednn_fp32/" in proc.stdout
    # Nox's own verdict follows the cells': failing cells fail the session.
    assert (proc.returncode == 0) == (record["verdict"]["status"] == "pass")


def test_bad_input_through_nox_is_one_line_and_exit_2(tmp_path, write_matrix, nox_envdir):
    bad = tmp_path / "bad.toml"
    bad.write_text("[run]\nseed = 'x'\n")
    proc = nox_run("-l", matrix=bad)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"error: {bad}")

    matrix = write_matrix({"clean": "tests.factories:clean"})
    proc = nox_run("-s", "cpu_fp32", "--envdir", str(nox_envdir), "--", "--model", "nope",
                "--results", str(tmp_path / "r"), matrix=matrix)
    assert proc.returncode == 2
    output = proc.stdout + proc.stderr  # nox passes the command's stderr through its stdout
    assert "unknown model 'nope'" in output
    assert "Traceback" not in output


def test_an_uninstallable_paddle_version_is_one_line_and_exit_2(tmp_path):
    matrix = tmp_path / "m.toml"
    matrix.write_text(
        '[paddle."2.4.0"]\npython = "3.11"\npackages = ["paddlepaddle==2.4.0"]\n'
        '[sessions.cpu_fp32]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
        '[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4\n[models.m]\nfactory = "harness.models:resnet18"\n'
    )
    proc = nox_run("-s", "cpu_fp32", "--envdir", str(tmp_path / "envs"), matrix=matrix)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and 'paddle."2.4.0"' in last and "cannot install" in last
