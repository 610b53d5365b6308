"""Host side: a release's environment for one cause of ``releases`` (see ``Environments``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..matrix import load as load_matrix, session_runtime_packages
from ..matrix.sessions import CELL_SIDE_EXTRAS, Environment
from ..shared.errors import UserError
from ..shared.record_model import CellRecord
from ..shared.spec import at_least
from . import envs

PACKAGE = "paddlepaddle"
SHIPPED_MATRIX = Path(__file__).resolve().parents[2] / "matrix" / "default.toml"

Say = Callable[[str], object]


def _distribution(spec: str) -> str:
    """The distribution a requirement names (``numpy<2`` -> ``numpy``)."""
    return re.split(r"[<>=!~\[; ]", spec.strip(), maxsplit=1)[0].lower()


class Environments:
    """A release's environment for one cause: Paddle at that release with the runtime packages a cell
    of its session installs there (as the record's matrix pins them, else the shipped matrix's) and its
    train mode's (PACT's PaddleSlim) —
    and, for a script that builds the model's own classes, the model's packages: its family's
    (``[families]``) or, for a model of no family, what the cell's own environment held for it
    (``setup.model_packages``). Each made once under ``root`` (``envs.ensure``: keyed by its
    package list, locked) and reused; one that does not install is None, said once."""

    def __init__(self, root: Path, record: CellRecord, python: str, say: Say) -> None:
        self.root, self.record, self.python, self.say = root, record, python, say
        matrix_path = Path(record.cell.matrix) if record.cell.matrix else None
        self.matrix = load_matrix(matrix_path) if matrix_path is not None and matrix_path.is_file() else None
        self.shipped = load_matrix(SHIPPED_MATRIX)
        if matrix_path is not None and self.matrix is None:
            # The run's matrix is gone (a clone removed since): without it the model's family, hence
            # its suite, would be unknown and a script that imports the suite would be asked where it
            # is not installed ("No module named 'paddlex'", measured). The shipped matrix names it.
            say(f"[releases] the run's matrix {matrix_path} is gone: the model's family and the "
                f"sessions' packages are read from the shipped matrix ({SHIPPED_MATRIX})")
            self.matrix = self.shipped
        self.made: Dict[Tuple[str, bool], Optional[Path]] = {}
        self.family = ((self.matrix.data["models"].get(record.cell.model.get("name"), {}).get("family") or "")
                       if self.matrix is not None else "")
        self.held = [str(p) for p in record.setup.get("model_packages") or []]

    def model_words(self) -> str:
        """The model's packages, as ``releases`` says them."""
        if self.family:
            return f"the {self.family} family's packages"
        return ", ".join(self.held[:3]) + (f" and {len(self.held) - 3} more" if len(self.held) > 3 else "")

    def suite_missing(self, version: str) -> str:
        """Why this release's environment cannot hold the model's packages ("" when it can): its
        family installs from a later Paddle (``[families].requires_paddle``), so a script that
        imports them says nothing there — said so, never run without them."""
        if not self.family or self.matrix is None:
            return ""
        entry = self.matrix.data["families"].get(self.family, {})
        floor = entry.get("requires_paddle")
        if at_least(version, floor):
            return ""
        packages = ", ".join([*entry.get("no_deps", []), *entry.get("packages", [])][:2])
        return f"the {self.family} family ({packages}) installs from Paddle {floor} on (its requires_paddle)"

    def _model_packages(self, version: str) -> Dict[str, List[str]]:
        if self.family and self.matrix is not None:
            return self.matrix.family_packages([self.record.cell.model["name"]], version)
        return {"packages": [], "no_deps": list(self.held)}  # as the cell's environment held them: not resolved again

    def _paddle_packages(self, version: str) -> List[str]:
        """Paddle at ``version`` with what that release needs beside it (``[paddle."<V>"].packages``
        of the run's matrix, else the shipped one's: 2.6.2 wants numpy<2), whatever numpy the cell
        ran with; just the wheel for a release neither lists."""
        for matrix in (self.matrix, self.shipped):
            listed = (matrix.data.get("paddle", {}).get(version, {}).get("packages") if matrix is not None else None)
            if listed:
                return [str(p) for p in listed]
        return [f"{PACKAGE}=={version}"]

    def __call__(self, version: str, suite: bool = False) -> Optional[Path]:
        suite = suite and bool(self.family or self.held)
        if (version, suite) not in self.made:
            runtime: List[str] = []
            record = self.record
            if self.matrix is not None:
                runtime = session_runtime_packages(self.matrix.data["sessions"].get(record.session, {}), version)
            if not runtime and record.cell.session.backend not in ("native", "onednn"):
                # The run's matrix pins nothing for this release (a matrix written for 3.x alone): the
                # converter and runtime that release line used, as the shipped matrix pins them.
                runtime = session_runtime_packages(self.shipped.data["sessions"].get(record.session, {}), version)
            # A train mode's own packages (PACT's PaddleSlim): its script prepares and saves the mode's way.
            runtime = [*runtime, *record.cell.mode_packages]
            model = self._model_packages(version) if suite else {"packages": [], "no_deps": []}
            paddle = self._paddle_packages(version)
            numpy = (record.paddle or {}).get("numpy")
            if not suite and numpy and not any(_distribution(spec) == "numpy" for spec in [*paddle, *runtime]):
                # Beside the numpy the cell ran with (its family's pin, in the suite's environment): a
                # script asked beside another numpy may answer for numpy, not for the cause (measured).
                runtime = [*runtime, f"numpy=={numpy}"]
            env = Environment(self.python, tuple(dict.fromkeys([*paddle, *runtime, *CELL_SIDE_EXTRAS])),
                              tuple(model["no_deps"]), tuple(model["packages"]))
            try:
                self.made[(version, suite)] = envs.ensure(self.root, env, version, self.say)
            except UserError as exc:
                self.say(f"[releases] {version}: {exc}")
                self.made[(version, suite)] = None
        return self.made[(version, suite)]


__all__ = ["Environments", "PACKAGE", "SHIPPED_MATRIX"]
