"""Reduction (cell side): the smallest piece of the model, and then the one op, that reproduces a
stage's failure.

The model is rebuilt from its source with the cell's trained weights and run once in dygraph at
the shape the stage failed at, with hooks on every sublayer that keep its first call's inputs and
outputs (``pieces.py``). A *piece* is a group of sublayers exported on its own and judged on the
same stage pair as the failing stage (``trials.py``); the descent (``descent.py``) walks from the
whole model down, halving and then, where no half reproduces, going finer as delta debugging does.

The op types the answer's program contains are read from a run of it under the reference config;
those not in any of its sublayers' programs are its own ops (by elimination). Then the op itself
(``isolation.py``, PIR programs): each op the answer's forward called, written alone with the
tensors it received and run on the stage pair, most suspect first; the first that reproduces alone
is *the op*, and the reproducer becomes that one-op program. When the culprit search named a fusion
pass (``*fuse*``) for the stage and the answer's sublayers do not reproduce alone, the answer says
the fusion and no op is sought.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from ...shared.json_types import JsonObject
from ...shared.backends import PIR, program_format
from ...shared.runtime import StagePlan
from ...shared.spec import OUTPUTS
from ...shared.record_model import Outcome, StageRecord
from ...shared.vocab import Analysis, Stage, Status
from ..anatomy import isolation
from ..base.context import CellContext
from ..base.ledger import Ledger
from .descent import Found, Trial, budget, descend
from ..anatomy.pieces import Call, capture, source_path
from ..anatomy.public_api import written_public
from ..base.registry import runtime
from .trials import PieceTrials, Sought, bookkeeping

def own_op_types(node_types: Dict[str, int], below: Sequence[Trial]) -> List[str]:
    """Op types of the node's program not in any program of its sublayers tried below it."""
    inside: Set[str] = set()
    for trial in below:
        inside.update(trial.op_types)
    return sorted(t for t in node_types if t not in inside and not bookkeeping(t))


# -- the cell's entry --------------------------------------------------------------------------------

def reduce_failure(ctx: CellContext, plan: StagePlan, plans: Dict[str, StagePlan], done: Ledger,
                   model: Any, call_args: List[Any]) -> JsonObject:
    """Localize the failure of stage ``plan`` to the smallest piece of ``model``, then to one op.
    ``piece`` names the program the reproducer replays (the one-op program, else the smallest
    piece), its inputs and (numeric failures) the outputs it is held to.

    One cause at a time: when the stage's message holds several (a converter naming two ops it
    cannot convert), each is reduced on its own — the first is the record's answer, every one is
    in ``causes`` — and a piece that raises another of the cell's causes first is masked for it."""
    started = time.perf_counter()
    stage = done.stage(plan.name)
    calls = capture(ctx.paddle, model, call_args)
    engine = runtime(plan.runtime)
    targets: List[Optional[str]] = list(engine.causes(stage.message)) if stage.status is Status.ERROR else []
    known = cell_causes(plans, done)
    results = []
    for k, cause in enumerate(targets or [None]):
        trials = PieceTrials(ctx, plan, plans, done, calls,
                             Sought(cause, tuple(known), "reduction" if k == 0 else f"reduction_cause{k + 1}"))
        results.append(_reduce_one(ctx, trials, calls, plan, done, model, call_args))
    result = results[0]
    deaths = [d for r in results for d in trial_deaths(r)]
    if deaths:
        result["deaths"] = deaths
    if len(results) > 1:
        result["causes"] = [dict(_summary(r), cause=c) for r, c in zip(results, targets)]
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def trial_deaths(result: JsonObject) -> List[JsonObject]:
    """Every trial of a reduction whose process died (pieces and op programs), with what it was — but
    those that died as the stage did: their death is the answer the reduction sought (a stage that
    killed its worker), the stage's own cause, not another."""
    trials = list(result.get("trials") or []) + list((result.get("isolation") or {}).get("tried") or [])
    return [dict(t["died"], trial=" + ".join(t.get("members") or [])) for t in trials
            if t.get("died") and not t.get("reproduces")]


