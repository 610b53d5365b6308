"""What a cell's journal says has finished, read as records (cell side).

The journal keeps each entry as the JSON the record will hold; the cell's own steps (the stages
after setup, the analyses after the stages) read what came before them through this one view —
the setup and each stage as a ``StageRecord``, each analysis as an ``AnalysisEntry`` — and add
their own entries as they end.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional

from ...shared.json_types import JsonMapping
from ...shared.record_model import AnalysisEntry, StageRecord
from ...shared.vocab import SETUP, Analysis, Status


class Ledger:
    def __init__(self, entries: Optional[Mapping[str, JsonMapping]] = None):
        self._entries: Dict[str, JsonMapping] = dict(entries or {})
        self._read: Dict[str, StageRecord] = {}

    def add(self, name: str, entry: JsonMapping) -> None:
        self._entries[name] = entry
        self._read.pop(name, None)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def entry(self, name: str) -> JsonMapping:
        """An entry as the journal keeps it (the JSON its record holds)."""
        return self._entries[name]

    def entries(self) -> Dict[str, JsonMapping]:
        return dict(self._entries)

    @property
    def setup(self) -> StageRecord:
        return self._stage(SETUP)

    def stage(self, name: str) -> Optional[StageRecord]:
        """A finished stage (None: it did not run, or not yet)."""
        return self._stage(name) if name in self._entries else None

    def status(self, name: str) -> Optional[Status]:
        stage = self.stage(name)
        return stage.status if stage is not None else None

    def evidence(self, name: str) -> JsonMapping:
        """What a stage recorded it ran (empty when it did not run)."""
        stage = self.stage(name)
        return stage.evidence if stage is not None else {}

    def analysis(self, kind: Analysis) -> Optional[AnalysisEntry]:
        entry = self._entries.get(kind.journal_key)
        return AnalysisEntry.from_dict(kind.value, entry) if entry is not None else None

    def _stage(self, name: str) -> StageRecord:
        if name not in self._read:
            self._read[name] = StageRecord.from_dict(self._entries[name], name)
        return self._read[name]
