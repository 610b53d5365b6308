"""The workaround (cell side): the smallest change to a failing stage's config that makes the stage
pass, verified, with what else it changes and what it costs.

Candidates, smallest first, from what the runtime offers and what the root cause already found:

1. each culprit of the culprit search switched off alone (a pass deleted, an op type kept out of
   TensorRT, an ONNX Runtime optimizer disabled), then all of them, then each other set the search
   found that also fixes it;
2. oneDNN: every op type on oneDNN but the culprits (``set_mkldnn_op``) — only where this Paddle
   honours the list (the ``exclude`` step measured it; where it does not, said, not tried); a
   reduced-precision stage: its culprit op types kept at fp32 (``fp32_ops``), on the same terms;
3. the runtime's coarser levers (``Runtime.coarser``): a lower optimization level, the backend
   off; for a conversion's stage, the converter's own options;
4. when no config change helps: the model's own code, the placed op's public call spelled another
   equivalent way (``respell``), the stage's config as it was.

A candidate is **verified** when the stage, with it, passes at every shape the cell runs (the
primary shape and every derived one), judged as the stage is (the same reference, the same
tolerance — or the same floor, for a reduced-precision stage the floor judged; an error stage must run). The first verified candidate is the workaround. Then, from
the evidence of one run with and one without it: the passes that no longer ran and the ops that
left the backend (``onednn_op.*`` for oneDNN); and the speed: the stage's latency with it against
the stage's own config (or, when that raises, against the baseline: the config that would ship
instead), each the median of ``SPEED_RUNS`` runs taken alternately on the primary shape."""

from __future__ import annotations

import statistics
import time
from typing import Dict, List, Optional, Sequence, Tuple

from ...shared.causes import raised_status, stage_cause
from ...shared.compare import compare_all
from ...shared.config import PredictorConfig, StageConfig
from ...shared.runtime import StagePlan
from ...shared.vocab import Analysis, Owner, Probe, Stage, Status
from ...shared.json_types import JsonObject
from ..base.context import CellContext
from ..base.ledger import Ledger
from ..base.registry import runtime
from ..base.runtime import Session
from ..stages.ladder import judged_as_the_stage, stage_reference
from ..rootcause import fp32_ops
from . import respell
from ..base import sandbox
from ..setup import shared_setup
from ..rootcause.trials import bookkeeping

SPEED_RUNS = 7
Candidate = Tuple[str, StageConfig]  # what the change is, in words; the stage's config with it


def candidates(plan: StagePlan, done: Ledger, onednn_types: Sequence[str], files: Dict[str, str]
               ) -> Tuple[List[Candidate], List[str]]:
    """The changes to try, smallest first, and what was not tried (with why)."""
    engine = runtime(plan.runtime)
    found: List[Candidate] = []
    not_tried: List[str] = []
    search = done.analysis(Analysis.BISECT)
    if search is not None and search.stage == plan.name and search.get("culprits"):
        culprits = list(search.get("culprits"))
        kind = search.get("kind") or "items"
        sets = [[c] for c in culprits] + ([culprits] if len(culprits) > 1 else [])
        sets += [list(s) for s in search.get("also_fixed_by") or [] if list(s) not in sets]
        for chosen in sets:
            found.append((f"{kind}: switch off {', '.join(chosen)}", engine.without(plan, chosen)))
    else:
        not_tried.append("switching off culprits: the culprit search found none for this stage")
    exclude = done.analysis(Analysis.EXCLUDE)
    if exclude is not None and exclude.stage == plan.name:
        if exclude.get("honoured") and exclude.get("culprits") and isinstance(plan.config, PredictorConfig):
            kept = tuple(t for t in onednn_types if t not in exclude.get("culprits"))
            found.append((f"oneDNN op list: every op type but {', '.join(exclude.get('culprits'))}",
                          plan.config.replace(onednn_ops=kept)))
        elif exclude.get("honoured") is False:
            not_tried.append("keeping op types off oneDNN (set_mkldnn_op): this Paddle ignores the list "
                             "(measured by the exclude step)")
    kept = done.analysis(Analysis.FP32_OPS)
    at_fp32 = fp32_ops.candidate(plan, kept)
    if at_fp32 is not None:
        found.append(at_fp32)
    elif kept is not None and kept.stage == plan.name and kept.get("honoured") is False:
        not_tried.append(f"keeping op types at fp32 ({(kept.get('evidence') or {}).get('switch')}): this Paddle "
                         f"ignores the switch (measured by the fp32_ops step)")
    found += engine.coarser(plan)
    if _the_converters(plan, done):
        found += engine.conversion_candidates(plan, files)
    return found, not_tried


