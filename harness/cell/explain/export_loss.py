"""What the export lost (cell side): a consistency failure the triage put on the export, explained
against the model's own Python.

When the saved program does not compute what the forward computes, the question is not which op of
the program misbehaves but what the program lacks, gained or froze. The readings, each with the
model's source line:

* **lost and gained ops**: the forward run once in dygraph with every op recorded (``isolation.
  record_ops``, each op with the model's line that ran it) against the op types of the program
  ``jit.save`` wrote (sub-blocks included): an op type dygraph ran more often than the program holds
  it was lost (pruned because no output needed it, an in-place write inside a converted branch that
  never reached the tensor outside); the enclosing Python control flow of its line is said (an early
  ``continue``/``break``/``return`` before it, the ``if`` or loop around it), and the program's
  ``if``/``while`` ops are counted (a Python condition ``to_static`` turned into a tensor condition);
* **state set in ``forward``**: attributes a layer's ``forward`` assigns (``self.attn = ...``) that hold
  a tensor after the eager calls before the export: ``to_static`` reads them back as values of the
  program (measured at 3.3.1: the program held a parameter where the forward computed a softmax);
* **type tests the trace answers otherwise**: ``isinstance(x, paddle.Tensor)`` on a line the forward
  executed, False while ``to_static`` traces (``type_tests``);
* **a fresh export**: a new instance with the same weights and no eager call before it, exported the
  same way in a child (``sandbox``) and run by Paddle's executor: when it agrees with dygraph where
  the cell's export did not, the export "depends on an earlier eager call"."""

from __future__ import annotations

import ast
import collections
import difflib
import inspect
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from ...shared.causes import raised_status, shareable_path
from ...shared.compare import compare_all
from ...shared.json_types import JsonObject
from ...shared.vocab import Status
from ..anatomy import isolation
from ..base import sandbox
from . import type_tests
from ..anatomy.public_api import tensors_in

# Program ops that stand for no dygraph op (feeds, fetches, parameters, constants, shapes, control
# flow's own plumbing): never "gained".
PLUMBING = {"data", "feed", "fetch", "shadow_output", "parameter", "p", "constant", "full", "full_int_array",
            "shape", "shape64", "slice", "assign", "assign_value", "combine", "split", "yield", "if", "while",
            "has_elements", "select_input", "increment", "less_than", "tensorrt_engine", "cast", "stack",
            "memcpy", "memcpy_h2d", "memcpy_d2h", "share_data", "scale", "reshape", "builtin.combine"}
CONTROL_FLOW = ("if", "while")
LINES_KEPT = 3


def normalized(op: str) -> str:
    """An op type as both sides name it: no dialect, no in-place underscore."""
    return op.split(".")[-1].rstrip("_")


# Dygraph ops a program spells as several (PIR writes ``linear`` as ``matmul`` + ``add``).
PROGRAM_FORM = {"linear": ("matmul", "add")}


# Tensor operators with a Python number beside the tensor run ``scale`` in dygraph and in the program.
SCALED_BY_A_NUMBER = {"add", "subtract", "multiply", "divide"}


def _forms(call: isolation.OpCall) -> Tuple[str, ...]:
    if call.operator and normalized(call.name) in SCALED_BY_A_NUMBER and any(i < 0 for i in call.input_ids):
        return ("scale",)  # the recorder's constant operand (a negative id): ``x * 4.0`` is ``scale``
    return PROGRAM_FORM.get(normalized(call.name), (normalized(call.name),))