def cell_causes(plans: Dict[str, StagePlan], done: Ledger) -> List[str]:
    """Every distinct error cause of the cell's stages (at every shape), in the stages' order."""
    found: List[str] = []
    for name, plan in plans.items():
        stage = done.stage(name)
        if stage is None:
            continue
        for status, message in [(stage.status, stage.message)] + [(s.status, s.message) for s in stage.shapes]:
            if status is Status.ERROR and message:
                found.extend(c for c in runtime(plan.runtime).causes(message) if c not in found)
    return found


def _summary(result: JsonObject) -> JsonObject:
    keys = ("outcome", "path", "members", "layer", "depth", "why_here", "op", "sub_exports", "unmasked")
    said = {k: result[k] for k in keys if k in result}
    said["script_piece"] = (result.get("piece") or {}).get("files", {}).get("program")
    said["masked"] = [t["members"] for t in result.get("trials") or [] if t.get("masked")]
    return said


def _reduce_one(ctx: CellContext, trials: PieceTrials, calls: Dict[str, Call], plan: StagePlan,
                done: Ledger, model: Any, call_args: List[Any]) -> JsonObject:
    stage = done.stage(plan.name)
    found = descend(calls, trials, own_op=lambda node: _own_op(ctx, trials, calls, node, (model, call_args), done, plan))
    members = found.members
    answer = next((t for t in found.trials if t.members == members and t.reproduces), None)
    result = _located(found, calls, answer, plan, stage, trials.tried)
    if trials.cause:
        result["cause"] = trials.cause
    baseline_types = done.evidence(Stage.BASELINE.value).get("op_types") or {}
    result["op_types"] = dict(answer.op_types if answer is not None else baseline_types)
    if found.own_op is not None:  # the descent ended on the layer's own op, isolated already
        result.update(found.own_op)
        return result
    result.update(_op_or_fusion(result["op_types"], found, answer, plan, done))
    if answer is not None:
        result["piece"] = _replayable(answer, trials.failed)
        # What a source reproducer rebuilds: the answer's members and its generated piece module.
        home = Path(answer.files["program"]).parent
        result["source_piece"] = {"members": list(answer.members), "module": str(source_path(home, "Piece")),
                                  "inputs": str(home / "inputs.npz")}
    if "fusion" not in result:
        result.update(_isolate(ctx, trials, answer, model, call_args, done, plan))
    return result


def _located(found: Found, calls: Mapping[str, Call], answer: Optional[Trial], plan: StagePlan,
             stage: StageRecord, exports: int) -> JsonObject:
    node, members = found.node, found.members
    leaves = calls[""].leaves
    halving = sum(1 for t in found.trials if not t.finer)
    return {
        "status": Status.PASS, "stage": plan.name, "shape": stage.failing_shape or 0,
        "outcome": Outcome.LOCALIZED if answer is not None else Outcome.WHOLE_MODEL,
        "path": node, "members": members if members != [node] else [],
        "layer": type(calls[node].layer).__name__, "depth": found.depth, "why_here": found.why,
        "sub_exports": exports, "leaves": leaves, "budget": budget(leaves, found.depth),
        "halving_exports": halving, "finer_exports": found.fine_trials, "finer_budget": found.fine_limit,
        "trials": [t.to_dict() for t in found.trials],
        **({"unmasked": found.unmasked} if found.unmasked else {}),
    }


