"""The suite's functional helpers, read by its model as a namespace (``F.scaled``)."""

import functools

import paddle

SCALE_FLOOR = 0.5


def _fetch(url, timeout):
    raise RuntimeError(f"no network: {url} ({timeout} s)")


# A helper made by a call, not a ``def``: a model module that imports it holds no statement of it.
fetch = functools.partial(_fetch, timeout=5)


def scaled(x, k):
    return x * max(k, SCALE_FLOOR)


def unused_helper(x):
    return paddle.flip(x, [0])


def positive(t):
    """Asked through Python's ``any``: under ``to_static`` after an eager call, ``bool(Tensor)``."""
    return any(v > 0 for v in [t.mean()])