def lost_and_gained(calls: Sequence[isolation.OpCall], program_ops: Sequence[str],
                    returned: Sequence[int] = ()) -> Tuple[List[JsonObject], List[str]]:
    """Op types dygraph ran more often than the program holds them, each with the model's lines of
    the calls the program lacks: every call of a type the program holds none of; of a type it holds
    fewer of, the calls next to those (one reads what the other wrote) — counts alone cannot say
    which ``matmul`` of three went. A lost call that wrote what the model returns comes first (the
    in-place ``index_add_`` into the output), then the forward's order. And the program's op types
    dygraph never ran (plumbing aside). ``returned``: the ids of the tensors the forward returned."""
    ran: Dict[str, int] = collections.Counter(op for call in calls for op in _forms(call))
    held = collections.Counter(normalized(op) for op in program_ops)
    missing = {op: n - held.get(op, 0) for op, n in ran.items() if n > held.get(op, 0) and op not in PLUMBING}
    gone = {op for op in missing if held.get(op, 0) == 0}
    surely = [c for c in calls if set(_forms(c)) & gone]
    touching = {i for c in surely for i in (*c.input_ids, *c.output_ids)}
    chosen = list(surely)
    for op, n in missing.items():
        if op not in gone:  # partly kept: the calls beside a call that surely went, at most as many as are missing
            beside = [c for c in calls if op in _forms(c) and c not in chosen
                      and touching & {*c.input_ids, *c.output_ids}]
            chosen += beside[:n]
    entries: Dict[str, JsonObject] = {}
    for call in sorted(chosen, key=lambda c: c.order):
        key = normalized(call.name)
        forms = _forms(call)
        entry = entries.setdefault(key, {"op": call.name, "dygraph": ran.get(forms[0], 0), "at": [],
                                         "program": min(held.get(op, 0) for op in forms), "first": call.order,
                                         "end": False})
        if call.at and call.at not in entry["at"] and len(entry["at"]) < LINES_KEPT:
            entry["at"].append(call.at)
        entry["end"] = entry["end"] or bool(set(call.output_ids) & set(returned))
    lost = sorted(entries.values(), key=lambda e: (not e["end"], e["first"]))
    for entry in lost:
        entry.pop("first")
        entry["context"] = context_of(entry["at"][0]) if entry["at"] else ""  # read where the file is here
        entry["line"] = _source_line(entry["at"][0]) if entry["at"] else ""  # the statement, as the model wrote it
        entry["at"] = [_shareable(at) for at in entry["at"]]
    gained = sorted(op for op in held if op not in ran and op not in PLUMBING)
    return lost, gained


def context_of(at: str) -> str:
    """The Python control flow around ``file:line``: an early exit before it in the same loop or
    function (``after `if idx.shape[0] == 0: continue` (moe.py:15)``), else the ``if``/loop around it."""
    path, _, number = at.rpartition(":")
    try:
        line = int(number)
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (ValueError, OSError, SyntaxError):
        return ""
    name = shareable_path(path)
    enclosing: List[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.While, ast.If, ast.FunctionDef)) and node.lineno <= line <= (node.end_lineno or 0):
            enclosing.append(node)
    enclosing.sort(key=lambda n: n.lineno)
    for block in reversed(enclosing):
        for stmt in block.body:
            if stmt.lineno >= line:
                break
            if isinstance(stmt, ast.If) and any(isinstance(n, (ast.Continue, ast.Break, ast.Return))
                                                for n in ast.walk(stmt)):
                return f"after `{_one_line(stmt)}` ({name}:{stmt.lineno})"
    inner = next((n for n in reversed(enclosing) if not isinstance(n, ast.FunctionDef)), None)
    return f"inside `{_one_line(inner)}` ({name}:{inner.lineno})" if inner is not None else ""


def _one_line(node: ast.AST) -> str:
    """A statement's head as one line: ``if idx.shape[0] == 0: continue``, ``for e in range(4):``."""
    if isinstance(node, ast.If):
        body = node.body[0] if len(node.body) == 1 and not node.orelse else None
        tail = f" {ast.unparse(body)}" if isinstance(body, (ast.Continue, ast.Break, ast.Return, ast.Pass)) else ""
        return f"if {ast.unparse(node.test)}:{tail}"
    if isinstance(node, ast.For):
        return f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)}:"
    if isinstance(node, ast.While):
        return f"while {ast.unparse(node.test)}:"
    return ast.unparse(node).splitlines()[0]


def numbers_of(model: Any) -> Dict[Tuple[str, str], float]:
    """Every Python number a layer of ``model`` holds as an attribute, by (layer path, attribute)."""
    return {(path, name): value for path, layer in [("", model), *model.named_sublayers()]
            for name, value in vars(layer).items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}


