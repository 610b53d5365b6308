"""What every layer of a model was constructed with (cell side), recorded while its factory runs.

A source reproducer rebuilds the failing piece at another Paddle release from its classes, so it
needs the arguments each layer's constructor got. ``paddle.nn.Layer.__new__`` receives exactly
those (Python calls ``__new__`` then ``__init__`` with the same arguments), so for the duration of
the factory a ``__new__`` on ``Layer`` keeps them on the instance (``made_with``); nothing else of
the layer changes, and ``Layer`` is restored after. A class that defines its own ``__new__`` is not
seen (``made_with`` answers None for it)."""

from __future__ import annotations

import contextlib
import copy
from typing import Any, Dict, Iterator, Optional, Tuple

ATTRIBUTE = "_harness_made_with"

Made = Tuple[Tuple[Any, ...], Dict[str, Any]]


@contextlib.contextmanager
def recording_construction(paddle: Any) -> Iterator[None]:
    layer_class = paddle.nn.Layer
    own = layer_class.__dict__.get("__new__")

    def new(cls: type, *args: Any, **kwargs: Any) -> Any:
        instance = own(cls, *args, **kwargs) if own is not None else object.__new__(cls)
        # Layer.__setattr__ routes by type and needs __init__'s tables: set the plain attribute.
        # A list the constructor goes on to mutate is kept as it was passed.
        object.__setattr__(instance, ATTRIBUTE, (tuple(_as_passed(a) for a in args),
                                                 {k: _as_passed(v) for k, v in kwargs.items()}))
        return instance

    layer_class.__new__ = staticmethod(new)
    try:
        yield
    finally:
        if own is not None:
            layer_class.__new__ = own
        else:
            del layer_class.__new__


def _as_passed(value: Any) -> Any:
    if isinstance(value, (list, dict)) and _literals_only(value):
        return copy.deepcopy(value)
    return value  # layers and other objects inside: kept as the objects themselves


def _literals_only(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_literals_only(v) for v in value)
    if isinstance(value, dict):
        return all(_literals_only(k) and _literals_only(v) for k, v in value.items())
    return value is None or isinstance(value, (bool, int, float, str))


def made_with(layer: Any) -> Optional[Made]:
    """The (args, kwargs) ``layer`` was constructed with, when its factory ran under the recorder."""
    return layer.__dict__.get(ATTRIBUTE)
