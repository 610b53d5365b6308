"""The project's vocabulary, as types: statuses, stage names, search outcomes, transitions.

Every result the harness writes uses these words and nothing else; readers compare against the
enum members, never against loose strings. The members are ``str`` subclasses, so a record stays
plain JSON (``json.dumps(Status.PASS) == '"pass"'``) and old records read back as members.

Statuses of a stage (and of a cell's verdict):

* ``pass``     the numbers agree within tolerance, and the stage really changed something;
* ``fail``     numbers out of tolerance (or a shape/count mismatch);
* ``vacuous``  the comparison could not have failed (every reference element lies inside its own
               tolerance band, so an all-zero output would pass): never a pass, not a fail;
* ``noop``     the stage's lever did nothing here, so its pass says nothing: it ran the same
               program as the stage it is compared with (same passes, same executed op
               sequence), or none of its ops produced the low precision it is named after;
* ``error``    Paddle (or a runtime, a converter, the model) raised: its own first message line is kept;
* ``crash``    the process died (signal and log tail kept);
* ``timeout``  the stage outlived ``stage_timeout`` and was killed;
* ``skip``     not run, with the reason (and its source where the reason is Paddle's behaviour);
* ``untestable`` the harness itself could not build what the stage needs (a program for a runtime,
               a file of its own, its own code raised): no finding about Paddle, counted apart in
               every report, never a cause, never searched or reduced; the cell is not qualified.

``fail``, ``error``, ``crash``, ``timeout``, ``hazard`` are findings: Paddle (or a runtime, the
converter, the model) did this. ``untestable`` says the harness could not test it. ``vacuous``,
``noop`` and ``skip`` say the comparison or the lever said nothing here.

Root-cause entries (per-tensor diff, culprit search) use the same statuses for whether the
analysis itself ran (``pass``: it completed); what it *found* is its ``outcome``.

Findings that are not stage results: ``hazard`` — a documented knob combination that raises in
this Paddle version, probed once per (Paddle version, session), never a cell's verdict.
"""

from __future__ import annotations

import enum
from typing import Iterable, Optional


class Word(str, enum.Enum):
    """A str-enum that prints as its word (f-strings, tables, argparse choices)."""

    def __str__(self) -> str:
        return self.value


class Status(Word):
    PASS = "pass"
    FAIL = "fail"
    VACUOUS = "vacuous"
    NOOP = "noop"
    ERROR = "error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    SKIP = "skip"
    UNTESTABLE = "untestable"

    @classmethod
    def of(cls, value: "str | Status | None") -> "Status":
        """The member for a record's word; an unknown or missing word is a crash (nothing reported)."""
        try:
            return cls(value)
        except ValueError:
            return cls.CRASH

    @property
    def blocks(self) -> bool:
        """Sets a cell's verdict: the deployment would see wrong numbers or no result."""
        return self in _BLOCKING

    @property
    def ran(self) -> bool:
        return self is not Status.SKIP


_BLOCKING = frozenset({Status.FAIL, Status.ERROR, Status.CRASH, Status.TIMEOUT})


class Judged:
    """What ends in a ``Status`` (a comparison, a stage, a verdict, a tensor row): whether it
    passed, and whether it blocks a verdict, said one way everywhere."""

    status: Status

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS

    @property
    def blocks(self) -> bool:
        return self.status.blocks
# Order of the columns in summaries: the worst news first.
STATUS_ORDER = (Status.FAIL, Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.UNTESTABLE, Status.VACUOUS,
                Status.NOOP, Status.SKIP, Status.PASS)

HAZARD = "hazard"  # the kind of a finding that is not a stage result


class Stage(Word):
    """The reference stages every session runs before its backend stage; the backend stage is
    named after what it switches on (``onednn_bf16``, ``trt_fp16``, ``cpu_fp32``)."""

    BASELINE = "baseline"
    MEMORY = "memory"
    IR = "ir"


class Reference(Word):
    """What a stage's outputs are compared with: the dygraph forward (the consistency check) or
    the baseline predictor."""

    DYGRAPH = "dygraph"
    BASELINE = "baseline"


