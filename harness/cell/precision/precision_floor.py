"""What the precision itself explains (cell side): the noise floor a reduced-precision stage is judged by.

A bf16 or fp16 stage differs from fp32 by what the format rounds away plus whatever the runtime
does wrong; a fixed tolerance cannot tell the two apart (measured: the default matrix's
``mobilenet_v3_small`` under oneDNN bf16 at 3.3.1 moves its logits by 8.76 on a scale of 174, beyond
the 2% tolerance, while the same model with its weights, input and every op's output rounded to bf16
moves them by 8.82). So the floor is measured for this model and these inputs: the model in dygraph
(fp32 arithmetic) with its weights, its inputs and every op's output rounded to the format — each
``_C_ops`` call and Tensor operator, as a runtime that keeps every op in the format would — and its
outputs' distance from fp32 dygraph is the floor, per output. Paddle's own ``amp.auto_cast`` is no
reference here: at 3.3.1 on CPU it casts nothing for such a model (max abs 0.0, measured).

The stage's error against its fp32 reference is then judged against ``K`` times the floor: within
is a pass "within what bf16 explains"; beyond is a failure "N× beyond what bf16 explains", a fact
about the runtime (a finding, reduced like any). An output the floor leaves unmoved is held to the
fp32 tolerance instead of a floor of zero. The floor runs in a child (``sandbox``): the rounding
rewrites the model's weights and Paddle's op functions there and nowhere else. The whole model's floor
is measured by ``model_floor``; this module holds the arithmetic, the rounded run and the judgement
(a reduction piece's own floor included), which the reduction's trials use too."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ...shared.json_types import JsonObject
from ...shared.vocab import Precision, Status

# A stage within this many times the floor is within what the precision explains: the floor rounds
# every op while a runtime keeps some in fp32 and fuses others (fewer roundings), so the runtime's
# own error lands on both sides of it (measured: mobilenet_v3_small, oneDNN bf16, 0.99× the floor).
K = 3.0
FORMATS = {Precision.BF16: "bf16", Precision.FP16: "fp16"}
METHOD = ("the model in dygraph with its weights, inputs and every op's output rounded to {fmt} "
          "(fp32 arithmetic between), against fp32 dygraph")


def rounded(array: np.ndarray, fmt: str) -> np.ndarray:
    """``array`` (floating) rounded to ``fmt`` and back to its dtype: bf16 by round-to-nearest-even
    on the top 16 bits of fp32, fp16 by numpy's cast."""
    if not np.issubdtype(array.dtype, np.floating):
        return array
    if fmt == "fp16":
        return array.astype(np.float16).astype(array.dtype)
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    bits = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000))
    out = bits.view(np.float32)
    out = np.where(np.isfinite(array), out, array)  # inf and nan as they were
    return out.astype(array.dtype)


def _rounding(paddle: Any, fmt: str, value: Any) -> Any:
    if isinstance(value, paddle.Tensor) and value.dtype in (paddle.float32, paddle.float64):
        return paddle.to_tensor(rounded(value.numpy(), fmt))
    if isinstance(value, (list, tuple)):
        return type(value)(_rounding(paddle, fmt, v) for v in value)
    return value


def rounded_run(paddle: Any, layer: Any, call: Callable[[], Any], fmt: str) -> Any:
    """``call()`` with ``layer``'s weights and every op's output rounded to ``fmt`` (fp32 arithmetic
    between), in dygraph. Paddle's op functions stay rewritten for good: only ever in a child."""
    from paddle import _C_ops

    from ..anatomy.isolation import op_functions

    with paddle.no_grad():
        for tensor in [*layer.parameters(), *layer.buffers()]:
            if tensor.dtype in (paddle.float32, paddle.float64):
                tensor.set_value(rounded(tensor.numpy(), fmt))
    c_ops, operators = op_functions(paddle)
    for name, fn in c_ops.items():
        setattr(_C_ops, name, lambda *a, _fn=fn, **k: _rounding(paddle, fmt, _fn(*a, **k)))
    for method, fn in operators.items():
        setattr(paddle.Tensor, method, lambda *a, _fn=fn: _rounding(paddle, fmt, _fn(*a)))
    paddle.jit.enable_to_static(False)
    with paddle.no_grad():
        return call()


