"""paddle2onnx, the conversion the runtimes that read ONNX share (ONNX Runtime; OpenVINO at Paddle
3): what it needs, as a requirement a stage checks. No backend of its own. Cell side: ``convert``
(one conversion per program, in a forked child, checked against a second one).
"""

from __future__ import annotations

from ...shared.runtime import Requirement

PADDLE2ONNX = Requirement("paddle2onnx", "paddle2onnx and what its optimizer imports (onnx, onnx-graphsurgeon, "
                                         "sympy) in the environment (paddle2onnx 2.x for Paddle 3's PIR programs, "
                                         "1.x for 2.6's .pdmodel)", shared_step=True)
