"""Outgrow one machine: a selection of nox sessions as a CI job matrix, and the shards' result
folders merged back into one run that ``report``, ``regress`` and ``qualify`` read as usual.

``nox -l --json -t cpu | python -m harness shards --format github`` prints the GitHub Actions
``strategy.matrix`` (``{"include": [{"session": ..., "runner": ...}]}``); ``--format gitlab``
the ``parallel:matrix`` list (one group per runner tag). Sessions tagged ``gpu`` go to the GPU
runner label. ``python -m harness merge --into DIR SHARD...`` copies every shard's run folder
into DIR; shards of different matrices (their records' matrix fingerprints differ) are refused.
See ``ci/github-actions.yml`` for a workflow that uses both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Dict, List, Sequence

from ..shared.errors import UserError
from ..shared.records import Unreadable, atomic_write_text, scan_records
from ..shared.runfolder import RunFolder

# The tag the noxfile gives every session that runs matrix cells (and no other session): shards
# are chosen by what a session is, so a new benchmark, report or tool session never becomes a CI
# job by being left off a list.
CELLS_TAG = "cells"


def read_nox_json(text: str, where: str) -> List[Dict[str, Any]]:
    try:
        sessions = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{where}: not the JSON of `nox -l --json` ({exc}); pipe that command's output in.") from None
    if not isinstance(sessions, list) or not all(isinstance(s, dict) and "name" in s for s in sessions):
        raise UserError(f"{where}: expected the list `nox -l --json` prints (objects with a name).")
    # Portability loads every version's exports (it runs after the merge), TIPC sessions need a
    # repository and a config, tests/report/bench are tools: none carries the cells tag.
    return [s for s in sessions if CELLS_TAG in (s.get("tags") or [])]


def ci_matrix(sessions: Sequence[Dict[str, Any]], fmt: str, cpu_runner: str, gpu_runner: str) -> Any:
    rows = [{"session": s["name"], "runner": gpu_runner if "gpu" in (s.get("tags") or []) else cpu_runner}
            for s in sessions]
    if fmt == "github":
        return {"include": rows}
    groups: Dict[str, List[str]] = {}
    for row in rows:
        groups.setdefault(row["runner"], []).append(row["session"])
    return [{"SESSION": names, "RUNNER": [runner]} for runner, names in groups.items()]


def merge(into: Path, shards: Sequence[Path]) -> Dict[str, Any]:
    """Every shard's run folder copied into ``into``; paths inside the records follow. Files in a
    record's place that are not readable records are copied too (nothing is dropped) and returned
    under ``unreadable``: the merged run then lists them in every report."""
    fingerprints: Dict[str, Path] = {}
    per_shard = []
    unreadable: List[Unreadable] = []
    for shard in shards:
        if not shard.is_dir():
            raise UserError(f"merge: {shard} is not a folder; give the shards' run folders (results/<run>).")
        records, bad = scan_records(shard)
        unreadable += bad
        if not records and not bad:
            raise UserError(f"merge: {shard} holds no result records; is it a run folder (results/<run>)?")
        for record in records:
            fingerprint = record.cell.matrix_fingerprint
            if fingerprints and fingerprint not in fingerprints:
                other = next(iter(fingerprints.items()))
                raise UserError(f"merge: {shard} was made from another matrix (fingerprint {fingerprint}) than "
                                f"{other[1]} ({other[0]}); rerun the shards from one matrix.")
            fingerprints.setdefault(fingerprint, shard)
        per_shard.append((shard, records))
    seen: Dict[str, Path] = {}
    for shard, records in per_shard:
        for record in records:
            if record.id in seen:
                raise UserError(f"merge: cell {record.id} is in both {seen[record.id]} and {shard}; "
                                f"give each shard its own sessions (nox) or models (qualification --shard).")
            seen[record.id] = shard
    into.mkdir(parents=True, exist_ok=True)
    for shard, records in per_shard:
        # A shard's store of repeated bytes is links to its cells' files: copied, it would be each once more.
        shutil.copytree(shard, into, dirs_exist_ok=True, ignore=shutil.ignore_patterns(RunFolder(shard).stored.name))
        old, new = str(shard.resolve()), str(into.resolve())
        for record in records:
            target = into / record.path.resolve().relative_to(shard.resolve())
            atomic_write_text(target, target.read_text(encoding="utf-8").replace(old, new))
    return {"shards": len(shards), "cells": len(seen), "unreadable": unreadable}
