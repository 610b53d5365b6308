"""One cell's life inside one Paddle environment (cell side): ``python -m harness.cell cell
--spec SPEC --work DIR``.

Setup (``setup/build.py``: the model from its source, lite training in the cell's train mode, export
once, seeded inputs, dygraph outputs), then the stage ladder planned for the exported program's
format (``ladder.py``, each stage on its runtime), then the root cause of the first numeric
failure (``analysis.py``). Each entry is written to the journal as soon as it ends. When the host
restarts a worker after a crash it passes the same arguments: finished entries are read back from
the journal, the saved inputs/outputs from ``.npz`` files, and the run goes on with the next
stage, so a crash costs one fresh ``import paddle`` and nothing else.

Exit codes (``harness.shared.protocol``): 0 done (whatever the stages' statuses), 2 user error (a
model factory that cannot be imported or returns the wrong thing; one line on stderr), anything
else: the process died, and the host records ``crash`` for the stage the journal says was running.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict

from ...shared.causes import paddle_message, raised_status, traced_at
from ...shared.errors import UserError
from ...shared.protocol import EXIT_OK, EXIT_USER_ERROR
from ...shared.spec import CellSpec
from ...shared.vocab import SETUP, Analysis, Status
from . import analysis
from ..explain import export_loss
from ..setup import build, shared_setup
from ..handover import setup_repro
from ..stages import ladder
from ..base.context import CellContext
from ..base.ledger import Ledger
from ..base.modes import TrainMode


class Cell:
    def __init__(self, spec: CellSpec, work: Path):
        self.ctx = CellContext(spec, work)

    def machine(self) -> Dict[str, Any]:
        """The machine as this environment sees it (inside its container, if any), with the ISA
        oneDNN chose; without oneDNN's word when Paddle itself could not be imported."""
        try:
            return self.ctx.paddle_api.machine()
        except Exception as exc:  # Paddle failed to import: the setup's error says why
            from ...shared.machine import describe

            return dict(describe(None), onednn={"isa": None, "error": paddle_message(exc)})

    def run(self) -> int:
        try:
            return self._run()
        finally:
            self._publish_work()

    def _publish_work(self) -> None:
        """A program's maker writes what it ran for the program's readers, however it ended."""
        ctx = self.ctx
        try:
            done = Ledger(ctx.journal.finished())
            plans = ctx.plan(done.setup) if SETUP in done and done.setup.passed else []
            shared_setup.publish_work(ctx, done, plans)
            shared_setup.publish_steps(ctx, done, plans)
        except Exception:  # noqa: BLE001 - sharing only saves work: the readers then make their own
            traceback.print_exc()

    def _run(self) -> int:
        ctx = self.ctx
        done = Ledger(ctx.journal.finished())
        if SETUP not in done:
            ctx.journal.start(SETUP)
            raised: Any = None
            try:
                result = build.setup(ctx)
            except UserError as exc:
                ctx.journal.finish(SETUP, {"status": Status.ERROR, "user_error": str(exc)})
                print(f"error: {exc}", file=sys.stderr)
                return EXIT_USER_ERROR
            except Exception as exc:  # the model or Paddle raised while building/training/exporting
                traceback.print_exc()
                raised = exc
                status, message = raised_status(exc)
                result = {"status": status, "message": message, "phase": getattr(exc, "phase", None)}
                where = traced_at(exc)
                if where:  # the model's code when to_static raised: where the export broke
                    result["traced_at"] = where
                if _export_to_analyse(ctx, result):
                    # Whether the export raises only after the model ran eagerly (``export_loss``).
                    result["fresh_export"] = export_loss.export_without_eager_call(ctx, message)
            result.setdefault("machine", self.machine())
            if "paddle" not in result and "paddle" in sys.modules:  # the version a failed setup ran on
                result["paddle"] = ctx.paddle_api.paddle_info()
            ctx.journal.finish(SETUP, result)
            done.add(SETUP, result)
            if _export_to_analyse(ctx, result):
                _setup_reproducer(ctx, done, lambda: setup_repro.export_failure(ctx, result["message"]))
            elif raised is not None and _build_to_reproduce(ctx, result):
                _setup_reproducer(ctx, done, lambda: setup_repro.build_failure(ctx, raised, result["message"]))
            elif _mode_failure_to_reproduce(ctx, result):
                _setup_reproducer(ctx, done, lambda: setup_repro.mode_failure(ctx, result["message"]))
        if _training_death_to_reproduce(ctx, done.setup):
            _setup_reproducer(ctx, done, lambda: setup_repro.training_death(ctx, done.setup.message))
        if not done.setup.passed:
            if done.setup.get("user_error"):
                print(f"error: {done.setup.get('user_error')}", file=sys.stderr)
                return EXIT_USER_ERROR
            return EXIT_OK
        ctx.reused = reused = shared_setup.Reused(ctx, done.setup)
        for plan in ctx.plan(done.setup):
            if plan.name in done:
                reused.seen(plan, done.entry(plan.name))  # a restarted worker: what the ladder took so far
                continue
            kept = reused.stage(plan)  # the maker ran this very stage on this very program
            if kept is not None:
                ctx.journal.start(plan.name)
                ctx.journal.finish(plan.name, kept)
                done.add(plan.name, kept)
                continue
            ctx.journal.start(plan.name)
            started = time.perf_counter()
            try:
                result = ladder.run_stage(ctx, plan, done)
            except Exception as exc:
                traceback.print_exc()
                status, message = raised_status(exc, under=plan.name)
                result = ladder.planned(plan, status=status, message=message, **ladder.shared_step(exc))
            result.setdefault("seconds", round(time.perf_counter() - started, 4))
            ctx.journal.finish(plan.name, result)
            done.add(plan.name, result)
        analysis.analyse(ctx, done)
        build.write_build_imports(ctx)  # an analysis that rebuilt the model (a reader of a shared setup) measured it too
        return EXIT_OK


