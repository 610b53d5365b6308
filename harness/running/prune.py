"""What a finished cell's work folder no longer needs: the programs and arrays of the reduction's
trials that its record does not name (a zoo detector's reduction exports a hundred pieces and ops,
1.2 GB for one cell; a run of the zoo over four sessions filled this machine's disk), and the fresh
export ``export_loss`` made to compare with. Each trial keeps its script, log and phase — what it
was and how it ended — and every file the record names stays, so no verdict, reproducer, report or
later step (``releases``, ``workarounds``) loses what it reads. The dumps ``export_loss`` compared op by
op (every intermediate of dygraph and of the program) go too, and so do the byproducts a stage
compared and judged within the cell: a converter's second conversion with memory perturbed, a
runtime's optimized copy of the model (read for the op types it ran) and the per-tensor dumps of
the layer-wise diff (its table, chart and workbook stay) — 7.5 GB of the zoo's 24 GB over four
sessions at 3.3.1, none of them named by a record (measured on the published run)."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..shared.records import cell_record_path

# The files a trial exported or was fed: what takes the space.
_BULK_SUFFIXES = (".pdiparams", ".pdmodel", ".onnx", ".npz", ".bin", ".xml")
_BULK_NAMES = ("model.json",)
_SCRATCH_FOLDERS = ("export-fresh", "export-parting")
# Judged within the cell, read by nothing after it (a reproducer converts again itself; a cell that
# takes another's export reads its ONNX, never the perturbed copy; the reduction's trials are above).
_PERTURBED, _OPTIMIZED, _DUMP_FOLDER = ".perturbed.onnx", ".optimized.onnx", "tensors/dump"


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
    return freed + _byproducts(work, named)


def _byproducts(work: Path, named: str) -> int:
    """The export's perturbed conversions, the runtimes' optimized copies and the tensor dumps."""
    freed = 0
    for path in [*work.glob(f"export/*{_PERTURBED}"), *work.glob(f"*{_OPTIMIZED}"), *work.glob(f"tensors/*{_OPTIMIZED}")]:
        if path.is_file() and f"/{path.relative_to(work).as_posix()}" not in named:
            freed += path.stat().st_size
            path.unlink()
    folder = work / _DUMP_FOLDER
    if folder.is_dir() and f"/{_DUMP_FOLDER}/" not in named:
        freed += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        shutil.rmtree(folder)
    return freed


__all__ = ["prune"]
