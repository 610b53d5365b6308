"""The suite's functional helpers, read by its model as a namespace (``F.scaled``)."""

import functools

import paddle

SCALE_FLOOR = 0.5


def _fetch(url, timeout):
    raise RuntimeError(f"no network: {url} ({timeout} s)")


# A helper made by a call, not a ``def``: a model module that imports it holds no statement of it.
fetch = functools.partial(_fetch, timeout=5)
# One bound by no statement at all (a loop fills the module's namespace, as registries do).
for _name in ("download",):
    globals()[_name] = functools.partial(_fetch, timeout=10)


def scaled(x, k):
    return x * max(k, SCALE_FLOOR)


def unused_helper(x):
    return paddle.flip(x, [0])


def positive(t):
    """Asked through Python's ``any``: under ``to_static`` after an eager call, ``bool(Tensor)``."""
    return any(v > 0 for v in [t.mean()])


class ClassInstantier(dict):
    """A table of layer classes whose lookup builds the layer (as PaddleX's ``ACT2FN`` is)."""

    def __getitem__(self, key):
        cls, kwargs = super().__getitem__(key)
        return cls(**kwargs)


class Scaled(paddle.nn.Layer):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k


# Objects made by a call: a model module importing them holds no statement of theirs, this one does.
ACTS = ClassInstantier({"double": (Scaled, {"k": 2.0})})
init_normal = paddle.nn.initializer.Normal(std=0.02)
