"""A trial where its death cannot take the analysis with it (cell side).

Every trial of an analysis — a piece or a one-op program exported and run, a culprit-search build, a
workaround candidate — runs Paddle, a converter or a runtime on something the model never asked of
them alone, and any of those can kill its process (measured: the dygraph form of
``_C_ops.unique`` under ``to_static`` at 3.3.1, SIGSEGV in ``paddle::pybind::static_api_unique``).
``in_child`` runs the trial in a forked child (a fork costs no second ``import paddle``; the
conversions of ``paddle2onnx/convert.py`` have run this way from the start, and a trial's child gets
its own from a launcher its parent forked: ``before_children``): its value comes back
through a file, and a child that dies by a signal, exits without one, or outlives its deadline is a
``Death`` — the signal, the phase the trial had announced (``phase``) and the last words Paddle's
fatal-signal handler printed (its error summary and the innermost C++ frame) — which the caller
records as that trial's outcome and goes on.

Whose death it is goes by what was running: a call a user could make (a predictor, a public API,
the model's own layers) is Paddle's (a finding); a call only the harness makes (a ``_C_ops`` form
it wrote) is the harness's gap, said apart (``Death.by``)."""

from __future__ import annotations

import dataclasses
import os
import pickle
import re
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, List, Optional, Union

from ...shared.causes import last_words
from ...shared.json_types import JsonObject
from ...shared.logs import signal_name
from ...shared.protocol import forked, reap

RESULT = "trial.result.pickle"
# A trial's share of the stage timeout (a whole analysis step is one entry of the cell's journal,
# killed by the host past the stage timeout): a hung trial costs a quarter of it, not the step.
TRIAL_SHARE = 0.25
PHASE = "trial.phase"
LOG = "trial.log"

# Set in a child while it runs a trial: where ``phase`` writes.
_phase_file: Optional[Path] = None


def phase(name: str) -> None:
    """Announce what the trial is doing now (a no-op outside a child): a death is said at its phase."""
    if _phase_file is not None:
        _phase_file.write_text(name, encoding="utf-8")


# The signal Paddle's fatal-signal handler says it caught.
_SIGNAL = re.compile(r"\*\*\* (SIG[A-Z]+)")


@dataclasses.dataclass
class Death:
    """How a trial's child ended without a value."""

    how: str              # "SIGSEGV", "exit 1", "timeout after 75 s"
    phase: str            # the last phase the trial announced ("export", "stage", ...)
    frame: str = ""       # the innermost C++ frame Paddle printed
    summary: str = ""     # Paddle's "FatalError: ..." words
    tail: str = ""        # the last line the child printed otherwise
    log: str = ""
    by: str = "paddle"    # "paddle" (a call a user could make) or "harness" (a form only the harness writes)

    @property
    def timed_out(self) -> bool:
        return self.how.startswith("timeout")

    def words(self) -> str:
        """One line, Paddle's words first: ``SIGSEGV in paddle::pybind::static_api_unique while export``."""
        said = self.how + (f" in {self.frame}" if self.frame else "")
        if self.summary and self.summary not in said:
            said += f" ({self.summary})"
        if not self.frame and not self.summary and self.tail:
            said += f": {self.tail[:200]}"
        return f"{said} during {self.phase}" if self.phase else said

    def to_dict(self) -> JsonObject:
        return {k: v for k, v in dataclasses.asdict(self).items() if v} | {"words": self.words()}


# What must exist before a child forks: a conversion launcher (``runtimes/paddle2onnx/launcher.py``;
# a child that ran Paddle cannot fork again).
_BEFORE_CHILDREN: List[Callable[[], None]] = []


def before_children(prepare: Callable[[], None]) -> None:
    """Run ``prepare`` in this process before each trial's child forks (it may do nothing)."""
    _BEFORE_CHILDREN.append(prepare)


def deadline(stage_timeout: float) -> float:
    """Seconds one trial may run, from the cell's stage timeout."""
    return float(stage_timeout) * TRIAL_SHARE


def in_child(fn: Callable[[], Any], folder: Path, timeout: float) -> Union[Any, Death]:
    """``fn()`` in a forked child, its output in ``folder/trial.log``; its value, or how it died.
    An exception ``fn`` raises comes back as a ``RuntimeError`` with its traceback's words (the
    trial's own code catches what Paddle raises: what reaches here is the harness's)."""
    for prepare in _BEFORE_CHILDREN:
        prepare()
    folder.mkdir(parents=True, exist_ok=True)
    result, phase_path, log = folder / RESULT, folder / PHASE, folder / LOG
    for stale in (result, phase_path):
        stale.unlink(missing_ok=True)
    def trial() -> None:
        global _phase_file
        fd = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        _phase_file = phase_path
        try:
            value = ("value", fn())
        except BaseException as exc:  # noqa: BLE001 - carried to the parent, said there
            value = ("raised", f"{type(exc).__name__}: {exc}", traceback.format_exc())
        sys.stdout.flush()
        sys.stderr.flush()
        with open(result, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)

    pid = forked(trial)
    code = reap(pid, time.monotonic() + timeout)
    if code == 0 and result.is_file():
        with open(result, "rb") as handle:
            answer = pickle.load(handle)
        result.unlink()
        if answer[0] == "raised":
            raise RuntimeError(f"a trial's own code raised in its child: {answer[1]}\n{answer[2]}")
        return answer[1]
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    frame, summary = last_words(text)
    # The last line it printed of its own: not Paddle's fatal-signal report (its frames, its summary,
    # its "[TimeInfo: ...]" and "[SignalInfo: ...]", which carry times and pids).
    report = text.split("C++ Traceback", 1)[0] if "C++ Traceback" in text else text.split("Error Message Summary", 1)[0]
    shown = [ln.strip() for ln in report.splitlines() if ln.strip() and not set(ln.strip()) <= set("-=")
             and not ln.strip().startswith("[")]
    if code == -signal.SIGKILL and not summary:
        how = f"timeout after {timeout:g} s"
    else:
        caught = _SIGNAL.search(text)  # Paddle's handler may end the process otherwise than the signal it caught
        how = caught.group(1) if caught else signal_name(code) if code < 0 else f"exit {code}"
    said = phase_path.read_text(encoding="utf-8") if phase_path.is_file() else ""
    return Death(how, said, frame, summary, shown[-1] if shown else "", str(log))


__all__ = ["Death", "before_children", "in_child", "phase"]