def _the_converters(plan: StagePlan, done: Ledger) -> bool:
    """Whether the stage's failure is the converter's: the conversion's own stage, a stage that raised
    with the converter's words, or one whose reproducer judged the converted file against the format's
    own reference and found it wrong (a file that differs by memory is found when the first stage
    that reads it settles it)."""
    if plan.name.endswith("_convert"):
        return True
    stage = done.stage(plan.name)
    if stage is not None and stage_cause(stage.message).startswith("paddle2onnx"):
        return True
    judged = done.analysis(Analysis.REPRODUCER)
    return (judged is not None and judged.stage == plan.name
            and (judged.get("conversion") or {}).get("owner") == Owner.CONVERTER.value)


class Verifier:
    """Builds the stage with a candidate config once, for every shape the cell runs (a runtime
    with shape profiles needs them all at build time, as the stage's own build has them), and runs
    it shape by shape against the stage's reference at its tolerance."""

    def __init__(self, ctx: CellContext, plan: StagePlan, done: Ledger, shapes: List[int],
                 files: Optional[Dict[str, str]] = None):
        setup = done.setup
        self.ctx, self.plan, self.shapes, self.files = ctx, plan, shapes, files or setup.get("export")
        self.engine = runtime(plan.runtime)
        self.feeds = {shape: ctx.feeds(shape) for shape in shapes}
        labels = setup.output_labels
        self.references = {shape: stage_reference(ctx, plan, labels, shape)[1] for shape in shapes}
        self.tolerances = [ctx.tolerance(plan, label) for label in labels]
        self.judged = judged_as_the_stage(ctx, done.stage(plan.name), labels)

    def build(self, config: StageConfig) -> Session:
        return self.engine.session(self.files, config, self.feeds[self.shapes[0]],
                                   self.ctx.work / f"{self.plan.name}.workaround",
                                   [self.feeds[s] for s in self.shapes[1:]])

    def check(self, config: StageConfig) -> Tuple[Dict[str, str], str, Optional[Session]]:
        """Each shape's verdict until the first that is not a pass (``pass``, ``fail``, or
        ``untestable`` when the harness itself could not build what the check needs), why, and the
        session when every shape passed."""
        verdicts: Dict[str, str] = {}
        try:
            session = self.build(config)
        except Exception as exc:
            status, message = raised_status(exc)
            return {str(self.shapes[0]): _verdict_of(status)}, message, None
        for shape in self.shapes:
            try:
                _, got = session.run_settled(self.feeds[shape])
                stats = compare_all(self.references[shape], got, self.tolerances, "the workaround's outputs")
            except Exception as exc:
                status, message = raised_status(exc)
                verdicts[str(shape)] = _verdict_of(status)
                return verdicts, message, None
            passed, why = self.judged(shape, stats)
            verdicts[str(shape)] = Probe.PASS.value if passed else Probe.FAIL.value
            if not passed:
                return verdicts, why, None
        return verdicts, "", session


