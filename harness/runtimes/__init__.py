"""Runtimes other than Paddle Inference, one package each (found by ``harness.shared.runtime``).

``<name>/__init__.py`` is the runtime's descriptor: plain code (no Paddle, no runtime package),
imported on the host to plan sessions and read records. Every other module of ``<name>/`` is its
cell side, imported only inside a cell whose stage runs on it.
"""
