"""Cell side: train modes as objects — how a mode prepares the model, trains it a few steps on
the synthetic lite data, and exports it the way that mode's users export.

``normal`` is implemented. The schema's other modes (AMP O1/O2, QAT, PACT) are declared so that
matrices can name them; until their implementation lands they answer ``unsupported`` with the
reason, and the cell records ``skip`` (never a pass that trained in fp32).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np


class TrainMode:
    name = "normal"

    def unsupported(self, compat: Any) -> Optional[str]:
        """Why this mode cannot run in this Paddle build or on this machine, or None."""
        return None

    def prepare(self, paddle: Any, layer: Any) -> Any:
        """The layer to train (a mode may wrap or convert it)."""
        return layer

    def train(self, paddle: Any, layer: Any, call_args: List[Any], steps: int, seed: int) -> List[float]:
        return lite_train(paddle, layer, call_args, steps, seed)

    def export(self, compat: Any, layer: Any, input_spec: List[Any], prefix: Path) -> Dict[str, str]:
        return compat.export(layer, input_spec, prefix)


class Declared(TrainMode):
    """A mode the schema knows and this harness version does not run yet."""

    def __init__(self, name: str):
        self.name = name

    def unsupported(self, compat: Any) -> Optional[str]:
        from .. import __version__

        return f"train mode {self.name} is declared in the schema but not run by harness {__version__} yet"


def mode_for(name: str) -> TrainMode:
    return TrainMode() if name == "normal" else Declared(name)


def lite_train(paddle: Any, layer: Any, args: List[Any], steps: int, seed: int) -> List[float]:
    """A few optimizer steps on the synthetic batch, towards seeded unit-scale targets.

    First a BatchNorm recalibration pass (momentum 0 for one train-mode forward) so running
    statistics come from data: random-init networks evaluated with default statistics produce
    outputs around 1e-7, which no tolerance can judge. Targets are unit-scale random tensors so
    training keeps the outputs' magnitude meaningful.
    """
    from .worker import flatten_tensors

    norms = [m for m in layer.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    saved = [m._momentum for m in norms]
    for m in norms:
        m._momentum = 0.0
    layer.train()
    with paddle.no_grad():
        layer(*args)
    for m, momentum in zip(norms, saved):
        m._momentum = momentum
    if steps <= 0:
        return []
    params = [p for p in layer.parameters() if not p.stop_gradient]
    if not params:
        return []
    optimizer = paddle.optimizer.Adam(learning_rate=1e-3, parameters=params)
    rng = np.random.default_rng(seed + 1)
    targets = None
    losses = []
    for _ in range(steps):
        outputs = [t for _, t in flatten_tensors(paddle, layer(*args))
                   if str(t.dtype).endswith(("float32", "float16", "bfloat16", "float64"))]
        if targets is None:
            targets = [paddle.to_tensor(rng.standard_normal(t.shape).astype("float32")) for t in outputs]
        loss = paddle.add_n([((o.astype("float32") - y) ** 2).mean() for o, y in zip(outputs, targets)])
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
    return losses
