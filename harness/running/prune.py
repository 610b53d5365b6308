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
sessions at 3.3.1, none of them named by a record (measured on the published run).

What stays is stored once: a kept file of the same bytes as one another cell (or this one) kept is
made a hard link to the run's copy (``RunFolder.stored``, by digest). One model's cells in seven
sessions write the same source reproducer weights, inputs and conversions, and a standalone folder
repeats its source folder's: 23.7 GB of the 37 GB the zoo kept at 3.3.1 were such repeats (measured).
Nothing in a cell folder is written in place after its record (records and drafts are replaced by a
rename; a cell run again removes its folder first), so a link never carries one cell's write into
another's."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from ..shared.records import cell_record_path
from ..shared.runfolder import RunFolder

# The files a trial exported or was fed: what takes the space.
_BULK_SUFFIXES = (".pdiparams", ".pdmodel", ".onnx", ".npz", ".bin", ".xml")
_BULK_NAMES = ("model.json",)
_SCRATCH_FOLDERS = ("export-fresh", "export-parting")
# Judged within the cell, read by nothing after it (a reproducer converts again itself; a cell that
# takes another's export reads its ONNX, never the perturbed copy; the reduction's trials are above).
_PERTURBED, _OPTIMIZED, _DUMP_FOLDER = ".perturbed.onnx", ".optimized.onnx", "tensors/dump"
# Smaller files are not worth their digest (a cell's logs and records).
STORED_FROM = 1 << 20


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
    freed += _byproducts(work, named)
    return freed + stored_once(RunFolder(results).stored, work)


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


def stored_once(store: Path, work: Path) -> int:
    """Bytes freed by making each large file of ``work`` a hard link to ``store``'s copy of its bytes
    (the first of its bytes becomes that copy)."""
    store.mkdir(parents=True, exist_ok=True)
    freed = 0
    for path in sorted(work.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        stat = path.stat()
        if stat.st_size < STORED_FROM or stat.st_nlink > 1:  # linked already: to the store or a shared program
            continue
        with path.open("rb") as handle:
            kept = store / hashlib.file_digest(handle, "sha256").hexdigest()
        try:
            os.link(path, kept)
            continue
        except FileExistsError:
            pass
        linking = path.with_name(path.name + ".linking")
        linking.unlink(missing_ok=True)
        os.link(kept, linking)
        os.replace(linking, path)
        freed += stat.st_size
    return freed


__all__ = ["prune", "stored_once", "STORED_FROM"]
