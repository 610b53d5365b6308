"""Paddle's own words, and causes counted once.

``paddle_message`` keeps the first meaningful line of what Paddle raised (without the C++
traceback around it). ``cause_of`` normalizes a message so that results with the same cause
compare equal: predictor ids, hex addresses, generated variable names, numbers and paths vary
between cells and runs, the cause does not. ``group`` collapses results that share a cause into
one line with a count and the places it hit.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from .errors import PADDLE_WORDS, Finding, called, harness_made
from .vocab import Status

_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"(?:/[\w.@+-]+){2,}")
_GENERATED = re.compile(r"\b([A-Za-z_]+)(?:@[\w]+|_\d{6,})\b")
_NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_SPACE = re.compile(r"\s+")
# An op Paddle names by its module path in one release and by its name in another
# ("OP(fluid.layers.embedding)" at 3.2.2, "OP(embedding)" at 3.3.1): one op.
_QUALIFIED_OP = re.compile(r"\bOP\((?:\w+\.)+(\w+)\)")
# An exception's own line in a traceback Paddle prints, its module path dropped
# (``paddle.base.libpaddle.EnforceNotMet: () Does not support rank inconsistency: ...``,
# ``paddle.jit.dy2static.utils.Dygraph2StaticException: python while pred change from bool to variable.``).
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*((?:[A-Za-z]\w*(?:Error|Exception)|EnforceNotMet)\b.*:.*)$")


# A message of at most this many words without Paddle's own error words names no op, pass or
# check: ``std::exception``, ``bad_alloc``, an empty ``RuntimeError``.
WORDLESS_WORDS = 3


def wordless(exc: BaseException) -> bool:
    """Whether ``exc`` says nothing of what failed: no Paddle error words and a few words at most."""
    text = str(exc).strip()
    return not PADDLE_WORDS.search(text) and len(text.split()) <= WORDLESS_WORDS


_TRACED_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
TRACED_FRAMES_KEPT = 4


def shareable_path(path: str) -> str:
    """A source file as a record says it: from the package it is installed in (``paddleformers/...``),
    else its folder and name (``tests/factories.py``): no path of this machine."""
    return path.split("site-packages/", 1)[-1] if "site-packages/" in path else "/".join(Path(path).parts[-2:])


_INSTALLED = re.compile(r"/\S*?/site-packages/")


def shareable_words(text: str) -> str:
    """Words that name files (a traceback's last line, a release's answer), each file as ``shareable_path``
    says it: an installed package's from its package ("paddle/nn/functional/__init__.py"), one in a
    temporary folder by its name alone: no path of this machine in what is published."""
    scratch = re.escape(os.path.join(tempfile.gettempdir(), ""))
    return re.sub(scratch + r"[^/\s\"']+/", "", _INSTALLED.sub("", text))


def run_words(text: str, run: Path) -> str:
    """Words as a run's reports publish them: a file in the run's folder named from that folder (as
    reproducers are), since a runtime's words name the file it read by its absolute path."""
    return str(text or "").replace(os.path.join(str(Path(run).resolve()), ""), "")


def traced_at(exc: BaseException) -> List[str]:
    """Where the model's code was when ``to_static`` (or a program run) raised: the frames of Paddle's
    "In transformed code:" / "In user code:" block outside Paddle and the standard library, the
    innermost last, a run of one frame repeated said once (a recursion), paths from the package or
    folder they live in (no machine path)."""
    text = str(exc)
    if "In transformed code:" not in text and "In user code:" not in text:
        return []
    frames: List[str] = []
    for path, line, function in _TRACED_FRAME.findall(text):
        short = shareable_path(path)
        if short.startswith("paddle/") or re.match(r"python3\.\d+/", short):
            continue  # Paddle's own transformer, Python's ast: not the model's place
        frame = f"{short}:{line} in {function}"
        if frames and frames[-1].startswith(frame):
            frames[-1] = f"{frame} (repeated)"
        elif not frames or frames[-1] != frame:
            frames.append(frame)
    return frames[-TRACED_FRAMES_KEPT:]


# Paddle's fatal-signal report: the innermost frame of its C++ traceback, and its summary.
_FRAME = re.compile(r"^\s*\d+\s+(\S.*?)\s*$")
_FATAL = re.compile(r"FatalError: (.*?) is detected by the operating system")