def piece_floor(paddle: Any, layer: Any, arrays: Sequence[np.ndarray], dygraph: Sequence[np.ndarray], fmt: str,
                outputs: Callable[[Any], List[np.ndarray]]) -> List[float]:
    """A reduction piece's own floor, per output: ``layer`` (a fresh instance of the piece) run on
    ``arrays`` with the format's rounding everywhere, against its fp32 dygraph outputs. ``outputs``
    turns the piece's return into its arrays, as its trial does."""
    got = rounded_run(paddle, layer, lambda: outputs(layer(*[paddle.to_tensor(rounded(np.asarray(a), fmt))
                                                            for a in arrays])), fmt)
    if len(got) != len(dygraph):
        raise ValueError(f"the rounded piece returns {len(got)} outputs, dygraph {len(dygraph)}")
    return [float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(r, np.float64)))) if np.size(r) else 0.0
            for g, r in zip(got, dygraph)]


def error_of(comparison: Any) -> Optional[float]:
    """The error a floor judges: the max abs distance, or infinity where the comparison found what
    no rounding explains (NaN or Inf the reference has not, another shape); None: nothing compared."""
    c = comparison
    if c.nan_got != c.nan_ref or c.inf_got != c.inf_ref or (c.got_shape is not None and tuple(c.got_shape) != tuple(c.shape)):
        return math.inf
    if c.max_abs is None:
        return math.inf if c.status is Status.FAIL else None
    return c.max_abs if math.isfinite(c.max_abs) else math.inf


def passes_by_floor(stage_extra: Mapping[str, Any], shape: int, labels: Sequence[str], comparisons: Sequence[Any],
                    fp32_atol: float) -> Optional[bool]:
    """A probe or a candidate config of a stage the floor judged, judged as the stage was: within the
    floor at ``shape`` (True) or beyond it (False); None when the stage was not judged by a floor
    there (its tolerance decides)."""
    measured = stage_extra.get("floor") or {}
    if not stage_extra.get("floor_verdict") or measured.get("why"):
        return None
    verdict = judge(measured, shape, {label: error_of(c) for label, c in zip(labels, comparisons)},
                    {label: fp32_atol for label in labels})
    return None if verdict is None else verdict["verdict"] == "within"


def judge(measured: Mapping[str, Any], shape: int, errors: Mapping[str, Optional[float]],
          fp32_atol: Mapping[str, float]) -> Optional[JsonObject]:
    """The stage at ``shape`` against the floor: per output its error, floor and ratio, and the
    verdict (``within``/``beyond``) with its words; None when there is no floor at that shape."""
    floors = (measured.get("floor") or {}).get(str(shape))
    if not floors:
        return None
    fmt, k = measured["format"], float(measured["k"])
    per: Dict[str, JsonObject] = {}
    worst_label, worst_ratio = "", 0.0
    for label, error in errors.items():
        if error is None or label not in floors:
            continue
        # An output the rounding leaves unmoved (an index, a mask) is held to the fp32 tolerance.
        floor = max(floors[label], fp32_atol.get(label, 0.0))
        ratio = error / floor if floor > 0 else (0.0 if error == 0 else float("inf"))
        per[label] = {"error": error, "floor": floors[label], "ratio": round(ratio, 3)}
        if ratio >= worst_ratio:
            worst_label, worst_ratio = label, ratio
    if not per:
        return None
    beyond = worst_ratio > k
    entry = per[worst_label]
    words = (f"beyond what {fmt} explains ({worst_label}: NaN, Inf or a shape the reference has not; no rounding "
             f"explains it)" if math.isinf(entry["error"]) else
             f"{worst_ratio:.1f}× beyond what {fmt} explains ({worst_label}: max abs {entry['error']:.3g}, "
             f"floor {entry['floor']:.3g}, judged at {k:g}× it)" if beyond else
             f"within what {fmt} explains ({worst_label}: max abs {entry['error']:.3g}, floor {entry['floor']:.3g}, "
             f"{worst_ratio:.2f}× it; judged at {k:g}×)")
    return {"verdict": "beyond" if beyond else "within", "outputs": per, "words": words}


__all__ = ["K", "FORMATS", "METHOD", "rounded", "rounded_run", "piece_floor", "judge", "error_of", "passes_by_floor"]
