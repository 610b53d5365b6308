"""Host side: a cause's standalone script, readied for ``releases``.

A cause whose source reproducer builds the suite's classes runs only where its suite installs. Its
cell also wrote the same piece with the suite's source written in (``reproducer.source.standalone``,
``cell/handover/inline.py``): Paddle, numpy and the standard library only. Before the bisection it is
run at the cause's own release in an environment holding Paddle and the stage's runtime and *not*
the suite — reproducing there is the proof that it needs nothing else — then minimized in that
environment (``cell/handover/minimize.py``: pysource-minimize, checks in forked children, a budget
in seconds), the smaller script run once more in a fresh interpreter, and the one that reproduces
(the minimized, else the whole) is what every release is asked with; where the minimized one does
not reproduce at another release, the whole is asked there too (the minimizer kept only what the
cause's own release needed). Whatever stops it is said in the span (``standalone``), and the suite's
script stays the one asked.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable, List, Optional

from . import compact
from ..shared.causes import at_word, shareable_words
from ..shared.releases import RunOutcome, outcome as run_outcome

REPO = Path(__file__).resolve().parents[2]
MINIMIZED = "minimized"
RUN_TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class Made:
    """The standalone script to ask every release with (None: the suite's stays), and what was done."""

    script: Optional[Path]
    words: str
    whole: Optional[Path] = None  # the script before minimization (the same as ``script`` when not minimized)
    compact: str = ""  # its short form (``compact.py``), verified at the cause's own release, or why none


def _ran(python: Path, script: Path, words: str, numeric: bool) -> "tuple[RunOutcome, str]":
    try:
        proc = subprocess.run([str(python), script.name], cwd=script.parent, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return RunOutcome.OTHER, f"ran over {RUN_TIMEOUT:g} s"
    said, line = run_outcome(proc.returncode, proc.stdout + proc.stderr, words, numeric)
    return said, shareable_words(line)


def _minimized(python: Path, script: Path, words: str, numeric: bool, budget: float) -> Optional[dict]:
    """The minimizer's summary (its script in ``<folder>/minimized/``), or None when it failed."""
    argv = [str(python), "-m", "harness.cell.handover.minimize", str(script), "--words", words,
            "--budget", str(budget), "--out", str(script.parent / MINIMIZED), *(["--numeric"] if numeric else [])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=budget + RUN_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if proc.returncode == 0 and lines else None


def _compact(script: Path, python: Path, cause: Any, say: Callable[[str], object]) -> str:
    """``compact.py`` beside ``script`` (``compact.py``), kept where it reproduces at the cause's own
    release as the script does; what came of it, in words."""
    source, own = cause.home.analysis.reproducer.source, cause.home.version
    path, why = compact.write(script, f"{at_word(' '.join(cause.words.split()), 100)} (Paddle {own})")
    if path is None:
        return f"no compact form: {why}"
    said, line = _ran(python, path, source.cause_words, source.numeric)
    if said is RunOutcome.REPRODUCED:
        _shortened(path, python, source)
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if said is not RunOutcome.REPRODUCED:
        path.unlink()
        say(f"[releases] its compact form at {own}: {said.value} ({line[:120]}): left out")
        return f"no compact form: the short form did not reproduce at {own} ({said.value}: {line[:160]})"
    run = cause.home.run
    shown = str(path.relative_to(run)) if run and path.is_relative_to(run) else path.name
    say(f"[releases] compact form: {lines} lines, reproduces at {own}")
    return f"{shown}: {lines} lines, reproduces at {own}"


def _shortened(path: Path, python: Path, source: Any) -> None:
    """``path`` (a short form that reproduces) without each removal it reproduces without, tried in
    turn (``compact.removals``, then ``compact.fewer_outputs``), each run in a fresh interpreter; it
    ends as the last that reproduced."""
    text = path.read_text(encoding="utf-8")

    def kept(left_out: List[int]) -> str:
        trial = compact.without(text, left_out)
        path.write_text(trial, encoding="utf-8")
        return trial if _ran(python, path, source.cause_words, source.numeric)[0] is RunOutcome.REPRODUCED else text

    for left_out in [r for r in compact.removals(text) if len(r) > 1]:  # the params-file wrapper, first
        text = kept(left_out)
    narrowed = True
    while narrowed:  # an op program's outputs the cause does not need, one at a time
        narrowed = False
        for candidate in compact.fewer_outputs(text):
            path.write_text(candidate, encoding="utf-8")
            if _ran(python, path, source.cause_words, source.numeric)[0] is RunOutcome.REPRODUCED:
                text, narrowed = candidate, True
                break
    # Then each config call from the last: the lines before one left out keep their numbers.
    for left_out in reversed([r for r in compact.removals(text) if len(r) == 1]):
        text = kept(left_out)
    path.write_text(text, encoding="utf-8")


def prepare(cause: Any, environments: Any, say: Callable[[str], object], budget: float) -> Made:
    """The cause's standalone script, verified at its own release without its suite, minimized; and
    its short form (``compact.py``) beside the script every release is asked with."""
    made = _prepared(cause, environments, say, budget)
    source = cause.home.analysis.reproducer.source
    script = made.script or (cause.home.located(source.script) if source.needs_no_suite and source.script else None)
    python = environments(cause.home.version, False) if script is not None else None
    if script is None or python is None or not script.is_file():
        return made
    return dataclasses.replace(made, compact=_compact(script, python, cause, say))


def _prepared(cause: Any, environments: Any, say: Callable[[str], object], budget: float) -> Made:
    source = cause.home.analysis.reproducer.source
    if source.needs_no_suite:
        return Made(None, "")  # its script needs Paddle alone already
    standalone = source.standalone
    if standalone is None or not standalone.script:
        return Made(None, f"no standalone script: {standalone.why if standalone is not None else 'not written by its cell'}")
    script = cause.home.located(standalone.script)
    own = cause.home.version
    python = environments(own, False)  # Paddle and the stage's runtime, not the suite
    if python is None:
        return Made(None, f"no standalone script asked: no environment of Paddle {own} without the suite")
    said, line = _ran(python, script, source.cause_words, source.numeric)
    if said is not RunOutcome.REPRODUCED:
        say(f"[releases] its standalone script at {own}, without the suite: {said.value} ({line[:120]})")
        return Made(None, f"its standalone script (the suite's source written in) did not reproduce at {own} "
                          f"without the suite: {said.value} ({line[:200]})")
    lines = len(script.read_text(encoding="utf-8").splitlines())
    chosen, how = script, f"not minimized ({lines} lines)"
    summary = _minimized(python, script, source.cause_words, source.numeric, budget) if budget > 0 else None
    if summary is not None:
        smaller = Path(summary["script"])
        again, again_line = _ran(python, smaller, source.cause_words, source.numeric)
        if again is RunOutcome.REPRODUCED:
            chosen = smaller
            how = (f"minimized {summary['lines_before']} → {summary['lines']} lines (the model's source "
                   f"{summary['model_lines_before']} → {summary['model_lines']}) in {summary['checks']} checks, "
                   f"{summary['seconds']:g} s")
        else:
            how = f"its minimized form did not reproduce in a fresh interpreter ({again_line[:120]}): the whole is asked"
    run = cause.home.run
    shown = str(chosen.relative_to(run)) if run and chosen.is_relative_to(run) else chosen.name
    say(f"[releases] standalone script reproduces at {own} without the suite; {how}")
    words = f"{shown}: the suite's source written in, Paddle alone; reproduces at {own} without the suite; {how}"
    return Made(chosen, words, whole=script)


__all__ = ["Made", "prepare"]
