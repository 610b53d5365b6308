"""Command line: ``python -m harness {run,report,cell} ...``.

User errors print one line and exit 2; ``run`` exits 1 when any cell did not pass.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from .errors import UserError

DEFAULT_MATRIX = Path(__file__).resolve().parent.parent / "matrix" / "default.toml"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}; see --help\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run the cells of one session at one Paddle version (host side)")
    run.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix TOML (default: %(default)s)")
    run.add_argument("--session", required=True, help="session name, e.g. cpu_fp32")
    run.add_argument("--paddle", help="Paddle version (default: the session's first)")
    run.add_argument("--model", action="append", help="only this model (repeatable)")
    run.add_argument("--mode", action="append", help="only this train mode (repeatable)")
    run.add_argument("--results", type=Path, default=Path("results"), help="results root (default: %(default)s)")
    run.add_argument("--run", dest="run_name", default="default", help="run name under the results root")
    run.add_argument("--force", action="store_true", help="redo cells that already have a record")
    run.add_argument("--python", help="Python of the Paddle environment (default: this one)")

    report = sub.add_parser("report", help="merge every record of a run into markdown and a table")
    report.add_argument("--results", type=Path, default=Path("results"))
    report.add_argument("--run", dest="run_name", default="default")
    report.add_argument("--out", type=Path, help="markdown file (default: <results>/<run>/report.md)")

    regress = sub.add_parser("regress", help="cross-version report: transitions, drift, agreement, portability")
    regress.add_argument("--results", type=Path, default=Path("results"))
    regress.add_argument("--run", dest="run_name", default="default")
    regress.add_argument("--base", help="base Paddle version (default: every older version)")
    regress.add_argument("--head", help="head Paddle version (default: the newest with records)")
    regress.add_argument("--out", type=Path, help="markdown file (default: <results>/<run>/regression.md)")

    port = sub.add_parser("port", help="run other versions' exports with this environment's Paddle")
    port.add_argument("--results", type=Path, default=Path("results"))
    port.add_argument("--run", dest="run_name", default="default")
    port.add_argument("--session", default="cpu_fp32", help="whose exports to load (default: %(default)s)")
    port.add_argument("--model", action="append")
    port.add_argument("--force", action="store_true", help="redo pairs that already have a record")

    diff = sub.add_parser("diff", help="per-tensor diff of an exported model between two predictor configs")
    diff.add_argument("--model-dir", type=Path, required=True, help="folder with <prefix>.json|.pdmodel + .pdiparams")
    diff.add_argument("--base", default="cpu_fp32", help="reference config (default: %(default)s)")
    diff.add_argument("--test", required=True, help="config to check, e.g. cpu_onednn_bf16")
    diff.add_argument("--inputs", type=Path, help=".npz of inputs by name (e.g. a cell's inputs.npz)")
    diff.add_argument("--shape", action="append", help="NAME=D1,D2,... for inputs with free dims (repeatable)")
    diff.add_argument("--seed", type=int, default=0)
    diff.add_argument("--atol", type=float, default=1e-4)
    diff.add_argument("--rtol", type=float, default=1e-4)
    diff.add_argument("--scaled-atol", type=float, default=0.0,
                      help="add this fraction of each tensor's max |base| to atol (bf16/fp16 runs)")
    diff.add_argument("--names", help="only these tensors (comma-separated)")
    diff.add_argument("--regex", help="only tensors whose name or op type matches")
    diff.add_argument("--segment", nargs=2, metavar=("FIRST", "LAST"), help="tensors between two names, inclusive")
    diff.add_argument("--engine-info", help="TensorRT inspector engine_info_*.json: its layer outputs")
    diff.add_argument("--formats", default="csv,xlsx,md,png")
    diff.add_argument("--out", type=Path, help="output folder (default: results/diff/<model>-<base>-vs-<test>)")

    diff_worker = sub.add_parser("diff-worker", help="(cell side) the Paddle half of diff")
    diff_worker.add_argument("--request", type=Path, required=True)
    diff_worker.add_argument("--out", type=Path, required=True)

    load = sub.add_parser("load", help="(cell side) run one exported model once with the baseline config")
    load.add_argument("--program", type=Path, required=True)
    load.add_argument("--params", type=Path)
    load.add_argument("--inputs", type=Path, required=True)
    load.add_argument("--out", type=Path, required=True)

    cell = sub.add_parser("cell", help="(cell side) run one cell in this Paddle environment")
    cell.add_argument("--spec", type=Path, required=True)
    cell.add_argument("--work", type=Path, required=True)
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    from . import matrix as matrix_mod
    from . import report
    from .runner import LocalLauncher, run_session

    matrix = matrix_mod.load(args.matrix)
    session = matrix.session(args.session)
    version = args.paddle or session.versions[0]
    results = args.results / args.run_name
    records = run_session(
        matrix, session.name, version, results=results, modes=args.mode, models=args.model,
        force=args.force, launcher=LocalLauncher(args.python),
    )
    print()
    print(report.terminal_table(records))
    summary = report.write_markdown(results / f"summary-{session.name}-{version}.md", records,
                                    f"{session.name} · Paddle {version}")
    print(f"\nrecords: {results}/{session.name}/{version}/   summary: {summary}")
    return 0 if all(r["verdict"]["status"] in ("pass", "skip") for r in records) else 1


def _cmd_report(args: argparse.Namespace) -> int:
    from . import report
    from .records import load_records

    results = args.results / args.run_name
    if not results.is_dir():
        raise UserError(f"--results/--run: {results} does not exist; run a session first or point at a results dir.")
    records = load_records(results)
    if not records:
        raise UserError(f"--results/--run: no result records under {results}; run a session first.")
    print(report.terminal_table(records))
    out = report.write_markdown(args.out or results / "report.md", records, f"Qualification report · run {args.run_name}")
    print(f"\nreport: {out}")
    return 0


def _cmd_regress(args: argparse.Namespace) -> int:
    from . import regress

    return regress.run(args.results / args.run_name, args.base, args.head, args.out)


def _cmd_port(args: argparse.Namespace) -> int:
    from . import portability

    results = portability.run(args.results / args.run_name, args.session, args.model, force=args.force)
    return 0 if all(r["status"] in ("pass", "skip") for r in results) else 1


def _cmd_load(args: argparse.Namespace) -> int:
    from .cell import load

    return load.main(args.program, args.params, args.inputs, args.out)


def _cmd_diff(args: argparse.Namespace) -> int:
    from . import diff

    return diff.run(args)


def _cmd_diff_worker(args: argparse.Namespace) -> int:
    from .cell import diff_worker

    return diff_worker.main(args.request, args.out)


def _cmd_cell(args: argparse.Namespace) -> int:
    from .cell import worker

    return worker.main(args.spec, args.work)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    handler = {"run": _cmd_run, "report": _cmd_report, "regress": _cmd_regress, "port": _cmd_port,
               "load": _cmd_load, "diff": _cmd_diff, "diff-worker": _cmd_diff_worker, "cell": _cmd_cell}[args.command]
    try:
        return handler(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; finished cells keep their records, rerun to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
