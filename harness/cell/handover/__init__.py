"""Step 4, the handover (cell side): the failure as a script a Paddle developer runs — the smallest
piece or op as plain Paddle (``reproducer``), the model's own source written out (``source_repro``),
a failed setup's export or training (``setup_repro``) — verified by running it; and the smallest
verified workaround (``workaround``, with the placed op's public call respelled: ``respell``).
Takes the root cause's answer; the host's ``releases`` and reports take it from here.
"""
