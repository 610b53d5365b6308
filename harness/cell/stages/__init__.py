"""Step 2, the stages (cell side): each stage of the session's ladder built on its runtime, run at
every shape, compared with its reference, its evidence read back (``ladder``). Takes the setup's
export, inputs and outputs; next: the root cause of the stages that failed.
"""