def _export_to_analyse(ctx: Any, result: Dict[str, Any]) -> bool:
    """Whether the setup's failure is the model's export raising, in a cell whose model can be taken apart."""
    return (result.get("phase") == "export" and result.get("status") is Status.ERROR and ctx.cell.root_cause
            and ctx.mode.reducible and not ctx.cell.captured)


def _mode_failure_to_reproduce(ctx: Any, result: Dict[str, Any]) -> bool:
    """Whether a quantization mode's training or export raised (not reducible: its model is converted
    first): its script prepares, trains and exports the mode's way."""
    return (result.get("phase") in ("train", "export") and result.get("status") is Status.ERROR
            and ctx.cell.root_cause and not ctx.mode.reducible and not ctx.cell.captured)


def _build_to_reproduce(ctx: Any, result: Dict[str, Any]) -> bool:
    """Whether Paddle raised while the model's code built it (not the harness's: an untestable factory)."""
    return (result.get("phase") == "build" and result.get("status") is Status.ERROR and ctx.cell.root_cause
            and not ctx.cell.captured)


def _training_death_to_reproduce(ctx: Any, setup_result: Any) -> bool:
    """Whether the lite training of a plainly trained model failed: Paddle raised in it (this worker),
    or the worker before this one died in it (the host starts this one for it:
    ``runner._training_death_to_reproduce``). Either way the training's script is its reproducer."""
    return (setup_result.status in (Status.CRASH, Status.ERROR) and setup_result.get("phase") == "train"
            and ctx.cell.root_cause and type(ctx.mode) is TrainMode and not ctx.cell.captured)


def _setup_reproducer(ctx: Any, done: Any, write: Any) -> None:
    """A setup that raised in the export or died in the lite training gets its reproducer too (in
    source: what ``releases`` bisects), journalled as the cell's reproducer of its ``setup``."""
    key = Analysis.REPRODUCER.journal_key
    if key in done:
        return
    ctx.journal.start(key)
    kept = shared_setup.failed_setup_reproducer(ctx, done.setup)
    if kept is not None:  # the program's maker met this very export failure and reproduced it
        ctx.journal.finish(key, kept)
        done.add(key, kept)
        return
    try:
        entry = write()
    except Exception as exc:  # the harness could not write or run it: its own gap, said
        traceback.print_exc()
        entry = {"status": Status.UNTESTABLE, "stage": "setup", "message": f"no setup reproducer: {exc}"[:400]}
    ctx.journal.finish(key, entry)
    done.add(key, entry)


def main(spec_path: Path, work: Path) -> int:
    spec = CellSpec.from_dict(json.loads(Path(spec_path).read_text(encoding="utf-8")))
    return Cell(spec, work).run()
