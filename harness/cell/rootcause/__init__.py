"""Step 3, the root cause (cell side): the steps a failing stage goes through (``steps``: the
per-tensor diff, the culprit search over passes or a runtime's optimizers, oneDNN's op types, the
triage of a failing baseline), the fp32 ops of a reduced precision (``fp32_ops``), and the
reduction to the smallest failing piece and then the op (``reduction`` over ``descent``, each trial
exported and judged in a child: ``trials``). Takes the stages' results and the anatomy; next: the
handover.
"""