class ProgramFormat(Word):
    """The IR a saved program is in: legacy ``.pdmodel``, PIR ``.json``, or a PIR program that
    ``paddle.tensorrt.convert`` rewrote (its engines inside)."""

    LEGACY = "legacy"
    PIR = "pir"
    PIR_TRT = "pir-trt"


class Device(Word):
    CPU = "cpu"
    GPU = "gpu"


class Precision(Word):
    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    INT8 = "int8"


def session_name(device: str, backend: str, precision: str) -> str:
    """``<device>_<backend>_<precision>``, the backend word omitted for native kernels."""
    return f"{device}_{precision}" if backend == "native" else f"{device}_{backend}_{precision}"


def backend_stage_name(device: str, backend: str, precision: str) -> str:
    """The backend stage is named after what it switches on: ``onednn_bf16``, ``trt_fp16``, and
    ``<device>_<precision>`` for native kernels."""
    return f"{device}_{precision}" if backend == "native" else f"{backend}_{precision}"


def cell_id(session: str, paddle: str, mode: str, model: str) -> str:
    """Where a cell is: ``<session>/<paddle>/<mode>/<model>`` (also its record's path)."""
    return f"{session}/{paddle}/{mode}/{model}"


# Train modes whose programs carry their own int8 scales (quantization-aware).
QUANTIZED_MODES = ("qat", "pact")


def runs_quantized_only(backend: str, precision: "Precision") -> bool:
    """oneDNN int8 (``enable_mkldnn_int8``) runs quantized programs only: a session of it has cells in
    the quantized modes alone. TensorRT int8 calibrates a plain program."""
    return backend == "onednn" and precision == Precision.INT8
# Modes whose cell imports a package before paddle (cell/modes.py, Pact.before_paddle: PaddleSlim
# on 2.6.2 needs cv2 first): their workers get a fresh interpreter, never the fork server.
IMPORT_ORDER_MODES = ("pact",)

SETUP = "setup"  # the journal entry of build / train / export, before any stage
ANALYSIS_PREFIX = "analysis:"  # journal entries of the root-cause step


class Analysis(str, enum.Enum):
    DIFF = "diff"
    BISECT = "bisect"
    REPRODUCER = "reproducer"
    TRIAGE = "triage"
    REDUCE = "reduce"
    EXCLUDE = "exclude"
    FP32_OPS = "fp32_ops"  # the op types a reduced-precision stage must keep at fp32 (``cell/fp32_ops``)
    WORKAROUND = "workaround"

    @property
    def journal_key(self) -> str:
        return ANALYSIS_PREFIX + self.value


class Owner(str, enum.Enum):
    """Whose bug a converted program's failure is, as the format's own reference semantics judge the
    converted file (the converting runtime's ``conversion_judge``): the converter's is one cause in every
    runtime that reads the file."""

    CONVERTER = "converter"
    RUNTIME = "runtime"
    UNDECIDED = "undecided"


class SearchOutcome(str, enum.Enum):
    FOUND = "found"
    NOT_A_CULPRIT_SET = "not-a-culprit-set"
    UNRESOLVED = "unresolved"


class Probe(str, enum.Enum):
    """What one build of the culprit search answered."""

    PASS = "pass"
    FAIL = "fail"
    INVALID = "invalid"


class Transition(Word):
    REGRESSED = "regressed"
    STILL_FAILING = "still failing"
    FIXED = "fixed"
    NEW = "new"
    GONE = "gone"
    STILL_PASS = "still pass"
    SKIPPED = "skipped"


def verdict_status(statuses: Iterable[Status]) -> Optional[Status]:
    """A cell's verdict from its stages in ladder order: the first blocking status; else
    ``untestable`` when the harness could not test a stage; else ``vacuous`` when a comparison
    said nothing; else ``pass`` when a stage really passed; else None (every stage skipped or
    noop: the caller says why)."""
    seen = list(statuses)
    for status in seen:
        if status.blocks:
            return status
    if Status.UNTESTABLE in seen:
        return Status.UNTESTABLE
    if Status.VACUOUS in seen:
        return Status.VACUOUS
    if Status.PASS in seen:
        return Status.PASS
    return None
