"""The serving half of the fork server (cell side): imports Paddle once, forks one child per
cell-side command.

``import paddle`` costs 1–4 s and every cell, hazard probe and portability load paid it in a
fresh interpreter. The fork server pays it once per environment: it imports the cell side
(``harness.cell.paddle_api`` imports paddle), then for each request forks a child that runs the cell
side's own entry (``harness.cell.__main__``) exactly as ``python -m harness.cell <args>`` would
(own session and process group, its stdout and stderr appended to the request's log, ``os._exit``
with the command's exit code). The children stay separate processes: a crash, a timeout kill or a
leaked Paddle state ends with the child, as before; only the import is shared. A child can run
only cell-side commands: the host's CLI is not imported here. Checked: after the import Paddle
3.3.1 runs one thread (2.6.2 two native ones, neither needed by a child), and the tests compare a
forked cell with a spawned one number for number.

Protocol (one JSON object per line): requests on stdin ``{"id", "args", "log"}``; on stdout
``{"ready": true}`` once, then ``{"id", "pid"}`` when a child starts and ``{"id", "exit", "cpu"}`` when
it ends (the exit code, or minus the signal number, as ``subprocess`` reports it; its user+system
CPU seconds). End of stdin
(the host exited, or was killed) ends the server and kills the children still running: nobody is
left to record them, and a rerun must not race them on their cell folders. Each child also asks
the kernel to kill it when the server dies (``PR_SET_PDEATHSIG``), so a server killed by -9
takes its children along. The host half is ``harness.launch.forkserver``.
"""

from __future__ import annotations

import json
import os
import select
import sys
from typing import Any, Dict, List

from harness.shared.protocol import die_with_parent

PRELOAD = ("harness.cell.paddle_api", "harness.cell.lifecycle")


def _child(args: List[str], log: str, protocol_fds: List[int]) -> None:
    """In the forked child: become a fresh-looking process and run the command."""
    code = 1
    try:
        os.setsid()
        die_with_parent()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # replaces the request pipe
        os.dup2(out, 1)
        os.dup2(out, 2)
        for fd in {out, null, *protocol_fds} - {0, 1, 2}:
            os.close(fd)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sys.stdin = open(0, "r", closefd=False)
        from harness.cell.__main__ import main

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


def _kill_all(running: Dict[int, int]) -> None:
    import signal

    for pid in running:
        try:
            os.killpg(pid, signal.SIGKILL)  # each child leads its own process group
        except (ProcessLookupError, PermissionError):
            pass


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
                    _kill_all(running)
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
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            # The child's CPU (its own and its waited-for children's): what the pool's compute
            # floor and its longest-first order are measured in.
            reply({"id": running.pop(pid), "exit": os.waitstatus_to_exitcode(status),
                   "cpu": round(usage.ru_utime + usage.ru_stime, 3)})
    return 0


if __name__ == "__main__":
    sys.exit(serve())
