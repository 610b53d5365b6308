"""The stage ladder (cell side): each stage is built and run on its runtime, compared with its
reference, and given the status its numbers and its evidence say.

A stage whose evidence equals its reference's (same passes, same executed op sequence) ran the
same program: ``noop``, never a pass. A low-precision stage whose ops produced none of that
precision did not run it: ``noop`` with the dtypes it did produce.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...shared.json_types import JsonMapping, JsonObject
from ...shared.runtime import StagePlan
from ...shared.causes import PRIMARY_NOTE, raised_status
from ...shared.compare import Comparison, compare_tol, worst

from ...shared.record_model import ShapeResult
from ...shared.task import worst_verdict
from ...shared.vocab import Precision, Reference, Stage, Status
from ..base.context import CellContext
from ..base.ledger import Ledger
from ..precision import model_floor, precision_floor
from ..base.registry import runtime

# What a low-precision stage's ops must produce somewhere for the precision to have run.
LOW_PRECISION_DTYPES = {"int8": ("int8", "uint8"), "bf16": ("bfloat16", "uint16"), "fp16": ("float16",)}


def same_program(evidence: JsonMapping, reference: JsonMapping) -> bool:
    """Same passes ran and the same op sequence executed: the two predictors ran one program."""
    keys = ("passes", "analysis_passes", "op_sequence_sha1")
    return all(k in evidence and k in reference for k in keys) and all(evidence[k] == reference[k] for k in keys)


def planned(plan: StagePlan, **fields: Any) -> JsonObject:
    judged = {"tolerance_of": plan.tolerance_of} if plan.tolerance_of else {}
    return {"reference": plan.reference, "precision": plan.precision, **judged, "lever": plan.lever,
            "runtime": plan.runtime, "config": plan.config.to_dict(), **fields}


def unmet(plan: StagePlan) -> Optional[str]:
    if plan.skip:
        return plan.skip
    for requirement in plan.requires:
        reason = runtime(plan.runtime).unmet(requirement)
        if reason:
            return reason
    return None


def shared_step(exc: BaseException) -> Dict[str, str]:
    """The step other sessions run alike that raised ``exc`` (``Finding.shared_step``), for the stage's entry."""
    step = getattr(exc, "shared_step", None)
    return {"shared_step": step} if isinstance(step, str) else {}


def run_stage(ctx: CellContext, plan: StagePlan, done: Ledger) -> JsonObject:
    reason = unmet(plan)
    if reason:
        return planned(plan, status=Status.SKIP, message=reason)
    setup = done.setup
    feeds = ctx.feeds()
    labels = setup.output_labels
    reference_name, reference, note = stage_reference(ctx, plan, labels)

    variants = [v for v in setup.get("shape_variants") or [] if Status.of(v["status"]) is Status.PASS]
    variant_feeds = [ctx.feeds(v["index"]) for v in variants]
    t = time.perf_counter()
    session = runtime(plan.runtime).session(setup.get("export"), plan.config, feeds, ctx.work / plan.name, variant_feeds)
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    try:
        out_names, got, ran = session.run_with_evidence(feeds)
    except Exception as exc:  # built, then raised running: what the build ran is the search's space
        status, message = raised_status(exc, under=plan.name)
        return planned(plan, status=status, message=message, evidence=session.build_evidence,
                       timings={"build": round(build_s, 4)}, **shared_step(exc))
    run_s = time.perf_counter() - t
    evidence = dict(session.build_evidence, **ran)
    result = planned(plan, reference=reference_name, evidence=evidence, feed_order=session.input_names(),
                     timings={"build": round(build_s, 4), "run": round(run_s, 4)})
    if not labels:  # a comparison of nothing cannot fail: the harness's, never a pass
        return dict(result, status=Status.UNTESTABLE,
                    message="nothing to compare: the cell's dygraph forward left no output to hold the stage to")
    if len(got) != len(labels):
        return dict(result, status=Status.ERROR,
                    message=f"the predictor returns {len(got)} outputs ({out_names}) but the dygraph "
                            f"forward returns {len(labels)} ({labels}); they cannot be matched")
    if plan.name == Stage.BASELINE.value:
        ctx.save_outputs(ctx.file("baseline"), got)
    outputs = {label: compare_tol(reference[i], got[i], ctx.tolerance(plan, label)).named(predictor_name=out_names[i])
               for i, label in enumerate(labels)}
    result.update(outputs={k: c.to_dict() for k, c in outputs.items()}, worst=worst(outputs).to_dict(),
                  status=stage_status(plan, outputs, evidence, done.evidence(Stage.BASELINE.value)))
    task = ctx.judge_task(labels, reference, got)
    if task:  # the model's answers beside the tensors: how much the comparison's verdict matters
        result["task"] = task
    unrun = low_precision_note(plan, evidence)
    if result["status"] is Status.NOOP and unrun:
        note = f"{unrun}: its pass says nothing about {plan.precision}"
    elif result["status"] is Status.NOOP and evidence.get("not_as_claimed"):
        note = evidence["not_as_claimed"]
    elif result["status"] is Status.NOOP:
        note = (f"ran the same program as baseline ({len(evidence['passes'])} passes, "
                f"{evidence['ops']} ops): {plan.lever} changed nothing here")
    else:
        note = unrun or note
    floored = _by_the_floor(ctx, plan, setup, labels, variants, outputs, result)
    if floored:
        note = "; ".join(filter(None, [floored, note if result["status"] is not Status.NOOP else ""]))
    beside = _against_dygraph(ctx, plan, done, labels, got, reference_name)
    if beside:
        result["against_dygraph"] = beside
        note = "; ".join(filter(None, [note, beside["words"]]))
    if note:
        result["message"] = note
    if variants:
        at_shapes(ctx, plan, session, list(zip(variants, variant_feeds)), labels, result)
    return result


