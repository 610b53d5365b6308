"""The whole model's floor (cell side): ``precision_floor``'s rounded run over the cell's model at every
shape a reduced-precision stage runs, in a child, with its method and what the precision alone changes
in the model's answers (``answers_changed``)."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Sequence

import numpy as np

from ...shared.json_types import JsonObject
from ...shared.vocab import Precision
from ..base import sandbox
from .precision_floor import FORMATS, K, METHOD, rounded, rounded_run


def floor_outputs(ctx: Any, setup: Any, fmt: str, shapes: Sequence[int]) -> Dict[int, List[np.ndarray]]:
    """The model's outputs at each of ``shapes`` with the format's rounding everywhere (run in the
    calling process: ``measure`` runs it in a child)."""
    from ..setup.rebuild import model_and_spec
    from ..base.structure import build_call_args, flatten_outputs

    paddle = ctx.paddle
    model, input_spec, _ = model_and_spec(ctx, setup)

    def every_shape() -> Dict[int, List[np.ndarray]]:
        found: Dict[int, List[np.ndarray]] = {}
        for shape in shapes:
            feeds = {k: rounded(v, fmt) for k, v in ctx.feeds(shape).items()}
            found[shape] = [a for _, a in flatten_outputs(paddle, model(*build_call_args(paddle, input_spec, feeds)))]
        return found

    return rounded_run(paddle, model, every_shape, fmt)


def measure(ctx: Any, setup: Any, precision: Precision, shapes: Sequence[int], labels: Sequence[str]) -> JsonObject:
    """The floor per shape and output (``floor[shape][label]``: the rounded model's max abs distance
    from fp32 dygraph), with its method; or why there is none (``why``)."""
    fmt = FORMATS[precision]
    said: JsonObject = {"format": fmt, "method": METHOD.format(fmt=fmt), "k": K}
    if ctx.cell.captured or not ctx.mode.reducible:
        return dict(said, why=("a captured export has no model source here to round" if ctx.cell.captured else
                               f"train mode {ctx.cell.mode} converts the model when it exports: its dygraph "
                               f"layers are not what the program runs"))
    started = time.perf_counter()
    try:
        answer = sandbox.in_child(lambda: floor_outputs(ctx, setup, fmt, shapes), ctx.work / f"floor-{fmt}",
                                  sandbox.deadline(ctx.cell.stage_timeout))
    except RuntimeError as exc:  # the rebuild or the rounded forward raised in the child: said, not judged
        return dict(said, why=str(exc).splitlines()[0][:300])
    said["seconds"] = round(time.perf_counter() - started, 3)
    if isinstance(answer, sandbox.Death):
        return dict(said, why=f"its process died: {answer.words()}")
    floor: Dict[str, Dict[str, float]] = {}
    answers: JsonObject = {}
    for shape, got in answer.items():
        reference = ctx.load_outputs(ctx.file("dygraph", shape), list(labels))
        if len(got) != len(reference):
            return dict(said, why=f"the rounded model returns {len(got)} outputs, dygraph {len(reference)}")
        floor[str(shape)] = {label: float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(r, np.float64))))
                             if np.size(r) else 0.0 for label, g, r in zip(labels, got, reference)}
        task = ctx.judge_task(list(labels), reference, got)
        if task is not None and task.get("changed"):
            # The precision alone changes what the model answers: a risk of deploying it so, not a runtime's bug.
            answers.setdefault("shapes", {})[str(shape)] = task
    if answers:
        first = next(iter(answers["shapes"].values()))
        answers["words"] = f"{fmt} itself changes what the model answers ({first.get('summary')}): a risk of " \
                           f"deploying it in {fmt}, not a bug of the runtime"
        said["answers_changed"] = answers
    return dict(said, floor=floor)


__all__ = ["measure", "floor_outputs"]
