"""What crosses the JSON edge, as a type.

Records, cell specs, journal entries and analysis results are written as JSON and read back;
``to_dict`` / ``from_dict`` (and the journal) are the only places a ``JsonObject`` is built or
taken apart. Everything between them works on the typed objects.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Union

JsonValue = Union[None, bool, int, float, str, List["JsonValue"], Dict[str, "JsonValue"]]
JsonObject = Dict[str, JsonValue]
# A JSON object read, not built: a record's part, a journal entry, a stage's evidence.
JsonMapping = Mapping[str, JsonValue]
# A table of the matrix file (TOML) as parsed: the same plain values (the matrix uses no TOML dates).
TomlTable = Dict[str, JsonValue]

__all__ = ["JsonObject", "JsonMapping", "JsonValue", "TomlTable"]
