"""Which Paddle release a cause appeared in, as a record part (``analysis.releases``).

``python -m harness releases`` runs a cause's source reproducer at the releases the package index
serves and bisects them (``running/releases.py``); these are its answers, the same types for the
record, the regress report, the HTML report and the issue drafts."""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import List, Optional, Tuple

from .causes import cause_of, death_words
from .json_types import JsonMapping, JsonObject
from .spec import version_order

# What a source reproducer prints once its program is exported, and when its stage has no form
# for the program this release wrote.
BUILT = "BUILT:"
# Around what a source reproducer writes of the model (its classes, the helpers and constants they
# read): the part a minimizer may take apart (``minimize.py``) and a short form keeps
# (``running/compact.py``); the rest is the harness's check, never touched.
MODEL_SOURCE = "# -- the model's source --\n"
MODEL_SOURCE_END = "# -- end of the model's source --\n"
NOT_RUNNABLE = "cannot run here:"
# How a release's answer begins when its script was asked written without what that release lacks
# (``running/ported.py``): the span says which releases were asked so.
PORTED = "written without"


class RunOutcome(str, enum.Enum):
    """One run of a source reproducer at one release."""

    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not_reproduced"
    NOT_BUILT = "not_built"        # failed before its program was exported, or a call it makes is missing there
    OTHER = "other"                # failed after, another way (another error, a crash, over its time)
    NO_ENVIRONMENT = "no_environment"  # the release could not be installed for this Python

    @property
    def says(self) -> bool:
        """Whether the run tells good from bad (the others are skipped, as ``git bisect skip``)."""
        return self in (RunOutcome.REPRODUCED, RunOutcome.NOT_REPRODUCED)


@dataclasses.dataclass(frozen=True)
class SourceReproducer:
    """The reproducer in source (``reproducer.source``): the script that runs at any release, whether
    it reproduced at the cell's own, what it prints for the cause, or why there is none."""

    script: Optional[str] = None
    verified: Optional[bool] = False  # None: written, not run yet (a larger reproducer beside an op-level one)
    outcome: Optional[RunOutcome] = None
    last_line: str = ""
    cause_words: str = ""
    numeric: bool = False
    what: str = ""
    why: str = ""
    # What it rebuilds: "ops" (Paddle's public API alone), "piece" or "model" (their classes, the suite
    # imported), "inlined" (the piece or model with the suite's source written in: Paddle alone).
    program: str = ""
    larger: Optional["SourceReproducer"] = None  # beside an op-level one: the piece or model, for releases it cannot ask
    # Beside a piece or model: the same with its suite's source written in (``cell/handover/inline.py``),
    # run, minimized and asked first by ``releases``; or why there is none.
    standalone: Optional["SourceReproducer"] = None

    @property
    def needs_no_suite(self) -> bool:
        return self.program in ("ops", "inlined")

    @classmethod
    def from_dict(cls, data: Optional[JsonMapping]) -> "SourceReproducer":
        if not data:
            return cls(why="no source reproducer (written by the harness since schema 3's releases)")
        verified = None if data.get("verified") is None and data.get("script") else bool(data.get("verified"))
        return cls(data.get("script"), verified,
                   RunOutcome(data["outcome"]) if data.get("outcome") else None, str(data.get("last_line") or ""),
                   str(data.get("cause_words") or ""), bool(data.get("numeric")), str(data.get("what") or ""),
                   str(data.get("why") or ""), str(data.get("program") or ""),
                   cls.from_dict(data["larger"]) if data.get("larger") else None,
                   cls.from_dict(data["standalone"]) if data.get("standalone") else None)


class SpanOutcome(str, enum.Enum):
    FOUND = "found"                        # a last good and a first bad release, confirmed
    IN_EVERY_RELEASE = "in every release"  # it reproduces at the oldest release that runs it
    FLAKY = "flaky boundary"               # reproducing too rarely at the first bad to tell the last good
    NOT_AT_ITS_RELEASE = "not reproduced at its own release"  # in a fresh environment: nothing to place


@dataclasses.dataclass(frozen=True)
class ReleaseRun:
    version: str
    outcome: RunOutcome
    line: str = ""
    runs: int = 1

    def to_dict(self) -> JsonObject:
        return {"version": self.version, "outcome": self.outcome.value, "line": self.line, "runs": self.runs}

    @classmethod
    def from_dict(cls, data: JsonMapping) -> "ReleaseRun":
        return cls(str(data["version"]), RunOutcome(data["outcome"]), str(data.get("line") or ""),
                   int(data.get("runs") or 1))


