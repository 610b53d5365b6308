"""The root-cause steps of a failing stage (cell side), each a function the cell's analysis runs in
its order (``worker/analysis.py``):

* ``tensor_diff``: the per-tensor table of the first non-baseline stage that failed on numbers,
  against the baseline, on the stage's runtime;
* ``bisect``: the culprit search over that stage's search space (passes, TensorRT op types), for a
  numeric failure ("fixed" = within tolerance again) and for an error ("fixed" = it no longer
  raises that cause; raising otherwise says nothing: an invalid set);
* ``exclude_onednn_ops``: for a oneDNN stage, the op types oneDNN may take (``set_mkldnn_op``) —
  first a probe conv program run with no op type on the list, whose executed op names say whether
  this Paddle honours the list at all (PIR names oneDNN kernels ``onednn_op.*``; the record keeps
  the evidence), then one build of the failing program with no op type listed, then the search
  over the op types the program runs;
* ``triage``: a failed or raising ``baseline`` (dygraph vs the predictor) split three ways;
* ``reduce``: the first failing stage (the baseline included) localized to the smallest sublayer
  that reproduces it (``reduction.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...shared.json_types import JsonObject
from ...shared.runtime import StagePlan
from ...shared.causes import raised_status
from ...shared.compare import NothingCompared, compare_all
from ...shared.errors import HarnessFailure
from ...shared.search import build_budget, find_alternatives, find_culprits
from ...shared.record_model import Outcome
from ...shared.vocab import Probe, Reference, Stage, Status
from ..explain import export_loss
from . import fp32_ops, reduction
from ..setup import rebuild
from ..base import sandbox
from ..base.context import CellContext
from ..base.ledger import Ledger
from ..base.registry import runtime
from ..stages.ladder import judged_as_the_stage, stage_reference
from .trials import bookkeeping

FAILED = (Status.FAIL, Status.ERROR)


def fp32_ops_search(ctx: CellContext, plan: StagePlan, done: Ledger) -> JsonObject:
    """``fp32_ops.search`` with the stage's failure probe; the words of builds that said nothing kept."""
    messages: List[str] = []
    shape = done.stage(plan.name).failing_shape or 0
    found = fp32_ops.search(ctx, plan, done, failure_probe(ctx, plan, done, messages, shape))
    return dict(found, invalid_messages=list(dict.fromkeys(messages))[:5]) if messages else found


def reduce(ctx: CellContext, plan: StagePlan, plans: Dict[str, StagePlan], done: Ledger) -> JsonObject:
    if ctx.cell.captured:
        return {"status": Status.SKIP, "message": "a captured export (TIPC) has no model source here to take apart"}
    if not ctx.mode.reducible:
        return {"status": Status.SKIP,
                "message": f"train mode {ctx.cell.mode} converts the model when it exports; its sublayers do not "
                           f"export alone the way the cell's program was made"}
    shape = done.stage(plan.name).failing_shape or 0
    model, args, how = rebuild.model_and_args(ctx, done.setup, shape)
    return dict(reduction.reduce_failure(ctx, plan, plans, done, model, args), model=how)


