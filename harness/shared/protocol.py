"""The host ↔ cell child-process protocol, in one place.

Every cell-side command (``python -m harness.cell cell|load|hazards|diff-worker``) is started by a
launcher (``harness.launch``) and ends with one of these exit codes, which ``launch.Outcome`` is
the one reader of:

* ``EXIT_OK`` (0): done; the results are in the files it was told to write;
* ``EXIT_USER_ERROR`` (2): bad input; the last ``error: ...`` line of its stderr says what;
* ``EXIT_PADDLE_RAISED`` (3): Paddle raised outside any journalled stage; the last stderr line is
  Paddle's message;
* anything else, or a signal: the process died (``crash``), with the signal and the log tail.
"""

from __future__ import annotations

import signal
from typing import Callable, List

EXIT_OK = 0
EXIT_USER_ERROR = 2
EXIT_PADDLE_RAISED = 3

# How a launcher starts the cell side: its own entry, never the host CLI.
CELL_MODULE = "harness.cell"
# Beside the journal, in the cell's folder: the analysis step running now (its first line: the step and
# the stage it analyses) and each trial it has ended, appended as it ends. A worker that dies inside
# the step leaves them, and the host keeps them in the step's record (``runner._ended_badly``).
ANALYSIS_PROGRESS = "analysis-progress.jsonl"
# The environment every cell-side process starts with (venv or container). OMP_NUM_THREADS (a
# default the caller may change): Paddle reads it at import; each predictor's own thread count is set
# per stage. KMP_INIT_AT_FORK (always): an analysis runs each trial in a forked child
# (``cell/sandbox.py``); measured at 3.3.1, Paddle's bundled libiomp5 does not start its thread team
# again in a child forked after oneDNN ran a parallel region (a child building a predictor hung in
# ``GOMP_parallel`` under constant folding, every time) unless this is true when the runtime starts.
# scikit-learn sets it FALSE at import when unset (suites' models import it): set before, it stays.
CELL_ENVIRONMENT = {"OMP_NUM_THREADS": "1"}
FORK_SAFE_ENVIRONMENT = {"KMP_INIT_AT_FORK": "true"}
FORK_SERVER_MODULE = "harness.cell.worker.forkserve"
# What a cell's build imported (``models.sources.LAST_BUILD``), in its work folder: the host hands
# it to the launcher, whose fork server of that environment preloads it for the family's next cells.
BUILD_IMPORTS = "imports.json"


def cell_command(python: str, args: List[str]) -> List[str]:
    return [python, "-m", CELL_MODULE, *args]


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child, before it runs: the kernel kills it when its parent dies (``PR_SET_PDEATHSIG``),
    however the parent died (kill -9 included), so no cell-side process outlives whoever would
    record it. Linux only; elsewhere nothing."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def forked(body: Callable[[], None]) -> int:
    """``body()`` in a forked child that dies with this process (``die_with_parent``): it exits 0 when
    ``body`` returns, 1 when it raises (its traceback on the child's stderr); nothing in the child
    returns here. The child's pid. Output buffered before the fork is flushed first: a child
    would print it again."""
    import os
    import sys
    import traceback

    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            die_with_parent()
            body()
            code = 0
        except BaseException:  # noqa: BLE001 - the child's end: said on its stderr
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def reap(pid: int, deadline: float) -> int:
    """A forked child's exit code, negative for a signal; killed (SIGKILL) past ``deadline``
    (``time.monotonic()``)."""
    import os
    import time

    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -signal.SIGKILL
        time.sleep(0.02)
