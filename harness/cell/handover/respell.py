"""Model-side workarounds (cell side): an op's public call spelled another, equivalent way that the
failing stage handles — what a user changes in the model's code when no config change helps (a
converter that drops ``thresholded_relu``'s ``value``, one that cannot convert ``interpolate``'s
``scale_factor`` at Paddle 3.3).

A respelling is tried only for the op the reduction placed the failure at, and verified as every
workaround is (``workaround.Verifier``: the stage passes at every shape the cell runs against the
stage's own reference — so the respelled model also computes what the original did), on the whole
model exported again with every call of the public function respelled: the function is replaced in
its module while a child exports the model. The child counts the respelled calls: an export that
made none (the model reaches the op another way) is said, never verified.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from ...shared.json_types import JsonObject
from ...shared.record_model import StageRecord
from ..base import sandbox
from ..base.context import CellContext


@dataclasses.dataclass(frozen=True)
class Respelling:
    """``module.name(...)`` (the public call that ran ``op``) written as ``instead``; ``build`` makes
    the replacement from the original function."""

    op: str
    module: str
    name: str
    instead: str
    build: Callable[[Callable[..., Any]], Callable[..., Any]]

    @property
    def api(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def words(self) -> str:
        return f"in the model's code, every {self.api}(...) written as {self.instead}"


def _thresholded_relu(original: Callable[..., Any]) -> Callable[..., Any]:
    import paddle

    def thresholded_relu(x, threshold=1.0, value=0.0, name=None):
        return paddle.where(x > threshold, x, paddle.full_like(x, value))

    return thresholded_relu


def _interpolate(original: Callable[..., Any]) -> Callable[..., Any]:
    import paddle

    def interpolate(x, size=None, scale_factor=None, *rest, **options):
        # rest, in Paddle's order: mode, align_corners, align_mode, data_format, recompute_scale_factor, name
        if scale_factor is not None and size is None:
            data_format = options.get("data_format", rest[3] if len(rest) > 3 else None)
            spatial = x.ndim - 2
            first = 1 if str(data_format or "NCHW").endswith("C") else 2  # channels last: NHWC, NWC, NDHWC
            factors = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * spatial
            dims = paddle.shape(x)[first:first + spatial].astype("float32")
            size = (dims * paddle.to_tensor([float(f) for f in factors], "float32")).floor().astype("int32")
            scale_factor = None
        return original(x, size, scale_factor, *rest, **options)

    return interpolate


def _nearest_by_tile(original: Callable[..., Any]) -> Callable[..., Any]:
    import paddle

    def interpolate(x, size=None, scale_factor=None, *rest, **options):
        # rest, in Paddle's order: mode, align_corners, align_mode, data_format, recompute_scale_factor, name
        mode = options.get("mode", rest[0] if rest else "nearest")
        data_format = options.get("data_format", rest[3] if len(rest) > 3 else None)
        factors = (list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * 2
                   if scale_factor is not None else [])
        whole = len(factors) == 2 and all(float(f) == int(f) >= 1 for f in factors)
        if mode != "nearest" or size is not None or not whole or x.ndim != 4 or str(data_format or "NCHW") != "NCHW":
            return original(x, size, scale_factor, *rest, **options)
        sh, sw = (int(f) for f in factors)
        # Nearest upsampling by a whole factor repeats each pixel sh × sw times: the same numbers, no resize op.
        shape = paddle.shape(x) * paddle.to_tensor([1, 1, sh, sw], dtype=paddle.shape(x).dtype)
        return x.unsqueeze([3, 5]).tile([1, 1, 1, sh, 1, sw]).reshape(shape)

    return interpolate


RESPELLINGS: Tuple[Respelling, ...] = (
    Respelling("pd_op.thresholded_relu", "paddle.nn.functional", "thresholded_relu",
               "paddle.where(x > threshold, x, paddle.full_like(x, value))", _thresholded_relu),
    *(Respelling(op, "paddle.nn.functional", "interpolate",
                 "interpolate(x, size=<each spatial dim times its scale_factor, floored>) — the output size, "
                 "not the scale", _interpolate)
      for op in ("pd_op.nearest_interp", "pd_op.bilinear_interp", "pd_op.bicubic_interp", "pd_op.linear_interp",
                 "pd_op.trilinear_interp")),
    Respelling("pd_op.nearest_interp", "paddle.nn.functional", "interpolate",
               "x.unsqueeze([3, 5]).tile([1, 1, 1, s, 1, s]).reshape(...) — nearest upsampling by a whole factor s "
               "as each pixel repeated", _nearest_by_tile),
)


def for_ops(ops: str) -> List[Respelling]:
    """The respellings of the op(s) the reduction placed a failure at (``a -> b`` for a chain)."""
    placed = [op.strip() for op in str(ops or "").split("->") if op.strip()]
    return [r for r in RESPELLINGS if r.op in placed]


def exported(ctx: CellContext, setup: StageRecord, respelling: Respelling, folder: Path) -> Tuple[Dict[str, str], int]:
    """In this process (a child's): the model exported with ``respelling`` in place of its function;
    the files, and how many calls the export respelled."""
    from ..setup.rebuild import model_and_spec

    module = importlib.import_module(respelling.module)
    original = getattr(module, respelling.name)
    replacement = respelling.build(original)
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return replacement(*args, **kwargs)

    layer, input_spec, _ = model_and_spec(ctx, setup)
    setattr(module, respelling.name, counted)
    try:
        files = ctx.mode.export(ctx.saved, layer, input_spec, folder / "model")
    finally:
        setattr(module, respelling.name, original)
    return files, calls[0]


def export_in_child(ctx: CellContext, setup: StageRecord, respelling: Respelling, folder: Path) -> JsonObject:
    """``exported`` where its death cannot end the workaround search: the files and the respelled
    calls, or why there are none (the export raised or its process died)."""
    def in_the_child() -> JsonObject:
        try:
            files, calls = exported(ctx, setup, respelling, folder)
        except Exception as exc:  # Paddle raised on the respelled model: this respelling is no workaround
            return {"why": f"the respelled model did not export: {' '.join(str(exc).split())[:300]}"}
        return {"files": files, "calls": calls}

    answer = sandbox.in_child(in_the_child, folder, sandbox.deadline(ctx.cell.stage_timeout))
    if isinstance(answer, sandbox.Death):
        return {"why": f"its process died: {answer.words()}"}
    if answer.get("files") and not answer.get("calls"):
        return {"why": f"the export made no call of {respelling.api}: the model reaches {respelling.op} another way"}
    return answer


__all__ = ["RESPELLINGS", "Respelling", "export_in_child", "for_ops"]