def triage(ctx: CellContext, plan: StagePlan, done: Ledger) -> JsonObject:
    """A failed consistency check, split three ways on the same inputs: the Python forward
    (dygraph), the saved program run by Paddle's own executor (``jit.load``), and the inference
    predictor (the baseline stage). Which pair agrees says where it broke."""
    setup, stage = done.setup, done.stage(plan.name)
    shape = stage.failing_shape or 0
    labels = setup.output_labels
    executor_raised = ""
    try:
        executor = ctx.saved.run_saved_program(setup.get("export"), ctx.feeds(shape), setup.get("signature_order"))
    except Exception as exc:  # the saved program raises under Paddle's own executor too: part of the answer
        status, executor_raised = raised_status(exc, [ctx.work])
        if status is not Status.ERROR:
            raise
        executor = None
    dygraph = ctx.load_outputs(ctx.file("dygraph", shape), labels)
    predictor = (ctx.load_outputs(ctx.file("baseline", shape), labels)
                 if (ctx.work / ctx.file("baseline", shape)).exists() else None)

    def agreement(a: List[Any], b: Optional[List[Any]]) -> JsonObject:
        if b is None:
            return {"agree": False, "raised": executor_raised}
        if a and b and len(a) != len(b):
            return {"agree": False, "note": f"{len(a)} outputs vs {len(b)}"}
        stats = compare_all(a, b, [ctx.tolerance(plan, label) for label in labels], "the triage's outputs")
        worst_abs = max((s.max_abs or 0.0) for s in stats) if stats else 0.0
        return {"agree": all(s.status is not Status.FAIL for s in stats), "max_abs": worst_abs}

    vs_dygraph = agreement(dygraph, executor)
    vs_predictor = agreement(executor, predictor) if predictor is not None and executor is not None else None
    if executor is None and predictor is None:
        verdict, meaning = "export", ("the saved program raises under Paddle's own executor as under the predictor, "
                                      f"where the Python forward runs ({executor_raised[:200]})")
    elif executor is None:
        verdict, meaning = "executor", (f"Paddle's own executor raises on the saved program ({executor_raised[:200]}) "
                                        f"where the predictor runs it")
    elif not vs_dygraph["agree"] and (vs_predictor is None or vs_predictor["agree"]):
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
    said = {"status": Status.PASS, "outcome": verdict, "meaning": meaning, "shape": shape,
            "executor_vs_dygraph": vs_dygraph, "executor_vs_predictor": vs_predictor}
    if verdict == "export" and ctx.mode.reducible and not ctx.cell.captured:
        # What the program lost, gained or froze, against the model's own lines (``export_loss``).
        try:
            said["export"] = export_loss.explain(ctx, plan, setup, shape, Path(setup.get("export")["program"]), dygraph)
        except (HarnessFailure, RuntimeError) as exc:
            said["export"] = {"words": "", "why": f"not explained: {str(exc).splitlines()[0][:300]}"}
    return said


def tensor_diff(ctx: CellContext, plan: StagePlan, baseline: StagePlan, done: Ledger) -> JsonObject:
    out = ctx.work / "tensors"
    shape = done.stage(plan.name).failing_shape or 0  # the shape the stage failed at
    try:
        # The baseline is Paddle Inference's; a runtime of its own pairs its tensors with Paddle's.
        result = runtime(plan.runtime).tensor_diff(done.setup.get("export"), ctx.feeds(shape), baseline.config,
                                                   plan.config, out, ctx.tolerance(plan))
    except NotImplementedError as exc:
        return {"status": Status.SKIP, "message": str(exc)}
    first = result.first_divergence
    outcome = "diverges" if first else "no tensor diverges"
    if not first and result.hooks_changed_output.get("test"):
        # Fetching every intermediate keeps a runtime from fusing across them (ONNX Runtime).
        outcome = "no tensor diverges while every tensor is fetched, which changed the stage's outputs"
    return {
        "status": Status.PASS, "outcome": outcome,
        "result": str(out / "result.json"),
        "title": f"{ctx.cell.id}: baseline vs {plan.name}",
        "first_divergence": ({"index": first.index, "op": first.op, "name": first.name, "max_abs": first.max_abs,
                              "max_rel": first.max_rel} if first else None),
        "tensors": len(result.rows), "unmatched": len(result.unmatched),
        "hooks_changed_output": dict(result.hooks_changed_output), "shape": shape,
    }


