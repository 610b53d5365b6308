"""Host side: the pool's virtualenvs, one per distinct environment (``sessions.Environment``).

``nox -t cpu`` makes a venv per session (35 for the default matrix, most of them holding the
same packages); the pool makes one per distinct Python and requirement list (15), under
``<root>/pool-<paddle>-<key>``, with uv as nox does, in nox's order (``Environment``). A venv
keeps the list it was made from (``harness-env.json``): a venv whose list matches is used as it
is (no installer runs: a rerun with nothing changed starts at once), one whose list differs is
made again. Two lists that resolve to the same distributions make one venv: a list with no venv of
its own is resolved (``uv pip compile``, half a second) and a venv of the same label whose installed
set (``uv pip freeze``, kept in its stamp) is that resolution is used — ``releases`` pins the numpy a
cell ran with, which is what the pool's venv of that release holds already (measured: a
``releases`` run over a two-release pool made two more venvs of the very same distributions).
Installing wheels measures the registry, not the harness: benchmarks make the venvs first
(``--envs-only``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional

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


def _stamp(venv: Path) -> dict:
    try:
        made_from = json.loads((venv / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return made_from if isinstance(made_from, dict) else {}


def ready(venv: Path, env: Environment) -> bool:
    made_from = _stamp(venv)
    wanted = env.to_dict()
    return bool(made_from) and {k: made_from.get(k) for k in wanted} == wanted and python_of(venv).exists()


def _pins(text: str) -> List[str]:
    """``name==version`` lines (names normalized as the registry does), sorted: what resolved or is installed."""
    pins = []
    for line in text.splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins.append(f"{name.strip().lower().replace('_', '-').replace('.', '-')}=={version.strip()}")
    return sorted(pins)


def _resolved(env: Environment) -> Optional[List[str]]:
    """What ``env``'s list resolves to, or None when it cannot be told alone (installs without their
    dependencies, in steps) or does not resolve (``_make`` then says why, as it always did)."""
    if env.no_deps or env.families:
        return None
    proc = subprocess.run([*uv_command(), "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--python",
                           env.python, "-"], input="\n".join(env.packages) + "\n", capture_output=True, text=True,
                          env=dict(os.environ, UV_PYTHON_DOWNLOADS="never"))
    return _pins(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None


def _same_distributions(root: Path, env: Environment, label: str) -> Optional[Path]:
    resolved = _resolved(env)
    if not resolved:
        return None
    for venv in sorted(Path(root).glob(f"pool-{label}-*")):
        made_from = _stamp(venv)
        if (made_from.get("installed") == resolved and made_from.get("python") == env.python
                and python_of(venv).exists()):
            return venv
    return None


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
            if ready(venv, env):
                return python_of(venv)
            same = _same_distributions(Path(root), env, label)
            if same is not None:
                say(f"[harness] {same.name} holds what {' '.join(env.packages)} resolves to: used as it is")
                return python_of(same)
            return _make(venv, env, say)
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
    frozen = subprocess.run([*uv, "pip", "freeze", "--python", str(python_of(venv))], env=run_env,
                            capture_output=True, text=True)
    installed = _pins(frozen.stdout) if frozen.returncode == 0 else []
    atomic_write_json(venv / STAMP, {**env.to_dict(), "installed": installed})
    return python_of(venv)
