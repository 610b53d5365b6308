"""Host side: where a cell-side process runs. A launcher is the only thing that knows.

Every cell-side entry point (``python -m harness cell|load|diff-worker|hazards``) follows one
child-process protocol, and this module is the one reader of it:

* exit 0: done (results are in the files it was told to write);
* exit 2 (``USER_ERROR``): bad input; the last ``error: ...`` line of its stderr says what;
* exit 3 (``PADDLE_RAISED``): Paddle raised outside any journalled stage; the last stderr line is
  Paddle's message;
* anything else, or a signal: the process died (``crash``), with the signal and the log tail.

``LocalLauncher`` runs a Python of this machine (the session's venv); ``containers.DockerLauncher``
runs one container per child in the session's image. Both have the same verbs: ``start`` (one
child, stdout+stderr to a log; returns a handle with ``poll()`` and ``returncode``), ``stop`` (kill
it and everything it started), ``probe`` (why this launcher cannot run here, or None), ``path``
(a host path as the child sees it) and ``grant`` / ``reclaim`` (make a results folder writable for
the child's user, and give it back to the caller afterwards). Nothing downstream of a launcher
knows which one ran a cell, except the record's ``launcher`` field.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from ..shared.vocab import Status

REPO_ROOT = Path(__file__).resolve().parents[2]
USER_ERROR = 2
PADDLE_RAISED = 3
POLL_SECONDS = 0.05
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def log_tail(path: Path, lines: int = 12, max_chars: int = 2000) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    text = _ANSI.sub("", text)  # Paddle colours its pass lines; a note is plain text
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept)[-max_chars:]


@dataclasses.dataclass
class Outcome:
    """How a child ended, read once by the protocol above."""

    returncode: Optional[int]
    timed_out: bool = False
    log: Optional[Path] = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def user_error(self) -> Optional[str]:
        if self.returncode != USER_ERROR or self.log is None:
            return None
        lines = [ln for ln in log_tail(self.log, lines=40).splitlines() if ln.startswith("error: ")]
        return lines[-1][len("error: "):] if lines else f"the child rejected its input; see {self.log}"

    @property
    def status(self) -> Status:
        if self.ok:
            return Status.PASS
        if self.timed_out:
            return Status.TIMEOUT
        return Status.ERROR if self.returncode == PADDLE_RAISED else Status.CRASH

    def describe(self) -> dict:
        """The record fields of a child that did not end well."""
        tail = log_tail(self.log) if self.log else ""
        if self.status is Status.ERROR:
            return {"status": Status.ERROR, "message": tail.splitlines()[-1] if tail else "Paddle raised"}
        return {"status": Status.CRASH, "message": f"worker died with {signal_name(self.returncode)}",
                "signal": signal_name(self.returncode), "returncode": self.returncode, "stderr_tail": tail}


class LocalLauncher:
    """Runs the cell side with a Python of this machine (the session's venv by default).

    Children are forked from a fork server that imported Paddle once (``forkserver.py``), unless
    the caller asks for a fresh interpreter (a mode that must import something before Paddle) or
    ``HARNESS_FORK=0`` says so; a fork server that cannot start falls back to fresh interpreters.
    """

    kind = "local"

    def __init__(self, python: Optional[str] = None, fork: Optional[bool] = None):
        self.python = python or sys.executable
        self._env = dict(os.environ)
        self._env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        # Paddle reads this at import; each predictor's own thread count is set per stage.
        self._env.setdefault("OMP_NUM_THREADS", "1")
        self.fork = os.environ.get("HARNESS_FORK", "1") != "0" if fork is None else fork
        self._server = None
        self._server_lock = threading.Lock()
        self.fork_problem: Optional[str] = None

    def _fork_server(self):
        from .forkserver import ForkServer

        with self._server_lock:
            if self._server is None or not self._server.alive():
                try:
                    self._server = ForkServer(self.python, self._env)
                except (OSError, RuntimeError, ValueError) as exc:
                    self.fork, self.fork_problem = False, f"fork server did not start ({exc}): fresh interpreters"
                    return None
            return self._server

    def probe(self) -> Optional[str]:
        if os.path.sep in self.python and not Path(self.python).exists():
            return f"--python {self.python}: no such interpreter; give the Python of a Paddle environment."
        return None

    def path(self, host_path: Path) -> str:
        return str(host_path)

    def grant(self, folder: Path) -> None:
        """The child runs as the caller: nothing to grant."""

    def reclaim(self, folder: Path) -> None:
        """Nothing to give back."""

    def describe(self, fresh: bool = False) -> dict:
        """The record's runner fields; ``fresh``: what ``start`` was asked for this cell's children."""
        if not self.fork:
            start = self.fork_problem or "a fresh interpreter per child"
        elif fresh:
            start = "a fresh interpreter per child (its mode imports a package before paddle)"
        else:
            start = "fork server: one import of paddle per environment, a forked process per child"
        return {"kind": self.kind, "python": self.python, "start": start}

    def start(self, args: Sequence[str], log, fresh: bool = False):
        server = self._fork_server() if self.fork and not fresh else None
        if server is not None:
            return server.start(list(args), log.name)
        return subprocess.Popen([self.python, "-m", "harness", *args], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=self._env,
                                start_new_session=True)  # so stop() kills the child's whole process group

    def stop(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()

    def cleanup(self, proc: subprocess.Popen) -> None:
        """A finished process leaves nothing behind."""


def supervise(launcher: Any, args: Sequence[str], log_path: Path,
              overdue: Callable[[], bool] = lambda: False, timeout: Optional[float] = None,
              fresh: bool = False) -> Outcome:
    """Start one child and wait for it; stop it when ``overdue()`` says so or after ``timeout``.
    ``fresh``: the child needs an interpreter of its own (no fork server)."""
    started = time.monotonic()
    with open(log_path, "ab") as log:
        proc = launcher.start(list(args), log, fresh=fresh)
        try:
            while proc.poll() is None:
                if overdue() or (timeout is not None and time.monotonic() - started > timeout):
                    launcher.stop(proc)
                    return Outcome(proc.returncode, timed_out=True, log=log_path)
                time.sleep(POLL_SECONDS)
        finally:
            launcher.cleanup(proc)
    return Outcome(proc.returncode, log=log_path)


def run_child(launcher: Any, args: List[str], log_path: Path, timeout: Optional[float] = None) -> Outcome:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    return supervise(launcher, args, log_path, timeout=timeout)
