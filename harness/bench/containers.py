"""Per-cell overhead of the container launcher against the venv launcher, side by side, and the
image build time from a warm layer cache.

``python -m harness.bench.containers [--repeat N] [--image TAG]`` with ``DOCKER_HOST`` pointing at
an engine that has the image (``nox -s images``). Runs the same cell (``cpu_fp32`` /
``resnet18``, forced) alternately in the venv and in a container, N times each; prints both
medians and their ratio (target <= 1.3x), then rebuilds the image (nothing changed: every layer
cached) and prints its time (target <= 5 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from . import ROOT, timed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.containers")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--matrix", default=str(ROOT / "matrix" / "default.toml"))
    parser.add_argument("--paddle", default=None, help="Paddle version (default: the matrix's default)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from harness import matrix as matrix_mod
    from harness.artefacts import images
    from harness.launch.containers import DockerLauncher

    matrix = matrix_mod.load(args.matrix)
    version = args.paddle or matrix.run["default_paddle"]
    tag = matrix.image(version, "cpu")
    reason = DockerLauncher(tag, Path(tempfile.gettempdir())).probe()
    if reason:
        print(f"container benchmark skipped: {reason}")
        return 0
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    times = {"venv": [], "docker": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat + 1):  # the first round warms caches and is not counted
            for runner in ("venv", "docker"):
                took = timed([sys.executable, "-m", "harness", "run", "--matrix", args.matrix, "--session", "cpu_fp32",
                               "--paddle", version, "--model", "resnet18", "--results", f"{tmp}/{runner}", "--force",
                               "--runner", runner], env)
                if i:
                    times[runner].append(took)
    venv, docker = statistics.median(times["venv"]), statistics.median(times["docker"])
    print(f"cell cpu_fp32/{version}/resnet18, {args.repeat} runs each, interleaved (one cell each; the hazard probe, once per session, is kept from the warm-up)")
    print(f"venv:   median {venv:.2f} s  ({', '.join(f'{t:.2f}' for t in times['venv'])})")
    print(f"docker: median {docker:.2f} s  ({', '.join(f'{t:.2f}' for t in times['docker'])})")
    print(f"ratio docker/venv: {docker / venv:.2f}x  (target <= 1.30x)")
    built = images.build_matrix_images(matrix, [version], ["cpu"], log=lambda line: None)
    print(f"image rebuild from a warm layer cache: {built[0]['seconds']:.2f} s  (target <= 5 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
