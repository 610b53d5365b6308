"""The CI matrix step for real: sessions from `nox -l --json`, two shards run through nox into
separate folders, merged, reported and qualified."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import assert_exit_agrees, NOX, ROOT, matrix_text, nox_run, one_line_error, run_harness

pytestmark = pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")


def _shards(nox_json: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "harness", "shards", *args], input=nox_json, cwd=ROOT, env=env,
                          capture_output=True, text=True)


def test_generate_run_two_shards_merge_and_qualify(tmp_path, paddle_version, nox_envdir):
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(paddle_version, {"clean": "tests.factories:clean"}))
    listed = nox_run("-l", "--json", "-t", "cpu", matrix=matrix)
    assert listed.returncode == 0, listed.stderr
    plan = json.loads(_shards(listed.stdout, "--format", "github").stdout)
    sessions = [row["session"] for row in plan["include"]]
    assert sessions == ["cpu_fp32", "cpu_onednn_fp32", "cpu_onednn_bf16"]
    assert {row["runner"] for row in plan["include"]} == {"ubuntu-latest"}
    gitlab = json.loads(_shards(listed.stdout, "--format", "gitlab", "--cpu-runner", "cpu-box").stdout)
    assert gitlab == [{"SESSION": sessions, "RUNNER": ["cpu-box"]}]
    # Every session of the default matrix's noxfile: cell sessions are shards, nothing else is
    # (benchmarks, tests, reports, images, portability, TIPC), whatever its name.
    listing = json.loads(nox_run("-l", "--json").stdout)
    everything = json.loads(_shards(json.dumps(listing)).stdout)
    chosen = {r["session"] for r in everything["include"]}
    cell_sessions = {s["name"] for s in listing if s["name"].split("@")[0].startswith(("cpu_", "gpu_"))}
    assert chosen == cell_sessions and len(chosen) >= 10
    left_out = {s["name"].split("@")[0] for s in listing} - {c.split("@")[0] for c in cell_sessions}
    assert {"tests", "bench", "bench_matrix", "report", "regress", "qualify", "images", "portability",
            "tipc"} <= left_out
    assert {r["runner"] for r in everything["include"] if r["session"].startswith("gpu_")} == {"gpu"}

    runs = []
    for i, session in enumerate(sessions[:2]):
        folder = tmp_path / f"shard{i}"
        proc = nox_run("-s", session, "--envdir", str(nox_envdir), "--", "--results", str(folder), "--run", session,
                       matrix=matrix)
        assert_exit_agrees(proc, folder, session)
        runs.append(folder / session)
    merged = tmp_path / "results" / "merged"
    proc = run_harness("merge", "--into", str(merged), *map(str, runs))
    assert proc.returncode == 0, proc.stderr
    assert "merged 2 cells from 2 shards" in proc.stdout
    record = json.loads(next(merged.rglob("cpu_onednn_fp32/*/normal/clean.json")).read_text())
    assert str(runs[1]) not in json.dumps(record)  # paths inside records follow the merge
    report = run_harness("report", "--results", str(tmp_path / "results"), "--run", "merged")
    assert report.returncode == 0 and "2 cells: 2 pass" in report.stdout
    qualified = run_harness("qualify", "--matrix", str(matrix), "--results", str(tmp_path / "results"), "--run", "merged")
    assert qualified.returncode == 1 and qualified.stdout.startswith("NOT QUALIFIED")  # cpu_onednn_bf16 never ran
    partial = run_harness("qualify", "--matrix", str(matrix), "--results", str(tmp_path / "results"), "--run", "merged",
                          "--partial")
    assert partial.returncode == 0 and partial.stdout.startswith("QUALIFIED (partial: 2 of 3 required cells)")
    strict = run_harness("qualify", "--matrix", str(matrix), "--results", str(tmp_path / "results"), "--run", "merged",
                         "--strict")
    assert strict.returncode == 1 and f"cpu_onednn_bf16/{paddle_version}/normal/clean" in strict.stdout  # not run

    # Bad input: the same cell twice, shards of another matrix, a folder without records.
    assert "is in both" in one_line_error(run_harness("merge", "--into", str(tmp_path / "m2"), str(runs[0]), str(runs[0])))
    other = tmp_path / "other.toml"
    other.write_text(matrix.read_text().replace("train_steps = 1", "train_steps = 2"))
    proc = run_harness("run", "--matrix", str(other), "--session", "cpu_onednn_bf16", "--results", str(tmp_path / "s3"),
                       "--run", "x")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    line = one_line_error(run_harness("merge", "--into", str(tmp_path / "m3"), str(runs[0]), str(tmp_path / "s3" / "x")))
    assert "made from another matrix" in line
    (tmp_path / "empty").mkdir()
    assert "holds no result records" in one_line_error(run_harness("merge", "--into", str(tmp_path / "m4"),
                                                                    str(tmp_path / "empty")))
    assert "not the JSON" in one_line_error(_shards("nonsense"))


def test_shards_at_two_versions_compute_with_one_checkpoint_and_regress_shows_it(tmp_path, paddle_version, nox_envdir):
    """A first job trains; each shard (another Paddle version among them) takes its checkpoints;
    merged, `regress` shows one weights hash per (mode, model) across versions. A shard given other
    weights (a checkpoint with the same training metadata and one weight changed) is flagged."""
    import numpy as np

    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(paddle_version, {"clean": "tests.factories:clean"}, other_versions=["2.6.2"]))
    first = tmp_path / "weights"
    proc = nox_run("-s", "cpu_fp32", "--envdir", str(nox_envdir), "--", "--results", str(first), "--run", "w",
                   matrix=matrix)
    assert proc.returncode == 0, proc.stdout[-2000:]
    checkpoints = first / "w" / "checkpoints"
    planted = tmp_path / "planted"
    for path in checkpoints.glob("*/*.npz"):
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
        weight = next(k for k in arrays if k != "__meta__" and arrays[k].dtype.kind == "f")
        arrays[weight] = arrays[weight] * np.float32(1.001)
        (planted / path.parent.name).mkdir(parents=True, exist_ok=True)
        np.savez(planted / path.relative_to(checkpoints), **arrays)
    runs = {}
    for name, session, source in (("head", "cpu_onednn_fp32", checkpoints), ("old", "cpu_onednn_fp32@2.6.2", checkpoints),
                                  ("other", "cpu_onednn_fp32@2.6.2", planted)):
        proc = nox_run("-s", session, "--envdir", str(nox_envdir), "--", "--results", str(tmp_path / name), "--run", "s",
                       "--checkpoints", str(source), matrix=matrix)
        assert proc.returncode in (0, 1), proc.stdout[-2000:]
        runs[name] = tmp_path / name / "s"
    sha = {name: json.loads(next(run.rglob("clean.json")).read_text())["setup"]["weights"] for name, run in runs.items()}
    assert {w["source"] for w in sha.values()} == {"checkpoint"}
    assert sha["head"]["sha256"] == sha["old"]["sha256"] != sha["other"]["sha256"]

    merged = tmp_path / "results" / "merged"
    proc = run_harness("merge", "--into", str(merged), str(runs["head"]), str(runs["old"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    regress = run_harness("regress", "--results", str(tmp_path / "results"), "--run", "merged")
    assert regress.returncode in (0, 1), regress.stderr
    report = (merged / "regression.md").read_text()
    assert "Weights per (mode, model) and version (sha256)" in report
    row = next(line for line in report.splitlines() if line.startswith("| normal · clean"))
    assert sha["head"]["sha256"][:12] in row and "identical" in row and "DIFFER" not in row
    assert "Different weights" not in report and "other weights" not in report

    mixed = tmp_path / "results" / "mixed"
    assert run_harness("merge", "--into", str(mixed), str(runs["head"]), str(runs["other"])).returncode == 0
    regress = run_harness("regress", "--results", str(tmp_path / "results"), "--run", "mixed")
    assert "Different weights across versions" in regress.stdout and "other weights" in regress.stdout
    assert "DIFFER" in (mixed / "regression.md").read_text()