def _by_the_floor(ctx: CellContext, plan: StagePlan, setup: Any, labels: List[str], variants: List[JsonMapping],
                  outputs: Mapping[str, Comparison], result: JsonObject) -> str:
    """A reduced-precision stage judged against what its precision explains (``precision_floor``):
    the floor measured at every shape the stage runs, the primary shape's verdict in place of the
    tolerance's; its words, or "" when the stage is not one or the floor could not be measured."""
    precision = Precision(plan.precision)
    if precision not in precision_floor.FORMATS or result["status"] not in (Status.PASS, Status.FAIL, Status.VACUOUS):
        return ""
    measured = model_floor.measure(ctx, setup, precision, [0] + [v["index"] for v in variants], labels)
    result["floor"] = measured
    if measured.get("why"):
        return f"no {measured['format']} floor ({measured['why']}): judged by the tolerance"
    verdict = _floor_verdict(ctx, measured, 0, outputs)
    if verdict is None:
        return ""
    result["floor_verdict"] = verdict
    result["status"] = Status.FAIL if verdict["verdict"] == "beyond" else Status.PASS
    risk = (measured.get("answers_changed") or {}).get("words")
    return "; ".join(filter(None, [verdict["words"], risk]))


def _floor_verdict(ctx: CellContext, measured: JsonMapping, shape: int,
                   outputs: Mapping[str, Comparison]) -> Optional[JsonObject]:
    return precision_floor.judge(measured, shape, {label: precision_floor.error_of(c) for label, c in outputs.items()},
                                 {label: ctx.fp32_atol for label in outputs})


def judged_as_the_stage(ctx: CellContext, stage: Any, labels: List[str]
                        ) -> Callable[[int, Sequence[Comparison]], Tuple[bool, str]]:
    """How a probe or a candidate config of ``stage`` is judged at a shape: by the stage's floor where
    the floor judged the stage, else by each comparison's tolerance — (passed, why not). The culprit
    searches and the workaround judge alike through this one."""
    atol = ctx.fp32_atol

    def passed(shape: int, stats: Sequence[Comparison]) -> Tuple[bool, str]:
        within = precision_floor.passes_by_floor(stage.extra, shape, labels, stats, atol)
        if within is not None:
            return within, f"beyond the floor at shape {shape}"
        failed = [s for s in stats if not s.passed]
        return not failed, f"{len(failed)} output(s) beyond the tolerance at shape {shape}"

    return passed


def _against_dygraph(ctx: CellContext, plan: StagePlan, done: Ledger, labels: List[str], got: List[np.ndarray],
                     reference_name: Reference) -> Optional[JsonObject]:
    """A stage held to a baseline that failed against dygraph is held to dygraph too, and says both:
    agreeing with a wrong program is not a pass of the model (the export's failure, not this stage's)."""
    if reference_name != Reference.BASELINE or plan.name == Stage.BASELINE.value:
        return None
    if done.status(Stage.BASELINE.value) is not Status.FAIL:
        return None
    dygraph = ctx.load_outputs(ctx.file("dygraph"), labels)
    outputs = {label: compare_tol(dygraph[i], got[i], ctx.tolerance(plan, label)) for i, label in enumerate(labels)}
    statuses = {o.status for o in outputs.values()}
    status = Status.FAIL if Status.FAIL in statuses else Status.PASS
    worst_of = worst(outputs)
    said = (f"against dygraph (the baseline fails against it): {status.value}"
            + (f", max abs {worst_of.max_abs:.3g}" if worst_of is not None and worst_of.max_abs is not None else "")
            + (" — not a pass of the model" if status is Status.FAIL else ""))
    return {"status": status, "worst": worst_of.to_dict() if worst_of is not None else None, "words": said}


