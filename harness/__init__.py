"""Qualification harness for PaddlePaddle models.

Three tiers (docs/architecture.md; tests/test_house.py keeps them apart):

* shared (``harness.shared`` and each runtime's descriptor ``harness.runtimes.<name>``): the
  vocabulary, the host → cell contract, the Paddle ladder and the runtime registry; no Paddle;
* host side (the CLI, ``matrix``, ``runner``, ``launch``, ``report``, ``tipc`` planning): imports no
  ``paddle``; expands the matrix, launches cells, writes and reads records;
* cell side (``harness.cell``, ``harness.models``, a runtime's modules beside its descriptor): runs
  inside one Paddle environment, does all Paddle work and talks to the host only through files.
"""

__version__ = "0.1.0"
