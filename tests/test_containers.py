"""The container runner on a real Docker engine: dockerd on a private socket, a Debian base made
with debootstrap (no registry is reachable), the CPU image built from local wheels, cells run in
containers with least privilege. Needs root, ``dockerd`` and ``debootstrap`` (CI installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import ORT_SESSION, ROOT, installed_paddle, matrix_text, one_line_error, run_harness

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("dockerd") or not shutil.which("debootstrap"),
    reason="needs root, dockerd and debootstrap (`apt-get install docker.io debootstrap`; .ci/run does)")

BASE = "harness-test-base:bookworm"
PREFIX = "harness-test"


@pytest.fixture(scope="session")
def engine(tmp_path_factory):
    """A private dockerd, stopped at the end; DOCKER_HOST points at it for every child."""
    folder = Path(tempfile_dir := str(tmp_path_factory.mktemp("dockerd")))
    sock = folder / "docker.sock"
    log = open(folder / "dockerd.log", "wb")
    proc = subprocess.Popen(["dockerd", "--host", f"unix://{sock}", "--data-root", str(folder / "root"),
                             "--exec-root", str(folder / "exec"), "--pidfile", str(folder / "dockerd.pid"),
                             "--iptables=false", "--bridge=none"], stdout=log, stderr=subprocess.STDOUT)
    host = f"unix://{sock}"
    import docker

    deadline = time.monotonic() + 60
    while True:
        try:
            docker.DockerClient(base_url=host).ping()
            break
        except Exception:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"dockerd did not start: {(folder / 'dockerd.log').read_text()[-2000:]}")
            time.sleep(0.3)
    saved = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = host
    yield {"host": host, "client": docker.DockerClient(base_url=host), "dir": Path(tempfile_dir)}
    if saved is None:
        os.environ.pop("DOCKER_HOST", None)
    else:
        os.environ["DOCKER_HOST"] = saved
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def _ort_session() -> str:
    """The ONNX Runtime session with the shipped matrix's pins: the image installs them."""
    import tomllib

    with (ROOT / "matrix" / "default.toml").open("rb") as fh:
        pins = tomllib.load(fh)["sessions"]["cpu_ort_fp32"]["packages"]
    return ORT_SESSION + f"packages = {json.dumps(pins)}\n"


def _matrix(path: Path, version: str, models, stage_timeout: float = 120) -> Path:
    # with the ONNX Runtime session: its pinned packages go into the image too
    text = matrix_text(version, models, stage_timeout=stage_timeout, extra=_ort_session())
    path.write_text(text + f'\n[docker]\ncpu_base = "{BASE}"\nimage_prefix = "{PREFIX}"\nmemory = "4g"\n')
    return path


@pytest.fixture(scope="session")
def image(engine, tmp_path_factory):
    """The base made with debootstrap, then the CPU image of the tests' Paddle, built offline."""
    version = installed_paddle()
    matrix = _matrix(tmp_path_factory.mktemp("img") / "matrix.toml", version, {"clean": "tests.factories:clean"})
    proc = run_harness("images", "--matrix", str(matrix), "--paddle", version, "--device", "cpu", "--make-base",
                       timeout=1800)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    tag = f"{PREFIX}:{version}-cpu"
    assert engine["client"].images.get(tag)
    return {"tag": tag, "version": version, "build_log": proc.stdout}


def _run(matrix, results, *extra):
    return run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(results), *extra)


def _records(results):
    return {p.stem: json.loads(p.read_text()) for p in (results / "default").rglob("*.json")
            if p.parent.name == "normal"}


def _ladder(record):
    return [(s["name"], s["status"], (s.get("worst") or {}).get("max_abs")) for s in record["stages"]]


def test_images_build_offline_and_stream_the_log(image):
    assert "Step" in image["build_log"] or "RUN" in image["build_log"]
    assert f"[images] {image['tag']}" in image["build_log"]


def test_a_cpu_session_in_a_container_gives_the_venv_run_known_answers(image, tmp_path):
    matrix = _matrix(tmp_path / "m.toml", image["version"], {"clean": "tests.factories:clean",
                                                             "dies": "tests.factories:dies_after_baseline"})
    venv = _run(matrix, tmp_path / "venv")
    boxed = _run(matrix, tmp_path / "docker", "--runner", "docker")
    assert boxed.returncode == venv.returncode == 1, (boxed.stdout[-2000:], boxed.stderr[-2000:])
    local, contained = _records(tmp_path / "venv"), _records(tmp_path / "docker")
    # Same Paddle build, same seeds: the same ladder, statuses and errors to the bit.
    assert _ladder(contained["clean"]) == _ladder(local["clean"])
    assert contained["clean"]["verdict"]["status"] == "pass"
    runner = contained["clean"]["runner"]
    assert runner["kind"] == "docker" and runner["image"] == image["tag"] and runner["image_id"].startswith("sha256:")
    assert runner["network"] == "none" and runner["user"] == "1000:1000"
    assert contained["clean"]["paddle"]["version"] == image["version"]
    # A worker that dies in its container is a crash with its signal; the other cell finished.
    dead = {s["name"]: s for s in contained["dies"]["stages"]}
    crashed = [n for n, s in dead.items() if s["status"] == "crash"]
    assert len(crashed) == 1 and dead[crashed[0]]["signal"] == "SIGKILL"
    assert contained["dies"]["launches"] == 2
    # Results belong to the caller again, and no container is left behind.
    assert all(p.stat().st_uid == os.getuid() for p in (tmp_path / "docker").rglob("*"))
    import docker

    assert docker.from_env().containers.list(all=True) == []


