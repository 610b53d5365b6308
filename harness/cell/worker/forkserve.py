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

A model's suite costs more than Paddle (``import paddlenlp.transformers`` 41 s, ``ppdet.modeling`` 32 s,
measured): a server started with ``--preload FILE`` (a JSON list of module names, what an earlier
build of the family's model imported, in the order it imported them) imports those too before it
serves, so the family's cells fork with their suite imported. Importing is all it does (no op
runs, no model is built: a fork after that would inherit Paddle's thread pools). Whether the
imports left the process safe to fork is measured, not assumed: the threads of the process
(``/proc/self/task``) before and after, and the files they left open; the host keeps a server whose
imports started a thread out of use and forks that family's cells from the plain server, saying so.

Protocol (one JSON object per line): requests on stdin ``{"id", "args", "log"}``; on stdout
``{"ready": true}`` once (with ``preloaded``, ``failed``, ``threads`` and ``open_files`` when
preloading), then ``{"id", "pid"}`` when a child starts and ``{"id", "exit", "cpu"}`` when
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

PRELOAD = ("harness.cell.paddle_api", "harness.cell.worker.lifecycle")


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


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def _open_files() -> List[str]:
    """Regular files this process holds open (a child would share their offsets)."""
    found = []
    try:
        for fd in os.listdir("/proc/self/fd"):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("/") and not target.startswith(("/dev/", "/proc/")) and os.path.isfile(target):
                found.append(target)
    except OSError:
        pass
    return sorted(set(found))


def preload(modules: List[str]) -> Dict[str, Any]:
    """Import ``modules`` (those not imported yet), and what that did to the process."""
    import importlib
    import time

    threads, files, started = _threads(), set(_open_files()), time.perf_counter()
    failed = []
    for name in modules:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - a child imports it itself and meets the same
            failed.append(f"{name}: {type(exc).__name__}")
    return {"preloaded": sum(1 for m in modules if m in sys.modules), "failed": failed[:20],
            "threads": [threads, _threads()], "open_files": sorted(set(_open_files()) - files)[:20],
            "seconds": round(time.perf_counter() - started, 3)}


def serve(argv: "List[str] | None" = None) -> int:
    import importlib

    argv = sys.argv[1:] if argv is None else argv
    requests = sys.stdin.fileno()
    replies = os.dup(sys.stdout.fileno())
    # Nothing else may write to the protocol pipe: what Paddle, a suite at import and the children
    # print goes elsewhere.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    for module in PRELOAD:
        importlib.import_module(module)
    ready: Dict[str, Any] = {"ready": True}
    if "--preload" in argv:
        with open(argv[argv.index("--preload") + 1], encoding="utf-8") as fh:
            ready.update(preload(list(json.load(fh))))

    def reply(message: Dict[str, Any]) -> None:
        os.write(replies, (json.dumps(message) + "\n").encode())

    reply(ready)
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
