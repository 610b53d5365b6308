"""Shared helpers: small matrices written to tmp dirs, the harness run as a real subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the same parser, as the harness reads it
    import tomli as tomllib  # type: ignore[no-redef]
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

ROOT = Path(__file__).resolve().parent.parent


def installed_paddle() -> str:
    from harness.shared.errors import UserError
    from harness.artefacts.portability import this_paddle

    try:
        return this_paddle()
    except UserError:
        pytest.skip("no Paddle installed in this environment; run the tests with `nox -s tests`")


SESSIONS = """
[sessions.cpu_fp32]
device = "cpu"
backend = "native"
precision = "fp32"

[sessions.cpu_onednn_fp32]
device = "cpu"
backend = "onednn"
precision = "fp32"

[sessions.cpu_onednn_bf16]
device = "cpu"
backend = "onednn"
precision = "bf16"
"""
# Sessions of other runtimes, added by the tests that run them (the shared matrix's cell counts stay).
ORT_SESSION = """
[sessions.cpu_ort_fp32]
device = "cpu"
backend = "ort"
precision = "fp32"
requires_paddle = "3.0.0"
"""


def shipped_session(name: str) -> str:
    """A session of the shipped matrix as TOML, its pinned packages included (so a test's session
    cannot drift from what users install)."""
    with open(ROOT / "matrix" / "default.toml", "rb") as fh:
        raw = tomllib.load(fh)["sessions"][name]
    lines = [f"[sessions.{name}]"]
    for key in ("device", "backend", "precision", "requires_paddle", "packages"):
        if key in raw:
            lines.append(f"{key} = {json.dumps(raw[key])}")
    for bound, pins in raw.get("packages_before", {}).items():
        lines.append(f'packages_before."{bound}" = {json.dumps(pins)}')
    return "\n" + "\n".join(lines) + "\n"


# OpenVINO at both routes: the Paddle frontend (2.6) and paddle2onnx's ONNX (3.x).
OPENVINO_SESSION = shipped_session("cpu_openvino_fp32")


def shipped_tolerance(precision: str) -> Dict[str, float]:
    with open(ROOT / "matrix" / "default.toml", "rb") as fh:
        return tomllib.load(fh)["tolerances"][precision]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (`apt-get install chromium`; .ci/run does)")


def chromium(*args: str) -> subprocess.CompletedProcess:
    """Headless Chromium, as the HTML report's tests open it (``--dump-dom``, ``--screenshot``)."""
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           *args], capture_output=True, text=True, timeout=120)


def matrix_text(version: str, models: Dict[str, str], *, bf16_tol: Optional[float] = None, stage_timeout: float = 120,
                extra: str = "", other_versions: Sequence[str] = (), inputs: Optional[Dict[str, str]] = None,
                tasks: Optional[Dict[str, str]] = None, one_shape: Sequence[str] = ()) -> str:
    """A test matrix; a test model is fed ``image`` [2, 3, 16, 16] unless ``inputs`` gives its
    ``inputs`` line (the TOML after ``inputs.``); ``tasks`` its ``task`` (the TOML value); the models
    in ``one_shape`` run at their primary shape alone (``derive_shapes = false``: a test whose point
    is not the shapes pays for one)."""
    lines = [
        "[run]",
        f'default_paddle = "{version}"',
        "train_steps = 1",
        f"stage_timeout = {stage_timeout}",
    ]
    for v in (version, *other_versions):
        lines += [f'[paddle."{v}"]', 'python = "3.11"', f'packages = ["paddlepaddle=={v}"]']
    lines += [
        SESSIONS,
        "[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4",
        "[tolerances.bf16]",
        *([f"atol = {bf16_tol}", f"rtol = {bf16_tol}"] if bf16_tol is not None
          else [f"{k} = {v}" for k, v in shipped_tolerance("bf16").items()]),
    ]
    for name, factory in models.items():
        lines += [f"[models.{name}]", f'factory = "{factory}"']
        if name in (inputs or {}):
            lines.append(f"inputs.{inputs[name]}")
        elif factory.startswith("tests."):
            lines.append("inputs.image = { shape = [2, 3, 16, 16] }")
        if name in (tasks or {}):
            lines.append(f"task = {tasks[name]}")
        if name in one_shape:
            lines.append("derive_shapes = false")
    lines.append(extra)
    return "\n".join(lines) + "\n"


