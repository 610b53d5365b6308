"""Host side: reports rebuilt from result records alone.

``model`` reads a run's records (and its hazard probes) once into a report model: cells, the
matrix at a glance, distinct causes, hazards, numeric failures. Renderers take the model:
``tables`` (terminal and markdown); ``regress`` computes cross-version transitions once and
renders them. Nothing here imports paddle.
"""
