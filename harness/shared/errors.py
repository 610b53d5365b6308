"""Who failed: the user (``UserError``), Paddle or a runtime (``Finding``), or the harness itself
(``HarnessFailure``). Standard library only: both sides import it.

* ``UserError``: bad input; one line naming the file, key or argument, exit code 2, no traceback.
* ``Finding``: raised by harness code to carry what Paddle, a runtime or a converter did, in its own
  words (a conversion the converter aborted): the stage is ``error``, and the message is a cause.
* ``HarnessFailure``: the harness could not build what a stage, a trial or a step needs (a program
  for a runtime, a reduction piece, a file of its own that is gone): the stage is ``untestable``,
  counted apart, never a cause, never searched or reduced.

``harness_made`` decides for any exception, by where it was raised, not by its words: whatever a
call into Paddle, a runtime or a converter raised (marked by ``calling``: the predictor's creation
or run, ``to_static``, ``jit.save``, a session's build or run) is theirs, whatever its type and even
with no message at all (a bare ``std::exception`` from a C++ kernel); so is an exception whose
innermost frame of known owner is Paddle's, a runtime's or the model's, or that carries Paddle's
own error words. The harness's own failures are a ``HarnessFailure``, or an exception raised by the
harness's logic before or after such a call (its innermost frame is the harness's).
"""

from __future__ import annotations

import contextlib
import re
import traceback
from pathlib import Path
from typing import Iterable, Iterator, Optional, Tuple

HARNESS_ROOT = Path(__file__).resolve().parents[1]
# Model code the harness ships (built-in and zoo factories): the model's, not the harness's.
MODEL_CODE = HARNESS_ROOT / "models"
# Packages whose frames make an exception theirs: Paddle and what it brings (the suites, TensorRT),
# and every registered runtime's (``others``).
PADDLE_SIDE = ("paddle", "paddleslim", "paddlex", "paddleclas", "polygraphy", "tensorrt")


def others() -> Tuple[str, ...]:
    from ..runtimes import REGISTRY

    return PADDLE_SIDE + REGISTRY.packages()
# Paddle's C++ errors reach Python through a call in the harness's own frame, and always carry
# their category or traceback words; an op that raised while Paddle ran or traced a program comes
# wrapped in Paddle's "In user code:" / "In transformed code:": those are Paddle's, whatever frame
# raised them.
PADDLE_WORDS = re.compile(r"\((?:InvalidArgument|NotFound|OutOfRange|AlreadyExists|ResourceExhausted|"
                          r"PreconditionNotMet|PermissionDenied|ExecutionTimeout|Unimplemented|Unavailable|"
                          r"Fatal|External|InvalidType)\)|C\+\+ Traceback|Error Message Summary|^In (?:user|transformed) code:",
                          re.MULTILINE)


class UserError(Exception):
    """Bad input from the user (matrix file, argument, model factory...).

    The message must name the file, key or argument and say what to do.
    """

    exit_code = 2


class Finding(RuntimeError):
    """What Paddle, a runtime or a converter did, raised by harness code in their words.

    ``shared_step``: for a finding of a step several sessions run alike on the same inputs (the
    conversion into a format two runtimes read), that step and its inputs as one
    key: the stages of other sessions that met the same key and words met the same finding, and
    the analyses made of it for one of them answer for all (``cell.shared_setup``)."""

    shared_step: Optional[str] = None


class HarnessFailure(Exception):
    """The harness could not build what a stage, trial or step needs: its own failure."""


# The attribute ``calling`` puts on what a call into Paddle, a runtime or a converter raised.
_CALL = "harness_call"


@contextlib.contextmanager
def calling(call: str) -> Iterator[None]:
    """Marks a call into Paddle, a runtime or a converter (``call``: the call in words,
    ``predictor.run()``): whatever it raises is theirs, whatever its type and words. The exception
    goes on unchanged (its type, message and traceback are what the reproducer meets), marked with
    the call; the innermost call marks it first. The harness's own exceptions pass unmarked."""
    try:
        yield
    except (HarnessFailure, UserError, Finding):
        raise
    except Exception as exc:
        if called(exc) is None:
            try:
                theirs(exc, call)
            except (AttributeError, TypeError):  # an exception type that takes no attribute
                raise Finding(f"{call} raised {type(exc).__name__}: {exc}") from exc
        raise


def theirs(exc: BaseException, call: str) -> BaseException:
    """``exc`` marked as raised by ``call`` (what ``calling`` does; for a check the harness makes
    on what the call left behind, such as the files ``jit.save`` should have written)."""
    setattr(exc, _CALL, call)
    return exc


def called(exc: BaseException) -> Optional[str]:
    """The call into Paddle, a runtime or a converter that raised ``exc`` (``calling``), or None."""
    return getattr(exc, _CALL, None)


def _owner(filename: str, harness_roots: Iterable[Path]) -> Optional[str]:
    path = Path(filename)
    if "site-packages" in path.parts and any(part in others() for part in path.parts):
        return "other"
    if path.is_relative_to(MODEL_CODE):
        return "model"
    if path.is_relative_to(HARNESS_ROOT) or any(path.is_relative_to(r) for r in harness_roots):
        return "harness"
    if "site-packages" in path.parts or "/lib/python" in filename:
        return None  # numpy, the standard library: neither side's
    return "model"  # a user's model package


def harness_made(exc: BaseException, harness_roots: Iterable[Path] = ()) -> Optional[str]:
    """Why ``exc`` is the harness's own failure (one line with the place), or None when it is a
    finding (Paddle's, a runtime's, a converter's or the model's). ``harness_roots``: folders of
    code the harness generated (a reduction's pieces)."""
    if isinstance(exc, HarnessFailure):
        return str(exc)
    if isinstance(exc, (Finding, UserError)) or called(exc) is not None:
        return None
    module = type(exc).__module__.split(".")[0]
    if module in others() or PADDLE_WORDS.search(str(exc)):
        return None
    roots = list(harness_roots)
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        owner = _owner(frame.filename, roots)
        if owner is None:
            continue
        if owner != "harness":
            return None
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        return f"the harness raised {type(exc).__name__}{': ' + text if text else ''} at {_place(frame)}"
    return None


def raised_at(exc: BaseException, harness_roots: Iterable[Path] = ()) -> str:
    """Where ``exc`` was raised, as ``file:line``: the innermost frame of the harness's or the
    model's code (Paddle's and the standard library's frames are skipped: a Paddle developer's
    traceback says those), else the innermost frame; with the source line when it is short."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    roots = list(harness_roots)
    frame = next((f for f in reversed(frames) if _owner(f.filename, roots) in ("harness", "model")), frames[-1])
    code = (frame.line or "").strip()
    return _place(frame) + (f" ({code})" if code and len(code) <= 80 else "")


def _place(frame: traceback.FrameSummary) -> str:
    """``file:line``, the file relative to the checkout when it is the harness's."""
    where = Path(frame.filename)
    return f"{where.relative_to(HARNESS_ROOT.parent) if where.is_relative_to(HARNESS_ROOT.parent) else where}:{frame.lineno}"
