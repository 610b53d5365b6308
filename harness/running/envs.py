"""Host side: the pool's virtualenvs, one per distinct environment (``sessions.Environment``).

``nox -t cpu`` makes a venv per session (35 for the default matrix, most of them holding the
same packages); the pool makes one per distinct Python and requirement list (15), under
``<root>/pool-<paddle>-<key>``, with uv as nox does, in nox's order (``Environment``). A venv
keeps the list it was made from (``harness-env.json``): a venv whose list matches is used as it
is (no installer runs: a rerun with nothing changed starts at once), one whose list differs is
made again. Installing wheels measures the registry, not the harness: benchmarks make the
venvs first (``--envs-only``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, List

from ..matrix.sessions import Environment
from ..shared.errors import UserError
from ..shared.records import atomic_write_json

STAMP = "harness-env.json"


def uv_command() -> List[str]:
    """uv as nox finds it: on PATH, else the module beside this Python."""
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def folder(root: Path, env: Environment, label: str) -> Path:
    return Path(root) / f"pool-{label}-{env.key}"


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def ready(venv: Path, env: Environment) -> bool:
    try:
        made_from = json.loads((venv / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return made_from == env.to_dict() and python_of(venv).exists()


def ensure(root: Path, env: Environment, label: str, say: Callable[[str], Any] = print) -> Path:
    """The Python of ``env``'s venv, made (or made again) when its list changed. Two processes
    (or threads) asking for the same venv at once: one makes it, the other waits and uses it."""
    venv = folder(root, env, label)
    if ready(venv, env):
        return python_of(venv)
    Path(root).mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return python_of(venv) if ready(venv, env) else _make(venv, env, say)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _make(venv: Path, env: Environment, say: Callable[[str], Any]) -> Path:
    say(f"[harness] making the environment {venv.name} (Python {env.python}: {' '.join(env.packages)})")
    uv = uv_command()
    # No interpreter download: the machine's Pythons only (as the noxfile tells nox).
    run_env = dict(os.environ, UV_PYTHON_DOWNLOADS="never")
    steps = [[*uv, "venv", "--quiet", "--clear", "--python", env.python, str(venv)],
             [*uv, "pip", "install", "--quiet", "--python", str(python_of(venv)), *env.packages]]
    if env.no_deps:
        steps.append([*uv, "pip", "install", "--quiet", "--python", str(python_of(venv)), "--no-deps", *env.no_deps])
    if env.families:
        steps.append([*uv, "pip", "install", "--quiet", "--python", str(python_of(venv)), *env.families])
    (venv / STAMP).unlink(missing_ok=True)
    for step in steps:
        proc = subprocess.run(step, env=run_env, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"cannot make the environment {venv.name}: `{' '.join(step[len(uv):])}` failed "
                            f"({tail[0]}); fix the matrix's packages or Python for this version.")
    # Every process of the environment imports Paddle: compiled once here, not by each of them.
    subprocess.run([str(python_of(venv)), "-m", "harness.cell.worker.bytecode"], capture_output=True,
                   env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    atomic_write_json(venv / STAMP, env.to_dict())
    return python_of(venv)
