"""What the reduction costs, on the zoo's largest models.

``python -m harness.bench.reduction [--model pp_ocrv5_mobile_det] [--real rt_detr] [--repeat N]``
(part of ``nox -s bench``):

0. The zoo's largest model (RT-DETR, 597 leaf sublayers) fails on its own at 3.3.1: its baseline
   raises. Its cell with root cause: where the reduction puts that error, in how many sub-exports.
1. A planted consistency failure in the largest zoo model whose baseline passes (PP-OCRv5 mobile
   det, 557 leaf sublayers): the model's deepest conv (the middle one of the deepest) is
   wrapped in a layer that reads Python state (a call counter, fixed by ``to_static`` at trace
   time). One ``cpu_fp32`` cell with root cause: the baseline fails, and the reduction must find
   the planted layer within ``2·⌈log2 L⌉ + 2·depth`` sub-exports. Printed: the path it found
   against the planted one, sub-exports against the budget, the seconds of each analysis step.
2. A cell that passes pays nothing: the unplanted model's cell with root cause on and off
   (``--no-root-cause``), interleaved, medians compared; its record must hold no analysis entry.
3. A layer's own op asked before any finer group of its sublayers (``--own-op``, PaddleSeg's
   DeepLabV3+ under oneDNN at 3.3.1: the ASPP module's upsample): the same cell with the probe and
   without (``HARNESS_OWN_OP_PROBES=0``), interleaved; the reduction's seconds and sub-exports, and
   whether both put the failure at the same layer and op.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import List

from . import ROOT, timed

PREFIX = "planted_"
PLANTED = "CountingWrapper"  # the planted layer's type: what the reduction must name


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.reduction")
    parser.add_argument("--model", default="pp_ocrv5_mobile_det")
    parser.add_argument("--real", default="rt_detr", help="a zoo model whose own failure is reduced ('' for none)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--own-op", default="seg_deeplabv3p", help="a zoo model whose failure is a layer's own op ('' for none)")
    parser.add_argument("--own-op-only", action="store_true", help="only the own-op side by side (part 3)")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    text = (ROOT / "matrix" / "default.toml").read_text(encoding="utf-8")
    block = text[text.index(f"[models.{args.model}]"):]
    block = block[:block.index("\n\n")] if "\n\n" in block else block
    planted_name = f"{PREFIX}{args.model}"
    planted = block.replace(f"[models.{args.model}]", f"[models.{planted_name}]").replace(
        f"harness.models.zoo:{args.model}", f"harness.models.planted:{planted_name}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        matrix = tmp / "bench.toml"
        matrix.write_text(text + "\n" + planted + "\n", encoding="utf-8")

        def command(model: str, results: str, *extra: str) -> List[str]:
            return [sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--session", "cpu_fp32",
                    "--model", model, "--results", str(tmp / results), "--force", *extra]

        def reduced(model: str, expected: "str | None") -> None:
            seconds = timed(command(model, model), env)
            record = json.loads(next((tmp / model).rglob(f"{model}.json")).read_text())
            analysis = record.get("analysis") or {}
            reduce = analysis.get("reduce") or {}
            first = next((s for s in record["stages"] if s["status"] in ("fail", "error")), None)
            print(f"{model}: first failure {first['name'] + ' ' + first['status'] if first else 'none'}"
                  f"{' (' + str(first.get('message', ''))[:120] + ')' if first else ''}")
            found = ("-> the planted layer" if reduce.get("layer") == expected else "-> NOT the planted layer") if expected else ""
            print(f"  reduce: {reduce.get('outcome')} at {reduce.get('path')!r} ({reduce.get('layer')}) {found}; "
                  f"{reduce.get('sub_exports')} sub-exports, budget {reduce.get('budget')} "
                  f"(L={reduce.get('leaves')} called leaves, depth {reduce.get('depth')}): "
                  f"{'within' if (reduce.get('sub_exports') or 0) <= (reduce.get('budget') or -1) else 'OVER'}")
            print(f"  why there: {reduce.get('why_here')}")
            steps = ", ".join(f"{k} {v.get('seconds')} s" for k, v in analysis.items())
            print(f"  cell {seconds:.1f} s; analysis: {steps}; reproducer verified: "
                  f"{(analysis.get('reproducer') or {}).get('verified')}")

        if args.own_op_only:
            own_op_side_by_side(args.own_op, args.repeat, matrix, tmp, env)
            return 0
        if args.real:
            reduced(args.real, None)
        print(f"planted: {args.model} with its deepest conv wrapped in a {PLANTED} (harness.models.planted)")
        reduced(planted_name, PLANTED)

        timed(command(args.model, "warm", "--no-root-cause"), env)  # warm-up: checkpoint, caches
        times = {"on": [], "off": []}
        for _ in range(args.repeat):
            times["on"].append(timed(command(args.model, "on"), env))
            times["off"].append(timed(command(args.model, "off", "--no-root-cause"), env))
        passing = json.loads(next((tmp / "on").rglob(f"{args.model}.json")).read_text())
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(f"passing cell {args.model} ({passing['verdict']['status']}): root cause on {on:.2f} s vs off {off:.2f} s "
              f"-> {on / off:.2f}x; analysis entries: {len(passing.get('analysis') or {})}")
        if args.own_op:
            own_op_side_by_side(args.own_op, args.repeat, matrix, tmp, env)
    return 0


def own_op_side_by_side(model: str, repeat: int, matrix: Path, tmp: Path, env: dict) -> None:
    """The descent asking the layer's own ops first, against the descent without it (interleaved)."""
    said = {"probe": [], "no probe": []}
    for k in range(repeat):
        for label, probes in (("probe", "6"), ("no probe", "0")):
            folder = tmp / f"own-{probes}-{k}"
            timed([sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--session", "cpu_onednn_fp32",
                   "--model", model, "--results", str(folder), "--force"], dict(env, HARNESS_OWN_OP_PROBES=probes))
            reduce = ((json.loads(next(folder.rglob(f"{model}.json")).read_text()).get("analysis") or {})
                      .get("reduce") or {})
            said[label].append(reduce)
    for label, runs in said.items():
        last = runs[-1]
        print(f"{model} cpu_onednn_fp32, {label}: reduce {statistics.median(r.get('seconds') or 0 for r in runs):.1f} s "
              f"(median of {len(runs)}), {last.get('sub_exports')} sub-exports ({last.get('finer_exports')} finer), "
              f"{(last.get('isolation') or {}).get('runs')} one-op runs -> {last.get('path')!r} op {last.get('op')}")
    with_, without = (statistics.median(r.get("seconds") or 0 for r in said[k]) for k in ("probe", "no probe"))
    same = all((r.get("path"), r.get("op")) == (said["no probe"][0].get("path"), said["no probe"][0].get("op"))
               for runs in said.values() for r in runs)
    print(f"own op first: {with_ / without:.2f}x the reduction's seconds without it; "
          f"{'the same layer and op' if same else 'ANOTHER answer'} in every run")


if __name__ == "__main__":
    sys.exit(main())