def _checked_in_child(ctx: CellContext, verifier: "Verifier", config: StageConfig, k: int, words: str,
                      deaths: List[JsonObject]) -> Tuple[Dict[str, str], str, Optional[Session]]:
    """``verifier.check(config)`` where a candidate that kills its process cannot end the search
    (``sandbox``): checked in a child first; one that passes there is built again here, whose
    session gives the evidence and the timing (a session does not cross processes). A candidate
    whose process died is added to ``deaths``: a config a user could write killed it."""
    where = ctx.work / f"{verifier.plan.name}.workaround" / f"candidate{k}"

    def in_the_child() -> Tuple[Dict[str, str], str, bool]:
        verdicts, why, session = verifier.check(config)
        return verdicts, why, session is not None

    answer = sandbox.in_child(in_the_child, where, sandbox.deadline(ctx.cell.stage_timeout))
    if isinstance(answer, sandbox.Death):
        deaths.append(dict(answer.to_dict(), trial=f"candidate {k}: {words}", change=words))
        return {str(verifier.shapes[0]): Status.CRASH.value}, f"its process died: {answer.words()}", None
    verdicts, why, passed = answer
    return verifier.check(config) if passed else (verdicts, why, None)


def _tried(plan: StagePlan, words: str, verdicts: Dict[str, str], why: str, **more: object) -> JsonObject:
    """A change tried and how it ended: its words clipped, its cause in the runtime's words (what a cell
    of another runtime compares with the failure of a step both run)."""
    return {"change": words, "verdicts": verdicts, **more,
            **({"why": why[:200], "cause": shared_setup.step_cause(plan, why)} if why else {})}


def _verdict_of(status: Status) -> str:
    """A raise while checking a candidate: Paddle's (or the runtime's) is the candidate failing; the
    harness's own (``untestable``) says nothing about the candidate, and is said apart."""
    return Status.UNTESTABLE.value if status is Status.UNTESTABLE else Probe.FAIL.value


def search(ctx: CellContext, plan: StagePlan, done: Ledger, reference: StagePlan) -> JsonObject:
    """The first verified candidate (see the module's docstring), what was tried, its cost."""
    started = time.perf_counter()
    base = done.stage(reference.name)
    if base is not None and base.status in (Status.FAIL, Status.ERROR, Status.CRASH, Status.TIMEOUT):
        return {"status": Status.SKIP, "message": (
            f"the {reference.name} stage, at the lowest optimization, fails too ({base.status}): no change to "
            f"{plan.name}'s config is smaller than it, and the stages after it are judged against it; the failure "
            f"is the export's or a kernel's (the triage says which)")}
    setup = done.setup
    shapes = [0] + [v["index"] for v in setup.get("shape_variants") or [] if Status.of(v["status"]) is Status.PASS]
    onednn_types = [t.split(".", 1)[-1] for t in done.evidence(Stage.BASELINE.value).get("op_types") or {}]
    tried_changes, not_tried = candidates(plan, done, onednn_types, setup.get("export"))
    verifier = Verifier(ctx, plan, done, shapes)
    tried: List[JsonObject] = []
    chosen: Optional[Tuple[str, StageConfig, Session]] = None
    deaths: List[JsonObject] = []
    for k, (words, config) in enumerate(tried_changes, 1):
        taken = shared_setup.step_change(ctx, plan, done, words)
        if taken is not None:  # another runtime's cell tried it: it ended in the step both run
            tried.append(taken)
            continue
        verdicts, why, session = _checked_in_child(ctx, verifier, config, k, words, deaths)
        tried.append(_tried(plan, words, verdicts, why))
        if session is not None:
            chosen = (words, config, session)
            break
    model_side: Optional[JsonObject] = None
    if chosen is None:  # no config change helps: the model's own code, where the op has another spelling
        chosen, model_side = _respelled(ctx, plan, done, shapes, tried, deaths)
    result: JsonObject = {"status": Status.PASS, "tried": tried, "not_tried": not_tried, "shapes": len(shapes),
                          **({"deaths": deaths} if deaths else {})}
    if chosen is None:
        result.update(outcome="none verified", verified=False,
                      message=(f"none of {len(tried)} change(s) makes {plan.name} pass at every shape"
                               if tried else "nothing in the runtime's config space to try"))
        return dict(result, seconds=round(time.perf_counter() - started, 3))
    words, config, session = chosen
    engine = runtime(plan.runtime)
    files = setup.get("export")
    lines = [c for c in engine.config_calls(files, config) if c not in engine.config_calls(files, plan.config)]
    if model_side is not None:  # the stage's own config, the model's code changed
        lines = [f"{model_side['api']}(...)  →  {model_side['instead']}"]
    # The verified session itself gives the evidence and the timing: no second build of it.
    result.update(outcome="verified", verified=True, change=words, config=config.to_dict(),
                  config_lines=engine.config_calls(files, config), change_lines=lines,
                  changes=_what_else(ctx, plan, done, config, session),
                  speed=_speed(ctx, plan, session, done, reference))
    paddlex = _paddlex_hpi(config) if isinstance(config, PredictorConfig) and model_side is None else None
    if paddlex is not None:
        result["paddlex_hpi"] = paddlex
    if model_side is not None:
        result["model_side"] = model_side
    return dict(result, seconds=round(time.perf_counter() - started, 3))


