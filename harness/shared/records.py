"""Files shared by the two sides: result records, the stage journal, atomic writes.

Standard library only: the cell side imports this inside any Paddle environment.

Layout of one run (``results/<run>/``)::

    <session>/<paddle>/<mode>/<model>.json   the cell's result record (written last, atomically)
    <session>/<paddle>/<mode>/<model>/       the cell's work dir: spec.json, journal.jsonl,
                                             worker.log, export/, *.npz

Records move with their run folder (a CI artefact, a merged shard, a copy elsewhere): every path a
record holds to a file of its run is written relative to the run folder (``write_record``), and
whoever reads one resolves it against the folder the record was read from (``CellRecord.located``).

The journal is the cell side's running account: one JSON line when a stage starts and
one when it ends, flushed and fsynced, so a process that dies mid-stage still tells the
host which stage killed it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple
from .record_model import SCHEMA, CellRecord
from .runfolder import NOT_SESSION_FOLDERS, RunFolder
from .json_types import JsonObject

# What each schema changed, and which are read: ``record_model``'s docstring.
RECORD_SCHEMA = SCHEMA


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` so that readers see the old file or the new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes its file 0600 whatever the umask: the written file gets what a plain
        # open() would give (0644 under the usual umask), so others can read reports and records.
        os.fchmod(fd, 0o666 & ~UMASK)
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


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it: done once, at import, before any thread
    os.umask(mask)
    return mask


UMASK = _read_umask()


def file_sha256(path: Path) -> str:
    """A file's sha256 (weights and programs are compared by it)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    return RunFolder(Path(results)).record(cell_id)


def run_relative(value: Any, run: Path) -> Any:
    """``value`` with every path of a file or folder of the run folder ``run`` (absolute, or relative
    to the folder the run was started from) written relative to ``run``; other values as they are
    (a message with a slash in it names nothing that exists)."""
    root = Path(run).resolve()
    if isinstance(value, dict):
        return {k: run_relative(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [run_relative(v, root) for v in value]
    if isinstance(value, str) and os.sep in value and "\n" not in value:
        where = Path(value).resolve()
        if where != root and where.is_relative_to(root) and where.exists():
            return where.relative_to(root).as_posix()
    return value


def write_record(results: Path, record: CellRecord) -> CellRecord:
    """Write a cell's record under run folder ``results``, its paths relative to that folder; the
    record as written, located there (``CellRecord.located`` resolves its paths)."""
    path = cell_record_path(results, record.id)
    kept = run_relative(record.to_dict(), Path(results))
    atomic_write_json(path, kept)
    return CellRecord.from_dict(kept, path=path, run=Path(results).resolve())


def cell_work_dir(results: Path, cell_id: str) -> Path:
    return RunFolder(Path(results)).work(cell_id)


class Journal:
    """Append-only stage log of one cell (``journal.jsonl``)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def _append(self, entry: JsonObject) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(entry, default=_jsonable)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def start(self, stage: str) -> None:
        self._append({"event": "start", "stage": stage, "time": time.time()})

    def finish(self, stage: str, result: JsonObject) -> None:
        self._append({"event": "end", "stage": stage, "time": time.time(), "result": result})

    def entries(self) -> Iterator[JsonObject]:
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

    def phase(self, stage: str, phase: str) -> None:
        """Which part of a running stage it is in (the setup's ``train``, ``export``): what the host
        says of a worker that dies inside it."""
        self._append({"event": "phase", "stage": stage, "phase": phase, "time": time.time()})

    def phase_of(self, stage: str) -> Optional[str]:
        """The last part ``stage`` said it was in, or None."""
        phases = [e["phase"] for e in self.entries() if e.get("event") == "phase" and e.get("stage") == stage]
        return phases[-1] if phases else None

    def finished(self) -> Dict[str, JsonObject]:
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




@dataclasses.dataclass(frozen=True)
class Unreadable:
    """A file where a cell record belongs that is not one: every reader lists it, none drops it."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def is_record_place(results: Path, path: Path) -> bool:
    """``<session>/<paddle>/<mode>/<model>.json`` under the run folder: where a record belongs."""
    parts = Path(path).relative_to(results).parts
    return (len(parts) == 4 and parts[0] not in NOT_SESSION_FOLDERS and parts[-1].endswith(".json")
            and parts[-1] != "hazards.json")


def scan_records(results: Path) -> Tuple[List[CellRecord], List[Unreadable]]:
    """Every cell record of a run folder, and every file in a record's place that is not a
    readable record (truncated, an unread schema, not a record), with the reason."""
    results = Path(results)
    records, unreadable = [], []
    for path in sorted(results.rglob("*.json")):
        if not is_record_place(results, path):
            continue
        record, reason = read_record(path)
        if record is not None:
            records.append(record)
        else:
            unreadable.append(Unreadable(str(path), reason))
    return records, unreadable


def load_records(results: Path) -> List[CellRecord]:
    """The readable records only: for tools that add to a run (resume, portability, benches).
    Readers that conclude something from a run use ``scan_records``."""
    return scan_records(results)[0]


def load_record(path: Path) -> Optional[CellRecord]:
    """One cell record, or None when the file is not a complete record of a schema this harness reads."""
    return read_record(path)[0]


def read_record(path: Path) -> Tuple[Optional[CellRecord], str]:
    """(record, "") or (None, why it is not one)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        return None, f"cannot read it ({exc.strerror or exc})"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, (f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; {len(text)} bytes: cut "
                      f"short, torn or edited); delete it and rerun the cell")
    if not isinstance(data, dict) or "cell" not in data:
        return None, "JSON but not a cell record (no 'cell')"
    try:
        # <run>/<session>/<paddle>/<mode>/<model>.json
        return CellRecord.from_dict(data, path=Path(path), run=Path(path).resolve().parents[3]), ""
    except ValueError as exc:
        return None, f"{exc}; rerun the cell with this harness"
    except (KeyError, TypeError) as exc:
        return None, f"a record without its part {exc}: edited or written by another tool; delete it and rerun the cell"
