"""What a reduced precision explains (cell side): the floor of each op under bf16/fp16 rounding
(``precision_floor``) and of the whole model (``model_floor``), against which a bf16 or fp16 stage
is judged. Takes the setup's rebuilt model; gives the stages their judge of reduced precisions.
"""