@pytest.fixture
def paddle_version() -> str:
    return installed_paddle()


def exact_fp32(text: str) -> str:
    """A test matrix's text with the fp32 tolerance at zero: any difference in any bit fails."""
    return text.replace("[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4", "[tolerances.fp32]\natol = 0\nrtol = 0")


@pytest.fixture
def write_matrix(tmp_path, paddle_version):
    def write(models: Dict[str, str], name: str = "matrix.toml", **kwargs) -> Path:
        path = tmp_path / name
        path.write_text(matrix_text(paddle_version, models, **kwargs), encoding="utf-8")
        return path

    return write


def run_harness(*args: str, cwd: Optional[Path] = None, timeout: float = 900,
                env_extra: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env_extra or {}))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def as_record(data: dict, run: Optional[Path] = None):
    """A record a test writes as the part of the JSON it is about, the rest of a cell spec filled in,
    read as the harness reads every record (``CellRecord.from_dict``)."""
    from harness.shared.record_model import SCHEMA, CellRecord

    cell = dict(data.get("cell") or {})
    session = dict(cell.pop("session", None) or {})
    name = session.get("name", "cpu_fp32")
    spec = {"id": data["id"], "stages": [], "paddle": "3.3.1", "mode": "normal", "mode_requires_device": None,
            "mode_packages": [], "model": {"name": "net"}, "tolerances": {"fp32": {"atol": 1e-4, "rtol": 1e-4}},
            "output_tolerances": {}, "seed": 0, "train_steps": 1, "reference_threads": 1, "deploy_threads": 1, **cell,
            "session": {"name": name, "device": name.split("_")[0], "backend": "native", "precision": "fp32", **session}}
    full = {"schema": SCHEMA, "setup": {"status": "pass"}, "stages": [], "verdict": {"status": "pass"},
            **{k: v for k, v in data.items() if not k.startswith("_")}, "cell": spec}
    path = Path(data["_path"]) if data.get("_path") else None
    return CellRecord.from_dict(full, path=path, run=run)


def load_record(results: Path, cell_id: str) -> dict:
    """A cell's record with its run-relative paths resolved as a reader resolves them
    (``records.located``): each names a file this process can open."""
    record = json.loads((results / f"{cell_id}.json").read_text(encoding="utf-8"))
    return _resolved(record, Path(results))


def _resolved(value, run: Path):
    if isinstance(value, dict):
        return {k: _resolved(v, run) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, run) for v in value]
    if isinstance(value, str) and "/" in value and not value.startswith("/") and "\n" not in value \
            and (run / value).exists():
        return str(run / value)
    return value


def stages_by_name(record: dict) -> Dict[str, dict]:
    return {s["name"]: s for s in record["stages"]}


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    """The user-error contract: exit 2, one line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


@pytest.fixture(scope="session")
def nox_envdir(tmp_path_factory) -> Path:
    """One envdir per worker for nox's own venvs (the host-side sessions' venvs are nox's to make,
    one process at a time). The cell sessions' Paddle environments are in ``shared_envs``."""
    return tmp_path_factory.mktemp("nox-envs")


