"""Every runtime the harness has, one package each, found by looking; ``REGISTRY`` is the registry
once they all registered (import it from here: ``harness.shared.runtime`` only holds what did).

``<name>/__init__.py`` is the runtime's descriptor: plain code (no Paddle, no runtime package),
imported on the host to plan sessions and read records. Every other module of ``<name>/`` is its
cell side, imported only inside a cell whose stage runs on it. Paddle Inference is one of them
(``paddle_inference``) and comes first: every session's ladder starts on it (the baseline).
A package may register no backend: ``paddle2onnx`` is the conversion the ONNX runtimes share.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..shared.runtime import _REGISTERED

FIRST = "paddle_inference"  # the baseline's runtime: its sessions first wherever sessions are listed

_names = sorted((info.name for info in pkgutil.iter_modules(__path__) if info.ispkg),
                key=lambda name: (name != FIRST, name))
for _name in _names:
    importlib.import_module(f"harness.runtimes.{_name}")
REGISTRY = _REGISTERED.found(_names)
