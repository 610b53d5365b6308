"""Command-line paths checked for their kind before any work (host side).

A path of the wrong kind (a file where a folder belongs, a folder where a file belongs, no
permission) is bad input: argparse prints one line naming the argument, exit 2, instead of a
traceback after work has started. Used as argparse ``type=`` callables.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def folder_to_write(text: str) -> Path:
    """A folder the harness writes into: an existing folder, or a path that can be created."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder; give a folder (created if missing)")
    base = _nearest_existing(path)
    if not base.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {base} is a file, so the folder cannot be made; give another path")
    if not os.access(base, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: no permission to write in {base}; give a folder you can write")
    return path


def _existing(text: str, folder: bool) -> Path:
    want, other = ("folder", "file") if folder else ("file", "folder")
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text} does not exist; give an existing {want}")
    if path.is_dir() != folder:
        raise argparse.ArgumentTypeError(f"{text} is a {other}, not a {want}; give the {want}")
    if not os.access(path, os.R_OK | (os.X_OK if folder else 0)):
        raise argparse.ArgumentTypeError(f"{text}: no permission to read this {want}")
    return path


def folder_to_read(text: str) -> Path:
    """An existing folder the harness reads."""
    return _existing(text, folder=True)


def file_to_read(text: str) -> Path:
    """An existing regular file the harness reads."""
    return _existing(text, folder=False)


def relative_file(text: str) -> Path:
    """A file that may be relative to another argument (``--config`` to ``--repo``): only a
    folder given where the file belongs is refused here; the command checks the rest."""
    path = Path(text)
    if path.is_absolute() and path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file; give the file")
    return path


def run_name(text: str) -> str:
    """A run's name: one plain folder name under the results root (no path, no ``..``)."""
    if not text or text in (".", "..") or "/" in text or os.sep in text or "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a plain name; give one folder name such as "
                                         f"'nightly' (no '/', not empty, not '.' or '..')")
    return text


def existing_run(results: Path, name: str) -> Path:
    """The run folder ``results/name`` that a command reads, or one line of bad input: a command
    that reads a run writes nothing for a run that does not exist (not even its lock file)."""
    from ..shared.errors import UserError
    from ..shared.records import is_record_place

    run = results / name
    if not run.is_dir():
        raise UserError(f"--run {name}: no run folder {run}; run a session first (or give --results).")
    if not any(is_record_place(run, path) for path in run.rglob("*.json")):
        raise UserError(f"--run {name}: no result records under {run}; run a session first (or give --results).")
    return run


def at_least_one(text: str) -> int:
    """A count of things at once (``--jobs``): a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give 1 or more") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1; give 1 or more")
    return value


def shard_of(text: str) -> "tuple[int, int]":
    """``K/N`` (``--shard``): the K-th of N shards, 1 <= K <= N."""
    k, slash, n = text.partition("/")
    if not slash or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N (e.g. 2/3: the second of three shards)")
    return int(k), int(n)


def python_interpreter(text: str) -> str:
    """An interpreter: a path to an executable file, or a name on PATH."""
    if os.path.sep not in text:
        if shutil.which(text) is None:
            raise argparse.ArgumentTypeError(f"{text}: no such interpreter on PATH; give the Python of a Paddle "
                                             f"environment")
        return text
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such interpreter; give the Python of a Paddle environment")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give the Python executable inside the environment "
                                         f"(e.g. {path / 'bin' / 'python'})")
    if not os.access(path, os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: not executable; give the Python of a Paddle environment")
    return text


class Once(argparse.Action):
    """An option given at most once: a second value would silently replace the first (``run
    --session a --session b`` ran b alone), so it is the user's error, said."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) not in (None, self.default):
            parser.error(f"{option_string} given twice ({getattr(namespace, self.dest)}, {values}): it takes one")
        setattr(namespace, self.dest, values)