def _isolate(ctx: CellContext, trials: PieceTrials, answer: Optional[Trial], model: Any, call_args: List[Any],
             done: Ledger, plan: StagePlan) -> JsonObject:
    """The one op that reproduces alone, among those the answer's forward called (PIR programs)."""
    if program_format(done.setup.get("export")["program"]) != PIR:
        return {"isolation": {"outcome": Outcome.NOT_RUN, "runs": 0,
                              "why": "a one-op program is written with paddle._C_ops, which builds PIR programs only "
                                     "(Paddle >= 3.0); this cell's programs are legacy"}}
    paddle = ctx.paddle
    if answer is not None and tuple(answer.members) in trials.layers:
        layer, arrays = trials.layers[tuple(answer.members)]
        forward = lambda: layer(*[paddle.to_tensor(a) for a in arrays])  # noqa: E731
        holder = layer
    else:
        forward = lambda: model(*call_args)  # noqa: E731
        holder = model
    diff = done.analysis(Analysis.DIFF)
    first = ((diff.get("first_divergence") if diff is not None else None) or {}).get("op")
    message = done.stage(plan.name).message
    calls = isolation.record_ops(paddle, forward, [*holder.parameters(), *holder.buffers()])
    trials.held_ids = {id(t) for t in [*holder.parameters(), *holder.buffers()]}
    ranked, rules = isolation.schedule(calls, message, first)
    types = len({c.name.rstrip("_") for c in ranked})
    tried: List[JsonObject] = []
    # The ops the failure's words or the diff point at, each alone; the rest pooled (``_first_of``).
    suspects = [c for c in ranked if isolation.suspicion(c, message, first) > 0]
    for group in [[c] for c in suspects]:
        found = _try_written(trials, isolation.written(group), tried)
        if found is not None:
            return _isolated(found, trials, tried, len(ranked), rules, types)
    together = [False]  # see ``_first_of``
    found = _first_of(trials, [[c] for c in ranked if c not in suspects], tried, together)
    if found is not None:
        return _isolated(found, trials, tried, len(ranked), rules, types)
    # No op alone: an if the forward took on an op's output (control flow), then adjacent ops (a
    # fusion needs both of its ops).
    taken = isolation.branches(calls)
    rules["branches"] = len(taken)
    for group, at in taken:
        found = _try_written(trials, isolation.written(group, branched_at=at), tried)
        if found is not None:
            return _isolated(found, trials, tried, len(ranked) + len(taken), rules, types)
    grouped, chain_rules = isolation.chains(calls, message, first)
    rules.update(chain_rules)
    found = _first_of(trials, grouped, tried, together)
    if found is not None:
        return _isolated(found, trials, tried, len(ranked) + len(taken) + len(grouped), rules, types)
    # Then the shortest run of the forward's ops, in order, that still reproduces (longer chains).
    found, rules["windows"] = _smallest_window(trials, isolation.in_order(calls), tried)
    if found is not None:
        return _isolated(found, trials, tried, len(ranked) + len(taken) + len(grouped) + rules["windows"], rules, types)
    pools = sum(1 for t in tried if t.get("pooled"))
    why = ((f"{pools} of its {len(tried)} runs pooled candidates side by side (each on the tensors it received); "
            if pools else "")
           + f"none of its {len(ranked)} ops tried ({types} op types, every type at least once, at most "
           f"{isolation.PER_TYPE} per type) reproduces alone"
           + (f"; {rules['capped']} more calls of types already tried twice were not" if rules["capped"] else "")
           + f"; nor {rules['branches']} branch(es) the forward took, {rules['pairs']} adjacent pair(s) and "
             f"{rules['chains']} chain(s) of three, nor a run of the forward's ops ({rules['windows']} tried)"
           + (f" ({rules['capped_pairs']} pairs and {rules['capped_chains']} chains beyond the caps not tried)"
              if rules["capped_pairs"] or rules["capped_chains"] else "")
           + ("; pools reproduced where no candidate of them did alone: the failure needs several ops at once"
              if together[0] else ""))
    return {"isolation": {"outcome": Outcome.NOT_FOUND, "runs": len(tried), "candidates": len(ranked) + len(taken) + len(grouped),
                          "rules": rules, "op_types": types, "tried": tried, "why": why}}