@pytest.fixture(scope="session", autouse=True)
def shared_envs(tmp_path_factory) -> Path:
    """The Paddle environments of every nox-driven test (``$HARNESS_ENVS``, which the noxfile's cell
    sessions read), shared by the process tier's workers: each distinct package list is made once
    per test run (``harness.running.envs`` locks it), not once per worker. In pytest's folder of
    this run, which holds the workers' own folders and which pytest rotates away."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-envs"
    folder.mkdir(exist_ok=True)
    os.environ["HARNESS_ENVS"] = str(folder)
    return folder


NOX = shutil.which("nox")


def nox_run(*args: str, matrix: Path = None, timeout: float = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HARNESS_MATRIX", None)
    if matrix is not None:
        env["HARNESS_MATRIX"] = str(matrix)
    return subprocess.run([NOX, "-f", str(ROOT / "noxfile.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def exact_cells_at_2_6(tmp_path: Path, nox_envdir: Path, session: str, models: Dict[str, str], extra: str) -> Path:
    """``session`` at Paddle 2.6.2 through nox on ``models`` at zero fp32 tolerance (so the
    conversion fails and the root cause runs); the results folder."""
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(exact_fp32(matrix_text(installed_paddle(), models, other_versions=["2.6.2"], extra=extra)))
    results = tmp_path / "r"
    proc = nox_run("-s", f"{session}@2.6.2", "--envdir", str(nox_envdir), "--", "--results", str(results), matrix=matrix)
    assert proc.returncode == 1, proc.stdout[-3000:]
    return results / "default"


def onednn_isa(record: dict) -> str:
    """The ISA oneDNN chose for the cell (the record's machine block), e.g. avx512_core_vnni."""
    from harness.shared.machine import onednn_isa as recorded_isa

    return recorded_isa(record.get("machine")) or "unknown"


def has_vnni(isa: str) -> bool:
    """oneDNN ISAs with VNNI int8 dot products: avx2_vnni*, avx512_core_vnni and everything above
    it (avx512_core_bf16, avx10, amx)."""
    return "vnni" in isa or isa.startswith(("avx512_core_bf16", "avx512_core_fp16", "avx512_core_amx", "avx10"))


__all__: List[str] = ["run_harness", "load_record", "stages_by_name", "one_line_error", "onednn_isa", "has_vnni"]


def assert_exit_agrees(proc: subprocess.CompletedProcess, results: Path, session: str = "", mode: str = "") -> None:
    """A run's exit code, held to its own records: 0 when every cell it recorded (of ``session`` and
    ``mode``, when given) passed or was skipped, else 1. Which of the two a run gives depends on the CPU and
    the Paddle version (bf16 kernels, for one), so a test checks the agreement, not a number."""
    verdicts = []
    for path in Path(results).rglob("*.json"):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or "verdict" not in record or "cell" not in record:
            continue
        if session and record["cell"]["session"]["name"] != session.split("@")[0]:
            continue
        if mode and record["cell"]["mode"] != mode:
            continue
        verdicts.append(record["verdict"]["status"])
    assert verdicts, f"no cell record under {results}"
    expected = 0 if all(v in ("pass", "skip") for v in verdicts) else 1
    assert proc.returncode == expected, (proc.returncode, verdicts, proc.stdout[-2000:], proc.stderr[-2000:])


# -- the two tiers -----------------------------------------------------------------------------
# A test is in the process tier (marker ``processes``) when it, a fixture it uses, or a function it
# reaches by name in the tests or the harness starts a process: the harness's CLI, nox, a worker, a
# fork server, dockerd, a browser. Found from the code (the names each function references), so a
# new test lands in its tier by itself. The fast tier is the rest: pure logic and in-process Paddle
# (``nox -s tests -- -m "not processes"``).
STARTS_A_PROCESS = frozenset({"subprocess", "Popen", "run_harness", "nox_run", "run_child", "supervise", "run_cells",
                              "run_session", "run_cell", "LocalLauncher", "ForkServer", "DockerLauncher", "fork",
                              "exact_cells_at_2_6", "execute", "port_record"})
_SPAWNS: Dict[object, bool] = {}


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


def _starts_a_process(func, depth: int = 0) -> bool:
    func = getattr(func, "__wrapped__", func)
    code = getattr(func, "__code__", None)
    if code is None or depth > 6:
        return False
    if func in _SPAWNS:
        return _SPAWNS[func]
    _SPAWNS[func] = False  # recursion guard
    names = _names(code)
    found = bool(names & STARTS_A_PROCESS)
    for name in names - STARTS_A_PROCESS if not found else ():
        target = func.__globals__.get(name)
        if callable(target) and getattr(target, "__module__", "").startswith(("tests", "harness")):
            if _starts_a_process(getattr(target, "__init__", target) if isinstance(target, type) else target, depth + 1):
                found = True
                break
    _SPAWNS[func] = found
    return found


def pytest_itemcollected(item):
    """Marked as each test is collected, before -m reads the tier."""
    if not hasattr(item, "function"):
        return
    definitions = [d for name in item.fixturenames for d in item._fixtureinfo.name2fixturedefs.get(name, ())
                   if getattr(d.func, "__module__", "").startswith("tests")]
    if any(_starts_a_process(f) for f in [item.function, *(d.func for d in definitions)]):
        item.add_marker(pytest.mark.processes)


# Test modules that define a module- or session-scoped fixture (a dockerd and its image, one matrix
# run read by many tests): their tests share it, so they run in one worker, where it is made once.
_SHARED_FIXTURE = re.compile(r"@pytest\.fixture\(scope=\"(module|session|package|class)\"")
SHARING_MODULES = frozenset(f"tests/{p.name}" for p in Path(__file__).parent.glob("test_*.py")
                            if _SHARED_FIXTURE.search(p.read_text(encoding="utf-8")))


# Units that wait on something else than the CPU and take longest go to the workers first (the
# scheduler hands units out in collection order): the container tests' engine, debootstrap and
# image build, then the other modules that share one run. A long unit started last is the tier's tail.
FIRST_UNITS = ("tests/test_containers.py", "tests/test_crossversion.py", "tests/test_modes.py")


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        module = item.nodeid.split("::", 1)[0]
        if module in FIRST_UNITS:
            return FIRST_UNITS.index(module)
        return len(FIRST_UNITS) + (0 if module in SHARING_MODULES else 1)

    items.sort(key=rank)  # stable: each module's tests keep their order


def pytest_xdist_make_scheduler(config, log):
    """The process tier's scheduling (``--dist loadscope``): a module that shares a fixture is one unit
    of work, every other test its own — a module of independent slow tests is no longer one long
    pole. (pytest-xdist's ``loadgroup`` marks do not group under pytest 9: measured, every marked
    test went to another worker.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in SHARING_MODULES else nodeid

    return SharedFixtureScheduling(config, log)

# -- where the process tier's time goes ------------------------------------------------------------
# Each unit of work (a sharing module, or one test) is run by one worker from its setup to its last
# teardown: the longest of them bounds the tier whatever the other workers do. Summed here from the
# reports the workers send (setup + call + teardown), with each worker's busy seconds.
_UNIT_SECONDS: Dict[str, float] = {}
_WORKER_SECONDS: Dict[str, float] = {}


def _unit_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return module if module in SHARING_MODULES else nodeid


def pytest_runtest_logreport(report):
    _UNIT_SECONDS[_unit_of(report.nodeid)] = _UNIT_SECONDS.get(_unit_of(report.nodeid), 0.0) + report.duration
    node = getattr(report, "node", None)
    worker = getattr(getattr(node, "gateway", None), "id", None)
    if worker:
        _WORKER_SECONDS[worker] = _WORKER_SECONDS.get(worker, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _WORKER_SECONDS:  # one process: no worker waits on another
        return
    write = terminalreporter.write_line
    terminalreporter.section("longest units of work (one worker each, setup to teardown)")
    for unit, seconds in sorted(_UNIT_SECONDS.items(), key=lambda kv: -kv[1])[:6]:
        write(f"{seconds:8.1f}s  {unit}")
    write("busy per worker: " + ", ".join(f"{w} {s:.0f} s" for w, s in sorted(_WORKER_SECONDS.items())))
