"""Reading what a child process left in its log (standard library only): the tail a person
reads in a note or a report, and a signal's name."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def log_tail(path: Path, lines: int = 12, max_chars: int = 2000) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    text = _ANSI.sub("", text)  # Paddle colours its pass lines; a note is plain text
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept)[-max_chars:]