# The most one-op programs asked of a layer's own forward before its finer groups (whose budget is
# ``FINE_LIMIT``): the probe stays a fraction of what it may save. ``HARNESS_OWN_OP_PROBES=0`` turns
# it off: ``harness.bench.reduction`` measures the descent with and without it side by side.
OWN_OP_PROBES = int(os.environ.get("HARNESS_OWN_OP_PROBES", "6"))


def _own_op(ctx: CellContext, trials: PieceTrials, calls: Dict[str, Call], node: str,
            whole: Tuple[Any, List[Any]], done: Ledger, plan: StagePlan) -> Optional[JsonObject]:
    """The isolation's answer when an op that ``node``'s own forward runs (outside the sublayers it
    calls) reproduces alone on the tensors it received, else None: asked where no half of its
    sublayers reproduces. Ops inside a sublayer are told apart by hooks on the sublayers the forward
    calls, not by source lines (a model's code may live anywhere)."""
    if OWN_OP_PROBES <= 0 or program_format(done.setup.get("export")["program"]) != PIR:
        return None
    paddle = ctx.paddle
    if node:
        if (node,) not in trials.layers:
            return None
        layer, arrays = trials.layers[(node,)]
        forward = lambda: layer(*[paddle.to_tensor(a) for a in arrays])  # noqa: E731
        holder = layer
    else:
        model, call_args = whole
        forward, holder = (lambda: model(*call_args)), model  # noqa: E731
    sublayers = [calls[c].layer for c in calls[node].children]
    held = [*holder.parameters(), *holder.buffers()]
    recorded = isolation.record_ops(paddle, forward, held, within=sublayers)
    own = [c for c in recorded if not c.in_sublayer]
    if not own:
        return None
    trials.held_ids = {id(t) for t in held}
    diff = done.analysis(Analysis.DIFF)
    first = ((diff.get("first_divergence") if diff is not None else None) or {}).get("op")
    ranked, rules = isolation.schedule(own, done.stage(plan.name).message, first)
    ranked = ranked[:OWN_OP_PROBES]
    rules["own_ops_of"] = len(ranked)
    tried: List[JsonObject] = []
    for call in ranked:
        found = _try_written(trials, isolation.written([call]), tried)
        if found is not None:
            return _isolated(found, trials, tried, len(ranked), rules, len({c.name.rstrip("_") for c in ranked}))
    return None


def _smallest_window(trials: PieceTrials, ops: List["isolation.OpCall"],
                     tried: List[JsonObject]) -> Tuple[Optional[Tuple[Any, Trial]], int]:
    """The shortest run ``ops[start:end]`` of the forward's ops (in order, each wired to the ones
    before it, the rest fed) that reproduces: all of them first, then the latest start that still
    does, then the earliest end (binary searches: a failure that needs ops far apart is not
    split). None when even all of them do not, or the piece has more ops than ``MAX_WINDOW_OPS``."""
    if not 3 < len(ops) <= isolation.MAX_WINDOW_OPS:
        return None, 0
    before = len(tried)
    whole = _try_written(trials, isolation.written(ops, every_end=True), tried)
    if whole is None:
        return None, len(tried) - before
    best, start, end = whole, 0, len(ops)
    low, high = 0, len(ops) - 1  # the latest start that reproduces lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        found = _try_written(trials, isolation.written(ops[middle:end], every_end=True), tried)
        if found is not None:
            best, low = found, middle
        else:
            high = middle - 1
    start = low
    low, high = start + 1, end  # the earliest end that reproduces lies in [low, high]
    while low < high:
        middle = (low + high) // 2
        found = _try_written(trials, isolation.written(ops[start:middle], every_end=True), tried)
        if found is not None:
            best, high = found, middle
        else:
            low = middle + 1
    return best, len(tried) - before


# The most candidates one pooled program holds: a larger list is asked in parts this size.
POOL_LIMIT = 64


