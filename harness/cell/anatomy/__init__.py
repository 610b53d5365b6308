"""The model taken apart (cell side): its sublayers' calls captured in one dygraph run
(``pieces``), the public calls it made (``public_api``), the ops it ran recorded one by one and
written as one-op programs (``isolation``, ``op_source``), and its tensors layer by layer against a
program's (``layerwise``). Takes the base; gives the setup its random-op check, and the precision
floor, the export's explanation, the root cause and the handover what they cut the model into.
"""
