"""On-demand per-tensor diff of any exported model (``python -m harness diff``).

Host side: validates the arguments, starts the cell side in a fresh process (loading a model
can kill its process), renders what it returns. Run it inside a Paddle environment, e.g.
``.nox/cpu_fp32/bin/python -m harness diff --model-dir DIR --base cpu_fp32 --test cpu_onednn_bf16``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..report import tensors as tensor_report
from ..shared.engine_info import engine_output_names
from ..launch import LocalLauncher, log_tail, run_child, signal_name
from ..shared.backends import NAMED_CONFIGS
from ..shared.errors import UserError
from ..shared.records import atomic_write_json
from ..shared.tensor_diff import TensorDiff


def find_model(model_dir: Path) -> Dict[str, str]:
    """The one model in ``model_dir``: program (.json or .pdmodel) and its .pdiparams."""
    if not model_dir.is_dir():
        raise UserError(f"--model-dir {model_dir}: not a directory; point it at the folder jit.save wrote.")
    programs = sorted(model_dir.glob("*.json")) + sorted(model_dir.glob("*.pdmodel"))
    programs = [p for p in programs if p.name not in ("index.json",)]
    if not programs:
        raise UserError(f"--model-dir {model_dir}: no model file (*.json or *.pdmodel); export with paddle.jit.save.")
    with_params = [p for p in programs if p.with_suffix(".pdiparams").exists()]
    if not with_params:
        raise UserError(f"--model-dir {model_dir}: {programs[0].name} has no {programs[0].stem}.pdiparams beside it; "
                        f"copy the params file that jit.save wrote with it.")
    prefixes = {p.with_suffix("") for p in with_params}
    if len(prefixes) > 1:
        raise UserError(f"--model-dir {model_dir}: several models ({sorted(p.name for p in prefixes)}); "
                        f"point at a folder with one.")
    program = with_params[0]
    # Both formats beside each other: let the cell side prefer what its Paddle writes.
    return {"prefix": str(program.with_suffix("")), "params": str(program.with_suffix(".pdiparams")),
            "candidates": [str(p) for p in with_params]}


def parse_shapes(items: Optional[List[str]]) -> Dict[str, List[int]]:
    shapes = {}
    for item in items or []:
        name, _, dims = item.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise UserError(f"--shape {item}: expected NAME=D1,D2,... with integer dims.") from None
        if not name or not shapes[name] or min(shapes[name]) < 1:
            raise UserError(f"--shape {item}: expected NAME=D1,D2,... with positive dims.")
    return shapes


def selection_from(args: Any) -> Optional[Dict[str, Any]]:
    chosen = [k for k in ("names", "regex", "segment", "engine_info") if getattr(args, k, None)]
    if len(chosen) > 1:
        raise UserError(f"--{chosen[0].replace('_', '-')} and --{chosen[1].replace('_', '-')}: choose tensors one way.")
    if not chosen:
        return None
    kind = chosen[0]
    if kind == "names":
        names = [n for n in args.names.split(",") if n.strip()]
        if not names:
            raise UserError("--names: empty; give comma-separated tensor names.")
        return {"kind": "names", "names": names}
    if kind == "regex":
        import re

        try:
            re.compile(args.regex)
        except re.error as exc:
            raise UserError(f"--regex {args.regex!r}: not a regular expression ({exc}).") from None
        return {"kind": "regex", "pattern": args.regex}
    if kind == "segment":
        return {"kind": "segment", "start": args.segment[0], "end": args.segment[1]}
    path = Path(args.engine_info)
    if not path.exists():
        raise UserError(f"--engine-info {path}: not found.")
    engine_output_names(path)  # a malformed file is a user error before any Paddle runs
    return {"kind": "engine_info", "path": str(path.resolve())}


def run(args: Any) -> int:
    for flag, name in (("--base", args.base), ("--test", args.test)):
        if name not in NAMED_CONFIGS:
            raise UserError(f"{flag} {name}: unknown config; known: {', '.join(NAMED_CONFIGS)}.")
    model = find_model(args.model_dir)
    if args.inputs and not args.inputs.exists():
        raise UserError(f"--inputs {args.inputs}: not found.")
    request = {
        "model": model, "base_name": args.base, "test_name": args.test,
        "inputs": str(args.inputs) if args.inputs else None, "shapes": parse_shapes(args.shape),
        "atol": args.atol, "rtol": args.rtol, "scaled_atol": args.scaled_atol, "selection": selection_from(args), "seed": args.seed,
    }
    out = args.out or Path("results") / "diff" / f"{args.model_dir.name}-{args.base}-vs-{args.test}"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "request.json", request)
    launcher = LocalLauncher()
    log = out / "worker.log"
    log.unlink(missing_ok=True)
    outcome = run_child(launcher, ["diff-worker", "--request", launcher.path(out / "request.json"),
                                   "--out", launcher.path(out)], log)
    if outcome.user_error:
        raise UserError(outcome.user_error)
    if not outcome.ok:
        print(f"the diff worker died with {signal_name(outcome.returncode)}: {log_tail(log, lines=1)} "
              f"(full log: {log})", file=sys.stderr)
        return 1
    result = TensorDiff.from_dict(json.loads((out / "result.json").read_text()))
    title = f"{args.model_dir}: {args.base} vs {args.test}"
    files = tensor_report.write_all(out, result, title, args.formats.split(","))
    print(tensor_report.terminal(result))
    for side, reason in result.unmet.items():
        print(f"WARNING: --{side} {getattr(args, side)} cannot run as named here: {reason}")
    print("\n" + "  ".join(f"{k}: {v}" for k, v in files.items()))
    return 0 if result.first_divergence is None else 1
