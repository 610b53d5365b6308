"""Host side: read a TIPC config the way TIPC's bash driver reads it.

TIPC's ``test_train_inference_python.sh`` reads its config with ``dataline=$(awk 'NR==1, NR==N')``
(or ``cat``), then ``IFS=$'\\n'; lines=(${dataline})``: lines are numbered *after* blank lines are
dropped (newline is IFS whitespace, so empty fields vanish). ``common_func.sh`` then splits one
line with ``IFS=":"``: the key is the text before the first ``:`` and the value the text between
the first and the second one. ``func_parser_params`` picks ``mode=value`` out of a ``|`` list.
The functions here are those, rule for rule; where a rule is ours (errors instead of silently
odd commands) the docstring says so.

Layouts: the 32-line template of the models repo's ``tutorials/*/Step6/test_tipc`` (line 13 is
``trainer:``) and the 51-line layout of PaddleClas and PaddleOCR (line 15 is ``trainer:``), with
or without the benchmark sections after line 51 (which the train/infer driver does not read).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..shared.errors import UserError
from ..shared.vocab import Word


class Layout(Word):
    STEP6 = "step6"       # models repo, tutorials/*/Step6/test_tipc: 32 lines
    FIFTY_ONE = "51-line"  # PaddleClas / PaddleOCR: 51 lines (+ benchmark sections)


# What TIPC's driver reads of each layout: (line count it needs, line whose key is "trainer").
LAYOUT_LINES = {Layout.STEP6: 32, Layout.FIFTY_ONE: 51}
TRAINER_LINE = {Layout.STEP6: 13, Layout.FIFTY_ONE: 15}


@dataclasses.dataclass(frozen=True)
class Line:
    number: int  # 1-based, counted as TIPC counts (blank lines dropped)
    text: str


class TipcConfig:
    """The lines of one config, with TIPC's parsing rules."""

    def __init__(self, path: Path, lines: List[Line], layout: Layout):
        self.path = path
        self.lines = lines
        self.layout = layout

    # -- common_func.sh ----------------------------------------------------------
    def line(self, number: int) -> Line:
        return self.lines[number - 1] if number <= len(self.lines) else Line(number, "")

    def key(self, number: int) -> str:
        """func_parser_key: the first ``:``-field."""
        fields = colon_fields(self.line(number).text)
        return fields[0] if fields else ""

    def value(self, number: int) -> str:
        """func_parser_value: the second ``:``-field (text after a second ``:`` is dropped)."""
        fields = colon_fields(self.line(number).text)
        return fields[1] if len(fields) > 1 else ""

    def mode_value(self, number: int, mode: str) -> str:
        """func_parser_params: the value for ``mode`` in ``key:mode1=v1|mode2=v2``, else ''."""
        for item in split_fields(self.value(number), "|"):
            parts = split_fields(item, "=")
            name = parts[0] if parts else ""
            if name == mode:
                return parts[1] if len(parts) > 1 else ""
        return ""

    def where(self, number: int) -> str:
        return f"{self.path}:{number}"

    def truncated_value(self, number: int) -> Optional[str]:
        """The text TIPC drops from a value with a second ``:`` (None when there is none)."""
        fields = colon_fields(self.line(number).text)
        if len(fields) <= 2:
            return None
        return ":".join(fields[2:])


def split_fields(text: str, sep: str) -> List[str]:
    """Bash word splitting on one non-whitespace IFS character: empty fields between two
    separators (and before a leading one) are kept, a trailing separator adds none, and an empty
    string gives no field at all."""
    if text == "":
        return []
    fields = text.split(sep)
    if fields and fields[-1] == "":
        fields.pop()
    return fields


def colon_fields(text: str) -> List[str]:
    return split_fields(text, ":")


def read(path: "str | Path", layout: Optional[Layout] = None) -> TipcConfig:
    """Read a config file; one line naming the file (and line) for a config TIPC cannot run.

    Ours, not TIPC's: a config cut short, or with no ``trainer:`` line where a layout has it, is
    refused (TIPC's driver would build commands from empty strings and run them).
    """
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read the TIPC config ({exc.strerror}); give --config a readable file.") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a UTF-8 text file; a TIPC config is plain text.") from None
    # CR of CRLF files stripped: bash would keep it in every value and pass it to the commands.
    texts = [t.rstrip("\r") for t in raw.split("\n")]
    lines = [Line(i + 1, t) for i, t in enumerate(t for t in texts if t.strip("\r") != "")]
    config = TipcConfig(path, lines, Layout.STEP6)
    found = layout or detect_layout(config)
    config.layout = found
    need = LAYOUT_LINES[found]
    if len(lines) < need:
        raise UserError(
            f"{path}:{len(lines) + 1}: the config ends after line {len(lines)}, but the {found} layout's driver "
            f"reads {need} lines (line {len(lines) + 1} is missing); complete the config from TIPC's template."
        )
    if config.key(TRAINER_LINE[found]) != "trainer":
        raise UserError(f"{config.where(TRAINER_LINE[found])}: the {found} layout has `trainer:<names>` on this line, "
                        f"found {config.line(TRAINER_LINE[found]).text!r}; fix the line or pass --layout.")
    return config


