"""What a finished cell's work folder no longer needs: the programs and arrays of the reduction's
trials that its record does not name (a zoo detector's reduction exports a hundred pieces and ops,
1.2 GB for one cell; a run of the zoo over four sessions filled this machine's disk), and the fresh
export ``export_loss`` made to compare with. Each trial keeps its script, log and phase — what it
was and how it ended — and every file the record names stays, so no verdict, reproducer, report or
later step (``releases``, ``workarounds``) loses what it reads. The dumps ``export_loss`` compared op by
op (every intermediate of dygraph and of the program) go too."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..shared.records import cell_record_path

# The files a trial exported or was fed: what takes the space.
_BULK_SUFFIXES = (".pdiparams", ".pdmodel", ".onnx", ".npz", ".bin", ".xml")
_BULK_NAMES = ("model.json",)
_SCRATCH_FOLDERS = ("export-fresh", "export-parting")


def prune(results: Path, cell_id: str, work: Path) -> int:
    """Bytes freed in ``work`` once the record of ``cell_id`` is written under ``results``."""
    named = cell_record_path(results, cell_id).read_text(encoding="utf-8")
    freed = 0
    for trials in sorted(work.glob("reduction*")):
        for trial in sorted(p for p in trials.iterdir() if p.is_dir()):
            if f"/{trials.name}/{trial.name}/" in named:
                continue
            for path in trial.rglob("*"):
                if path.is_file() and (path.suffix in _BULK_SUFFIXES or path.name in _BULK_NAMES):
                    freed += path.stat().st_size
                    path.unlink()
    for name in _SCRATCH_FOLDERS:
        folder = work / name
        if folder.is_dir() and f"/{name}/" not in named:
            freed += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
            shutil.rmtree(folder)
    return freed


__all__ = ["prune"]
