"""Host side: where a cell-side process runs. A launcher is the only thing that knows.

Every cell-side command (``python -m harness.cell cell|load|diff-worker|hazards``, the cell
side's own entry) follows one child-process protocol (``harness.shared.protocol``), and this
module is the one reader of it:

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
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence

from ..shared.causes import death_words
from ..shared.logs import log_tail, signal_name
from ..shared.protocol import EXIT_PADDLE_RAISED as PADDLE_RAISED
from ..shared.protocol import EXIT_USER_ERROR as USER_ERROR
from ..shared.protocol import CELL_ENVIRONMENT, FORK_SAFE_ENVIRONMENT, cell_command, die_with_parent
from ..shared.vocab import Status

REPO_ROOT = Path(__file__).resolve().parents[2]
POLL_SECONDS = 0.05
# Set when the host is interrupted (SIGINT, SIGTERM): every supervised child is stopped at once
# (its process group, its container) and its caller records nothing for it.
INTERRUPT = threading.Event()


class Interrupted(KeyboardInterrupt):
    """A child was stopped because the host was interrupted: nothing of it is recorded."""


class Child(Protocol):
    """What supervision needs of a started child (a ``Popen``, a forked process, a container)."""

    returncode: Optional[int]

    def poll(self) -> Optional[int]: ...


class Launcher(Protocol):
    """Where cell-side processes run. ``LocalLauncher`` and ``containers.DockerLauncher`` are the
    two; a new place (a remote machine, a batch queue) is one class with these verbs."""

    kind: str

    def probe(self) -> Optional[str]:
        """Why this launcher cannot run here, or None: asked before any work."""

    def start(self, args: Sequence[str], log: Any, fresh: bool = False, preload: Optional[str] = None) -> Child:
        """One cell-side command (``python -m harness.cell <args>``), stdout+stderr to ``log``;
        ``preload``: the key of the suite the child imports (``CellSpec.preload_key``), a hint."""

    def stop(self, child: Any) -> None:
        """Kill it and everything it started."""

    def cleanup(self, child: Any) -> None:
        """Remove what a finished child leaves behind."""

    def path(self, host_path: Path) -> str:
        """A host path as the child sees it."""

    def grant(self, folder: Path) -> None:
        """Make a results folder writable for the child's user."""

    def reclaim(self, folder: Path) -> None:
        """Give the folder back to the caller afterwards."""

    def describe(self, fresh: bool = False, preload: Optional[str] = None, preloaded: bool = False) -> dict:
        """The record's ``runner`` fields."""


@dataclasses.dataclass
class Outcome:
    """How a child ended, read once by the protocol above."""

    returncode: Optional[int]
    timed_out: bool = False
    log: Optional[Path] = None
    interrupted: bool = False  # stopped because the host was interrupted: says nothing of the child
    # User+system CPU of the child and what it waited for, where the launcher can know it (a forked
    # child: the fork server's wait4); None for a fresh interpreter or a container.
    cpu_seconds: Optional[float] = None
    preloaded: Optional[str] = None  # the suite its fork server had imported (a preload key), if any

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
        # Paddle's last words when its handler printed them: the innermost C++ frame (``last_words``).
        # Its C++ traceback's frames are long lines above the summary: read further back for them.
        words = death_words(self.returncode, log_tail(self.log, lines=80, max_chars=40000) if self.log else "")
        said = f"worker {words or f'died with {signal_name(self.returncode)}'}"
        return {"status": Status.CRASH, "message": said,
                "signal": signal_name(self.returncode), "returncode": self.returncode, "stderr_tail": tail}


