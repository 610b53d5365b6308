"""Conversions forked on behalf of a process that cannot fork (cell side).

A trial's child (``cell/sandbox.py``) runs Paddle, and Paddle's OpenMP runtime (libiomp5),
initialised again in a forked child, registers its fork handlers a second time: that child's next
``fork`` waits forever on a lock the first handler took (measured at 3.3.1: py-spy shows
``__kmp_acquire_ticket_lock`` under ``fork``; a child that never ran an OpenMP region forks fine).
So the cell's own process, before it forks its first trial, forks a launcher that runs no Paddle;
a trial's child asks it over a Unix socket to fork a conversion, and reads back the conversion's
pid and, when it ends, its exit code. A conversion whose asker hangs up (a trial killed at its
deadline) is killed with it.

The cell's own process keeps forking its conversions itself: the launcher only serves its children."""

from __future__ import annotations

import json
import os
import selectors
import secrets
import signal
import socket
import sys
import time
from typing import Any, Callable, Dict, Optional

from ...shared.protocol import forked, reap

Fork = Callable[..., int]  # ``_fork_conversion``: forks one conversion, returns its pid


class Launched:
    """A conversion running in a child: its pid and how to wait for its exit code."""

    def __init__(self, pid: int, connection: Optional[socket.socket] = None) -> None:
        self.pid = pid
        self._connection = connection  # None: our own child

    def wait(self, deadline: float) -> int:
        """Its exit code (negative: a signal); killed (SIGKILL) past ``deadline`` (monotonic)."""
        if self._connection is None:
            return reap(self.pid, deadline)
        try:
            self._connection.settimeout(max(0.0, deadline - time.monotonic()))
            try:
                line = _read_line(self._connection)
            except socket.timeout:
                os.kill(self.pid, signal.SIGKILL)  # the launcher reaps it and answers
                self._connection.settimeout(30)
                line = _read_line(self._connection)
            return int(line)
        except (OSError, ValueError):
            return -signal.SIGKILL
        finally:
            self._connection.close()


def _read_line(connection: socket.socket) -> str:
    """One line, and not a byte past it: a conversion that ends at once has its exit code sent right
    after its pid, and a larger read took both as the pid ("invalid literal for int() with base 10:
    '13746\\n1'", a trial said untestable under CI's load) and left none for ``wait``."""
    data = b""
    while not data.endswith(b"\n"):
        byte = connection.recv(1)  # lines of a few bytes: the pid, an exit code, one request
        if not byte:
            raise OSError("the launcher hung up")
        data += byte
    return data.decode().strip()


class Launcher:
    """A forked process that forks conversions for this process's trial children."""

    def __init__(self, owner: int, pid: int, address: str) -> None:
        self.owner = owner      # the process that started it (and forks its own conversions)
        self.pid = pid
        self.address = address

    @classmethod
    def start(cls, fork_conversion: Fork) -> "Launcher":
        # Linux's abstract namespace: no file to leave behind when the launcher is killed with its owner
        address = f"\0harness-p2o-launcher-{os.getpid()}-{secrets.token_hex(8)}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(address)
        listener.listen(8)
        pid = forked(lambda: _serve(listener, fork_conversion))
        listener.close()
        return cls(os.getpid(), pid, address)

    def alive(self) -> bool:
        """Whether it still serves (asked by its owner, whose child it is)."""
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:
            return False

    def launch(self, **request: Any) -> Launched:
        """The conversion ``request`` names (``fork_conversion``'s arguments), forked by the launcher."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.address)
        connection.sendall((json.dumps(request) + "\n").encode())
        connection.settimeout(30)
        return Launched(int(_read_line(connection)), connection)


def _serve(listener: socket.socket, fork_conversion: Fork) -> None:
    """Fork each asked conversion; answer its pid at once and its exit code when it ends."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    running: Dict[int, socket.socket] = {}
    while True:
        for key, _ in selector.select(timeout=0.02):
            if key.fileobj is listener:
                connection, _ = listener.accept()
                try:
                    request = json.loads(_read_line(connection))
                    pid = fork_conversion(**request)
                    connection.sendall(f"{pid}\n".encode())
                except (OSError, ValueError, TypeError) as exc:  # a malformed ask: said, no conversion
                    print(f"conversion launcher: {exc}", file=sys.stderr)
                    connection.close()
                    continue
                running[pid] = connection
                selector.register(connection, selectors.EVENT_READ, pid)
            else:  # the asker hung up (or wrote past its request): its conversion goes
                try:
                    os.kill(key.data, signal.SIGKILL)
                except OSError:
                    pass
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                connection = running.pop(pid)
                selector.unregister(connection)
                try:
                    connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass
                connection.close()


_LAUNCHER: Optional[Launcher] = None


def ready_for_children(fork_conversion: Fork) -> None:
    """Before this process forks a trial: a launcher its children can ask (one per process)."""
    global _LAUNCHER
    if _LAUNCHER is None or (_LAUNCHER.owner == os.getpid() and not _LAUNCHER.alive()):
        _LAUNCHER = Launcher.start(fork_conversion)


def launch(fork_conversion: Fork, **request: Any) -> Launched:
    """A conversion forked here, or by the launcher when this process is a trial's child."""
    if _LAUNCHER is not None and _LAUNCHER.owner != os.getpid():
        return _LAUNCHER.launch(**request)
    return Launched(fork_conversion(**request))


__all__ = ["Launched", "Launcher", "launch", "ready_for_children"]
