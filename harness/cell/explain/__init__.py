"""What the export lost (cell side): for a program that does not compute what the Python forward
computes, the forward's state, control flow, type tests and in-place writes against the program's
ops, on the model's own lines (``export_loss``, ``type_tests``); and whether an export that raises
needs an eager call before it. Takes the setup's rebuilt model and the anatomy; the triage of a
failing baseline (root cause) and the setup's failed export call it.
"""
