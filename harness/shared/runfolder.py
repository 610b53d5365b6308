"""The run folder, ``results/<run>/``: every path under it, spelled here once (shared tier).

::

    results/<run>/
      <session>/<paddle>/<mode>/<model>.json   a cell's record     (record)
      <session>/<paddle>/<mode>/<model>/       its work folder     (work)
      versions/<paddle>/hazards-<device>.json  hazard probes       (hazards)
      checkpoints/<mode>/<model>.npz           shared weights      (checkpoint)
      programs/<paddle>/<mode>/<model>/        shared setup: export, inputs, dygraph outputs (program);
                                               work.json: the stages and analyses its maker ran
      portability/<exporter>/<loader>/<session>/<mode>/<model>.json   loads of other versions' exports
      tipc/                                    TIPC chains' logs
      summary-<session>-<paddle>.md, summary.md, report.{md,xml,html}, regression.md
      .lock                                    one writer at a time (runlock)

Runs written before hazards moved to ``versions/`` kept one probe per session
(``<session>/<paddle>/hazards.json``); ``hazard_files`` reads both.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Optional

# Folders of a run that hold other things than cell records.
# The entry of a program's shared setup, written last: the folder is ready once it exists; and what
# its maker cell ran on it (its stages and analyses), written when that cell ended: its readers start
# after it (the scheduler waits for this file).
PROGRAM_ENTRY = "setup.json"
PROGRAM_WORK = "work.json"
NOT_SESSION_FOLDERS = frozenset({"checkpoints", "programs", "portability", "tipc", "diff", "versions", ".stored"})


@dataclasses.dataclass(frozen=True)
class RunFolder:
    root: Path

    @classmethod
    def of(cls, results: "str | Path", run: str) -> "RunFolder":
        return cls(Path(results) / run)

    def record(self, cell_id: str) -> Path:
        return self.root / f"{cell_id}.json"

    def work(self, cell_id: str) -> Path:
        return self.root / cell_id

    def hazards(self, version: str, device: str) -> Path:
        return self.root / "versions" / version / f"hazards-{device}.json"

    def hazard_files(self) -> List[Path]:
        return sorted(self.root.glob("versions/*/hazards-*.json")) + sorted(self.root.glob("*/*/hazards.json"))

    @property
    def stored(self) -> Path:
        """One copy of each content its cells kept twice (``running/prune.py``), by digest."""
        return self.root / ".stored"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    def checkpoint(self, mode: str, model: str) -> Path:
        return self.checkpoints / mode / f"{model}.npz"

    def program(self, version: str, mode: str, model: str) -> Path:
        """The setup every session of one (Paddle version, mode, model) reads: made once."""
        return self.root / "programs" / version / mode / model

    @property
    def portability(self) -> Path:
        return self.root / "portability"

    def load(self, exporter: str, loader: str, session: str, mode: str, model: str) -> Path:
        """Where another Paddle's (``loader``) load of a cell's export is kept."""
        return self.portability / exporter / loader / session / mode / f"{model}.json"

    def load_files(self) -> List[Path]:
        return sorted(self.portability.rglob("*.json"))

    @property
    def tipc(self) -> Path:
        return self.root / "tipc"

    def summary(self, session: Optional[str] = None, version: Optional[str] = None) -> Path:
        """One session's at one version, or the run's."""
        return self.root / (f"summary-{session}-{version}.md" if session else "summary.md")

    def report(self, suffix: str) -> Path:
        """``report.md``, ``report.xml`` (JUnit), ``report.html``."""
        return self.root / f"report.{suffix}"

    @property
    def regression(self) -> Path:
        return self.root / "regression.md"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"


__all__ = ["RunFolder", "NOT_SESSION_FOLDERS", "PROGRAM_ENTRY", "PROGRAM_WORK"]
