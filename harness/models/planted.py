"""Zoo models with a planted consistency failure (cell side), for the reduction's benchmark.

``harness.models.planted:planted_<zoo factory>`` is that zoo model with its deepest conv (the
middle one of the deepest) wrapped in a layer that reads Python state: a call counter, which
``to_static`` fixes at trace time, so dygraph and the exported program disagree there and only
there. The reduction must name that layer (``CountingWrapper``).
"""

from __future__ import annotations

from typing import Any, Tuple

import paddle.nn as nn

PREFIX = "planted_"


class CountingWrapper(nn.Layer):
    """The planted failure: scales by how often it ran."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.inner(x) * (1.0 + 0.5 * self.calls)


def plant(model: Any) -> Tuple[Any, str]:
    """Wrap the deepest Conv2D (the middle one of the deepest) in place; its path."""
    convs = [path for path, layer in model.named_sublayers() if isinstance(layer, nn.Conv2D)]
    deepest = max(path.count(".") for path in convs)
    at_depth = [path for path in convs if path.count(".") == deepest]
    path = at_depth[len(at_depth) // 2]
    parent_path, _, name = path.rpartition(".")
    parent = model
    for part in parent_path.split(".") if parent_path else []:
        parent = parent._sub_layers[part]
    parent._sub_layers[name] = CountingWrapper(parent._sub_layers[name])
    return model, path


def __getattr__(name: str):
    if not name.startswith(PREFIX):
        raise AttributeError(name)
    from . import zoo

    factory = getattr(zoo, name[len(PREFIX):])

    def build():
        model, spec = factory()
        return plant(model)[0], spec

    return build