def test_onnx_runtime_runs_in_the_image_as_in_the_venv(image, tmp_path):
    """The image carries the ORT session's pinned packages: its cells run in a container (no
    network, so nothing could be installed on the spot) with the venv's ladder."""
    if not image["version"].startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    matrix = _matrix(tmp_path / "m.toml", image["version"], {"clean": "tests.factories:clean"})
    runs = {where: run_harness("run", "--matrix", str(matrix), "--session", "cpu_ort_fp32", "--results",
                               str(tmp_path / where), *extra) for where, extra in (("venv", ()), ("docker", ("--runner", "docker")))}
    assert runs["docker"].returncode == runs["venv"].returncode == 0, runs["docker"].stdout[-2000:]
    local, contained = _records(tmp_path / "venv")["clean"], _records(tmp_path / "docker")["clean"]
    assert contained["runner"]["kind"] == "docker" and contained["runner"]["network"] == "none"
    assert [(n, s) for n, s, _ in _ladder(contained)] == [(n, s) for n, s, _ in _ladder(local)]
    stages = {s["name"]: s for s in contained["stages"]}
    assert stages["ort_fp32"]["status"] == "pass" and stages["ort_fp32"]["evidence"]["providers"] == ["CPUExecutionProvider"]
    assert stages["ort_convert"]["evidence"]["converted_twice"] is True


def test_a_hung_stage_times_out_and_its_container_is_removed(image, tmp_path):
    matrix = _matrix(tmp_path / "m.toml", image["version"], {"hangs": "tests.factories:hangs_after_baseline"},
                     stage_timeout=10)
    _run(matrix, tmp_path / "r", "--runner", "docker")
    record = _records(tmp_path / "r")["hangs"]
    timed_out = [s for s in record["stages"] if s["status"] == "timeout"]
    assert len(timed_out) == 1 and "ran over 10 s" in timed_out[0]["message"]
    assert record["stages"][-1]["status"] == "pass"
    import docker

    assert docker.from_env().containers.list(all=True) == []


def test_a_cell_cannot_reach_the_network_or_write_into_the_repository(image, tmp_path):
    matrix = _matrix(tmp_path / "m.toml", image["version"], {"escapes": "tests.factories:escapes"})
    _run(matrix, tmp_path / "r", "--runner", "docker")
    setup = _records(tmp_path / "r")["escapes"]["setup"]
    assert setup["status"] == "error"
    assert "no network" in setup["message"] and "repository not writable (Read-only file system)" in setup["message"]
    assert not (ROOT / "tests" / "data" / ".written-by-a-cell").exists()


def test_killing_the_host_mid_run_loses_nothing_and_a_rerun_resumes(image, tmp_path):
    matrix = _matrix(tmp_path / "m.toml", image["version"], {m: "tests.factories:clean" for m in "abc"})
    results = tmp_path / "r"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([os.sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--session",
                             "cpu_fp32", "--results", str(results), "--runner", "docker"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    first = results / "default" / "cpu_fp32" / image["version"] / "normal" / "a.json"
    deadline = time.monotonic() + 300
    while not first.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert first.exists()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = first.read_text()
    rerun = _run(matrix, results, "--runner", "docker")
    assert "a: pass (recorded earlier" in rerun.stdout, rerun.stdout
    assert first.read_text() == kept
    assert {k: r["verdict"]["status"] for k, r in _records(results).items()} == {"a": "pass", "b": "pass", "c": "pass"}


def test_a_gpu_request_on_an_engine_without_the_nvidia_runtime_is_one_line(image, tmp_path):
    proc = run_harness("probe", "--image", image["tag"], "--gpu")
    assert proc.returncode == 0
    assert proc.stdout.strip().startswith("the Docker engine has no NVIDIA container runtime")
    from harness.launch.containers import DockerLauncher
    from harness.shared.errors import UserError

    launcher = DockerLauncher(image["tag"], tmp_path, gpu=True)
    with pytest.raises(UserError, match="could not select device driver"):
        launcher.start(["--help"], open(os.devnull, "wb"))


def test_bad_input_is_one_line(image, tmp_path, engine):
    matrix = _matrix(tmp_path / "m.toml", image["version"], {"clean": "tests.factories:clean"})
    line = one_line_error(_run(matrix, tmp_path / "r", "--runner", "docker", "--image", "no-such-image:1"))
    assert "no-such-image:1" in line and "nox -s images" in line
    saved = os.environ["DOCKER_HOST"]
    os.environ["DOCKER_HOST"] = f"unix://{tmp_path}/nothing.sock"
    try:
        line = one_line_error(_run(matrix, tmp_path / "r", "--runner", "docker"))
    finally:
        os.environ["DOCKER_HOST"] = saved
    assert line.startswith("error: DOCKER_HOST: no Docker engine answers")
    # A base without Python: the Dockerfile's RUN fails, and the build says so in one line.
    empty = tmp_path / "empty.tar"
    subprocess.run(["tar", "-cf", str(empty), "-T", "/dev/null"], check=True)
    engine["client"].api.import_image(src=str(empty), repository="harness-test-nopython", tag="1")
    broken = tmp_path / "broken.toml"
    broken.write_text(matrix.read_text().replace(f'cpu_base = "{BASE}"', 'cpu_base = "harness-test-nopython:1"'))
    line = one_line_error(run_harness("images", "--matrix", str(broken), "--paddle", image["version"],
                                      "--device", "cpu", "--wheels", str(tmp_path)))
    assert "docker/cpu.Dockerfile: building" in line and "failed" in line
    missing = tmp_path / "missing.toml"
    missing.write_text(matrix.read_text().replace(f'cpu_base = "{BASE}"', 'cpu_base = "harness-test-absent:1"'))
    line = one_line_error(run_harness("images", "--matrix", str(missing), "--paddle", image["version"], "--device", "cpu"))
    assert "harness-test-absent:1" in line and "--make-base" in line