def _assignments(cls: type, files: Dict[str, Any]) -> List[Tuple[str, int, str]]:
    """``(file, line, attribute)`` of each ``self.<attribute> = ...`` in the methods ``cls`` and its
    bases define outside Paddle (``forward`` and what it calls: PaddleSpeech keeps its attention in
    ``forward_attention``). Each file parsed whole (``files``: the trees so far), its function found
    by the line the compiler gave it: a method's own source, parsed alone, numbers its lines otherwise
    where the file holds a form feed (``inspect`` splits lines as ``str.splitlines`` does)."""
    found: List[Tuple[str, int, str]] = []
    for name, method in inspect.getmembers(cls, inspect.isfunction):
        if (method.__module__ or "").split(".")[0] == "paddle" or name.startswith("__"):
            continue
        file = inspect.getsourcefile(method) or ""
        if file not in files:
            try:
                files[file] = ast.parse(Path(file).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                files[file] = None
        first = method.__code__.co_firstlineno
        node = next((n for n in ast.walk(files[file]) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and first in (n.lineno, *(d.lineno for d in n.decorator_list[:1]))), None) if files[file] else None
        for inner in ast.walk(node) if node is not None else ():
            targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target] if isinstance(
                inner, (ast.AnnAssign, ast.AugAssign)) else []
            found += [(file, inner.lineno, t.attr) for t in targets
                      if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"]
    return found


def forward_state(paddle: Any, model: Any, numbers_before: Dict[Tuple[str, str], float]) -> List[JsonObject]:
    """Attributes a layer's methods assign that now hold a tensor, or a Python number an eager call
    changed (``numbers_before``: ``numbers_of`` before it; a number set to the same constant at each
    call is no state): each with the layer's path, the line that assigns it and its kind. The trace
    reads either back as a value of the program (a number as the constant it was then)."""
    found: List[JsonObject] = []
    by_class: Dict[type, List[Tuple[str, int, str]]] = {}
    files: Dict[str, Any] = {}
    for path, layer in [("", model), *model.named_sublayers()]:
        cls = type(layer)
        if cls not in by_class:
            by_class[cls] = _assignments(cls, files) if (cls.__module__ or "").split(".")[0] != "paddle" else []
        for file, line, attribute in by_class[cls]:
            held = getattr(layer, attribute, None)
            kind = ("tensor" if isinstance(held, paddle.Tensor) else
                    "number" if (isinstance(held, (int, float)) and not isinstance(held, bool)
                                 and numbers_before.get((path, attribute)) != held) else "")
            entry = {"layer": path or cls.__name__, "attribute": attribute, "kind": kind,
                     "at": _shareable(f"{file}:{line}")}
            if kind and not any(e["layer"] == entry["layer"] and e["attribute"] == attribute for e in found):
                found.append(entry)  # the first line that assigns it
    return found


def _fresh_instance_exported(ctx: Any, then: Any, weights: Any = None) -> Any:
    """In a child (``sandbox``): a new instance from the factory (with ``weights`` when given), exported
    at once as the cell exports, with no eager call before it; ``then(files)`` its answer, or the
    export's own failure as ``{"raised": message}``. A ``Death`` or a ``RuntimeError`` (the factory
    raised in the child) is the caller's to say."""
    from ...models import sources

    folder = ctx.work / "export-fresh"
    paddle = ctx.paddle

    def in_the_child() -> JsonObject:
        layer, input_spec = sources.build(ctx.cell.model["factory"], paddle, ctx.cell.seed, f"{ctx.where}.factory")
        layer = ctx.mode.prepare(paddle, layer)
        if weights is not None:
            layer.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
        layer.eval()
        sandbox.phase("export")
        try:
            files = ctx.mode.export(ctx.saved, layer, input_spec, folder / "model")
        except Exception as exc:  # Paddle's answer for the fresh instance: said, as the cell's was
            return {"raised": raised_status(exc)[1]}
        sandbox.phase("executor")
        return then(files)

    return sandbox.in_child(in_the_child, folder, sandbox.deadline(ctx.cell.stage_timeout))


def fresh_export(ctx: Any, setup: Any, shape: int, reference: List[Any], labels: List[str], plan: Any) -> JsonObject:
    """A new instance (the factory again, the exported weights, no eager call) exported as the cell
    exports, run by Paddle's executor at ``shape`` and compared with dygraph, in a child."""
    from ..setup.rebuild import read_weights

    def judged(files: Any) -> JsonObject:
        got = ctx.saved.run_saved_program(files, ctx.feeds(shape), setup.get("signature_order"))
        stats = compare_all(reference, got, [ctx.tolerance(plan, label) for label in labels], "the fresh export's outputs")
        return {"agrees": all(s.passed for s in stats), "max_abs": max((s.max_abs or 0.0) for s in stats) if stats else 0.0}

    try:
        answer = _fresh_instance_exported(ctx, judged, read_weights(setup.get("weights")["path"]))
    except RuntimeError as exc:  # the factory or the executor raised in the child: said, not judged
        return {"agrees": None, "why": str(exc).splitlines()[0][:300]}
    if isinstance(answer, sandbox.Death):
        return {"agrees": None, "why": f"its process died: {answer.words()}"}
    if "raised" in answer:
        return {"agrees": None, "why": f"a fresh export raises: {answer['raised'][:240]}"}
    return answer


def export_without_eager_call(ctx: Any, raised: str) -> JsonObject:
    """For an export that raised: a new instance from the factory (random weights: whether it raises
    is the question), exported at once, with no eager call before it, in a child. Its answer and
    words: "depends on an earlier eager call: a fresh instance exports" or "a fresh instance's export
    raises too" (the cell's cause, ``raised``), or "raises otherwise" with its words."""
    from ...shared.causes import stage_cause

    try:
        answer = _fresh_instance_exported(ctx, lambda files: {})
    except RuntimeError as exc:
        return {"raises": None, "words": f"no fresh export: {str(exc).splitlines()[0][:200]}"}
    if isinstance(answer, sandbox.Death):
        return {"raises": None, "words": f"no fresh export: its process died: {answer.words()}"}
    answer = {"raises": True, "message": answer["raised"]} if "raised" in answer else {"raises": False}
    if answer["raises"]:
        same = stage_cause(answer["message"]) == stage_cause(raised)
        answer["words"] = ("a fresh instance's export (no eager call before it) raises too" if same else
                           f"a fresh instance's export (no eager call before it) raises otherwise: {answer['message'][:160]}")
    else:
        answer["words"] = ("depends on an earlier eager call: a fresh instance (no eager call before it) exports; "
                           "state its forward keeps from a call (an attribute set in forward, a cache) is traced as a value")
    return answer


def in_order(forward: Sequence[Any], program: Sequence[Any]) -> List[Tuple[int, int, str]]:
    """Pairs of dygraph's op outputs and the program's, by the longest common run of op types in
    both orders (``difflib``), same shape: an op the program lost or gained shifts the count of its
    type, and a pairing by occurrence would then pair nothing of that type, the parting included."""
    from ..anatomy.layerwise import normalized_op

    ops_a = [normalized_op(t.op) for t in forward]
    ops_b = [normalized_op(t.op) for t in program]
    pairs = []
    for block in difflib.SequenceMatcher(None, ops_a, ops_b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            i, j = block.a + k, block.b + k
            if forward[i].readable and program[j].readable and forward[i].shape == program[j].shape:
                pairs.append((i, j, "order"))
    return pairs


def first_parting(ctx: Any, plan: Any, setup: Any, shape: int, calls: Sequence[isolation.OpCall],
                  outputs: Dict[int, List[Any]]) -> JsonObject:
    """The first intermediate where dygraph and the program part: every op's outputs in the forward
    (as each op made them) against the program's op outputs, as Paddle's predictor at the failing
    stage's config (memory optimization off: one name, one tensor) computes them with every op
    output hooked — paired as the per-tensor diff pairs two runs (``layerwise``: the k-th op of a
    type with the k-th where both sides hold it equally often, else by value between those), in
    the forward's order. Ops the program lacks have no pair: what was lost is ``lost``'s to say."""
    from ...shared.config import PredictorConfig
    from ...shared.tensor_diff import DumpedTensor
    from ..anatomy.layerwise import compare_dumps, dump, match, save_tensors
    from ..paddle_api import config as paddle_config, predictor as paddle_predictor

    if not isinstance(plan.config, PredictorConfig):
        return {"why": f"stage {plan.name} is not Paddle Inference's: its program's tensors are not hooked"}
    folder = ctx.work / "export-parting"
    made: List[Any] = []
    tensors = []
    for call in calls:
        for k, array in enumerate(outputs.get(call.order, [])):
            if array.dtype.kind in "fiu" and array.size:
                # as the program spells it: a ``linear``'s output is its ``add``'s
                tensors.append((DumpedTensor(f"pd_op.{_forms(call)[-1]}", f"dygraph_{call.order}_{k}"), array))
                made.append(call)
    forward_side = save_tensors(folder / "dygraph", tensors)
    feeds = ctx.feeds(shape)
    config = paddle_config.make_config(setup.get("export"), plan.config.replace(memory=False),
                                       {k: list(v.shape) for k, v in feeds.items()})
    predictor = paddle_predictor.create_predictor(config)
    program_side = dump(predictor, feeds, folder / "program")
    del predictor
    rows, unmatched, pairs = compare_dumps(
        folder / "dygraph", folder / "program", forward_side, program_side.index,
        ctx.tolerance(plan, (setup.output_labels or [None])[0]),
        matcher=lambda value_of: match(forward_side, program_side.index, value_of, anchors=in_order))
    # The dumps are scratch (every intermediate twice): ``running/prune`` removes the folder once recorded.
    said: JsonObject = {"pairs": pairs, "dygraph_tensors": len(forward_side), "program_tensors": len(program_side.index),
                        "unpaired": sum(1 for u in unmatched if u.side == "base")}
    # A fusion's renamed tensor (the per-tensor diff's "suspect") cannot happen with every pass off:
    # the first pair beyond the tolerance is where they part; an all-zero pair agrees.
    first = next((r for r in rows if r.status is Status.FAIL), None)
    if first is None:
        said["agree"] = True
        return said
    call = made[first.index]
    said.update(agree=False, op=call.op_type, at=_shareable(call.at) if call.at else "", line=_source_line(call.at),
                shape=list(first.shape), max_abs=first.max_abs, matched_by=first.matched_by,
                agreed_before=sum(1 for r in rows if r.index < first.index))
    return said


def explain(ctx: Any, plan: Any, setup: Any, shape: int, program: Path, reference: List[Any]) -> JsonObject:
    """The readings (the module's docstring) for the cell's model and its exported program."""
    from ..paddle_api.export import program_op_types
    from ..setup.rebuild import model_and_args

    paddle = ctx.paddle
    model, args, _ = model_and_args(ctx, setup, shape)
    numbers = numbers_of(model)
    held = list(model.parameters()) + list(model.buffers())
    result: List[Any] = []
    branched: List[str] = []
    outputs: Dict[int, List[Any]] = {}
    lines: Dict[str, Any] = {}

    def forward() -> None:  # recorded op by op, and line by line in the model's own files
        lines.update(type_tests.executed_lines(lambda: result.append(model(*args)), isolation.not_the_model(paddle)))

    calls = isolation.record_ops(paddle, forward, held, branched, outputs)
    state = forward_state(paddle, model, numbers)  # after the recorded eager call
    program_ops = program_op_types(program)
    lost, gained = lost_and_gained(calls, program_ops, [id(t) for _, t in tensors_in(paddle, result[0])])
    branches = sum(1 for op in program_ops if normalized(op) in CONTROL_FLOW)
    fresh = fresh_export(ctx, setup, shape, reference, setup.output_labels, plan)
    conditions = [{"at": _shareable(at), "line": _source_line(at)} for at in branched[:LINES_KEPT]]
    said: JsonObject = {"lost": lost, "gained": gained, "control_flow_ops": branches, "tensor_conditions": conditions,
                        "forward_state": state, "type_tests": type_tests.tensor_type_tests(lines),
                        "fresh_export": fresh, "dygraph_ops": len(calls), "program_ops": len(program_ops)}
    try:
        said["parting"] = first_parting(ctx, plan, setup, shape, calls, outputs)
    except Exception as exc:  # not asked, said: the predictor raised on the program, or the harness failed
        status, message = raised_status(exc)
        said["parting"] = {"why": ("not compared: the harness's own failure: " if status is Status.UNTESTABLE else
                                   "not compared: the program raises under the predictor: ") + message[:240]}
    del outputs
    said["words"] = words(said)
    return said


def words(said: JsonObject) -> str:
    """One line: what the program lost (op, line, context), the state it froze, the fresh export."""
    parts: List[str] = [w for w in [type_tests.words(said.get("type_tests") or [], _shareable)] if w]
    lost = said.get("lost") or []
    if lost:
        shown = []
        for entry in lost[:4]:
            where = f" ({_shareable(entry['at'][0])}" + (f", {entry['context']}" if entry.get("context") else "") + ")" \
                if entry.get("at") else ""
            count = (f" ({entry['dygraph']} call(s), {entry['program']} in the program)" if entry["program"] or
                     entry["dygraph"] > 1 else "")
            shown.append(f"`{entry['op']}`{count}{where}")
        parts.append("the program lost " + "; ".join(shown) + (f" and {len(lost) - 4} more op type(s)" if len(lost) > 4 else ""))
    conditions = said.get("tensor_conditions") or []
    if said.get("control_flow_ops") or conditions:
        where = "; ".join(f"`{c['line']}` ({c['at']})" if c.get("line") else c["at"] for c in conditions)
        parts.append(f"it holds {said.get('control_flow_ops') or 0} if/while op(s)"
                     + (f"; the forward branched on a tensor at {where}" if where else
                        ": a Python condition became a tensor condition"))
    for entry in (said.get("forward_state") or [])[:3]:
        held = ("a Python number, traced as the constant it was" if entry.get("kind") == "number" else
                "a tensor of an eager call when traced")
        parts.append(f"`self.{entry['attribute']}` of {entry['layer']} is set in forward ({_shareable(entry['at'])}) and "
                     f"held {held}")
    parting = said.get("parting") or {}
    if parting.get("agree") is False:
        line = f" `{parting['line']}`" if parting.get("line") else ""
        parts.append(f"dygraph and the program part first at `{parting['op']}`{line} ({parting['at']}; max abs "
                     f"{parting['max_abs']:.3g}, after {parting['agreed_before']} intermediate(s) that agree)")
    elif parting.get("agree") is True:
        parts.append(f"the {parting['pairs']} intermediate(s) paired with the program's agree: the outputs part "
                     f"through what the program lacks")
    fresh = said.get("fresh_export") or {}
    if fresh.get("agrees") is True:
        parts.append("depends on an earlier eager call: a fresh export passes")
    elif fresh.get("agrees") is False:
        parts.append("a fresh export (no eager call before it) fails too")
    elif fresh.get("why"):
        parts.append(f"no fresh export: {fresh['why'][:160]}")
    return "; ".join(parts)


def _source_line(at: str) -> str:
    """The model's source line ``file:line`` names, stripped ("" where the file cannot be read here)."""
    path, _, number = at.rpartition(":")
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()[int(number) - 1].strip()[:120]
    except (OSError, ValueError, IndexError):
        return ""


def _shareable(at: str) -> str:
    """``file:line`` with the file as a record says it (``causes.shareable_path``)."""
    path, _, line = at.rpartition(":")
    return f"{shareable_path(path)}:{line}"


__all__ = ["explain", "first_parting", "export_without_eager_call", "words", "lost_and_gained", "context_of", "forward_state", "PLUMBING"]
