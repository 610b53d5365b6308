"""What every layer of a model was constructed with (cell side), recorded while its factory runs.

A source reproducer rebuilds the failing piece at another Paddle release from its classes, so it
needs the arguments each layer's constructor got. ``paddle.nn.Layer.__new__`` receives exactly
those (Python calls ``__new__`` then ``__init__`` with the same arguments), so while the factory
runs a ``__new__`` on ``Layer`` keeps them on the instance (``made_with``); nothing else of the
layer changes. A class that defines its own ``__new__`` is not
seen (``made_with`` answers None for it)."""

from __future__ import annotations

import contextlib
import copy
import threading
from typing import Any, Dict, Iterator, Optional, Tuple

ATTRIBUTE = "_harness_made_with"

Made = Tuple[Tuple[object, ...], Dict[str, object]]


_recording = threading.local()


@contextlib.contextmanager
def recording_construction(paddle: Any) -> Iterator[None]:
    layer_class = paddle.nn.Layer
    if layer_class.__dict__.get("__new__") is not _STATIC_NEW:
        _install(layer_class)
    _recording.on = True
    try:
        yield
    finally:
        _recording.on = False


def _new(cls: type, *args: Any, **kwargs: Any) -> Any:
    instance = _ORIGINAL_NEW[0](cls) if _ORIGINAL_NEW else object.__new__(cls)
    if getattr(_recording, "on", False):
        # Layer.__setattr__ routes by type and needs __init__'s tables: set the plain attribute. A
        # list the constructor goes on to mutate is kept as it was passed.
        object.__setattr__(instance, ATTRIBUTE, (tuple(_as_passed(a) for a in args),
                                                 {k: _as_passed(v) for k, v in kwargs.items()}))
    return instance


_STATIC_NEW = staticmethod(_new)
_ORIGINAL_NEW: list = []


def _install(layer_class: type) -> None:
    """``Layer.__new__`` for the rest of the process: CPython cannot take a class's ``__new__``
    back (after ``del``, ``object.__new__`` refuses the constructor's arguments), so it stays,
    recording only inside ``recording_construction``."""
    own = layer_class.__dict__.get("__new__")
    if own is not None:  # a Paddle that defines one: called as it would have been, without the arguments
        _ORIGINAL_NEW.append(own.__func__ if isinstance(own, staticmethod) else own)
    layer_class.__new__ = _STATIC_NEW


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