@dataclasses.dataclass(frozen=True)
class ReleaseSpan:
    """Where a cause begins and ends among the releases: ``first_bad``/``last_good`` (None when it
    is in every release that runs it), ``fixed_in`` (a newer release where it no longer reproduces,
    None while it still does at ``newest``), every release tried and what it said."""

    outcome: SpanOutcome
    cause: str
    reproducer: str
    releases: Tuple[str, ...]
    tried: Tuple[ReleaseRun, ...]
    first_bad: Optional[str] = None
    last_good: Optional[str] = None
    fixed_in: Optional[str] = None
    newest: Optional[str] = None
    confirmations: int = 3
    note: str = ""
    produced_by: str = "python -m harness releases"
    standalone: str = ""  # the standalone script asked (its suite's source written in, minimized), or why none
    needs_suite: Optional[bool] = None  # whether the script asked imports the model's suite (None: not recorded)
    compact: str = ""  # its short form (compact.py), verified at the cause's own release, or why none

    @property
    def exact(self) -> bool:
        """Placed exactly: a confirmed last good and first bad, or in every release with every release
        asked (none older than the first bad said nothing)."""
        if self.outcome is SpanOutcome.FOUND:
            return True
        return self.outcome is SpanOutcome.IN_EVERY_RELEASE and not self.unasked_below(self.first_bad)

    def to_dict(self) -> JsonObject:
        return {"status": "pass", "outcome": self.outcome.value, "cause": self.cause, "reproducer": self.reproducer,
                "releases": list(self.releases), "tried": [t.to_dict() for t in self.tried],
                "first_bad": self.first_bad, "last_good": self.last_good, "fixed_in": self.fixed_in,
                "newest": self.newest, "confirmations": self.confirmations, "note": self.note,
                "produced_by": self.produced_by, "standalone": self.standalone, "needs_suite": self.needs_suite,
                "compact": self.compact}

    @classmethod
    def from_dict(cls, data: JsonMapping) -> "ReleaseSpan":
        return cls(SpanOutcome(data["outcome"]), str(data.get("cause") or ""), str(data.get("reproducer") or ""),
                   tuple(data.get("releases") or ()), tuple(ReleaseRun.from_dict(t) for t in data.get("tried") or ()),
                   data.get("first_bad"), data.get("last_good"), data.get("fixed_in"), data.get("newest"),
                   int(data.get("confirmations") or 3), str(data.get("note") or ""),
                   str(data.get("produced_by") or "python -m harness releases"), str(data.get("standalone") or ""),
                   data.get("needs_suite"), str(data.get("compact") or ""))

    def unasked_below(self, version: Optional[str]) -> Tuple[ReleaseRun, ...]:
        """The releases older than ``version`` whose run said nothing (not built there, failed another
        way, no environment): a claim about them would be one that was not asked."""
        if version is None:
            return ()
        return tuple(t for t in self.tried if not t.outcome.says and version_order(t.version) < version_order(version))

    def words(self) -> str:
        """One line: "first bad 3.3.0, last good 3.2.2, still at 3.3.1"."""
        if self.outcome is SpanOutcome.NOT_AT_ITS_RELEASE:
            return f"not placed: {self.note}"
        if self.outcome is SpanOutcome.IN_EVERY_RELEASE:
            unasked = self.unasked_below(self.first_bad)
            head = (f"first bad {self.first_bad} or earlier: {len(unasked)} older release(s) could not be asked — "
                    + "; ".join(f"{t.version} {t.outcome.value.replace('_', ' ')} ({t.line[:230]})" for t in unasked)
                    if unasked else f"in every release asked (oldest {self.first_bad})")
            head += f" ({self.note})" if self.note else ""
        else:
            head = f"first bad {self.first_bad}, last good {self.last_good}"
            if self.outcome is SpanOutcome.FLAKY:
                head += f" (flaky boundary: {self.note})"
            elif self.note:  # how often an intermittent cause was seen, and how long the last good was asked
                head += f" ({self.note})"
        tail = f"fixed in {self.fixed_in}" if self.fixed_in else f"still at {self.newest}"
        ported = [f"{t.version} {PORTED} {t.line.split(f'[{PORTED} ', 1)[1].split(': absent at', 1)[0]}"
                  for t in self.tried if f"[{PORTED} " in t.line and t.outcome.says]
        return f"{head}, {tail}" + (f" (asked {'; '.join(ported)})" if ported else "")


