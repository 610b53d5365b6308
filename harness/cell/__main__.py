"""The cell side's own entry: ``python -m harness.cell <command> ...``, run by a launcher inside
one Paddle environment (a venv or a container), never by a person.

Commands: ``cell`` (one cell: setup, stages, root cause), ``load`` (run another version's export
once), ``hazards`` (probe a Paddle version's config hazards), ``diff-worker`` (the Paddle half of
``python -m harness diff``). Exit codes follow ``harness.shared.protocol``.

It imports nothing of the host side: the host's CLI (``python -m harness``) starts it through a
launcher and reads back files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from ..shared.errors import UserError
from ..shared.protocol import EXIT_USER_ERROR


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, the protocol's user-error exit
        self.exit(EXIT_USER_ERROR, f"error: {self.prog}: {message}\n")


def parser() -> argparse.ArgumentParser:
    root = _Parser(prog="python -m harness.cell", description=__doc__)
    sub = root.add_subparsers(dest="command", required=True, parser_class=_Parser)

    cell = sub.add_parser("cell", help="run one cell in this Paddle environment")
    cell.add_argument("--spec", type=Path, required=True)
    cell.add_argument("--work", type=Path, required=True)

    load = sub.add_parser("load", help="run one exported model once with the plainest config")
    load.add_argument("--program", type=Path, required=True)
    load.add_argument("--params", type=Path)
    load.add_argument("--inputs", type=Path, required=True)
    load.add_argument("--out", type=Path, required=True)

    hazards = sub.add_parser("hazards", help="probe the config hazards of this Paddle (every backend of a device)")
    hazards.add_argument("--device", required=True)
    hazards.add_argument("--out", type=Path, required=True)

    diff_worker = sub.add_parser("diff-worker", help="the Paddle half of `python -m harness diff`")
    diff_worker.add_argument("--request", type=Path, required=True)
    diff_worker.add_argument("--out", type=Path, required=True)
    return root


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "cell":
            from .worker.lifecycle import main as run_cell

            return run_cell(args.spec, args.work)
        if args.command == "load":
            from .worker import load

            return load.main(args.program, args.params, args.inputs, args.out)
        if args.command == "hazards":
            from .worker import hazards

            return hazards.main(args.device, args.out)
        from .worker import diff_worker

        return diff_worker.main(args.request, args.out)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
