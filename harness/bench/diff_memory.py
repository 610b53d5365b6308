"""Peak RSS of a per-tensor diff run against a plain predictor run on the same model.

``python -m harness.bench.diff_memory [--size 224]`` (part of ``nox -s bench``): exports
resnet18, then runs, each in a fresh process measured with ``wait4``, (a) one predictor
(baseline config) on one input, (b) the diff's cell side (two predictors, every intermediate
tensor dumped and compared). Target: (b) <= 1.5x (a). The diff streams tensors through disk,
so its peak should stay near one predictor's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXPORT = """
import sys, numpy as np, paddle
from harness.models import resnet18
from harness.cell.paddle_api.export import export
layer, spec = resnet18(); layer.eval()
files = export(layer, spec, sys.argv[1] + "/model")
np.savez(sys.argv[1] + "/inputs.npz", image=np.random.default_rng(0).standard_normal([1, 3, {size}, {size}]).astype("float32"))
print(files["program"])
"""

PLAIN = """
import sys, numpy as np
from harness.cell.paddle_api.config import make_config
from harness.cell.paddle_api.predictor import create_predictor, run_predictor
from harness.shared.backends import DeployOptions, named_configs, program_format
fmt = program_format(sys.argv[1])
files = {"program": sys.argv[1], "params": sys.argv[2], "format": fmt}
predictor = create_predictor(make_config(files, named_configs(fmt, DeployOptions())["baseline"]))
run_predictor(predictor, dict(np.load(sys.argv[3])))
"""


def peak_rss_mb(cmd, env) -> float:
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"benchmark step failed: {' '.join(cmd)}")
    return usage.ru_maxrss / 1024.0  # KiB on Linux


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.diff_memory")
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        program = subprocess.run([sys.executable, "-c", EXPORT.format(size=args.size), str(tmp)], cwd=ROOT, env=env,
                                 capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        params = str(Path(program).with_suffix(".pdiparams"))
        plain = peak_rss_mb([sys.executable, "-c", PLAIN, program, params, str(tmp / "inputs.npz")], env)
        request = {
            "model": {"prefix": str(Path(program).with_suffix("")), "params": params, "candidates": [program]},
            "base_name": "baseline", "test_name": "ir",
            "inputs": str(tmp / "inputs.npz"), "shapes": {}, "atol": 1e-4, "rtol": 1e-4, "selection": None,
        }
        (tmp / "request.json").write_text(json.dumps(request))
        diff = peak_rss_mb([sys.executable, "-m", "harness.cell", "diff-worker", "--request", str(tmp / "request.json"),
                            "--out", str(tmp / "out")], env)
        rows = len(json.loads((tmp / "out" / "result.json").read_text())["rows"])
        dumped = sum(f.stat().st_size for f in (tmp / "out" / "dump").rglob("*.npy")) / 2**20
    print(f"resnet18 1x3x{args.size}x{args.size}: {rows} tensors compared, {dumped:.0f} MiB of intermediates dumped")
    print(f"peak RSS plain predictor run: {plain:.0f} MiB")
    print(f"peak RSS diff run:            {diff:.0f} MiB")
    print(f"ratio diff/plain: {diff / plain:.2f}x  (target <= 1.50x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
