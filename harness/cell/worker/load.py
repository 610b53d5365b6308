"""Cell side: load one exported model with this environment's Paddle and run it once.

``python -m harness.cell load --program P [--params Q] --inputs IN.npz --out OUT.npz``: the plainest
load every version has (``switch_ir_optim(False)``, memory off, oneDNN off, one thread, no 3.x-only
call, so that an old Paddle meets a new program as a user's plain load would), inputs fed by
name, outputs written in the predictor's order. Exit 0 done, 3 Paddle raised (its first message
line is the last line on stderr); a crash is the process dying, which the host records as such.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import numpy as np

from ...shared.backends import DeployOptions, named_configs, program_format
from ...shared.causes import paddle_message
from ...shared.protocol import EXIT_OK, EXIT_PADDLE_RAISED
from ...shared.spec import OUTPUTS


def main(program: Path, params: "Path | None", inputs: Path, out: Path) -> int:
    from ..paddle_api.config import make_config
    from ..paddle_api.predictor import create_predictor, run_predictor

    feeds = dict(np.load(inputs))
    fmt = program_format(program)
    try:
        config = make_config({"program": str(program), "params": str(params) if params else "", "format": fmt},
                                    named_configs("legacy", DeployOptions())["baseline"])
        predictor = create_predictor(config)
        names, outputs = run_predictor(predictor, feeds)
    except Exception as exc:
        traceback.print_exc()
        print(paddle_message(exc), file=sys.stderr)
        return EXIT_PADDLE_RAISED
    OUTPUTS.save(out, outputs)
    print(" ".join(names))
    return EXIT_OK
