"""Put first on the PYTHONPATH of every command a TIPC chain runs, by the harness, never into the
repository. When ``HARNESS_TIPC_CAPTURE`` names a folder, the first import of ``paddle.jit`` gets
``paddle.jit.save`` wrapped (``harness/tipc/hook/capture.py``): each save is followed by a dygraph
reference on inputs made from its InputSpecs, kept in that folder. Nothing else changes: Paddle
is not imported here (commands that never use it pay nothing), and the interpreter's own
``sitecustomize`` (which this file shadows) still runs.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_CAPTURE = os.path.join(_HERE, "capture.py")


class _WrapJitSave(importlib.abc.MetaPathFinder):
    """Finds ``paddle.jit`` through the other finders and wraps its loader so that ``save`` is
    wrapped the moment the package has run (before any user code can bind it)."""

    def __init__(self, out):
        self.out = out

    def find_spec(self, name, path=None, target=None):
        if name != "paddle.jit":
            return None
        sys.meta_path.remove(self)  # once: and so find_spec below does not come back here
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_package = spec.loader.exec_module
        out = self.out

        def exec_module(module):
            run_package(module)
            loaded = importlib.util.spec_from_file_location("_harness_tipc_capture", _CAPTURE)
            capture = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(capture)
            capture.install(module, out)

        spec.loader.exec_module = exec_module
        return spec


def _chain_next_sitecustomize():
    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("HARNESS_TIPC_CAPTURE"):
    sys.meta_path.insert(0, _WrapJitSave(os.environ["HARNESS_TIPC_CAPTURE"]))
_chain_next_sitecustomize()
