"""The job pool on real Paddle, through real nox: the same records as the sessions run one by one,
the weights trained once by the cell nox would train them with, the hazards probed once per
version, a rerun that does no Paddle work, and a probe made again when what it was made for changes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.bench.matrix import compare, fingerprint
from harness.shared.records import load_records

from .conftest import assert_exit_agrees, matrix_text, nox_run, run_harness

SESSIONS = ("cpu_fp32", "cpu_onednn_fp32")
MODELS = {"clean": "tests.factories:clean", "tiny": "tests.factories:tiny_outputs"}


def _pool(matrix: Path, results: Path, envdir: Path, *extra: str):
    args = [arg for s in SESSIONS for arg in ("--session", s)]
    return nox_run("-s", "matrix", "--envdir", str(envdir), "--", *args, "--python", sys.executable, "--jobs", "2",
                   "--results", str(results), *extra, matrix=matrix)


@pytest.fixture(scope="module")
def pooled(tmp_path_factory, nox_envdir):
    from .conftest import installed_paddle

    tmp = tmp_path_factory.mktemp("pool")
    matrix = tmp / "matrix.toml"
    matrix.write_text(matrix_text(installed_paddle(), MODELS))
    proc = _pool(matrix, tmp / "pool", nox_envdir)
    return {"tmp": tmp, "matrix": matrix, "proc": proc, "results": tmp / "pool" / "default", "envdir": nox_envdir}


def test_the_pool_records_what_the_sessions_record_one_by_one(pooled):
    proc, results = pooled["proc"], pooled["results"]
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert_exit_agrees(proc, results)
    one_by_one = pooled["tmp"] / "sessions"
    for session in SESSIONS:
        run = run_harness("run", "--matrix", str(pooled["matrix"]), "--session", session, "--results", str(one_by_one))
        assert run.returncode in (0, 1), run.stderr[-2000:]
    pooled_prints, session_prints = fingerprint(results), fingerprint(one_by_one / "default")
    assert len(pooled_prints) == len(SESSIONS) * len(MODELS)
    assert compare(pooled_prints, session_prints) == []  # statuses, stages, numbers, op digests, dtypes
    # One report over every session, from the one run.
    for name in ("report.md", "report.html", "report.xml"):
        assert (results / name).is_file()
    assert "cpu_onednn_fp32" in (results / "report.md").read_text() and "cpu_fp32" in (results / "report.md").read_text()


def test_weights_are_trained_once_by_the_cell_nox_runs_first_and_cpu_is_measured(pooled):
    records = {r.id: r for r in load_records(pooled["results"])}
    for model in MODELS:
        sources = {cell: r.setup.get("weights")["source"] for cell, r in records.items() if cell.endswith(f"/{model}")}
        trained = [cell for cell, source in sources.items() if source == "trained"]
        assert trained == [next(c for c in sources if c.startswith("cpu_fp32/"))], sources
    # A forked cell's CPU comes from the fork server's wait4: more than nothing, less than its wall
    # time on the cores it could use.
    for record in records.values():
        assert 0 < record.cpu_seconds <= record.seconds * 2 + 1, (record.id, record.cpu_seconds)


def test_hazards_are_probed_once_for_every_session_of_the_version(pooled):
    probes = sorted(p.relative_to(pooled["results"]).as_posix() for p in pooled["results"].rglob("hazards*.json"))
    assert len(probes) == 1 and probes[0].startswith("versions/"), probes
    assert pooled["proc"].stdout.count("probed once for every session") == 1


def test_a_rerun_with_nothing_changed_does_no_paddle_work_and_a_changed_machine_probes_again(pooled):
    results = pooled["results"]
    logs = {p: p.stat().st_mtime_ns for p in results.rglob("*.log")}
    again = _pool(pooled["matrix"], pooled["tmp"] / "pool", pooled["envdir"])
    assert again.returncode == pooled["proc"].returncode, again.stdout[-2000:]
    assert again.stdout.count("(recorded earlier; --force reruns)") == len(SESSIONS) * len(MODELS)
    assert ": running" not in again.stdout.replace("hazards", "")  # no cell started
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*.log")} == logs  # no worker, no probe wrote
    # The probe says what it was made for; another machine's probe is not reused.
    probe_path = next(results.rglob("hazards-cpu.json"))
    probe = json.loads(probe_path.read_text())
    probe["made_for"]["machine"] = "another-machine"
    probe_path.write_text(json.dumps(probe))
    third = _pool(pooled["matrix"], pooled["tmp"] / "pool", pooled["envdir"])
    assert "probed again (made for" in third.stdout, third.stdout[-2000:]
    assert json.loads(probe_path.read_text())["made_for"]["machine"] != "another-machine"


def test_an_environment_is_made_once_for_its_list_and_again_when_its_stamp_is_gone(tmp_path):
    from harness.running.envs import STAMP, ensure
    from harness.matrix.sessions import Environment

    env = Environment(f"{sys.version_info.major}.{sys.version_info.minor}", ("tabulate",))
    said = []
    python = ensure(tmp_path, env, "test", said.append)
    assert len(said) == 1 and "tabulate" in said[0]
    import subprocess

    assert subprocess.run([str(python), "-c", "import tabulate"]).returncode == 0
    assert ensure(tmp_path, env, "test", said.append) == python and len(said) == 1  # used as it is
    (python.parent.parent / STAMP).unlink()  # an install that never finished
    ensure(tmp_path, env, "test", said.append)
    assert len(said) == 2
    # Another list that resolves to the very same distributions (tabulate pinned at what the venv
    # holds): that venv, said, no second one; a pin it does not hold makes its own.
    installed = json.loads((python.parent.parent / STAMP).read_text())["installed"]
    pin = next(p for p in installed if p.startswith("tabulate=="))
    assert ensure(tmp_path, Environment(env.python, (pin,)), "test", said.append) == python
    assert len(said) == 3 and "resolves to: used as it is" in said[2], said
    other = ensure(tmp_path, Environment(env.python, ("tabulate==0.8.10",)), "test", said.append)
    assert other != python and "making the environment" in said[3], said
