"""One writer per run folder (host side): ``results/<run>/.lock``, held with ``flock`` while a
command writes the run's records.

The kernel drops the lock when its holder dies, however it died, so a lock left by a dead run is
taken over (and said so); the file keeps the holder's pid, command and start time, so a second run
on a live folder says who holds it and exits 2. Children never inherit the lock (Python opens it
non-inheritable), so a worker that outlived its host cannot keep a new run out — and the host ends
its workers before it lets go (``harness.launch``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

from ..shared.errors import UserError
from ..shared.runfolder import RunFolder



class RunLock:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = RunFolder(self.folder).lock
        self._fd: Optional[int] = None
        self.took_over: Optional[Dict[str, Any]] = None  # the dead holder whose lock this took

    def __enter__(self) -> "RunLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            who = (f"pid {holder.get('pid')} ({' '.join(holder.get('argv', []))[:160]}, since {holder.get('started')})"
                   if holder else "another process")
            raise UserError(f"{self.folder}: {who} is writing this run; wait for it to end, or give another --run "
                            f"(or --results).") from None
        previous = _read(fd)
        if previous.get("pid") and previous.get("pid") != os.getpid():
            self.took_over = previous
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "argv": sys.argv,
                                  "started": time.strftime("%Y-%m-%dT%H:%M:%S")}).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _read(fd: int) -> Dict[str, Any]:
    try:
        data = os.pread(fd, 4096, 0)
        value = json.loads(data.decode()) if data.strip() else {}
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def owned(results: Path, launcher=None) -> Iterator[None]:
    """The run folder's lock (one writer per run): a second run on it ends with one line naming the
    holder (exit 2); a dead holder's lock is taken over, the containers it left running removed."""
    with RunLock(results) as lock:
        if lock.took_over:
            print(f"[harness] {results}: taking over from pid {lock.took_over.get('pid')}, which ended without "
                  f"finishing; its unfinished cells are redone")
        reap = getattr(launcher, "reap", None)
        if reap is not None:
            reap()
        yield
