"""A standalone source reproducer made small (cell side, in a Paddle environment):
``python -m harness.cell.handover.minimize SCRIPT --words W [--numeric] --budget S --out DIR``.

pysource-minimize (a minimizer of Python source under a predicate, made for this) takes the model's
source the script writes in — between ``source_repro.MODEL_SOURCE`` and ``MODEL_SOURCE_END``; the
harness's own check after it (the export, the stage's runtime calls, the comparison with dygraph) is
never touched — and removes what the failure does not need while the script still reproduces it at
this release: the cause's words (its key) in what it prints, or, for a numeric cause, the stage
beyond its tolerance against the dygraph outputs the script computes itself. A weight the smaller
model no longer has is left out of the comparison of names (the rebuilt layer's weights must all be
recorded ones, of their recorded shapes).

Each check is the candidate script run in a child forked from this process (Paddle imported once,
not per check), its file written first (to_static reads a layer's source from its file), with a
deadline; past the budget the next check ends the search, with the smallest script that reproduced. The result is written to ``DIR`` with the files it reads and run once more
in a fresh interpreter; one JSON line says what came of it."""

from __future__ import annotations

import argparse
import builtins
import json
import linecache
import os
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Optional, Tuple

from ...shared.protocol import forked, reap
from ...shared.releases import RunOutcome, outcome
from .source_repro import EAGER_CALL, MODEL_SOURCE, MODEL_SOURCE_END, SCRIPT

CHECK_TIMEOUT = 120.0
# The rebuilt layer's weights against the recorded ones: equal sets (as written) or, once minimized,
# the layer's a subset of them, each of its recorded shape.
EQUAL_WEIGHTS = 'if sorted(layer.state_dict()) != sorted(state.files):'
SUBSET_WEIGHTS = ('if any(name not in state.files or list(value.shape) != list(state[name].shape) '
                  'for name, value in layer.state_dict().items()):')
LOAD_ALL = 'layer.set_state_dict({name: paddle.to_tensor(state[name]) for name in state.files})'
LOAD_OWN = 'layer.set_state_dict({name: paddle.to_tensor(state[name]) for name in layer.state_dict()})'
DATA = ("inputs.npz", "weights.npz", "eager.npz")


def parts(script: str, eager: bool = True) -> Tuple[str, str, str]:
    """The script around its model's source, the model's source, and the harness's check after it
    (without the eager call before the export where the cell made none: ``eager`` False)."""
    start = script.index(MODEL_SOURCE) + len(MODEL_SOURCE)
    end = script.index(MODEL_SOURCE_END, start)
    tail = script[end:].replace(EQUAL_WEIGHTS, SUBSET_WEIGHTS).replace(LOAD_ALL, LOAD_OWN)
    return script[:start], script[start:end], tail if eager else tail.replace(EAGER_CALL, "")


def run_forked(text: str, path: Path, timeout: float) -> Tuple[Optional[int], str]:
    """``text`` as the script ``path`` in a forked child: its exit code (None past the deadline) and output."""
    path.write_text(text, encoding="utf-8")
    log = path.with_suffix(".log")

    def child() -> None:
        fd = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        linecache.clearcache()
        os.chdir(path.parent)
        sys.argv = [str(path)]
        code = 0
        try:
            exec(compile(text, str(path), "exec"), {"__name__": "__main__", "__file__": str(path),
                                                    "__builtins__": builtins})
        except SystemExit as exc:
            if isinstance(exc.code, int) or exc.code is None:
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - the script's own error, as Python would print it
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    started = time.monotonic()
    pid = forked(child)
    code = reap(pid, started + timeout)
    output = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    return (None if code == -signal.SIGKILL and time.monotonic() - started >= timeout else code), output


class OverBudget(Exception):
    """The budget is spent: raised through pysource-minimize to end its search."""


class Minimizer:
    """The checks of one script's minimization, in a scratch folder beside the script's files."""

    def __init__(self, script: Path, words: str, numeric: bool, budget: float, scratch: Path):
        self.script, self.words, self.numeric, self.budget = script, words, numeric, budget
        self.scratch = scratch
        self.head, self.model, self.tail = parts(script.read_text(encoding="utf-8"),
                                                 (script.parent / "eager.npz").exists())
        self.started = time.monotonic()
        self.checks = 0
        self.best = self.model

    def reproduces(self, model_source: str) -> bool:
        left = self.budget - (time.monotonic() - self.started)
        if left <= 0:
            # Over budget: stop the search itself. Answering no instead let it go on unparsing every
            # candidate of a large source (measured on the zoo: 90 s budgets running 6-8 minutes).
            raise OverBudget()
        self.checks += 1
        code, output = run_forked(self.head + model_source + "\n" + self.tail, self.scratch / SCRIPT,
                                  min(CHECK_TIMEOUT, left))
        said, _ = outcome(code, output, self.words, self.numeric)
        if said is RunOutcome.REPRODUCED and len(model_source) <= len(self.best):
            self.best = model_source
        return said is RunOutcome.REPRODUCED

    def run(self) -> str:
        from pysource_minimize import CouldNotMinimize, minimize

        self.scratch.mkdir(parents=True, exist_ok=True)
        for name in DATA:
            if (self.script.parent / name).exists():
                shutil.copy2(self.script.parent / name, self.scratch / name)
        try:
            minimize(self.model, self.reproduces, retries=0)
        except CouldNotMinimize:
            pass  # the source as the minimizer writes it back does not reproduce: the script stays as it is
        except OverBudget:
            pass  # the smallest that reproduced stands
        except ValueError:
            pass  # a strategy's first check did not reproduce (a flaky cause): the smallest that did stands
        return self.head + self.best + "\n" + self.tail


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cell.handover.minimize")
    parser.add_argument("script", type=Path)
    parser.add_argument("--words", default="", help="the cause's key, as the script must print it")
    parser.add_argument("--numeric", action="store_true", help="the stage beyond its tolerance, not words")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds of checks")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import paddle  # noqa: F401 - imported once here, before the checks fork

    started = time.monotonic()
    minimizer = Minimizer(args.script.resolve(), args.words, args.numeric, args.budget, args.out / ".checks")
    text = minimizer.run()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in DATA:
        if (args.script.parent / name).exists():
            shutil.copy2(args.script.parent / name, args.out / name)
    (args.out / SCRIPT).write_text(text, encoding="utf-8")
    shutil.rmtree(args.out / ".checks", ignore_errors=True)
    before = len(args.script.read_text(encoding="utf-8").splitlines())
    print(json.dumps({"script": str(args.out / SCRIPT), "lines_before": before, "lines": len(text.splitlines()),
                      "model_lines_before": len(minimizer.model.splitlines()), "model_lines": len(minimizer.best.splitlines()),
                      "checks": minimizer.checks, "seconds": round(time.monotonic() - started, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