def _respelled(ctx: CellContext, plan: StagePlan, done: Ledger, shapes: List[int], tried: List[JsonObject],
               deaths: List[JsonObject]) -> Tuple[Optional[Tuple[str, StageConfig, Session]], Optional[JsonObject]]:
    """The model exported again with the placed op's public call respelled (``respell``), verified with
    the stage's own config; the first that passes at every shape, and what it changed."""
    reduced = done.analysis(Analysis.REDUCE)
    placed = str(reduced.get("op") or "") if reduced is not None and reduced.stage == plan.name else ""
    for k, respelling in enumerate(respell.for_ops(placed), len(tried) + 1):
        taken = shared_setup.step_change(ctx, plan, done, respelling.words)
        if taken is not None:
            tried.append(taken)
            continue
        folder = ctx.work / f"{plan.name}.workaround" / f"respelled{k}"
        # Another runtime's cell of this conversion exported it already: the same files (and ONNX).
        built = (shared_setup.step_export(ctx, plan, done, respelling.words, folder)
                 or respell.export_in_child(ctx, done.setup, respelling, folder))
        if "files" not in built:
            tried.append({"change": respelling.words, "verdicts": {}, "why": built["why"]})
            continue
        verifier = Verifier(ctx, plan, done, shapes, files=built["files"])
        verdicts, why, session = _checked_in_child(ctx, verifier, plan.config, k, respelling.words, deaths)
        exported = {"folder": str(folder), "files": built["files"], "calls": built["calls"],
                    **({"reused_from": built["reused_from"]} if built.get("reused_from") else {})}
        tried.append(_tried(plan, respelling.words, verdicts, why, model_side=True, exported=exported))
        if session is not None:
            return (respelling.words, plan.config, session), {
                "api": respelling.api, "instead": respelling.instead, "op": respelling.op,
                "calls_respelled": built["calls"], "program": built["files"]["program"]}
    return None, None


