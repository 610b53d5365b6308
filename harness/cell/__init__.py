"""Cell side: runs inside one Paddle environment (a nox venv or a container).

Imports ``paddle``; the host side must never import this package. Its packages are the steps of
one cell, in the order they run and import each other (a package imports only those before it):

    base        what every step stands on: context, ledger, modes, the runtime seam, sandbox
    anatomy     the model taken apart: captured calls, public calls, ops, layer-wise tensors
    setup       step 1: build, lite training, export, inputs, dygraph outputs; shared; rebuilt
    precision   what a reduced precision explains: op and model floors
    stages      step 2: each stage of the ladder run, compared, its evidence read back
    explain     what the export lost, on the model's own lines
    rootcause   step 3: diff, culprit search, triage, reduction to a piece and an op
    handover    step 4: verified reproducers (plain Paddle, the model's source), workarounds
    worker      what a worker process runs: the cell's lifecycle and analyses in order, probes

``paddle_api`` is the one place that knows Paddle versions; every package may use it.
"""