def detect_layout(config: TipcConfig) -> Layout:
    for layout in (Layout.STEP6, Layout.FIFTY_ONE):
        if config.key(TRAINER_LINE[layout]) == "trainer":
            return layout
    if len(config.lines) < TRAINER_LINE[Layout.STEP6]:
        raise UserError(f"{config.path}:{len(config.lines) + 1}: the config ends after line {len(config.lines)}; "
                        f"a TIPC config has `trainer:` on line 13 (Step6 layout) or 15 (51-line layout).")
    raise UserError(f"{config.path}:13: neither layout: line 13 (Step6) nor line 15 (PaddleClas/PaddleOCR) is "
                    f"`trainer:<names>`; fix the config or pass --layout.")


def check_values(config: TipcConfig, read_lines: Dict[int, str]) -> None:
    """Ours: a value the driver reads that holds a second ``:`` is refused, naming the line.

    TIPC keeps only the text between the first and second ``:`` (``--data-path:C:/data`` runs
    with ``--data-path=C``): a silently different command. Lines the driver never reads (a
    URL on PaddleClas's line 36) are not checked.
    """
    for number, what in sorted(read_lines.items()):
        dropped = config.truncated_value(number)
        if dropped is None:
            continue
        raise UserError(
            f"{config.where(number)}: the value of {config.key(number)!r} ({what}) contains ':' — TIPC's "
            f"driver keeps only {config.value(number)!r} and drops ':{dropped}'; remove the ':' from the value."
        )


def parse_trainers(config: TipcConfig, trainer_keys: List[Tuple[int, str]]) -> List[str]:
    """The ``trainer:`` list; a name no trainer line declares is refused (ours: TIPC's 51-line
    driver runs the norm trainer for it, the Step6 driver runs line 14 whatever the name)."""
    number = TRAINER_LINE[config.layout]
    names = split_fields(config.value(number), "|")
    known = [key for _, key in trainer_keys if key not in ("", "null")]
    for name in names:
        if name not in known:
            raise UserError(f"{config.where(number)}: unknown trainer {name!r}; the config's trainer lines declare "
                            f"{', '.join(known) or 'none'} — fix the name or add its trainer line.")
    return names


# -- --device cpu: what TIPC users rewrite by hand, in memory ------------------------------------

_USE_GPU_KEYS = {"use_gpu", "use-gpu"}
_INLINE = [  # inside values (command strings, -o overrides): the device words a config spells
    (re.compile(r"(\bGlobal\.device\s*[=:]\s*)gpu\b"), r"\1cpu"),
    (re.compile(r"(--device\s*[= ]\s*)gpu\b"), r"\1cpu"),
    (re.compile(r"(\b(?:Global\.)?use[_-]gpu\s*[=:]\s*)True\b"), r"\1False"),
]


def for_cpu(config: TipcConfig) -> Tuple[TipcConfig, List[str]]:
    """The config as a CPU-only user edits it before running TIPC: ``gpu_list`` → ``-1``, a
    ``use_gpu``/``use-gpu`` list keeps only its ``False`` entries, ``Global.device`` and
    ``--device`` say ``cpu``, inline ``use_gpu=True`` says ``False``. The file is not touched;
    each rewrite is returned as ``file:line: old -> new``."""
    lines, rewrites = [], []
    for line in config.lines:
        text = line.text
        fields = colon_fields(text)
        key = fields[0].strip() if fields else ""
        bare = key.lstrip("-").split(".")[-1].lower()
        if key == "gpu_list" and len(fields) > 1 and fields[1] != "-1":
            text = "gpu_list:-1"
        elif bare in _USE_GPU_KEYS and len(fields) > 1 and "True" in fields[1]:
            kept = [v for v in split_fields(fields[1], "|") if v != "True"] or ["False"]
            text = f"{key}:{'|'.join(dict.fromkeys(kept))}"
        elif bare == "device" and len(fields) > 1 and fields[1].strip() == "gpu":
            text = f"{key}:cpu"
        for pattern, replacement in _INLINE:
            text = pattern.sub(replacement, text)
        if text != line.text:
            rewrites.append(f"{config.where(line.number)}: {line.text} -> {text}")
        lines.append(Line(line.number, text))
    return TipcConfig(config.path, lines, config.layout), rewrites
