"""Step 1, setup (cell side): the model from its source, lite training in the cell's train mode with
the run's shared weights, one export, seeded inputs and the dygraph outputs every stage is measured
against (``build``; a captured TIPC export brings them instead); one setup per program, shared by
the sessions that read it (``shared_setup``); and the exported model again in a process where it
was not built (``rebuild``), which every later step that takes the model apart starts from.
Takes the base and the anatomy; next: the stages.
"""