def last_words(text: str) -> tuple:
    """``(frame, summary)`` from what a dying Paddle printed: the innermost frame of its
    "C++ Traceback (most recent call last)" (the last one listed), without its argument list, and
    its "FatalError: ... is detected" line; empty strings when it printed none."""
    frame = ""
    if "C++ Traceback" in text:
        block = text.rsplit("C++ Traceback", 1)[1].split("Error Message Summary", 1)[0]
        frames = [m.group(1) for m in (_FRAME.match(ln) for ln in block.splitlines()) if m]
        if frames:
            frame = frames[-1].split("(", 1)[0].strip()
    fatal = _FATAL.search(text)
    return frame, (fatal.group(1).strip("`") if fatal else "")


def death_words(returncode: "int | None", output: str) -> str:
    """How a process that a signal killed is said — "died with SIGSEGV in phi::DenseTensor::Resize"
    (the signal, then Paddle's innermost C++ frame when its handler printed one) — the same words
    for a cell's worker and for a reproducer's script, so one can be matched with the other; "" when
    the process was not killed by a signal. Only a negative code is a signal: the harness starts no
    process through a shell, and a container's 128+N is turned into -N where it ends
    (``launch.containers``); an exit status of 255 is a program's own ``exit(255)``."""
    from .logs import signal_name

    if returncode is None or returncode >= 0:
        return ""
    frame, _ = last_words(output)
    return f"died with {signal_name(returncode)}" + (f" in {frame}" if frame else "")


def paddle_message(exc: BaseException) -> str:
    """Paddle's own first message line, without the C++ traceback around it. A call into Paddle,
    a runtime or a converter that raised with no words of its own (``errors.calling``) is named in
    them: ``predictor.run() raised RuntimeError: std::exception``."""
    text = str(exc).strip()
    inner = exc.__cause__ or exc.__context__
    if isinstance(exc, SystemError) and text.endswith(_SET_BY_CALLEE) and inner is not None:
        # A C function of Paddle's whose Python callee raised (``Tensor.__index__`` inside ``expand``):
        # its own words only say so; the callee's are the cause, then whose call it was.
        return f"{paddle_message(inner)} (in {text[:-len(_SET_BY_CALLEE)].strip()})"
    if isinstance(exc, Finding) and text:  # the harness's wrapper around their words: its class is nobody's
        return next(ln.strip() for ln in text.splitlines() if ln.strip())
    call = called(exc)
    if call and wordless(exc):
        return f"{call} raised {type(exc).__name__}" + (f": {text}" if text else " with no message")
    if not text:  # a bare ``assert`` or ``raise X()``: say so, not "AssertionError: AssertionError"
        return f"{type(exc).__name__} (raised with no message)"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines and lines[0] in ("In user code:", "In transformed code:"):
        # A program's op raised while Paddle ran it (or dy2static traced it): the op's own error
        # follows the code lines.
        # The last such line: the code lines before it can quote an exception's name.
        inner = next((m.group(1) for m in (_ERROR_LINE.match(ln) for ln in reversed(lines[1:])) if m), None)
        if inner:
            return inner if inner.startswith(f"{type(exc).__name__}:") else f"{type(exc).__name__}: {inner}"
    for i, line in enumerate(lines):
        if line.startswith("Error Message Summary"):
            rest = [ln for ln in lines[i + 1:] if not set(ln) <= set("-=")]
            if rest:
                return f"{type(exc).__name__}: {rest[0]}"
    for line in lines:
        if set(line) <= set("-="):
            continue
        if line.startswith("C++ Traceback") or line.startswith("0 ") or "paddle::" in line:
            continue
        return f"{type(exc).__name__}: {line}"
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def raised_status(exc: BaseException, harness_roots: Iterable[Path] = (), under: str = "") -> Tuple[Status, str]:
    """What an exception caught around a stage, a trial or a step means: ``untestable`` with the
    harness's own words when the harness made it (``errors.harness_made``), else ``error`` with
    Paddle's (or the runtime's, the converter's, the model's) first message line. ``under``: the
    stage, named in a message that has no words of its own (the same bare ``std::exception``
    under two stages is two causes)."""
    why = harness_made(exc, harness_roots)
    if why is not None:
        return Status.UNTESTABLE, why
    message = paddle_message(exc)
    if under and called(exc) and wordless(exc):
        message += f" under {under}"
    return Status.ERROR, message