def failure_probe(ctx: CellContext, plan: StagePlan, done: Ledger, messages: List[str],
                  shape: int, deaths: Optional[List[JsonObject]] = None) -> Callable[[Any], Probe]:
    """``probe(config) -> Probe`` for the stage's failure at ``shape``: PASS when the config no
    longer shows it, FAIL when it does, INVALID when it raises something else."""
    setup = done.setup
    engine = runtime(plan.runtime)
    feeds = ctx.feeds(shape)
    labels = setup.output_labels
    stage = done.stage(plan.name)
    raised = stage.status is Status.ERROR
    cause = engine.cause_words(stage.message)
    _, reference, _ = stage_reference(ctx, plan, labels, shape)
    tolerances = [ctx.tolerance(plan, label) for label in labels]
    # A stage the floor judged is probed by the floor: a bf16 build within what bf16 explains does not
    # show the failure, however far past the fixed tolerance it is.
    judged = judged_as_the_stage(ctx, stage, labels)

    builds = [0]

    def probe(config: Any) -> Probe:
        """One build in a child (``sandbox``): a build that kills its process says nothing (INVALID),
        and the words it died with are kept with the invalid sets'."""
        builds[0] += 1
        where = ctx.work / f"{plan.name}.search" / f"build{builds[0]}"
        before = len(messages)

        def in_the_child() -> Tuple[Probe, List[str]]:
            said = probe_here(config)
            return said, messages[before:]

        answer = sandbox.in_child(in_the_child, where, sandbox.deadline(ctx.cell.stage_timeout))
        if isinstance(answer, sandbox.Death):
            messages.append(f"its process died: {answer.words()}")
            if deaths is not None:  # a predictor config a user could make killed it: a finding of its own
                deaths.append(dict(answer.to_dict(), trial=f"{where.parent.name}/{where.name}"))
            return Probe.INVALID
        said, new = answer
        messages.extend(new)
        return said

    def probe_here(config: Any) -> Probe:
        try:
            session = engine.session(setup.get("export"), config, feeds, ctx.work / f"{plan.name}.search")
            _, got = session.run(feeds)
        except Exception as exc:
            status, message = raised_status(exc)
            if status is Status.UNTESTABLE:  # the harness could not build this probe: it says nothing
                messages.append(message)
                return Probe.INVALID
            if raised and engine.cause_words(message) == cause:
                return Probe.FAIL
            messages.append(message)
            return Probe.INVALID
        if raised:
            return Probe.PASS
        try:
            stats = compare_all(reference, got, tolerances, "the probe's outputs")
        except NothingCompared as exc:  # nothing paired: the probe says nothing either way
            messages.append(str(exc))
            return Probe.INVALID
        return Probe.PASS if judged(shape, stats)[0] else Probe.FAIL

    return probe


def bisect(ctx: CellContext, plan: StagePlan, done: Ledger) -> JsonObject:
    engine = runtime(plan.runtime)
    stage = done.stage(plan.name)
    if plan.search is None:
        return {"status": Status.SKIP, "message": f"{plan.name} ({plan.lever}) has no search space: nothing in it "
                                                  f"to switch off one by one"}
    items = engine.search_items(plan, stage.evidence, done.evidence(Stage.BASELINE.value))
    items_from = "what the stage's build printed"
    if not items and stage.status is Status.ERROR:
        items, items_from = engine.probe_search_items(plan, ctx.work / f"{plan.name}.probe")
    if not items:
        return {"status": Status.SKIP, "message": f"{plan.name} ran nothing of its search space ({plan.search.value}) "
                                                  f"that could be switched off"}
    messages: List[str] = []
    deaths: List[JsonObject] = []
    probe = failure_probe(ctx, plan, done, messages, stage.failing_shape or 0, deaths)
    def probe_without(disabled: List[str]) -> Probe:
        return probe(engine.without(plan, disabled))

    found = find_culprits(items, probe_without)
    budget = build_budget(len(items), max(len(found.culprits), 1))
    also = find_alternatives(items, found.culprits, probe_without) if found.culprits else None
    raised = stage.status is Status.ERROR
    return {
        "status": Status.PASS, "outcome": found.status, "kind": plan.search.value, "candidates": len(items),
        "items_from": items_from,
        "predicate": "raises the same cause" if raised else ("beyond the floor" if stage.extra.get("floor_verdict")
                                                              else "out of tolerance"),
        "items": items, "culprits": found.culprits, "also_fixed_by": also.sets if also else [],
        "builds": found.builds, "budget": budget,
        # the follow-up: does another set also fix it while the culprits stay on?
        "follow_up_builds": also.builds if also else 0, "follow_up_budget": also.budget if also else 0,
        "message": found.message, "invalid_sets": len(found.invalid),
        "invalid_messages": list(dict.fromkeys(messages))[:5], "reference": Reference.BASELINE,
        "verdict": _verdict(plan, found.culprits, plan.search.verdict_words, raised, also.sets if also else []),
        **({"deaths": deaths} if deaths else {}),
    }


