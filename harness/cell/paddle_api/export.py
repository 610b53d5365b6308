"""``jit.save`` and the program it wrote: the export every cell makes once, the files behind a
prefix, and the saved program run by Paddle's own executor (not the inference engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Set

from ...shared.backends import program_format
from ...shared.errors import Finding, calling
from . import at_least, paddle, pir_default


def export(layer: "paddle.nn.Layer", input_spec: List[Any], prefix: Path) -> Dict[str, str]:
    """to_static + jit.save, once per cell; returns the files that were written."""
    return _save(_trace(layer, input_spec), prefix)


def export_reading_all(layer: "paddle.nn.Layer", input_spec: List[Any], prefix: Path) -> "Dict[str, str] | Set[int]":
    """``export``, when every input is involved in computing an output; else the indices of the
    inputs none is computed from (Paddle refuses to save such a feed: "The feed_var ... is not
    involved in the target_vars calculation"), found in the traced program before any save: an
    input read only by ops no output needs counts as unread. The trace is made once: ``jit.save``
    reuses it."""
    static = _trace(layer, input_spec)
    with calling("paddle.jit.to_static()"):
        traced = static.forward.concrete_program
    names = [spec.name for spec in input_spec]
    involved = _involved(traced.main_program, paddle.utils.flatten(traced.outputs))
    unread = {k for k, name in enumerate(names) if name not in involved}
    return unread if unread else _save(static, prefix)


def _trace(layer: "paddle.nn.Layer", input_spec: List[Any]) -> Any:
    with calling("paddle.jit.to_static()"):
        return paddle.jit.to_static(layer, input_spec=input_spec, full_graph=True)


def _save(static: Any, prefix: Path) -> Dict[str, str]:
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with calling("paddle.jit.save()"):
        paddle.jit.save(static, str(prefix))
    return model_files(prefix)


def _involved(program: Any, outputs: List[Any]) -> Set[str]:
    """The names of the inputs some output is computed from: the program walked back from its
    outputs (under PIR by defining ops, a legacy program by variable names), every op inside a
    control-flow block of a reached op counting as reached."""
    if pir_default():
        found, seen = set(), set()
        stack = [value.get_defining_op() for value in outputs]
        while stack:
            op = stack.pop()
            if op is None or op.id() in seen:
                continue
            seen.add(op.id())
            if op.name() == "pd_op.data":
                found.add(op.attrs().get("name"))
            stack.extend(source.get_defining_op() for source in op.operands_source())
            stack.extend(inner for block in op.blocks() for inner in block.ops)
        return found
    needed = {value.name for value in outputs}
    for op in reversed(program.global_block().ops):
        if needed & set(op.output_arg_names):
            needed |= set(op.input_arg_names)
            if op.has_attr("sub_block"):
                needed |= {name for inner in program.block(op._block_attr_id("sub_block")).ops
                           for name in inner.input_arg_names}
    return needed


def model_files(prefix: Path) -> Dict[str, str]:
    """The program and params files behind ``prefix`` (PIR ``.json`` or legacy ``.pdmodel``)."""
    prefix = Path(prefix)
    params = prefix.with_name(prefix.name + ".pdiparams")
    candidates = [prefix.with_name(prefix.name + ".json"), prefix.with_name(prefix.name + ".pdmodel")]
    if not pir_default():
        candidates.reverse()
    for program in candidates:
        if program.exists():
            return {
                "program": str(program),
                "params": str(params) if params.exists() else "",
                "format": program_format(program),
            }
    raise Finding(f"jit.save wrote no {prefix.name}.json or {prefix.name}.pdmodel in {prefix.parent}")


def program_op_types(program: Path) -> List[str]:
    """The op names of a saved program, every block's (a PIR ``.json``: ``"<dialect id>.<name>"``
    under ``"#"``, the name kept; a legacy ``.pdmodel``: each block's op types)."""
    import json

    program = Path(program)
    names: List[str] = []
    if program.suffix == ".pdmodel":
        from paddle.base import core

        desc = core.ProgramDesc(program.read_bytes())
        for b in range(desc.num_blocks()):
            block = desc.block(b)
            names += [block.op(k).type() for k in range(block.op_size())]
        return names

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for op in node.get("ops") or [] if isinstance(node.get("ops"), list) else []:
                if isinstance(op, dict) and isinstance(op.get("#"), str):
                    names.append(op["#"].split(".", 1)[-1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(program.read_text(encoding="utf-8")))
    return names


def run_saved_program(files: Dict[str, str], feeds: Dict[str, Any], order: List[str]) -> List[Any]:
    """The saved program run by Paddle's own executor, not the inference engine: ``paddle.jit.load``
    (a TranslatedLayer; .pdmodel in 2.6, PIR .json in 3.x), inputs in the forward's order, outputs
    flattened as ``jit.save`` flattens them."""
    from ..base.structure import flatten_outputs

    prefix = str(Path(files["program"]).with_suffix(""))
    if Path(files["program"]).suffix == ".pdmodel" and at_least("3.0.0"):
        # A legacy program under Paddle 3 (PaddleSlim's save_quantized_model writes .pdmodel):
        # jit.load looks for the PIR .json only, so the legacy static executor runs it.
        from paddle import pir_utils

        paddle.enable_static()
        try:
            with pir_utils.OldIrGuard():
                exe = paddle.static.Executor(paddle.CPUPlace())
                with calling("paddle.static.load_inference_model()"):
                    program, feed_names, fetch = paddle.static.load_inference_model(prefix, exe)
                import numpy

                with calling("Executor.run()"):
                    return [numpy.asarray(a) for a in exe.run(program, feed={n: feeds[n] for n in feed_names},
                                                           fetch_list=fetch)]
        finally:
            paddle.disable_static()
    with calling("paddle.jit.load()"):
        layer = paddle.jit.load(prefix)
    layer.eval()
    with paddle.no_grad(), calling("TranslatedLayer()"):
        out = layer(*[paddle.to_tensor(feeds[name]) for name in order])
    return [array for _, array in flatten_outputs(paddle, out)]
