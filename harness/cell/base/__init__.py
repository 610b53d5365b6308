"""What every step of a cell stands on (cell side): the cell's context (its spec, work folder,
Paddle, inputs and outputs on disk), the journal read as a ledger of finished entries, the train
modes, the runtime seam and its registry (a stage's runtime found by name), forked trials
(``sandbox``: a child's death is its outcome), progress lines, and the model's inputs and outputs
flattened (``structure``). Takes nothing from the other steps; every step takes from it.
"""