def _what_else(ctx: CellContext, plan: StagePlan, done: Ledger, config: StageConfig, session: Session) -> JsonObject:
    """What the change does beyond the fix, read from a run of the verified session and the
    stage's own evidence."""
    feeds = ctx.feeds()
    _, _, ran = session.run_with_evidence(feeds)
    evidence = dict(session.build_evidence, **ran)
    before = done.stage(plan.name).evidence or {}
    passes_before, passes_after = list(before.get("passes") or []), list(evidence.get("passes") or [])
    search = done.analysis(Analysis.BISECT)
    if not passes_before and search is not None and search.stage == plan.name and search.get("kind") == "passes":
        passes_before = list(search.get("items") or [])  # the stage raised first: the passes its build printed
    types_after = dict(evidence.get("op_types") or {})
    types_before = dict(before.get("op_types") or {})
    said: JsonObject = {
        "passes_no_longer_run": [p for p in dict.fromkeys(passes_before) if p not in passes_after],
        "ops": sum(types_after.values()),
        "backend_ops": _backend_ops(types_after),
        "op_types": types_after,
    }
    if isinstance(config, PredictorConfig) and config.onednn:
        # What runs off oneDNN with the change (layout transfers are oneDNN's own bookkeeping).
        said["off_backend"] = {t: n for t, n in types_after.items()
                               if not t.startswith("onednn_op.") and "layout" not in t and not bookkeeping(t)}
    asked_opset = getattr(config, "opset", None)
    if asked_opset is not None:  # a converter option: the opset the ONNX carries, read back
        converted = evidence.get("conversion") or evidence
        said["opset"] = converted.get("opset")
        if said["opset"] != asked_opset:
            said["not_as_claimed"] = f"asked paddle2onnx for opset {asked_opset}; the ONNX it wrote has {said['opset']}"
    if types_before:
        said["backend_ops_before"] = _backend_ops(types_before)
        said["ops_left_backend"] = said["backend_ops_before"] - said["backend_ops"]
    else:
        said["backend_ops_before"] = None  # the stage raised before it ran an op: nothing to count against
    return said


def _backend_ops(op_types: Dict[str, int]) -> int:
    """Ops that ran in a backend's own namespace (``onednn_op.*``, TensorRT engines)."""
    return sum(n for t, n in op_types.items() if t.startswith("onednn_op.") or "tensorrt_engine" in t)


def _speed(ctx: CellContext, plan: StagePlan, with_it: Session, done: Ledger, reference: StagePlan) -> JsonObject:
    """Median latency with the change (the verified session) against the stage's own config (the
    baseline's when that one raises), alternated run by run on the primary shape."""
    setup = done.setup
    feeds = ctx.feeds()
    against, against_name = plan, "the stage's own config"
    if done.stage(plan.name).status is Status.ERROR:
        against, against_name = reference, f"{reference.name} (the stage's own config raises)"
    other = runtime(against.runtime).session(setup.get("export"), against.config, feeds,
                                             ctx.work / f"{plan.name}.speed-against")
    for session in (with_it, other):  # warm-up: first runs pay allocation and kernel choice
        session.run(feeds)
    times: Dict[str, List[float]] = {"with": [], "against": []}
    for _ in range(SPEED_RUNS):
        for key, session in (("with", with_it), ("against", other)):
            t = time.perf_counter()
            session.run(feeds)
            times[key].append(time.perf_counter() - t)
    with_ms, against_ms = (statistics.median(times[k]) * 1000 for k in ("with", "against"))
    return {"with_ms": round(with_ms, 3), "against_ms": round(against_ms, 3), "against": against_name,
            "ratio": round(with_ms / against_ms, 3) if against_ms else None, "runs": SPEED_RUNS}


def _paddlex_hpi(config: PredictorConfig) -> JsonObject:
    """The change in PaddleX's high-performance inference config (``hpi_config``): the Paddle
    backend's ``run_mode`` (PaddleX's names: ``paddle``, ``paddle_fp16``, ``mkldnn``,
    ``mkldnn_bf16``, ``trt_fp32``/``trt_fp16``/``trt_int8``), threads, and the passes its runner
    deletes (``delete_pass``)."""
    if config.device == "cpu":
        run_mode = ("mkldnn_bf16" if config.bf16 else "mkldnn") if config.onednn else "paddle"
    elif config.trt is not None:
        run_mode = f"trt_{config.trt.precision}"
    else:
        run_mode = "paddle" if config.gpu_precision == "fp32" else f"paddle_{config.gpu_precision}"
    backend: JsonObject = {"run_mode": run_mode}
    if config.device == "cpu":
        backend["cpu_threads"] = config.threads
    if config.deleted_passes:
        backend["delete_pass"] = list(config.deleted_passes)
    if config.new_ir is not None:
        backend["enable_new_ir"] = bool(config.new_ir)
    return {"hpi_config": {"backend": "paddle", "backend_config": backend}}


__all__ = ["search", "candidates", "SPEED_RUNS"]
