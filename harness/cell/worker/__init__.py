"""What a worker process runs (cell side): one cell's life (``lifecycle``: setup, the stages, then
the analyses in their order, ``analysis``), and the environment's other jobs — a version's hazard
probe (``hazards``), a portability load (``load``), the diff CLI's worker (``diff_worker``), the
fork server its children are forked from (``forkserve``), its imports compiled once
(``bytecode``), and the benchmarks' harness-free cell (``plain_cell``). The top of the cell side:
it takes every step, none takes from it.
"""
