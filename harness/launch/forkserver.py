"""A process that imports Paddle once and forks one child per cell-side command.

``import paddle`` costs 1–4 s and every cell, hazard probe and portability load paid it in a
fresh interpreter. The fork server pays it once per environment: it imports the cell side
(``harness.cell.compat`` imports paddle), then for each request forks a child that runs
``python -m harness <args>`` exactly as a fresh process would (own session and process group, its
stdout and stderr appended to the request's log, ``os._exit`` with the command's exit code). The
children stay separate processes: a crash, a timeout kill or a leaked Paddle state ends with the
child, as before; only the import is shared. Checked: after the import Paddle 3.3.1 runs one
thread (2.6.2 two native ones, neither needed by a child), and the tests compare a forked cell
with a spawned one number for number.

Protocol (one JSON object per line): requests on stdin ``{"id", "args", "log"}``; on stdout
``{"ready": true}`` once, then ``{"id", "pid"}`` when a child starts and ``{"id", "exit"}`` when
it ends (the exit code, or minus the signal number, as ``subprocess`` reports it). End of stdin
ends the server (its children finish on their own).

Host side: ``ForkServer`` starts the server and hands out ``ForkedProcess`` handles with the
``poll``/``wait``/``pid``/``returncode`` of a ``Popen``, so ``supervise`` and ``LocalLauncher.stop``
(``killpg`` of the child's group) work unchanged.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional

PRELOAD = ("harness.cell.compat", "harness.cell.worker")


# -- the server (runs in the Paddle environment) ----------------------------------------

def _child(args: List[str], log: str, protocol_fds: List[int]) -> None:
    """In the forked child: become a fresh-looking process and run the command."""
    code = 1
    try:
        os.setsid()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # replaces the request pipe
        os.dup2(out, 1)
        os.dup2(out, 2)
        for fd in {out, null, *protocol_fds} - {0, 1, 2}:
            os.close(fd)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sys.stdin = open(0, "r", closefd=False)
        from harness.__main__ import main

        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported through the exit code, as a fresh process would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def serve() -> int:
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    requests = sys.stdin.fileno()
    replies = os.dup(sys.stdout.fileno())
    # Nothing else may write to the protocol pipe: Paddle's and the children's output go elsewhere.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)

    def reply(message: Dict[str, Any]) -> None:
        os.write(replies, (json.dumps(message) + "\n").encode())

    reply({"ready": True})
    running: Dict[int, int] = {}  # pid -> request id
    buffer = b""
    open_input = True
    while open_input or running:
        if open_input:
            ready, _, _ = select.select([requests], [], [], 0.02)
            if ready:
                chunk = os.read(requests, 65536)
                if not chunk:
                    open_input = False
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    request = json.loads(line)
                    pid = os.fork()
                    if pid == 0:
                        _child(request["args"], request["log"], [requests, replies])
                    running[pid] = request["id"]
                    reply({"id": request["id"], "pid": pid})
        else:
            select.select([], [], [], 0.02)
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            reply({"id": running.pop(pid), "exit": os.waitstatus_to_exitcode(status)})
    return 0


# -- the host side -------------------------------------------------------------------------

class ForkedProcess:
    """A child of the fork server, with the part of ``Popen`` that supervision uses."""

    def __init__(self):
        self.pid: Optional[int] = None
        self.returncode: Optional[int] = None
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


class ForkServer:
    """One fork server per Python; started on first use, ended with the host process (the end
    of its stdin, when the host exits, ends it)."""

    def __init__(self, python: str, env: Dict[str, str]):
        self._proc = subprocess.Popen([python, "-m", "harness.launch.forkserver"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                      start_new_session=True)
        self._lock = threading.Lock()
        self._children: Dict[int, ForkedProcess] = {}
        self._next = 0
        first = self._proc.stdout.readline()
        if not first or not json.loads(first).get("ready"):
            self._proc.kill()
            raise RuntimeError("the fork server did not start")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

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
            self._children[self._next] = child
            self._proc.stdin.write((json.dumps({"id": self._next, "args": list(args), "log": log}) + "\n").encode())
            self._proc.stdin.flush()
        child._started.wait()
        return child

    def alive(self) -> bool:
        return self._proc.poll() is None


if __name__ == "__main__":
    sys.exit(serve())
