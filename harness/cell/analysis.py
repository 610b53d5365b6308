"""Root cause (cell side): for the first non-baseline stage that failed on numbers, the per-tensor
diff against the baseline and the culprit search over its search space, both on the stage's
runtime; for the first stage that failed on numbers or raised (the baseline included), a
reproducer folder with a plain-Paddle script, run once to verify it (``reproducer.py``).

``baseline`` failing means dygraph and the predictor disagree: there is no second predictor to
diff against (its reproducer compares with the dygraph outputs). ``vacuous`` and ``noop`` stages
start nothing: there is no divergence to look for. A cell that passes pays nothing here.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Dict, List

from ..shared.backends import StagePlan
from ..shared.causes import paddle_message
from ..shared.compare import compare_tol
from ..shared.errors import UserError
from ..shared.search import build_budget, find_culprits
from ..shared.vocab import SETUP, Analysis, Probe, Reference, Stage, Status
from . import reproducer
from .context import CellContext
from .runtimes import runtime


def analyse(ctx: CellContext, done: Dict[str, Dict[str, Any]]) -> None:
    """Diff and search for the first non-baseline stage that failed on numbers, each journalled
    as an analysis entry (a crash inside one is recorded like a stage's)."""
    if not ctx.cell.root_cause:
        return
    ordered = ctx.plan(done[SETUP])
    plans = {p.name: p for p in ordered}
    target = next((name for name in plans
                   if name != Stage.BASELINE.value and Status.of(done.get(name, {}).get("status")) is Status.FAIL),
                  None)
    steps = []
    if target is not None and Stage.BASELINE.value in plans:
        steps += [(Analysis.DIFF, target, lambda: tensor_diff(ctx, plans[target], plans[Stage.BASELINE.value], done)),
                  (Analysis.BISECT, target, lambda: bisect(ctx, plans[target], plans[Stage.BASELINE.value], done))]
    baseline_status = Status.of(done.get(Stage.BASELINE.value, {}).get("status"))
    if baseline_status in (Status.FAIL, Status.ERROR) and Stage.BASELINE.value in plans:
        steps.append((Analysis.TRIAGE, Stage.BASELINE.value, lambda: triage(ctx, plans[Stage.BASELINE.value], done)))
    failing = reproducer.first_failing(ordered, done)
    if failing is not None:
        steps.append((Analysis.REPRODUCER, failing.name, lambda: reproducer.write_and_verify(ctx, failing, done)))
    for kind, stage, fn in steps:
        if kind.journal_key in done:
            continue
        ctx.journal.start(kind.journal_key)
        started = time.perf_counter()
        try:
            result = fn()
        except UserError as exc:
            result = {"status": Status.ERROR, "message": str(exc)}
        except Exception as exc:
            traceback.print_exc()
            result = {"status": Status.ERROR, "message": paddle_message(exc)}
        result["stage"] = stage
        result["seconds"] = round(time.perf_counter() - started, 3)
        ctx.journal.finish(kind.journal_key, result)
        done[kind.journal_key] = result


def triage(ctx: CellContext, plan: StagePlan, done: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """A failed consistency check, split three ways on the same inputs: the Python forward
    (dygraph), the saved program run by Paddle's own executor (``jit.load``), and the inference
    predictor (the baseline stage). Which pair agrees says where it broke."""
    setup = done[SETUP]
    stage = done[plan.name]
    shape = stage.get("failing_shape", 0)
    labels = setup["outputs"]
    executor = ctx.compat.run_saved_program(setup["export"], ctx.feeds(shape), setup["signature_order"])
    dygraph = ctx.load_outputs(ctx.file("dygraph", shape), labels)
    predictor = (ctx.load_outputs(ctx.file("baseline", shape), labels)
                 if (ctx.work / ctx.file("baseline", shape)).exists() else None)

    def agreement(a: List[Any], b: List[Any]) -> Dict[str, Any]:
        if len(a) != len(b):
            return {"agree": False, "note": f"{len(a)} outputs vs {len(b)}"}
        stats = [compare_tol(x, y, ctx.tolerance(plan.precision, label)) for x, y, label in zip(a, b, labels)]
        worst_abs = max((s.get("max_abs") or 0.0) for s in stats) if stats else 0.0
        return {"agree": all(Status.of(s["status"]) is not Status.FAIL for s in stats), "max_abs": worst_abs}

    vs_dygraph = agreement(dygraph, executor)
    vs_predictor = agreement(executor, predictor) if predictor is not None else None
    if not vs_dygraph["agree"] and (vs_predictor is None or vs_predictor["agree"]):
        verdict, meaning = "export", ("the saved program does not compute what the Python forward computes "
                                      "(Python state, control flow or randomness fixed at trace time, or an "
                                      "export bug); " + ("Paddle's own executor agrees with the predictor"
                                                         if vs_predictor else "the predictor raised on it"))
    elif vs_dygraph["agree"] and (vs_predictor is None or not vs_predictor["agree"]):
        verdict, meaning = "engine", ("Paddle's own executor runs the saved program as dygraph does; the inference "
                                      "predictor " + ("raises on it" if predictor is None else "computes otherwise"))
    else:
        verdict, meaning = "executor", ("Paddle's executor differs from dygraph and from the predictor: an op's "
                                        "kernel differs between executors")
    return {"status": Status.PASS, "outcome": verdict, "meaning": meaning, "shape": shape,
            "executor_vs_dygraph": vs_dygraph, "executor_vs_predictor": vs_predictor}


def tensor_diff(ctx: CellContext, plan: StagePlan, baseline: StagePlan, done: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    out = ctx.work / "tensors"
    shape = done[plan.name].get("failing_shape", 0)  # the shape the stage failed at
    result = runtime(plan.runtime).tensor_diff(done[SETUP]["export"], ctx.feeds(shape), baseline.config, plan.config,
                                               out, ctx.tolerance(plan.precision))
    first = result.get("first_divergence")
    return {
        "status": Status.PASS, "outcome": "diverges" if first else "no tensor diverges",
        "result": str(out / "result.json"),
        "title": f"{ctx.cell.id}: baseline vs {plan.name}",
        "first_divergence": {k: first[k] for k in ("index", "op", "name", "max_abs", "max_rel")} if first else None,
        "tensors": len(result["rows"]), "unmatched": len(result["unmatched"]),
        "hooks_changed_output": result["hooks_changed_output"], "shape": shape,
    }


def bisect(ctx: CellContext, plan: StagePlan, baseline: StagePlan, done: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    engine = runtime(plan.runtime)
    setup = done[SETUP]
    files = setup["export"]
    shape = done[plan.name].get("failing_shape", 0)  # search where the stage failed
    feeds = ctx.feeds(shape)
    labels = setup["outputs"]
    reference = ctx.load_outputs(ctx.file("baseline", shape), labels)
    items = engine.search_items(plan, done[plan.name].get("evidence") or {},
                                done[Stage.BASELINE.value].get("evidence") or {})
    if not items:
        return {"status": Status.SKIP, "message": f"{plan.name} ran no IR passes or TensorRT ops to search"}
    messages: List[str] = []
    tolerances = [ctx.tolerance(plan.precision, label) for label in labels]

    def probe(disabled: List[str]) -> Probe:
        try:
            session = engine.session(files, engine.without(plan, disabled), feeds, ctx.work / f"{plan.name}.search")
            _, got = session.run(feeds)
        except Exception as exc:
            messages.append(paddle_message(exc))
            return Probe.INVALID
        ok = len(got) == len(reference) and all(
            Status.of(compare_tol(r, g, tol)["status"]) is Status.PASS for r, g, tol in zip(reference, got, tolerances))
        return Probe.PASS if ok else Probe.FAIL

    found = find_culprits(items, probe)
    return {
        "status": Status.PASS, "outcome": found.status, "kind": plan.search.value, "candidates": len(items),
        "items": items, "culprits": found.culprits, "builds": found.builds,
        "budget": build_budget(len(items), max(len(found.culprits), 1)),
        "message": found.message, "invalid_sets": len(found.invalid),
        "invalid_messages": list(dict.fromkeys(messages))[:5], "reference": Reference.BASELINE,
    }
