"""Each model family alone (host side): ``python -m harness families`` runs each family's models in
``cpu_fp32`` in an environment holding Paddle and that family's packages only (a plain session given
``--model`` installs the families of those models, nothing else) — the way a user runs one suite's
models — and says, family by family, which models were built. A model its family cannot build there
is the matrix's gap, never a Paddle cause: its record's setup is ``untestable`` with the module that
was missing and the family to fix (``cell/setup/build.py``), and here the family fails (exit 1).
What Paddle does with a model once built (an export that raises, a training that dies, numbers) is
the model's finding, counted as built.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..shared.errors import UserError
from ..shared.record_model import CellRecord
from ..shared.vocab import Status

SESSION = "cpu_fp32"


@dataclasses.dataclass
class FamilyAlone:
    """One family's models, run alone: the ones built and the ones that could not be, with why."""

    family: str
    models: List[str]
    not_built: Dict[str, str] = dataclasses.field(default_factory=dict)
    skipped: Dict[str, str] = dataclasses.field(default_factory=dict)  # declared: the family needs another Paddle
    missing: List[str] = dataclasses.field(default_factory=list)  # no record: the pool did not run it

    @property
    def complete(self) -> bool:
        return not self.not_built and not self.missing


def judge(family: str, models: List[str], records: List[CellRecord]) -> FamilyAlone:
    """Which of ``models`` their family built alone, from the records of its run."""
    said = FamilyAlone(family, list(models))
    by_model = {r.model: r for r in records if r.session == SESSION}
    for model in models:
        record = by_model.get(model)
        if record is None:
            said.missing.append(model)
            continue
        setup = record.setup
        if setup.status is Status.SKIP:
            said.skipped[model] = setup.message or "skipped"
        elif setup.status is Status.UNTESTABLE:
            said.not_built[model] = setup.message or "untestable"
    return said


def family_models(matrix: Any) -> Dict[str, List[str]]:
    """Every family of the matrix and its models, in the matrix's order."""
    out: Dict[str, List[str]] = {name: [] for name in matrix.data.get("families", {})}
    for model, entry in matrix.data.get("models", {}).items():
        if entry.get("family") in out:
            out[entry["family"]].append(model)
    return {k: v for k, v in out.items() if v}


def add_parser(sub: Any, matrix_default: Path) -> None:
    from .pathargs import at_least_one, folder_to_write

    parser = sub.add_parser("families", help="each model family alone: its packages only, its models built (host side)")
    parser.add_argument("--matrix", type=Path, default=matrix_default)
    parser.add_argument("--family", action="append", help="only this family (repeatable)")
    parser.add_argument("--results", type=folder_to_write, default=Path("results"))
    parser.add_argument("--envs", type=Path, default=None, help="where the environments are made (default: <repo>/.nox)")
    parser.add_argument("--jobs", type=at_least_one, default=None)


def command(args: Any) -> int:
    from tabulate import tabulate

    from .. import matrix as matrix_mod
    from ..shared.records import load_records

    matrix = matrix_mod.load(args.matrix)
    families = family_models(matrix)
    unknown = sorted(set(args.family or []) - set(families))
    if unknown:
        raise UserError(f"families: --family {unknown[0]} is not a family of {args.matrix} "
                        f"(it has {', '.join(families)}).")
    rows, failed = [], 0
    for family, models in families.items():
        if args.family and family not in args.family:
            continue
        run = f"family-{family}"
        argv = [sys.executable, "-m", "harness", "pool", "--matrix", str(args.matrix), "--session", SESSION,
                "--results", str(args.results), "--run", run, "--no-root-cause",
                *[a for m in models for a in ("--model", m)],
                *(["--envs", str(args.envs)] if args.envs else []), *(["--jobs", str(args.jobs)] if args.jobs else [])]
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode not in (0, 1):  # 1: a cell did not pass (a finding); anything else: the run failed
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"families: the pool of family {family} ended with {proc.returncode}: {tail[0]}")
        said = judge(family, models, load_records(args.results / run))
        failed += not said.complete
        rows.append([family, len(models), len(models) - len(said.not_built) - len(said.missing) - len(said.skipped),
                     "; ".join([*(f"{m}: {why[:160]}" for m, why in said.not_built.items()),
                                *(f"{m}: no record" for m in said.missing),
                                *(f"{m}: skip ({why[:80]})" for m, why in said.skipped.items())]) or "-"])
    print(tabulate(rows, headers=["family", "models", "built alone", "not built / skipped"], tablefmt="github"))
    return 1 if failed else 0


__all__ = ["FamilyAlone", "judge", "family_models", "add_parser", "command"]
