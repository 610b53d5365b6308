"""Qualification harness for PaddlePaddle models.

The package has two sides that never mix (see docs in README.md):

* host side (``matrix``, ``runner``, ``report``, ``records``, ``compare``, ``errors``):
  imports no ``paddle``; expands the matrix, launches cells, writes and reads records;
* cell side (``harness.cell`` and ``harness.models``): runs inside one Paddle
  environment, does all Paddle work and talks to the host only through files.
"""

__version__ = "0.1.0"
