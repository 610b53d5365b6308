"""Cell side: load one exported model with this environment's Paddle and run it once.

``python -m harness load --program P [--params Q] --inputs IN.npz --out OUT.npz``: baseline
config (CPU, IR off, memory off, oneDNN off, one thread), inputs fed by name, outputs written
in the predictor's order. Exit 0 done, 3 Paddle raised (its first message line on stderr);
a crash is the process dying, which the host records as such.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import numpy as np


def main(program: Path, params: "Path | None", inputs: Path, out: Path) -> int:
    from . import compat
    from .worker import paddle_message

    feeds = dict(np.load(inputs))
    try:
        config = compat.make_config({"program": str(program), "params": str(params) if params else ""},
                                    device="cpu", ir=False, memory=False, onednn=False, threads=1)
        predictor = compat.create_predictor(config)
        names, outputs = compat.run_predictor(predictor, feeds)
    except Exception as exc:
        traceback.print_exc()
        print(paddle_message(exc), file=sys.stderr)
        return 3
    np.savez(out, **{f"o{i}": a for i, a in enumerate(outputs)})
    print(" ".join(names))
    return 0