def names_its_call(message: str) -> bool:
    """Whether ``message`` is a wordless exception named by the call that raised it (``paddle_message``)."""
    return bool(_CALLED.match(str(message or "")))


# Paddle 3.3 names the grad node before an error of its backward ("GradNodePyLayer_XDropout : The
# number of outputs ..."); earlier releases say the same check without it, and the node is named after
# the model's own class: not the cause's words.
_GRAD_NODE = re.compile(r"\bGradNode\w* : ")


def cause_of(message: str) -> str:
    """The message with what varies between occurrences of one cause replaced by placeholders."""
    text = _by_what_differs(message or "")
    text = _GRAD_NODE.sub("", text)
    text = _QUALIFIED_OP.sub(r"OP(\1)", text)
    text = _HEX.sub("<addr>", text)
    text = _PATH.sub("<path>", text)
    text = _GENERATED.sub(r"\1<id>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()


# A converter whose output depends on memory it never wrote says which nodes differed, with the values
# that fresh memory held — other values in every cell (the zoo's pad3d defect was three causes by them).
# One defect is the nodes it writes from that memory: the kinds, and the Paddle ops they came from.
_NEVER_WROTE = "output depends on memory it never wrote"
_NODE_KIND = re.compile(r"\((\w+)(?:, from ([\w.]+(?:, [\w.]+)*))?\)")


def _by_what_differs(message: str) -> str:
    if _NEVER_WROTE not in message or "): " not in message:
        return message
    head, rest = message.split("): ", 1)
    kinds = sorted({f"{m.group(1)} from {m.group(2)}" if m.group(2) else m.group(1) for m in _NODE_KIND.finditer(rest)})
    return f"{head}): {', '.join(kinds) or 'values'} differ"


_SET_BY_CALLEE = "returned a result with an exception set"
_PREFIX = re.compile(r"^(?:[A-Za-z]*(?:Error|Exception):\s*|\([A-Za-z]+\)\s*)+")
# How ``paddle_message`` names a call that raised with no words of its own, and the stage it was under.
_CALLED = re.compile(r"^\S+\(\) raised (?=\w)")
_UNDER = re.compile(r"(?: with no message)?(?: under \w+)?$")
# What the ladder appends to a stage's message when another shape failed first: its note, not the cause.
PRIMARY_NOTE = "; at the primary shape: "


def stage_cause(message: str) -> str:
    """The cause of a stage's message, comparable with the same error met another way (a probe,
    a script run alone): without the shape the ladder names first (``at <shape>:``), without
    Paddle's source location (`` (at <file>:<line>)``), the exception type and category prefixes,
    which differ by how the error reached Python, and the ladder's note of the primary shape."""
    text = str(message or "").split(PRIMARY_NOTE)[0]
    if text.startswith("at ") and ": " in text:
        text = text.split(": ", 1)[1]
    if _CALLED.match(text):  # what the call raised is what a script running it alone prints
        text = _UNDER.sub("", _CALLED.sub("", text))
    return cause_of(_PREFIX.sub("", text.split(" (at ")[0].strip()))


def at_word(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (`` …`` said
    when cut): what a person reads of Paddle's words, never a word cut in two."""
    text = " ".join(str(text or "").split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut} …"


def shown_apart(messages: Sequence[str], limit: int) -> List[str]:
    """Each message as ``at_word`` shortens it — Paddle's own words, not a grouping key — lengthened
    where two causes would otherwise read alike (six converter causes sharing a long prefix): each
    stays as short as ``limit`` allows and as long as telling it from the others needs."""
    full = [" ".join(str(m or "").split()) for m in messages]
    widths = [limit] * len(full)
    while True:
        said = [at_word(m, w) for m, w in zip(full, widths)]
        alike = [i for i, text in enumerate(said)
                 if any(j != i and said[j] == text and full[j] != full[i] for j in range(len(said)))]
        longer = [i for i in alike if widths[i] < len(full[i])]
        if not longer:
            return said
        for i in longer:
            widths[i] += max(20, limit // 3)


@dataclasses.dataclass
class Cause:
    """One distinct cause: its kind (a status or ``hazard``), a sample message, how many results
    it ended (``count``), the places (cells, or sessions for hazards) it hit and, per place, the
    stages that raised it (``stages``: each stage's own diagnosis belongs to it)."""

    kind: str
    key: str
    message: str
    places: List[str] = dataclasses.field(default_factory=list)
    count: int = 0
    stages: Dict[str, List[str]] = dataclasses.field(default_factory=dict)
    joined: List[str] = dataclasses.field(default_factory=list)  # keys of the causes one defect made of it (``one_defect``)


def group(items: Iterable[Tuple[str, ...]]) -> List[Cause]:
    """``(kind, message, place[, stage[, key]])`` grouped by (kind, normalized message), or by
    (kind, ``key``) where one is given (a converter's bug: its converter and op, whatever words each
    runtime said it in); largest first. A place hit several times (a cell's stages sharing one
    cause) is listed once."""
    found: Dict[Tuple[str, str], Cause] = {}
    for kind, message, place, *rest in items:
        stage, given = (rest + [None, None])[:2]
        key = given or cause_of(message)
        cause = found.setdefault((kind, key), Cause(kind=kind, key=key, message=message))
        cause.count += 1
        if place not in cause.places:
            cause.places.append(place)
        if stage:
            cause.stages.setdefault(place, []).append(stage)
    return sorted(found.values(), key=lambda c: (-c.count, c.kind, c.key))


_PADDLE_OP = re.compile(r"\bpd_op\.\w+")
# The converter and its version as a cause's words name them first ("<converter> 2.1.0 converts ...",
# "(<converter> 2.1.0; converted again ...").
_CONVERTER_VERSION = re.compile(r"\b([a-z][\w-]*) (\d+\.\d+(?:\.\d+)*)\b")


def _conversion_defect(cause: Cause) -> Optional[Tuple[str, FrozenSet[str], bool]]:
    """(converter and version, the Paddle ops, whether by memory) of a cause that is a converter's
    defect at named ops: one whose output depends on memory it never wrote, or a converter's
    proven numeric bug at one op; None for any other cause (a chain of ops names no one op)."""
    converter = _CONVERTER_VERSION.search(cause.message)
    if converter is None:
        return None
    if _NEVER_WROTE in cause.key and "): " in cause.key:
        ops = frozenset(_PADDLE_OP.findall(cause.key.split("): ", 1)[1]))
        return (converter.group(0), ops, True) if ops else None
    ops = frozenset(_PADDLE_OP.findall(cause.key))
    if cause.kind == "converter" and len(ops) == 1 and "->" not in cause.key:
        return converter.group(0), ops, False
    return None


def one_defect(causes: List[Cause]) -> List[Cause]:
    """``causes`` with those of one conversion defect made one: a converter whose output depends on
    memory it never wrote writes other values in every cell, so its cells said other nodes (the
    zoo's SCINet both a Pad and a LeakyRelu, HiFiGAN a LeakyRelu alone), and a runtime that read the
    file where both conversions happened to read the same bytes judged the op's conversion wrong
    on its numbers instead (HiFiGAN's LeakyRelu in the other runtime's session, measured). Causes of one converter
    and version that share a Paddle op, one of them by memory, are one cause: the largest memory
    cause's words, every place and stage, the others' keys in ``joined``."""
    defects = [_conversion_defect(c) for c in causes]
    parent = list(range(len(causes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(defects):
        for j in range(i):
            b = defects[j]
            if a and b and a[0] == b[0] and (a[2] or b[2]) and a[1] & b[1]:
                parent[root(i)] = root(j)
    groups: Dict[int, List[int]] = {}
    for i in range(len(causes)):
        groups.setdefault(root(i), []).append(i)
    merged = []
    for members in groups.values():
        if len(members) == 1:
            merged.append(causes[members[0]])
            continue
        by_memory = [i for i in members if defects[i][2]]
        home = max(by_memory, key=lambda i: causes[i].count)
        base = causes[home]
        one = Cause(kind=base.kind, key=base.key, message=base.message, count=sum(causes[i].count for i in members))
        for i in [home, *[m for m in members if m != home]]:
            for place in causes[i].places:
                if place not in one.places:
                    one.places.append(place)
                one.stages.setdefault(place, []).extend(s for s in causes[i].stages.get(place, [])
                                                        if s not in one.stages.get(place, []))
            if i != home:
                one.joined.append(causes[i].key)
        merged.append(one)
    return sorted(merged, key=lambda c: (-c.count, c.kind, c.key))
