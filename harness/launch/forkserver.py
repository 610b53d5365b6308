"""The host half of the fork server: start one per environment's Python, hand out its children.

``ForkServer`` starts ``python -m harness.cell.worker.forkserve`` (the serving half, cell side: it
imports Paddle once and forks a child per cell-side command) and hands out ``ForkedProcess``
handles with the ``poll``/``wait``/``pid``/``returncode`` of a ``Popen``, so ``supervise`` and
``LocalLauncher.stop`` (``killpg`` of the child's group) work unchanged. The two halves share
only the line protocol described in ``harness.cell.worker.forkserve``; neither imports the other.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import threading
from typing import Any, Dict, List, Optional

from ..shared.protocol import FORK_SERVER_MODULE


class ForkedProcess:
    """A child of the fork server, with the part of ``Popen`` that supervision uses."""

    def __init__(self):
        self.pid: Optional[int] = None
        self.returncode: Optional[int] = None
        self.cpu_seconds: Optional[float] = None  # user+system, from the server's wait4
        self.preloaded: Optional[str] = None  # the preload key of the server it was forked from
        self._started = threading.Event()
        self._ended = threading.Event()

    def poll(self) -> Optional[int]:
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("forked child", timeout)
        return self.returncode

    def kill(self) -> None:
        if self.pid is not None:
            try:
                os.killpg(self.pid, 9)
            except ProcessLookupError:
                pass


# How long a server may take to import Paddle and what it preloads before it says it is ready.
READY_SECONDS = 600.0


class ForkServer:
    """One fork server per Python (and per preloaded suite); started on first use, ended with the
    host process (the end of its stdin, when the host exits, ends it). ``preload``: modules it
    imports before serving; ``ready`` then says what the imports did (``cell.forkserve.preload``)."""

    def __init__(self, python: str, env: Dict[str, str], preload: Optional[List[str]] = None):
        args = [python, "-m", FORK_SERVER_MODULE]
        listed = None
        if preload:
            handle, listed = tempfile.mkstemp(prefix="harness-preload-", suffix=".json")
            with os.fdopen(handle, "w", encoding="utf-8") as fh:
                json.dump(list(preload), fh)
            args += ["--preload", listed]
        self.key = None
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      env=env, start_new_session=True)
        self._lock = threading.Lock()
        self._children: Dict[int, ForkedProcess] = {}
        self._next = 0
        try:
            ready, _, _ = select.select([self._proc.stdout], [], [], READY_SECONDS)
            first = self._proc.stdout.readline() if ready else b""
        finally:
            if listed:
                os.unlink(listed)
        self.ready: Dict[str, Any] = json.loads(first) if first else {}
        if not self.ready.get("ready"):
            self.close()
            raise RuntimeError("the fork server did not start" if ready else
                               f"the fork server was not ready within {READY_SECONDS:g} s")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def close(self) -> None:
        """End the server (and, by their death signal, any child of it still running)."""
        try:
            os.killpg(self._proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            self._proc.kill()
        self._proc.wait()

    def _read(self) -> None:
        for line in self._proc.stdout:
            message = json.loads(line)
            child = self._children.get(message["id"])
            if child is None:
                continue
            if "exit" in message:
                del self._children[message["id"]]
            if "pid" in message:
                child.pid = message["pid"]
                child._started.set()
            if "exit" in message:
                child.cpu_seconds = message.get("cpu")
                child.returncode = message["exit"]
                child._ended.set()
                child._started.set()
        # The server died: nobody reaps its children any more. They are killed (their own
        # process groups) so that the -9 each one is given is what really ended it.
        for child in list(self._children.values()):
            child.kill()
            child.returncode = -9
            child._ended.set()
            child._started.set()

    def start(self, args: List[str], log: str) -> ForkedProcess:
        with self._lock:
            self._next += 1
            child = ForkedProcess()
            child.preloaded = self.key
            self._children[self._next] = child
            self._proc.stdin.write((json.dumps({"id": self._next, "args": list(args), "log": log}) + "\n").encode())
            self._proc.stdin.flush()
        child._started.wait()
        return child

    def alive(self) -> bool:
        return self._proc.poll() is None