# What stands in for "no op type" on oneDNN's list: a name no op has.
NO_OP_TYPE = "__no_op_type__"


def exclude_onednn_ops(ctx: CellContext, plan: StagePlan, done: Ledger) -> JsonObject:
    """Op exclusion on oneDNN (``set_mkldnn_op``): measured first, then searched."""
    stage = done.stage(plan.name)
    raised = stage.status is Status.ERROR
    types = list(dict.fromkeys(t.split(".", 1)[-1] for t in
                               done.evidence(Stage.BASELINE.value).get("op_types") or {}))
    types = [t for t in types if not bookkeeping(t)]
    if not types:
        return {"status": Status.SKIP, "message": "the baseline recorded no op types to exclude"}
    # What the call does, read from a run (a probe conv program with no op type on the list),
    # before any conclusion rests on it.
    none_listed = plan.config.replace(onednn_ops=(NO_OP_TYPE,))
    knob = ctx.predictors.onednn_op_list_evidence(none_listed, ctx.work / f"{plan.name}.oplist")
    if knob is not None and knob["onednn_ops_ran"]:
        return {"status": Status.PASS, "outcome": Outcome.KNOB_IGNORED, "honoured": False, "builds": 1, "evidence": knob,
                "message": (f"set_mkldnn_op with no op type listed: {sum(knob['onednn_ops_ran'].values())} of "
                            f"{knob['ops']} ops of a probe conv program still ran as "
                            f"{', '.join(sorted(knob['onednn_ops_ran']))}: this Paddle ignores the oneDNN op list, "
                            f"so no op can be excluded this way")}
    messages: List[str] = []
    deaths: List[JsonObject] = []
    probe = failure_probe(ctx, plan, done, messages, stage.failing_shape or 0, deaths)
    nothing = probe(none_listed)
    if nothing is not Probe.PASS:
        said = "the probe program ran no oneDNN op" if knob is not None else "legacy op names do not say the kernel"
        return {"status": Status.PASS, "outcome": Outcome.NO_EFFECT, "honoured": None, "builds": 2, "evidence": knob,
                "message": (f"the failure persists with no op type on set_mkldnn_op's list ({nothing.value}"
                            f"{'; ' + messages[-1] if messages else ''}; {said}): it is not an op's oneDNN kernel "
                            f"that the list can keep off")}

    def probe_without(disabled: List[str]) -> Probe:
        return probe(plan.config.replace(onednn_ops=tuple(t for t in types if t not in disabled) or (NO_OP_TYPE,)))

    found = find_culprits(types, probe_without)
    return {"status": Status.PASS, "outcome": found.status, "honoured": True, "candidates": len(types),
            "evidence": knob, "items": types, "culprits": found.culprits, "builds": found.builds + 2,
            "budget": build_budget(len(types), max(len(found.culprits), 1)) + 2,
            "message": found.message, "invalid_messages": list(dict.fromkeys(messages))[:5],
            "verdict": _verdict(plan, found.culprits, "when op type {} runs on oneDNN", raised),
            **({"deaths": deaths} if deaths else {})}


def _verdict(plan: StagePlan, culprits: List[str], where: str, raised: bool, also: List[List[str]] = ()) -> str:
    if not culprits:
        return ""
    what = "raises" if raised else "fails"
    said = f"{plan.name} {what} " + " and ".join(where.format(c) for c in culprits)
    if also:
        others = "; ".join(" and ".join(s) for s in also)
        said += f", together with {others} (switching off either set alone fixes it: the failure needs both)"
    return said
