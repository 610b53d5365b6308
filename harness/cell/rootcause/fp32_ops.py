"""Which op types a reduced-precision stage must keep at fp32 (cell side): the precision's own per-op
switch, asked only where this Paddle honours it.

A bf16 or fp16 stage beyond its floor (``precision_floor``) may come right with a few op types kept at
fp32 — the per-op answer Polygraphy's precision debugging gives for TensorRT. Each runtime spells the
switch its own way: oneDNN's ``Config.set_bfloat16_op`` (the op types that may run in bf16; the rest
stay fp32) and the GPU predictor's ``exp_disable_mixed_precision_ops`` (the op types kept at fp32).
TensorRT's per-op switch (ops kept out of the engine) is the culprit search's own space already.

A switch's name is not its effect: first the stage's own program runs with **every** op type kept at
fp32, and the dtypes its ops produced are read; where the reduced dtype is still produced, this Paddle
ignores the switch (measured: 3.3.1's PIR ``cpu_bfloat16_placement_pass`` places bf16 by its own fixed
op list and reads no config), said, and nothing is searched. Where it is honoured, the search is the
culprit search's (``find_culprits``) over the op types the stage ran, each probe judged as the stage
was (by its floor), and a verified answer becomes a workaround candidate (``workaround.candidates``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ...shared.config import PredictorConfig
from ...shared.json_types import JsonObject
from ...shared.record_model import Outcome
from ...shared.runtime import StagePlan
from ...shared.search import build_budget, find_culprits
from ...shared.vocab import Precision, Probe, Status
from ..base import sandbox
from ..base.context import CellContext
from ..base.ledger import Ledger
from ..base.registry import runtime
from .trials import bookkeeping

# What stands in for "no op type" on a list of the op types that may run reduced: a name no op has.
NO_OP_TYPE = "__no_op_type__"
# The dtypes an op of the reduced precision produces, as the evidence names them (Paddle stores bf16
# as uint16 in places).
REDUCED_DTYPES = {Precision.BF16: ("bfloat16", "uint16"), Precision.FP16: ("float16",)}

Keep = Callable[[List[str]], PredictorConfig]  # the stage's config with these op types kept at fp32


def switch_of(plan: StagePlan, types: List[str]) -> Optional[Tuple[str, Keep]]:
    """The stage's per-op precision switch (its call's name, and the config keeping op types at
    fp32), or None where the stage's runtime has none."""
    cfg = plan.config
    if not isinstance(cfg, PredictorConfig):
        return None
    if cfg.device == "cpu" and cfg.onednn and cfg.bf16:
        return "set_bfloat16_op", lambda kept: cfg.replace(
            bf16_ops=tuple(t for t in types if t not in kept) or (NO_OP_TYPE,))
    if cfg.device == "gpu" and cfg.gpu_precision != Precision.FP32.value and cfg.trt is None:
        return "exp_disable_mixed_precision_ops", lambda kept: cfg.replace(
            fp32_ops=tuple(dict.fromkeys([*cfg.fp32_ops, *kept])))
    return None


def candidate_types(plan: StagePlan, evidence: JsonObject) -> List[str]:
    """The op types the stage ran that its switch can name: oneDNN's (``onednn_op.*``) for bf16 on
    oneDNN, every op type for a GPU predictor; in the legacy op names the switch takes."""
    ran = [t for t in (evidence.get("op_types") or {}) if not bookkeeping(t)]
    if isinstance(plan.config, PredictorConfig) and plan.config.onednn:
        ran = [t for t in ran if t.startswith("onednn_op.")] or ran
    return list(dict.fromkeys(t.split(".", 1)[-1].rstrip("_") for t in ran))


