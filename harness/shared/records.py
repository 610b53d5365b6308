"""Files shared by the two sides: result records, the stage journal, atomic writes.

Standard library only: the cell side imports this inside any Paddle environment.

Layout of one run (``results/<run>/``)::

    <session>/<paddle>/<mode>/<model>.json   the cell's result record (written last, atomically)
    <session>/<paddle>/<mode>/<model>/       the cell's work dir: spec.json, journal.jsonl,
                                             worker.log, export/, *.npz

The journal is the cell side's running account: one JSON line when a stage starts and
one when it ends, flushed and fsynced, so a process that dies mid-stage still tells the
host which stage killed it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

# 2: stages follow deployment profiles, carry evidence, vacuous/noop are statuses, no workaround
# variants. Records of schema 1 are not read (rerun the session).
RECORD_SCHEMA = 2


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` so that readers see the old file or the new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=_jsonable) + "\n")


def _jsonable(value: Any) -> Any:
    # numpy scalars and paths end up in records; keep the record plain JSON.
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def cell_record_path(results: Path, cell_id: str) -> Path:
    return Path(results) / f"{cell_id}.json"


def cell_work_dir(results: Path, cell_id: str) -> Path:
    return Path(results) / cell_id


class Journal:
    """Append-only stage log of one cell (``journal.jsonl``)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def _append(self, entry: Dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(entry, default=_jsonable)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def start(self, stage: str) -> None:
        self._append({"event": "start", "stage": stage, "time": time.time()})

    def finish(self, stage: str, result: Dict[str, Any]) -> None:
        self._append({"event": "end", "stage": stage, "time": time.time(), "result": result})

    def entries(self) -> Iterator[Dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                for line in handle:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError:
                        # A line torn by a crash mid-write: ignore it, the stage is "started".
                        continue
        except FileNotFoundError:
            return

    def finished(self) -> Dict[str, Dict[str, Any]]:
        return {e["stage"]: e["result"] for e in self.entries() if e.get("event") == "end"}

    def running(self) -> Optional[Tuple[str, float]]:
        """The stage that started and has not ended, with its start time."""
        open_stage: Optional[Tuple[str, float]] = None
        for entry in self.entries():
            if entry.get("event") == "start":
                open_stage = (entry["stage"], entry["time"])
            elif entry.get("event") == "end" and open_stage and entry["stage"] == open_stage[0]:
                open_stage = None
        return open_stage


def load_records(results: Path) -> List[Dict[str, Any]]:
    """Every cell record below ``results`` (work dirs and unrelated JSON skipped)."""
    records = []
    for path in sorted(Path(results).rglob("*.json")):
        if path.name == "spec.json" or path.parent.name == "export":
            continue
        record = load_record(path)
        if record is not None:
            records.append(record)
    return records


def load_record(path: Path) -> Optional[Dict[str, Any]]:
    """One cell record, or None when the file is not a complete record of this schema."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if isinstance(data, dict) and data.get("schema") == RECORD_SCHEMA and "cell" in data:
        data["_path"] = str(path)
        return data
    return None
