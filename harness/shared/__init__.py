"""The shared tier: what both sides import. Standard library and numpy only (a test enforces it),
so a Paddle environment or image needs nothing else for it.

``vocab`` (statuses, stage names, outcomes as types), ``config`` (one predictor configuration as
a value), ``backends`` (deployment profiles, backends, the stage plan), ``records`` (journal,
atomic writes, record files), ``compare`` (element-wise comparison), ``causes`` (Paddle's words,
causes counted once), ``inputs`` (seeded synthetic inputs), ``search`` (culprit search),
``errors`` (the one-line user error).
"""