def _missing_api(line: str) -> bool:
    """An AttributeError on Paddle's own objects: the call does not exist at that release."""
    return line.startswith("AttributeError") and ("paddle" in line or "Config" in line)


# oneDNN's own reason for refusing a primitive, printed when ``ONEDNN_VERBOSE=check`` (by 2.6 and 3.x
# alike): where 3.x's predictor says only "std::exception" and 2.6 said oneDNN's words ("could not create
# a descriptor for a pooling forward propagation primitive"), both print
# ``onednn_verbose,[v1,primitive,]create:check,pooling,problem is not mathematically consistent,src/...``.
ONEDNN_CHECK = {"ONEDNN_VERBOSE": "check"}
_REFUSAL = re.compile(r"onednn_verbose,(?:v\d+,)?(?:primitive,)?create:check,([\w ]+),([^,\n]+)")


def onednn_refusals(output: str) -> List[str]:
    """What oneDNN said it refused to create, and why, in the order it said it (once each)."""
    return list(dict.fromkeys(f"oneDNN refused to create {m.group(1)}: {m.group(2).strip()}"
                              for m in _REFUSAL.finditer(output)))


# The "(in <callee>)" groups ``paddle_message`` appends to a callee's error, at the end of a cause's words.
_CALLEES = re.compile(r"(?: \(in <[^()]*\))+$")


def outcome(exit_code: Optional[int], output: str, cause_words: str, numeric: bool) -> Tuple[RunOutcome, str]:
    """What one run of the script says: ``reproduced``, ``not_reproduced`` or ``not_built`` (it
    failed before the program was exported: that release cannot run it), or ``other`` (it failed
    after, another way), with the line that says it."""
    lines = [ln for ln in output.splitlines() if ln.strip()]
    verdicts = [ln for ln in lines if "not reproduced" in ln or "MISMATCH" in ln]  # the script's own word
    last = verdicts[-1] if verdicts else lines[-1] if lines else ""
    if exit_code is None:
        return RunOutcome.OTHER, last or "ran over its time"
    if BUILT not in output or NOT_RUNNABLE in output or _missing_api(last):
        return RunOutcome.NOT_BUILT, last
    if exit_code == 0:
        return RunOutcome.NOT_REPRODUCED, last
    if numeric:
        reproduced = "MISMATCH: reproduced" in output
    else:
        # A script a signal killed (a crash's reproducer) is said as its worker was: the signal and
        # Paddle's innermost frame, which the cause's words hold.
        died = death_words(exit_code, output)
        said = cause_of(f"{output}\n{died}")
        # Words composed from a chain (``paddle_message``: the callee's error "(in <the C function>)" that
        # only said a callee raised) are the callee's error in a script's traceback, the chain below it.
        # A crash's words are its worker's ("worker died with SIGSEGV in <frame>"); a script says "died with".
        cause_words = cause_words.removeprefix("worker ") if died else cause_words
        core = _CALLEES.sub("", cause_words)
        reproduced = bool(cause_words) and (cause_words in said or (core != cause_words and bool(core) and core in said))
        # Reproduced: said by the line holding the cause's words (a warning printed after them is not
        # the answer: measured on the zoo). A signal only when there was one; else the script's own
        # end, with its exit status unless it is Python's own for an uncaught exception (1).
        if reproduced and not died:
            last = next((ln.strip() for ln in lines if cause_words in cause_of(ln) or core in cause_of(ln)), "") or last
        if died or not last:
            last = died or f"exit status {exit_code}"
        elif exit_code != 1:
            last = f"{last} (exit status {exit_code})"
    return (RunOutcome.REPRODUCED if reproduced else RunOutcome.OTHER), last


__all__ = ["PORTED", "MODEL_SOURCE", "MODEL_SOURCE_END", "SourceReproducer", "outcome", "onednn_refusals", "ONEDNN_CHECK", "BUILT", "NOT_RUNNABLE", "RunOutcome", "SpanOutcome", "ReleaseRun", "ReleaseSpan"]
