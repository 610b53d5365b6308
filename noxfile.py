"""Nox sessions, generated from the matrix (``matrix/default.toml`` or ``$HARNESS_MATRIX``).

Thin on purpose: every decision lives in ``harness``; this file only turns the matrix
into sessions.

* ``<session>`` (``cpu_fp32``, ``cpu_onednn_bf16``, ``gpu_trt_fp16``...) runs at the matrix's
  default Paddle version; ``<session>@<version>`` at any other version it lists.
* tags: the device (``cpu``/``gpu``), the backend, the precision, ``paddle-<version>``, and
  ``default`` for the default-version sessions. ``nox -t cpu`` runs every CPU session at
  every version; ``nox -t default`` every session at the default version.
* arguments after ``--`` go to ``python -m harness run`` (``--model``, ``--force``, ``--run``,
  ``--runner docker``...).
* ``nox -s matrix -- --tag cpu`` runs the cells of every session ``nox -t cpu`` selects in one job
  pool (``python -m harness pool``): one scheduler, one environment per distinct package list,
  one report. Use it for a whole matrix on one machine; ``nox -t`` / ``nox -s`` for one session,
  containers and CI shards.
* where cells run: CPU sessions in the session's venv (Paddle installed into it); with
  ``-- --runner docker`` (or ``runner = "docker"`` in the matrix, the default of GPU sessions) in
  the session's image, the venv then holding only the host side. ``nox -s images`` builds them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import nox
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from harness import matrix as _matrix  # noqa: E402  (host side: no paddle)
from harness.matrix import sessions as _sessions  # noqa: E402
from harness.shared.errors import UserError  # noqa: E402
from harness.running import envs as _envs  # noqa: E402
from harness.running.hostenv import gpu_absence_reason  # noqa: E402

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.download_python = "never"


def _user_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)  # nox lets SystemExit through: the run ends with the user-error code


MATRIX_PATH = Path(os.environ.get("HARNESS_MATRIX", ROOT / "matrix" / "default.toml"))
try:
    MATRIX = _matrix.load(MATRIX_PATH)
except UserError as exc:
    _user_error(str(exc))

HOST_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
HOST_SIDE = list(_sessions.HOST_SIDE)
CELL_SIDE_EXTRAS = list(_sessions.CELL_SIDE_EXTRAS)
NOX_SESSIONS = _sessions.nox_sessions(MATRIX)


def _run_harness(s: nox.Session, *args: str, python: str = "python") -> None:
    try:
        s.run(python, "-m", "harness", *args, external=True)
    except CommandFailed as exc:
        if getattr(exc, "return_code", None) == 2:
            sys.exit(2)  # bad input: the harness printed its one line
        raise


def _modes(posargs):
    chosen = [posargs[i + 1] for i, arg in enumerate(posargs[:-1]) if arg == "--mode"]
    chosen += [arg.split("=", 1)[1] for arg in posargs if arg.startswith("--mode=")]
    return chosen or None


def _models(posargs):
    chosen = [posargs[i + 1] for i, arg in enumerate(posargs[:-1]) if arg == "--model"]
    chosen += [arg.split("=", 1)[1] for arg in posargs if arg.startswith("--model=")]
    return chosen or None


def _envs_root(s: nox.Session) -> Path:
    """Where the cell sessions' environments live: the pool's venvs (``harness.running.envs``: one
    per distinct Python and package list, made under a lock, kept while its list holds), so
    ``cpu_fp32``, ``cpu_onednn_fp32`` and ``nox -s matrix`` at one version share one venv instead of
    making one each. Under nox's ``--envdir`` (``.nox``), or ``$HARNESS_ENVS`` (the tests share one
    folder across their workers)."""
    named = os.environ.get("HARNESS_ENVS")
    return Path(named).resolve() if named else Path(s.cache_dir).resolve().parent


def _env_python(s: nox.Session, env: _sessions.Environment, label: str, what: str) -> str:
    """The Python of ``env``'s venv in the sessions' shared folder, made when its list is new."""
    try:
        return str(_envs.ensure(_envs_root(s), env, label, say=s.log))
    except UserError as exc:
        _user_error(f"{MATRIX_PATH}: {what}: cannot install {' '.join(env.packages)} for Python {env.python} "
                    f"here: {exc}")


def _compile_bytecode(s: nox.Session, env: _sessions.Environment, *imports: str) -> None:
    """Once per package list: every later process of the env imports Paddle compiled (5.9 s -> 2.0 s
    per ``import paddle`` on this project's machines, where PYTHONDONTWRITEBYTECODE is set)."""
    if env.packages:
        key = hashlib.sha256(json.dumps([env.to_dict(), imports], sort_keys=True).encode()).hexdigest()[:16]
        # Only a speed-up: a process that dies importing Paddle here is not this step's to report (the
        # cell meets the same import and records it as a finding), so no exit code fails the session.
        s.run_install("python", "-m", "harness.cell.worker.bytecode", "--stamp", key, *imports, env={"PYTHONPATH": str(ROOT)},
                      silent=True, success_codes=list(range(-64, 256)))


def _install_families(s: nox.Session, models, version: str) -> None:
    """The model families' packages (the zoo's) into this session's venv, in ``Environment``'s
    order: those whose pins fight Paddle's without their dependencies first, then the rest."""
    families = MATRIX.family_packages(models, version)
    if families["no_deps"]:
        s.install("--no-deps", *families["no_deps"], silent=True)
    if families["packages"]:
        s.install(*families["packages"], silent=True)


def _runner(session, posargs) -> str:
    for i, arg in enumerate(posargs):
        if arg == "--runner" and i + 1 < len(posargs):
            return posargs[i + 1]
        if arg.startswith("--runner="):
            return arg.split("=", 1)[1]
    return session.runner


def _cell_session(nox_session: _sessions.NoxSession):
    name, version = nox_session.session, nox_session.version
    session = MATRIX.session(name)
    def run(s: nox.Session) -> None:
        # A zoo session runs the zoo unless the user names models: a model asked for is the model run.
        forced = ["--model", _matrix.ZOO] if nox_session.zoo and not _models(s.posargs) else []
        # ... in the train modes [zoo] names unless the user names modes (one venv: every mode's packages in it).
        forced += [a for m in _sessions.zoo_modes(MATRIX, nox_session, _modes(s.posargs)) or [] for a in ("--mode", m)
                   ] if nox_session.zoo and not _modes(s.posargs) else []
        if session.device == "gpu":
            reason = gpu_absence_reason()  # no driver, or no GPU
            if reason:
                s.skip(f"{name}: {reason}")
        if _runner(session, s.posargs) == "docker":
            host = _env_python(s, _sessions.Environment(HOST_PYTHON, tuple(HOST_SIDE)), "host", "the host side")
            if session.device == "gpu":  # the third thing a GPU container needs: the NVIDIA runtime
                out = s.run(host, "-m", "harness", "probe", "--image", MATRIX.image(version, "gpu"), "--gpu",
                            silent=True, env={"PYTHONPATH": str(ROOT)}, external=True)
                if out and out.strip():
                    s.skip(f"{name}: {out.strip()}")
            extra = [] if "--runner" in " ".join(s.posargs) else ["--runner", "docker"]
            _run_harness(s, "run", "--matrix", str(MATRIX_PATH), "--session", name, "--paddle", version,
                         *forced, *extra, *s.posargs, python=host)
            return
        env = _sessions.cell_environment(MATRIX, nox_session, _sessions.zoo_modes(MATRIX, nox_session, _modes(s.posargs)),
                                         _models(s.posargs))
        python = _env_python(s, env, version, f'paddle."{version}"')
        _run_harness(s, "run", "--matrix", str(MATRIX_PATH), "--session", name, "--paddle", version, *forced,
                     *s.posargs, python=python)

    run.__doc__ = nox_session.description
    return run


def _portability_session(nox_session: _sessions.NoxSession):
    def run(s: nox.Session) -> None:
        env = _sessions.cell_environment(MATRIX, nox_session)
        _run_harness(s, "port", *s.posargs, python=_env_python(s, env, nox_session.version,
                                                                 f'paddle."{nox_session.version}"'))

    run.__doc__ = nox_session.description
    return run


def _tipc_session(nox_session: _sessions.NoxSession):
    version = nox_session.version

    def run(s: nox.Session) -> None:
        cpu = MATRIX.session("cpu_fp32")
        s.install(*MATRIX.packages(cpu, version), *CELL_SIDE_EXTRAS, *HOST_SIDE, silent=True)
        repo = next((s.posargs[i + 1] for i, arg in enumerate(s.posargs[:-1]) if arg == "--repo"), None)
        if repo and (Path(repo) / "requirements.txt").is_file() and "--dry-run" not in s.posargs:
            # what TIPC's docs have you do first; the commands need the repository's packages (a dry
            # run runs nothing, so it installs none of them: they may pin what the env relies on)
            s.install("-r", str(Path(repo) / "requirements.txt"), silent=True)
        _run_harness(s, "tipc", "--matrix", str(MATRIX_PATH), *s.posargs)

    run.__doc__ = nox_session.description
    return run


_MAKERS = {_sessions.SessionKind.CELLS: _cell_session, _sessions.SessionKind.ZOO: _cell_session,
           _sessions.SessionKind.PORTABILITY: _portability_session, _sessions.SessionKind.TIPC: _tipc_session}
# Cell and portability sessions run in the shared environments (``_envs_root``), not in a venv of
# their own: nox makes none for them. TIPC sessions install a user's requirements: their own venv.
_SHARED_ENV_KINDS = (_sessions.SessionKind.CELLS, _sessions.SessionKind.ZOO, _sessions.SessionKind.PORTABILITY)
for _nox_session in NOX_SESSIONS:  # in the table's order: portability after every cell session
    nox.session(name=_nox_session.name, python=_nox_session.python, tags=list(_nox_session.tags),
                venv_backend="none" if _nox_session.kind in _SHARED_ENV_KINDS else None,
                )(_MAKERS[_nox_session.kind](_nox_session))


@nox.session(python=HOST_PYTHON)
def matrix(s: nox.Session) -> None:
    """Every session `nox -t TAG` selects, in one job pool (``-- --tag cpu``; ``--jobs``, ``--model``...)."""
    s.install(*HOST_SIDE, "uv", silent=True)  # uv makes the pool's environments, as it makes nox's
    _run_harness(s, "pool", "--matrix", str(MATRIX_PATH), "--envs", str(_envs_root(s)), *s.posargs)


@nox.session(python=HOST_PYTHON)
def regress(s: nox.Session) -> None:
    """Cross-version report (``-- --base 3.2.2 --head 3.3.1``); exit 1 when a stage regressed."""
    s.install(*HOST_SIDE, silent=True)
    _run_harness(s, "regress", *s.posargs)


@nox.session(python=HOST_PYTHON)
def images(s: nox.Session) -> None:
    """Build the matrix's Docker images (``-- --paddle 3.3.1 --device cpu --make-base --wheels DIR``)."""
    s.install(*HOST_SIDE, silent=True)
    _run_harness(s, "images", "--matrix", str(MATRIX_PATH), *s.posargs)


# Workers of the process tier. Its tests keep both cores busy (process accounting, AVX2 machine: 30.6
# CPU-minutes in a 16.4-minute tier, 94% of two cores); more workers than cores only cover a test's
# waits (dockerd, debootstrap, downloads). Six were no faster than four (18 m 35 s against 18 m 03 s)
# — measured in docs/testing.md.
PROCESS_TIER_WORKERS = 4


@nox.session(python=HOST_PYTHON)
def tests(s: nox.Session) -> None:
    """The test suite, on real Paddle (CPU, the matrix's default version), a real Docker engine.

    Two tiers: the fast one (pure logic and in-process Paddle) first, alone, then the tests that
    start processes (``-m processes``, marked by tests/conftest.py) with pytest-xdist, the tests
    sharing a fixture in one worker, the slowest ten listed. ``-- ARGS`` runs pytest with those arguments instead (``-- -m "not processes"``:
    the fast tier alone)."""
    default = MATRIX.run["default_paddle"]
    # With the PACT mode's packages (PaddleSlim and its pins, numpy<2 among them): its tests run here.
    # And the ONNX Runtime session's pinned packages: its tests convert and run real programs.
    # And OpenVINO's (at Paddle 3 it reads paddle2onnx's ONNX): its tests run in this env too.
    s.install("pytest", "pytest-xdist", "xmlschema", "nox", "uv", *MATRIX.packages(MATRIX.session("cpu_ort_fp32"), default),
              *MATRIX.packages(MATRIX.session("cpu_openvino_fp32"), default),
              *CELL_SIDE_EXTRAS, *HOST_SIDE, *MATRIX.mode_packages(["pact"]))
    _install_families(s, [_matrix.ZOO], default)  # the zoo's packages: its tests use a real architecture
    # The tests start hundreds of processes from this env (the harness, its workers, TIPC commands).
    _compile_bytecode(s, _sessions.Environment(HOST_PYTHON, (*MATRIX.packages(MATRIX.session("cpu_openvino_fp32"), default),
                                                             *HOST_SIDE, *MATRIX.mode_packages(["pact"]))),
                      "matplotlib.pyplot", "openpyxl", "jinja2", "docker", "tabulate")
    env = {"HARNESS_TEST_PADDLE": default}
    if s.posargs:
        s.run("pytest", *s.posargs, env=env)
        return
    s.run("pytest", "-q", "-m", "not processes", env=env)
    # The tests of a module sharing a fixture (a dockerd and its image, a matrix run) in one worker,
    # made once; every other test to whichever worker is free (tests/conftest.py's scheduler).
    s.run("pytest", "-q", "-m", "processes", "-n", str(PROCESS_TIER_WORKERS), "--dist", "loadscope",
          "--durations=25", env=env)


@nox.session(python=HOST_PYTHON)
def report(s: nox.Session) -> None:
    """Merge every result record of a run into markdown (``-- --run NAME``)."""
    s.install(*HOST_SIDE, silent=True)
    _run_harness(s, "report", *s.posargs)


@nox.session(python=HOST_PYTHON)
def qualify(s: nox.Session) -> None:
    """Release verdict over a run (``-- --run NAME [--strict] [--known known.toml]``): exit 0 or 1."""
    s.install(*HOST_SIDE, silent=True)
    _run_harness(s, "qualify", "--matrix", str(MATRIX_PATH), *s.posargs)


@nox.session(python=HOST_PYTHON)
def releases(s: nox.Session) -> None:
    """The release each cause of a run first appeared in (``-- --run NAME [--releases A,B] [--pre]``):
    its source reproducer bisected over the releases the package index serves."""
    s.install(*HOST_SIDE, "pip", "uv", silent=True)  # pip lists the index's releases; uv makes their envs
    _run_harness(s, "releases", *s.posargs)


@nox.session(python=HOST_PYTHON)
def qualification(s: nox.Session) -> None:
    """A release qualified over the zoo in one command (``-- [--tag zoo-3.3.1 | --session S ...] [--out docs]``):
    the sessions in one pool, then releases, workarounds, report --zoo and qualify --known, published as
    ``qualification-<version>.md`` beside ``zoo.md`` and the known-issues file."""
    s.install(*HOST_SIDE, "pip", "uv", silent=True)
    # The matrix every session reads ($HARNESS_MATRIX or the default), unless the arguments name one.
    matrix = [] if any(a == "--matrix" or a.startswith("--matrix=") for a in s.posargs) else ["--matrix", str(MATRIX_PATH)]
    _run_harness(s, "qualification", *matrix, *s.posargs)


@nox.session(python=HOST_PYTHON)
def workarounds(s: nox.Session) -> None:
    """Each failing stage's verified workaround (``-- --run NAME``): a table, Config lines, PaddleX's
    hpi_config and a known-issues file for ``qualify --known``; a change verified on one cell of a cause
    is tried on the cause's other cells (in their environments, which uv makes when missing)."""
    s.install(*HOST_SIDE, "uv", silent=True)
    _run_harness(s, "workarounds", *s.posargs)


@nox.session(python=HOST_PYTHON)
def bench(s: nox.Session) -> None:
    """Harness overhead against hand-written scripts making the same Paddle calls (ratios)."""
    default = MATRIX.run["default_paddle"]
    s.install(*MATRIX.version(default)["packages"], *CELL_SIDE_EXTRAS, *HOST_SIDE)
    s.run("python", "-m", "harness.bench.cell", *s.posargs)
    # An ORT cell against a plain script making the same paddle2onnx + onnxruntime calls.
    s.install(*MATRIX.packages(MATRIX.session("cpu_ort_fp32"), default), silent=True)
    s.run("python", "-m", "harness.bench.cell", "--session", "cpu_ort_fp32")
    s.run("python", "-m", "harness.bench.shapes")  # k shapes per cell against one
    s.run("python", "-m", "harness.bench.floor")  # the bf16 floor against the stage it judges
    _install_families(s, [_matrix.ZOO], default)  # the reduction's bench runs the zoo's largest models
    s.run("python", "-m", "harness.bench.reduction")  # sub-exports vs budget; a passing cell pays nothing
    s.run("python", "-m", "harness.bench.diff_memory")
    s.run("python", "-m", "harness.bench.tipc")  # a TIPC chain: the harness against a bash driver
    s.run("python", "-m", "harness.bench.releases")  # placing causes among the releases: envs once, runs per cause
    s.run("python", "-m", "harness.bench.qualification")  # the one command against its steps typed; the pool's floor
    s.run("python", "-m", "harness.bench.zoo_pool")  # suites imported and programs exported once, against per cell
    # Needs DOCKER_HOST and the image (`nox -s images`); says why it skips otherwise.
    s.run("python", "-m", "harness.bench.containers")
    s.run("python", "-m", "harness.bench.report")  # the records of results/default (e.g. after nox -t cpu)


@nox.session(python=HOST_PYTHON)
def bench_matrix(s: nox.Session) -> None:
    """The CPU matrix three ways: its compute floor, `nox -s matrix -- --tag cpu`, `nox -t cpu` (~10 min)."""
    s.install(*HOST_SIDE, "nox", silent=True)
    s.run("python", "-m", "harness.bench.matrix", *s.posargs)
