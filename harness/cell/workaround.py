"""The workaround (cell side): the smallest change to a failing stage's config that makes the stage
pass, verified, with what else it changes and what it costs.

Candidates, smallest first, from what the runtime offers and what the root cause already found:

1. each culprit of the culprit search switched off alone (a pass deleted, an op type kept out of
   TensorRT, an ONNX Runtime optimizer disabled), then all of them, then each other set the search
   found that also fixes it;
2. oneDNN: every op type on oneDNN but the culprits (``set_mkldnn_op``) — only where this Paddle
   honours the list (the ``exclude`` step measured it; where it does not, said, not tried);
3. the runtime's coarser levers (``Runtime.coarser``): a lower optimization level, the backend
   off.

A candidate is **verified** when the stage, with it, passes at every shape the cell runs (the
primary shape and every derived one), judged as the stage is (the same reference, the same
tolerance; an error stage must run). The first verified candidate is the workaround. Then, from
the evidence of one run with and one without it: the passes that no longer ran and the ops that
left the backend (``onednn_op.*`` for oneDNN); and the speed: the stage's latency with it against
the stage's own config (or, when that raises, against the baseline: the config that would ship
instead), each the median of ``SPEED_RUNS`` runs taken alternately on the primary shape."""

from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..shared.causes import raised_status
from ..shared.compare import compare_all
from ..shared.config import PredictorConfig, StageConfig
from ..shared.runtime import StagePlan
from ..shared.vocab import Analysis, Probe, Stage, Status
from ..shared.json_types import JsonObject
from .context import CellContext
from .ledger import Ledger
from .registry import runtime
from .stages import stage_reference
from .trials import bookkeeping

SPEED_RUNS = 7
Candidate = Tuple[str, StageConfig]  # what the change is, in words; the stage's config with it


def candidates(plan: StagePlan, done: Ledger, onednn_types: Sequence[str]) -> Tuple[List[Candidate], List[str]]:
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
    found += engine.coarser(plan)
    if plan.name.endswith("_convert"):
        not_tried.append("the converter's own options (another opset, paddle2onnx's flags): a conversion's failure "
                         "comes before any option of the runtime's session; not in this search yet")
    return found, not_tried


def verifier(ctx: CellContext, plan: StagePlan, done: Ledger, shape: int) -> Callable[[StageConfig], Tuple[Probe, str]]:
    """``check(config)``: does the stage, with ``config``, run and match its reference at ``shape``
    within its tolerance (PASS), or not (FAIL, with the words why)?"""
    setup = done.setup
    engine = runtime(plan.runtime)
    feeds = ctx.feeds(shape)
    labels = setup.output_labels
    _, reference, _ = stage_reference(ctx, plan, labels, shape)
    tolerances = [ctx.tolerance(plan, label) for label in labels]

    def check(config: StageConfig) -> Tuple[Probe, str]:
        try:
            session = engine.session(setup.get("export"), config, feeds, ctx.work / f"{plan.name}.workaround")
            _, got = session.run_settled(feeds)
            stats = compare_all(reference, got, tolerances, "the workaround's outputs")
        except Exception as exc:
            return Probe.FAIL, raised_status(exc)[1][:200]
        failed = [s for s in stats if not s.passed]
        return (Probe.FAIL, f"{len(failed)} output(s) beyond the tolerance") if failed else (Probe.PASS, "")
    return check


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
    tried_changes, not_tried = candidates(plan, done, onednn_types)
    checks = {shape: verifier(ctx, plan, done, shape) for shape in shapes}
    tried: List[JsonObject] = []
    chosen: Optional[Candidate] = None
    for words, config in tried_changes:
        verdicts: Dict[str, str] = {}
        why = ""
        for shape in shapes:
            verdict, why = checks[shape](config)
            verdicts[str(shape)] = verdict.value
            if verdict is not Probe.PASS:
                break  # a shape it does not fix: not a workaround, the other shapes need not run
        tried.append({"change": words, "verdicts": verdicts, **({"why": why} if why else {})})
        if len(verdicts) == len(shapes) and all(v == Probe.PASS.value for v in verdicts.values()):
            chosen = (words, config)
            break
    result: JsonObject = {"status": Status.PASS, "tried": tried, "not_tried": not_tried, "shapes": len(shapes)}
    if chosen is None:
        result.update(outcome="none verified", verified=False,
                      message=(f"none of {len(tried)} change(s) makes {plan.name} pass at every shape"
                               if tried else "nothing in the runtime's config space to try"))
        return dict(result, seconds=round(time.perf_counter() - started, 3))
    words, config = chosen
    engine = runtime(plan.runtime)
    files = setup.get("export")
    lines = [c for c in engine.config_calls(files, config) if c not in engine.config_calls(files, plan.config)]
    result.update(outcome="verified", verified=True, change=words, config=config.to_dict(),
                  config_lines=engine.config_calls(files, config), change_lines=lines,
                  changes=_what_else(ctx, plan, done, config),
                  speed=_speed(ctx, plan, config, done, reference))
    paddlex = _paddlex_hpi(config) if isinstance(config, PredictorConfig) else None
    if paddlex is not None:
        result["paddlex_hpi"] = paddlex
    return dict(result, seconds=round(time.perf_counter() - started, 3))


def _what_else(ctx: CellContext, plan: StagePlan, done: Ledger, config: StageConfig) -> JsonObject:
    """What the change does beyond the fix, read from a run with it and the stage's own evidence."""
    setup = done.setup
    feeds = ctx.feeds()
    session = runtime(plan.runtime).session(setup.get("export"), config, feeds, ctx.work / f"{plan.name}.workaround")
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
    if types_before:
        said["backend_ops_before"] = _backend_ops(types_before)
        said["ops_left_backend"] = said["backend_ops_before"] - said["backend_ops"]
    else:
        said["backend_ops_before"] = None  # the stage raised before it ran an op: nothing to count against
    return said


def _backend_ops(op_types: Dict[str, int]) -> int:
    """Ops that ran in a backend's own namespace (``onednn_op.*``, TensorRT engines)."""
    return sum(n for t, n in op_types.items() if t.startswith("onednn_op.") or "tensorrt_engine" in t)


def _speed(ctx: CellContext, plan: StagePlan, config: StageConfig, done: Ledger, reference: StagePlan) -> JsonObject:
    """Median latency with the change against the stage's own config (the baseline's when that one
    raises), alternated run by run on the primary shape."""
    setup = done.setup
    feeds = ctx.feeds()
    engine = runtime(plan.runtime)
    with_it = engine.session(setup.get("export"), config, feeds, ctx.work / f"{plan.name}.speed")
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
    backend's ``run_mode``, threads, and the passes its runner deletes (``delete_pass``)."""
    backend: JsonObject = {"run_mode": "mkldnn" if config.onednn else ("paddle" if config.device == "cpu" else
                                                                             "trt_fp32" if config.trt else "paddle")}
    if config.device == "cpu":
        backend["cpu_threads"] = config.threads
    if config.deleted_passes:
        backend["delete_pass"] = list(config.deleted_passes)
    if config.new_ir is not None:
        backend["enable_new_ir"] = bool(config.new_ir)
    return {"hpi_config": {"backend": "paddle", "backend_config": backend}}


__all__ = ["search", "candidates", "SPEED_RUNS"]
