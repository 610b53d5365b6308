"""The cell side of the runtime registry: the runtime a stage plan names, its cell module (as its
descriptor names it, ``Backend.cell``) imported when a stage first asks — a runtime's packages are
only in the environments of the sessions that use it. Apart from the seam (``runtime.py``, the
base classes every cell module imports), so that the arrows run one way."""

from __future__ import annotations

import importlib
from typing import Dict, Type

from ...runtimes import REGISTRY
from .runtime import Runtime

_LOADED: Dict[str, Runtime] = {}


def runtime(name: str) -> Runtime:
    """One instance per process of the runtime called ``name``."""
    if name not in _LOADED:
        module, _, attr = REGISTRY.cell_module(name).partition(":")
        cls: Type[Runtime] = getattr(importlib.import_module(module), attr)
        _LOADED[name] = cls()
    return _LOADED[name]


__all__ = ["runtime"]