def search(ctx: CellContext, plan: StagePlan, done: Ledger, probe: Callable[[Any], Probe]) -> Dict[str, Any]:
    """``probe(config)``: the stage's failure with that config (``analysis.failure_probe``)."""
    stage = done.stage(plan.name)
    types = candidate_types(plan, stage.evidence)
    switch = switch_of(plan, types)
    if switch is None or not types:
        return {"status": Status.SKIP, "message": f"{plan.name} has no per-op precision switch" if switch is None
                else f"{plan.name} ran no op type its precision switch can name"}
    name, keep = switch
    reduced = REDUCED_DTYPES.get(Precision(plan.precision), ())
    left, why = _reduced_left(ctx, plan, done, keep(types), reduced)
    evidence = {"switch": name, "kept_at_fp32": types, "reduced_outputs_left": left}
    if left is None:  # whose failure it is, said in its words: the stage's program with the switch did not run
        return {"status": Status.PASS, "outcome": Outcome.NOT_RUN, "honoured": None, "builds": 1, "evidence": evidence,
                "message": f"{name} with every op type kept at fp32 did not run, so what it does is unknown: {why}"}
    if left:
        return {"status": Status.PASS, "outcome": Outcome.KNOB_IGNORED, "honoured": False, "builds": 1,
                "evidence": evidence,
                "message": (f"{name} with every op type kept at fp32: {sum(left.values())} op output(s) still "
                            f"{', '.join(sorted(left))}: this Paddle ignores the switch, so no op type can be "
                            f"kept at fp32 this way")}
    everything = probe(keep(types))
    if everything is not Probe.PASS:
        return {"status": Status.PASS, "outcome": Outcome.NO_EFFECT, "honoured": True, "builds": 2, "evidence": evidence,
                "message": (f"the failure persists with every op type at fp32 ({everything.value}): it is not an "
                            f"op's precision that {name} can change")}
    found = find_culprits(types, lambda kept: probe(keep(kept)))
    return {"status": Status.PASS, "outcome": found.status, "honoured": True, "candidates": len(types),
            "evidence": evidence, "items": types, "culprits": found.culprits, "builds": found.builds + 2,
            "budget": build_budget(len(types), max(len(found.culprits), 1)) + 2, "message": found.message,
            "verdict": (f"{plan.name} fails when op type {' and '.join(found.culprits)} runs in "
                        f"{Precision(plan.precision).value}" if found.culprits else "")}


def candidate(plan: StagePlan, entry: Any) -> Optional[Tuple[str, PredictorConfig]]:
    """The workaround candidate a search found: its culprits kept at fp32 through the switch."""
    if entry is None or entry.stage != plan.name or not entry.get("honoured") or not entry.get("culprits"):
        return None
    switch = switch_of(plan, list(entry.get("items") or []))
    if switch is None:
        return None
    name, keep = switch
    culprits = list(entry.get("culprits"))
    return f"op types kept at fp32 ({name}): {', '.join(culprits)}", keep(culprits)


def _reduced_left(ctx: CellContext, plan: StagePlan, done: Ledger, config: PredictorConfig,
                  reduced: Tuple[str, ...]) -> Tuple[Optional[Dict[str, int]], str]:
    """The reduced-dtype outputs the stage's program still produced with ``config``, or None and the
    words it failed with (Paddle's, or its process's death)."""
    engine = runtime(plan.runtime)
    feeds = ctx.feeds(0)
    where = ctx.work / f"{plan.name}.fp32_ops"

    def in_the_child() -> Dict[str, int]:
        session = engine.session(done.setup.get("export"), config, feeds, where)
        _, _, evidence = session.run_with_evidence(feeds)
        return {d: n for d, n in (evidence.get("output_dtypes") or {}).items() if d in reduced}

    try:
        answer = sandbox.in_child(in_the_child, where / "probe", sandbox.deadline(ctx.cell.stage_timeout))
    except RuntimeError as exc:  # raised in the child: its words
        return None, str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    if isinstance(answer, sandbox.Death):
        return None, f"its process died: {answer.words()}"
    return answer, ""


__all__ = ["search", "candidate", "switch_of", "candidate_types", "NO_OP_TYPE"]
