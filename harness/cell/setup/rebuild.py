"""The exported model again, in a process where it was not built (cell side): its weights read back
and checked name by name and shape by shape, the instance this process trained when it is still
here, else the model rebuilt from its source with the weights it was exported with. What every step
that takes the model apart starts from (the reduction, the export's explanation, the precision
floor, the reproducers, the workarounds' respellings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

from ...shared.causes import paddle_message
from ...shared.errors import HarnessFailure, UserError, raised_at
from ...shared.record_model import StageRecord
from ..base.context import CellContext
from ..base.structure import build_call_args


def read_weights(path: "str | Path") -> Dict[str, np.ndarray]:
    """A checkpoint's weights by name (without its ``__meta__``)."""
    with np.load(path) as data:
        return {k: data[k] for k in data.files if k != "__meta__"}


def weights_differ(state: Dict[str, Any], saved: Dict[str, np.ndarray], what: str = "exported") -> str:
    """What differs between a model's weights and saved ones (names and shapes), or ''; ``what``
    names the saved ones (the exported model's, a checkpoint's)."""
    missing, extra = sorted(set(saved) - set(state)), sorted(set(state) - set(saved))
    shapes = [f"{k} {list(state[k].shape)} vs {what} {list(saved[k].shape)}"
              for k in sorted(set(state) & set(saved)) if list(state[k].shape) != list(saved[k].shape)]
    said = []
    if missing:
        said.append(f"{len(missing)} {what} weight(s) it does not have ({', '.join(missing[:3])})")
    if extra:
        said.append(f"{len(extra)} weight(s) the {what} model does not have ({', '.join(extra[:3])})")
    if shapes:
        said.append(f"{len(shapes)} of other shape ({'; '.join(shapes[:3])})")
    return "; ".join(said)



def model_and_args(ctx: CellContext, setup: StageRecord, shape: int) -> Tuple[Any, List[Any], str]:
    """The model that was exported, and the dygraph arguments at ``shape``; how it was obtained.

    The instance this process trained and exported when it is still here (a factory may not
    build twice in one process: a suite's layer appending to a mutable default argument asserts
    the second time); else (a worker restarted after a crash, a process where the factory has not
    run) rebuilt from its source with the weights it was exported with. Either way it is checked
    against those weights, every name and shape: a model that differs is not reduced, and one line
    says what differs. A factory that raises when rebuilt is said with its exception's type,
    message and the file:line it was raised at."""
    layer, input_spec, how = model_and_spec(ctx, setup)
    return layer, build_call_args(ctx.paddle, input_spec, ctx.feeds(shape)), how


def model_and_spec(ctx: CellContext, setup: StageRecord) -> Tuple[Any, List[Any], str]:
    """``model_and_args``' model with its InputSpecs instead of arguments."""
    from ...models import sources

    paddle = ctx.paddle
    factory = f"{ctx.where}.factory ({ctx.cell.model['factory']})"
    weights = read_weights(setup.get("weights")["path"])
    rebuilt_how = "rebuilt from its source in a process where its factory had not run, with the exported weights"
    if ctx.built is not None:
        layer, input_spec = ctx.built
        how = "the instance this process trained and exported"
    elif ctx.rebuilt is not None:  # an earlier step of this process rebuilt it: a factory may not build twice
        layer, input_spec = ctx.rebuilt
        how = rebuilt_how
    else:
        try:
            layer, input_spec = sources.build(ctx.cell.model["factory"], paddle, ctx.cell.seed, f"{ctx.where}.factory")
            layer = ctx.mode.prepare(paddle, layer)
        except UserError:
            raise
        except Exception as exc:
            raise HarnessFailure(f"{factory} raised {paddle_message(exc)} at {raised_at(exc)} when the reduction "
                                 f"rebuilt the model in a fresh process; the exported model cannot be taken apart") from exc
        how = rebuilt_how
    differs = weights_differ(layer.state_dict(), weights)
    if differs:
        raise HarnessFailure(f"{factory} built something else than the exported model ({how}): {differs}")
    if ctx.built is None:
        layer.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
        ctx.rebuilt = (layer, input_spec)
    layer.eval()
    return layer, list(input_spec), how


__all__ = ["model_and_args", "model_and_spec", "read_weights", "weights_differ"]