class LocalLauncher:
    """Runs the cell side with a Python of this machine (the session's venv by default).

    Children are forked from a fork server that imported Paddle once (``forkserver.py``), unless
    the caller asks for a fresh interpreter (a mode that must import something before Paddle) or
    ``HARNESS_FORK=0`` says so; a fork server that cannot start falls back to fresh interpreters.
    A cell of a model family (``CellSpec.preload_key``) forks from a server of its own that also
    imported what an earlier build of the family imported (``learn_imports``, measured by the cell:
    its suite), so the suite is imported once per environment, not once per cell; such a server
    whose imports started a thread is not forked from (the family's cells fork from the plain one,
    and their records say why).
    """

    kind = "local"

    def __init__(self, python: Optional[str] = None, fork: Optional[bool] = None):
        self.python = python or sys.executable
        self._env = dict(os.environ)
        self._env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        for name, value in CELL_ENVIRONMENT.items():  # the caller's own choice stands
            self._env.setdefault(name, value)
        self._env.update(FORK_SAFE_ENVIRONMENT)  # whatever the caller's (scikit-learn's import sets it FALSE)
        self.fork = os.environ.get("HARNESS_FORK", "1") != "0" if fork is None else fork
        self._servers: Dict[Optional[str], Any] = {}  # preload key (None: Paddle alone) -> server
        self._server_lock = threading.Lock()
        self.fork_problem: Optional[str] = None
        # What builds of this run imported, per preload key: learned by the run, not kept across runs
        # (a suite reinstalled between runs must not be preloaded from an old list; a run pays one
        # import per family and environment to learn it).
        self._imports: Dict[str, List[str]] = {}
        self.preload = os.environ.get("HARNESS_PRELOAD", "1") != "0"
        self._not_preloaded: Dict[str, str] = {}  # preload key -> why its server is not forked from

    def learn_imports(self, key: Optional[str], modules: Sequence[str]) -> None:
        """What a build of ``key``'s model imported; the next server of ``key`` preloads it."""
        if not key or not modules:
            return
        with self._server_lock:
            known = self._imports.setdefault(key, [])
            seen = set(known)
            added = [m for m in modules if m not in seen]
            if not added:
                return
            known.extend(added)

    def _fork_server(self, key: Optional[str] = None):
        with self._server_lock:
            if key is not None and (not self.preload or key not in self._imports or key in self._not_preloaded):
                key = None
            for candidate in ((key, None) if key is not None else (None,)):
                server = self._servers.get(candidate)
                if server is None or not server.alive():
                    server = self._start_server(candidate)
                if server is not None:
                    return server
            return None

    def _start_server(self, key: Optional[str]):
        """A server preloading ``key``'s imports (None: Paddle alone), or None when it cannot serve:
        a preloading one then leaves its family to the plain server, with why."""
        from .forkserver import ForkServer

        try:
            server = ForkServer(self.python, self._env, preload=self._imports[key] if key else None)
        except (OSError, RuntimeError, ValueError) as exc:
            if key is not None:
                self._not_preloaded[key] = f"not preloaded: its preloading server did not start ({exc})"
            else:
                self.fork, self.fork_problem = False, f"fork server did not start ({exc}): fresh interpreters"
            return None
        threads = server.ready.get("threads") or [0, 0]
        if key is not None and threads[1] > threads[0]:
            server.close()
            self._not_preloaded[key] = (f"not preloaded: importing its suite started {threads[1] - threads[0]} "
                                        f"thread(s), which a forked child would not have")
            return None
        server.key = key
        self._servers[key] = server
        return server

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

    def describe(self, fresh: bool = False, preload: Optional[str] = None, preloaded: bool = False) -> dict:
        """The record's runner fields; ``fresh``: what ``start`` was asked for this cell's children;
        ``preload``: the cell's preload key (its family's suite); ``preloaded``: whether its first
        child forked from the server that imported it (``Outcome.preloaded``)."""
        if not self.fork:
            start = self.fork_problem or "a fresh interpreter per child"
        elif fresh:
            start = "a fresh interpreter per child (its mode imports a package before paddle)"
        else:
            start = "fork server: one import of paddle per environment, a forked process per child"
        out = {"kind": self.kind, "python": self.python, "start": start}
        if self.fork and not fresh and preload and self.preload:
            server = self._servers.get(preload)
            if preload in self._not_preloaded:
                out["preload"] = f"{preload}: {self._not_preloaded[preload]}"
            elif server is not None and preloaded:
                said = server.ready
                out["preload"] = (f"{preload}: {said.get('preloaded')} module(s) an earlier build imported, imported by the "
                                  f"fork server in {said.get('seconds')} s" + (f"; {len(said['failed'])} failed to import "
                                                                             f"there" if said.get("failed") else "")
                                  + (f"; the imports left {len(said['open_files'])} file(s) open, which each child shares "
                                     f"({', '.join(Path(f).name for f in said['open_files'][:3])})"
                                     if said.get("open_files") else ""))
            else:
                out["preload"] = f"{preload}: not preloaded (its family's first build here imported it)"
        return out

    def start(self, args: Sequence[str], log, fresh: bool = False, preload: Optional[str] = None):
        server = self._fork_server(preload) if self.fork and not fresh else None
        if server is not None:
            return server.start(list(args), log.name)
        return subprocess.Popen(cell_command(self.python, list(args)), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=self._env,
                                start_new_session=True,  # so stop() kills the child's whole process group
                                preexec_fn=die_with_parent)  # and a host killed by -9 takes it along

    def stop(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()

    def cleanup(self, proc: subprocess.Popen) -> None:
        """A finished process leaves nothing behind."""


def supervise(launcher: Launcher, args: Sequence[str], log_path: Path,
              overdue: Callable[[], bool] = lambda: False, timeout: Optional[float] = None,
              fresh: bool = False, preload: Optional[str] = None) -> Outcome:
    """Start one child and wait for it; stop it when ``overdue()`` says so or after ``timeout``.
    ``fresh``: the child needs an interpreter of its own (no fork server); ``preload``: the
    child's suite, which a launcher may have imported already (``LocalLauncher``)."""
    started = time.monotonic()
    with open(log_path, "ab") as log:
        if INTERRUPT.is_set():
            return Outcome(None, log=log_path, interrupted=True)
        proc = launcher.start(list(args), log, fresh=fresh, preload=preload)
        try:
            while proc.poll() is None:
                if INTERRUPT.is_set():
                    launcher.stop(proc)
                    return Outcome(proc.returncode, log=log_path, interrupted=True)
                if overdue() or (timeout is not None and time.monotonic() - started > timeout):
                    launcher.stop(proc)
                    return Outcome(proc.returncode, timed_out=True, log=log_path,
                                   cpu_seconds=getattr(proc, "cpu_seconds", None),
                                   preloaded=getattr(proc, "preloaded", None))
                time.sleep(POLL_SECONDS)
        except BaseException:  # an interrupt in this thread: the child goes with it
            launcher.stop(proc)
            raise
        finally:
            launcher.cleanup(proc)
    return Outcome(proc.returncode, log=log_path, cpu_seconds=getattr(proc, "cpu_seconds", None),
                   preloaded=getattr(proc, "preloaded", None))


def run_child(launcher: Launcher, args: List[str], log_path: Path, timeout: Optional[float] = None) -> Outcome:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    return supervise(launcher, args, log_path, timeout=timeout)