def _first_of(trials: PieceTrials, groups: List[List["isolation.OpCall"]], tried: List[JsonObject],
              together: Optional[List[bool]] = None) -> Optional[Tuple[Any, Trial]]:
    """The first of ``groups`` (in their order) that reproduces alone, found by group testing: the
    candidates side by side in one program (``isolation.side_by_side``); one that runs clean clears
    them all in one run; one that reproduces or says nothing (another candidate raised first) is
    split in halves, the first half asked first. Every answer is a candidate that reproduced alone.

    ``together`` (shared by the calls of one isolation): set once a reproducing pool held no
    candidate that reproduces alone — the failure needs several ops at once (a conversion that
    reads memory it never wrote fails on a larger graph): later pools that reproduce are not split
    further, and the isolation goes on to runs of the forward's ops, where such a failure is found."""
    together = together if together is not None else [False]
    if len(groups) > POOL_LIMIT:
        return next((found for start in range(0, len(groups), POOL_LIMIT)
                     for found in [_first_of(trials, groups[start:start + POOL_LIMIT], tried, together)]
                     if found is not None), None)
    if len(groups) <= 2:
        return next((found for group in groups
                     for found in [_try_written(trials, isolation.written(group), tried)] if found is not None), None)
    pool = isolation.side_by_side(groups)
    trial = trials.one_op(pool)
    tried.append({"op": pool.op_type, "call": pool.describe(), "form": _form(pool), "pooled": len(groups),
                  **trial.to_dict()})
    if not trial.reproduces and not trial.says_nothing:
        return None
    if trial.reproduces and together[0]:
        tried[-1]["note"] += "; not split: an earlier pool reproduced with no candidate of it reproducing alone"
        return None
    half = len(groups) // 2
    found = _first_of(trials, groups[:half], tried, together) or _first_of(trials, groups[half:], tried, together)
    if found is None and trial.reproduces:
        together[0] = True
    return found


def _try_written(trials: PieceTrials, program: "isolation.Written", tried: List[JsonObject]) -> Optional[Tuple[Any, Trial]]:
    """The program, in the public calls the model made; where that form says nothing (it could not be
    exported or run alone), the same ops as ``paddle._C_ops`` once more."""
    trial = trials.one_op(program)
    tried.append({"op": program.op_type, "call": program.describe(), "form": _form(program), **trial.to_dict()})
    fallback = program.as_c_ops() if trial.says_nothing else None
    if fallback is not None:
        program, trial = fallback, trials.one_op(fallback)
        tried.append({"op": program.op_type, "call": program.describe(), "form": _form(program), **trial.to_dict()})
    return (program, trial) if trial.reproduces else None


def _form(program: "isolation.Written") -> str:
    if program.harness_form:
        return "paddle._C_ops (no public call ran it alone)"
    return ("the public API the model called" if all(c.public is not None for c in program.calls)
            else "Paddle's public API (calls that build its ops from their attributes)")


def _isolated(found: Tuple[Any, Trial], trials: PieceTrials, tried: List[JsonObject], candidates: int,
              rules: Dict[str, int], types: int) -> JsonObject:
    program, trial = found
    public = _public_form(trials, program, tried)
    if public is not None and public[1].reproduces:
        program, trial = public  # the same op, as the model's forward called it: the reproducer's form
    alone = len(program.op_types) == 1
    held = None
    if program.held:  # the model's parameters the op read: the reproducer sets them as they were
        held = Path(trial.files["program"]).parent / "held.npz"
        np.savez(held, **program.held)
    return {"outcome": Outcome.ISOLATED, "op": program.op_type, "ops": program.op_types, "op_call": program.describe(),
            "op_by": ("isolation: this op alone, on the tensors it received in the model, reproduces the failure"
                      if alone else
                      f"isolation: no op reproduces alone; {program.kind}, on the tensors they received in the "
                      f"model, reproduce it"),
            "piece": {**_replayable(trial, trials.failed),
                      "op_source": str(source_path(Path(trial.files["program"]).parent, isolation.ONE_OP)),
                      "held": str(held) if held else None},
            "isolation": {"outcome": Outcome.ISOLATED, "runs": len(tried), "candidates": candidates,
                          "rules": rules, "op_types": types, "tried": tried},
            **_public_words(program, public)}


