"""A cell's analyses (cell side), in their order, for the stages that failed on numbers or raised:
the per-tensor diff, the culprit search, oneDNN's op types, the fp32 ops of a reduced precision,
the triage of a failing baseline (``rootcause.steps``), the reduction of the first failing stage to
its smallest piece and op, its verified reproducer (``handover.reproducer``), and the smallest
verified workaround (``handover.workaround``). Each step is journalled as an analysis entry (a
crash inside one is recorded like a stage's); a step another session already made of the very same
failure (the program's maker, or the first cell of a shared conversion) is taken, said with whose
it is. ``vacuous`` and ``noop`` stages start nothing; a cell that passes pays nothing here.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, List, Optional

from ...shared.config import PredictorConfig
from ...shared.causes import raised_status
from ...shared.errors import UserError, raised_at
from ...shared.vocab import Analysis, Precision, Stage, Status
from ..rootcause import fp32_ops
from ..base import progress
from ..handover import reproducer, workaround
from ..setup import shared_setup
from ..base.context import CellContext
from ..base.ledger import Ledger
from ..rootcause.steps import FAILED, fp32_ops_search, bisect, exclude_onednn_ops, reduce, tensor_diff, triage


# What a stage that killed its worker does not get, and why (measured on Paddle 3.3.1's oneDNN fused
# convolution, tests/test_trial_deaths.py).
_NOT_FOR_A_DEATH = {
    Analysis.BISECT: "the stage killed its worker before it recorded the passes its build ran: the pass search has "
                     "no search space (the worker's log names the pass it died in)",
    Analysis.WORKAROUND: "a change verified in a child is timed against the stage's own config built in the worker, "
                         "which that build kills: not run for a stage that killed its worker",
}


def analyse(ctx: CellContext, done: Ledger) -> None:
    """Each step journalled as an analysis entry (a crash inside one is recorded like a stage's)."""
    if not ctx.cell.root_cause:
        return
    ordered = ctx.plan(done.setup)
    plans = {p.name: p for p in ordered}
    baseline = plans.get(Stage.BASELINE.value)

    def status(name: str) -> Optional[Status]:
        return done.status(name)

    target = next((p for p in ordered if p.name != Stage.BASELINE.value and status(p.name) in FAILED), None)
    steps: List[Any] = []
    if target is not None and baseline is not None:
        if status(target.name) is Status.FAIL:
            steps.append((Analysis.DIFF, target, lambda: tensor_diff(ctx, target, baseline, done)))
        steps.append((Analysis.BISECT, target, lambda: bisect(ctx, target, done)))
        if isinstance(target.config, PredictorConfig) and target.config.onednn and target.config.device == "cpu":
            steps.append((Analysis.EXCLUDE, target, lambda: exclude_onednn_ops(ctx, target, done)))
        if Precision(target.precision) in fp32_ops.REDUCED_DTYPES:
            steps.append((Analysis.FP32_OPS, target, lambda: fp32_ops_search(ctx, target, done)))
    if baseline is not None and status(baseline.name) in FAILED:
        steps.append((Analysis.TRIAGE, baseline, lambda: triage(ctx, baseline, done)))
    failing = reproducer.first_failing(ordered, done)
    if failing is not None:
        steps.append((Analysis.REDUCE, failing, lambda: reduce(ctx, failing, plans, done)))
        # Before the workaround: the reproducer judges whose bug a converted file's failure is, and
        # the workaround tries the converter's own options only for the converter's.
        steps.append((Analysis.REPRODUCER, failing, lambda: reproducer.write_and_verify(ctx, failing, done)))
    if target is not None and baseline is not None:
        # After the reduction: where no config change helps, the op it placed may have another spelling.
        steps.append((Analysis.WORKAROUND, target, lambda: workaround.search(ctx, target, done, baseline)))
    elif failing is not None and status(failing.name) is Status.CRASH:
        # Reduced and reproduced in children (a trial's death is its answer); the other two are said.
        for kind, why in _NOT_FOR_A_DEATH.items():
            steps.append((kind, failing, lambda why=why: {"status": Status.SKIP, "message": why}))
    for kind, plan, fn in steps:
        if kind.journal_key in done:
            continue
        kept = ctx.reused.analysis(kind.journal_key, plan.name) if ctx.reused is not None else None
        if kept is None:  # another session met this very failure in a step both run (the conversion)
            kept = shared_setup.step_analysis(ctx, kind.journal_key, plan, done)
        if kept is not None:  # the maker analysed this very stage: the same failure, the same answer
            ctx.journal.start(kind.journal_key)
            ctx.journal.finish(kind.journal_key, kept)
            done.add(kind.journal_key, kept)
            continue
        ctx.journal.start(kind.journal_key)
        progress.begin(ctx.work, kind.value, plan.name)
        started = time.perf_counter()
        try:
            result = fn()
        except UserError as exc:
            result = {"status": Status.ERROR, "message": str(exc)}
        except Exception as exc:
            traceback.print_exc()
            status, message = raised_status(exc, [ctx.work])
            place = raised_at(exc, [ctx.work])
            if place and place.split(" (")[0] not in message:
                message = f"{message} (at {place})"
            result = {"status": status, "message": message, "at": place}
        result["stage"] = plan.name
        result["seconds"] = round(time.perf_counter() - started, 3)
        ctx.journal.finish(kind.journal_key, result)
        done.add(kind.journal_key, result)