def at_shapes(ctx: CellContext, plan: StagePlan, session: Any, variants: List[Tuple[JsonMapping, JsonObject]],
              labels: List[str], result: JsonObject) -> None:
    """The same session run at every other shape the cell declares, each compared with its own
    reference at that shape. The stage fails (or errs) at the first shape that does, and says which;
    its ``shapes`` list keeps every shape's statistics."""
    started = time.perf_counter()
    found: List[ShapeResult] = []
    for variant, feeds in variants:
        k = variant["index"]
        at = ShapeResult(index=k, label=variant["label"], status=Status.PASS)
        try:
            names, got = session.run(feeds)
        except Exception as exc:
            status, message = raised_status(exc, under=plan.name)
            found.append(dataclasses.replace(at, status=status, message=message))
            continue
        if len(got) != len(labels):
            found.append(dataclasses.replace(at, status=Status.ERROR, message=f"{len(got)} outputs at this shape, "
                                                                              f"the dygraph forward returns {len(labels)}"))
            continue
        if plan.name == Stage.BASELINE.value:
            ctx.save_outputs(ctx.file("baseline", k), got)
        reference_name, reference, note = stage_reference(ctx, plan, labels, k)
        outputs = {label: compare_tol(reference[i], got[i], ctx.tolerance(plan, label))
                   for i, label in enumerate(labels)}
        statuses = {o.status for o in outputs.values()}
        status = Status.FAIL if Status.FAIL in statuses else Status.VACUOUS if Status.VACUOUS in statuses else Status.PASS
        verdict = _floor_verdict(ctx, result["floor"], k, outputs) if result.get("floor_verdict") else None
        if verdict is not None:  # judged as the primary shape was: against what the precision explains
            status = Status.FAIL if verdict["verdict"] == "beyond" else Status.PASS
            note = verdict["words"]
        found.append(dataclasses.replace(at, status=status, reference=reference_name, worst=worst(outputs),
                                         outputs=outputs, task=ctx.judge_task(labels, reference, got), message=note))
    result["shapes"] = [v.to_dict() for v in found]
    if result.get("task"):  # the stage's task verdict: the worst of its shapes'
        result["task"] = worst_verdict([result["task"], *[v.task for v in found]])
    result.setdefault("timings", {})["shapes"] = round(time.perf_counter() - started, 4)
    first = (next((v for v in found if v.blocks), None)
             or next((v for v in found if v.status is Status.UNTESTABLE), None))
    if (result.get("evidence") or {}).get("not_as_claimed"):
        first = None  # the stage did not run as claimed at any shape: its numbers decide nothing
    if first is not None and not Status.of(result["status"]).blocks:
        result["status"] = first.status
        result["failing_shape"] = first.index
        if first.worst is not None:
            result["worst"] = first.worst.named(at_shape=first.label).to_dict()
        what = first.message or f"out of tolerance, {first.worst.output if first.worst else None}"
        primary = result.get("message")
        result["message"] = f"at {first.label}: {what}" + (f"{PRIMARY_NOTE}{primary}" if primary else "")


def stage_reference(ctx: CellContext, plan: StagePlan, labels: List[str],
                    shape: int = 0) -> Tuple[Reference, List[np.ndarray], str]:
    """What the stage's outputs at ``shape`` are compared with: its planned reference, or dygraph
    (said so) when the baseline predictor never produced outputs at that shape (it crashed or raised)."""
    if plan.reference == Reference.DYGRAPH:
        return Reference.DYGRAPH, ctx.load_outputs(ctx.file("dygraph", shape), labels), ""
    if not (ctx.work / ctx.file("baseline", shape)).exists():
        return (Reference.DYGRAPH, ctx.load_outputs(ctx.file("dygraph", shape), labels),
                "no baseline predictor outputs; compared with dygraph")
    return Reference.BASELINE, ctx.load_outputs(ctx.file("baseline", shape), labels), ""


def stage_status(plan: StagePlan, outputs: Mapping[str, Comparison], evidence: JsonMapping,
                 baseline_evidence: JsonMapping) -> Status:
    statuses = {o.status for o in outputs.values()}
    if evidence.get("not_as_claimed"):
        # The runtime says the stage did not run as its name claims (OpenVINO's default bf16 on an
        # fp32 stage): its numbers, kept in the record, say nothing about the claim either way.
        return Status.NOOP
    if Status.FAIL in statuses:
        return Status.FAIL
    if plan.reference == Reference.BASELINE and same_program(evidence, baseline_evidence):
        return Status.NOOP
    if low_precision_note(plan, evidence):
        return Status.NOOP  # the precision the stage is named after never ran
    if Status.VACUOUS in statuses:
        return Status.VACUOUS
    return Status.PASS


def low_precision_note(plan: StagePlan, evidence: JsonMapping) -> str:
    """The stage claims a low precision; the op outputs say whether it ran. (TensorRT engines
    hide their layers from the hook: their evidence is the engine op.)"""
    claimed = Precision(plan.precision).value
    produced = evidence.get("output_dtypes", {})
    if claimed == Precision.FP32 or not plan.dtypes_visible or any(d in LOW_PRECISION_DTYPES.get(claimed, ()) for d in produced):
        return ""
    return (f"no op produced {'/'.join(LOW_PRECISION_DTYPES[claimed])}: the {claimed} backend ran this "
            f"program in {', '.join(sorted(produced))}")