def _public_form(trials: PieceTrials, program: "isolation.Written", tried: List[JsonObject]
                 ) -> Optional[Tuple[Any, Trial]]:
    """The isolated op written as the public call the model's forward made (``public_api``), tried
    once: the reproducer calls it when it reproduces as the ``_C_ops`` form did."""
    call = program.calls[0].public if len(program.calls) == 1 and program.branched_at is None else None
    if call is None or not program.harness_form:  # none, or the program speaks it already
        return None
    source, fed, held = written_public(call, trials.held_ids, isolation.ONE_OP)
    public = isolation.Written(list(program.calls), source, fed, held)
    trial = trials.one_op(public)
    tried.append({"op": program.op_type, "call": call.describe(), "public": True, **trial.to_dict()})
    return public, trial


def _public_words(program: "isolation.Written", public: Optional[Tuple[Any, Trial]]) -> JsonObject:
    calls = list({id(c.public): c.public for c in program.calls if c.public is not None}.values())
    if not calls:
        return {}
    words: JsonObject = {"op_api": [c.describe() for c in calls], "api_config": [c.config_line() for c in calls]}
    if not program.harness_form:
        words["op_api_reproduces"] = True  # the reproducing program is the public calls themselves
    elif public is not None:
        trial = public[1]
        # A public form the harness could not export alone says nothing about the op: said apart.
        words["op_api_reproduces"] = None if trial.untestable else trial.reproduces
        if trial.untestable:
            words["op_api_note"] = trial.note
    return words


def _op_or_fusion(op_types: Dict[str, int], found: Found, answer: Optional[Trial], plan: StagePlan,
                  done: Ledger) -> JsonObject:
    """The answer's own op (by elimination over its sublayers' programs), or the fusion the culprit
    search named when its sublayers do not reproduce alone."""
    search = done.analysis(Analysis.BISECT)
    fusions = ([c for c in (search.get("culprits") or []) if "fuse" in c]
               if search is not None and search.stage == plan.name else [])
    if fusions and answer is not None and found.below:
        # Its sublayers do not reproduce alone and a fusion pass is the culprit: the failure is
        # the fusion across them, not an op of this layer's own.
        return {"why_here": (f"its sublayers do not reproduce alone and the culprit search names "
                             f"{', '.join(fusions)}: the fusion across its sublayers"), "fusion": fusions}
    if not found.below:
        return {}
    own = own_op_types(op_types, found.below)
    if len(own) != 1:
        return {"own_op_types": own}
    return {"own_op_types": own, "op": own[0],
            "op_by": ("elimination: the one op type of this piece's program that the programs of its "
                      "sublayers, which do not reproduce, do not have")}


def _replayable(answer: Trial, failed: Status) -> JsonObject:
    """What the reproducer replays: the piece's program, its inputs and the outputs it is held to
    (``expected``, a numeric failure's); Paddle's outputs of it whenever they ran (``paddle_outputs``:
    what a converted file is judged against when the stage raised)."""
    home = Path(answer.files["program"]).parent
    np.savez(home / "inputs.npz", **answer.feeds)
    held = answer.expected is not None
    if held:
        OUTPUTS.save(home / "expected.npz", answer.expected)
    return {"files": answer.files, "inputs": str(home / "inputs.npz"),
            "expected": str(home / "expected.npz") if failed is Status.FAIL else None,
            "paddle_outputs": str(home / "expected.npz") if held else None,
            "outputs": len(answer.expected or [])}


__all__ = ["reduce_failure", "own_op_types"]
