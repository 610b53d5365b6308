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
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with calling("paddle.jit.to_static()"):
        static = paddle.jit.to_static(layer, input_spec=input_spec, full_graph=True)
    with calling("paddle.jit.save()"):
        paddle.jit.save(static, str(prefix))
    return model_files(prefix)


def export_reading_all(layer: "paddle.nn.Layer", input_spec: List[Any], prefix: Path) -> "Dict[str, str] | Set[int]":
    """``export``, when the traced program reads every input; else the indices of the inputs it
    never reads (Paddle refuses to save a feed no output needs: "The feed_var ... is not involved in
    the target_vars calculation"), found in the program itself before any save. The trace is made
    once: ``jit.save`` reuses it."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with calling("paddle.jit.to_static()"):
        static = paddle.jit.to_static(layer, input_spec=input_spec, full_graph=True)
        program = static.forward.concrete_program.main_program
    unread = _unread(program, [spec.name for spec in input_spec])
    if unread:
        return unread
    with calling("paddle.jit.save()"):
        paddle.jit.save(static, str(prefix))
    return model_files(prefix)


def _unread(program: Any, names: List[str]) -> Set[int]:
    """Inputs (by their InputSpec names) that no op of ``program`` reads: a PIR ``pd_op.data``
    whose value has no use, or a legacy feed variable no op takes as an input."""
    block = program.global_block()
    if hasattr(block.ops[0] if block.ops else None, "result"):  # PIR
        unused = {op.attrs().get("name") for op in block.ops if op.name() == "pd_op.data" and op.result(0).use_empty()}
    else:
        read = {name for op in block.ops for name in op.input_arg_names}
        unused = {name for name in names if name not in read}
    return {k for k, name in enumerate(names) if name in unused}


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


def run_saved_program(files: Dict[str, str], feeds: Dict[str, Any], order: List[str]) -> List[Any]:
    """The saved program run by Paddle's own executor, not the inference engine: ``paddle.jit.load``
    (a TranslatedLayer; .pdmodel in 2.6, PIR .json in 3.x), inputs in the forward's order, outputs
    flattened as ``jit.save`` flattens them."""
    from ..structure import flatten_outputs

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
