"""Whose bug a converted program's failure is: the converter's or the runtime's (cell side).

A runtime that reads paddle2onnx's ONNX (ONNX Runtime; OpenVINO at Paddle 3) can fail because the
converter wrote a graph that means something else than Paddle's program (a dropped attribute, an op
mapped to one of other semantics), or because the runtime computes a correct graph wrongly. The two
are different bugs with different owners, and the first is *one* bug however many runtimes read the
file: ONNX Runtime may refuse the graph where OpenVINO computes it, and both sessions met the same
cause.

The judge is ONNX's own semantics: ``onnx.checker.check_model(full_check=True)`` (the graph is valid
ONNX, its types and shapes infer) and ``onnx.reference.ReferenceEvaluator`` (every operator as the ONNX
specification defines it, in numpy), run on the very file the reproducer converted, against Paddle's
outputs at the stage's tolerance. The file means what Paddle computes → the runtime's bug; it does not
(or is not valid ONNX) → the converter's, keyed by converter and Paddle op, whichever runtime met it;
the reference cannot run it (an operator it lacks) → undecided, said.

The judgement is a script beside ``repro.py`` (``onnx_reference.py``, onnx and numpy only), run in a
fresh interpreter after ``repro.py`` wrote ``model.onnx``: a converter developer runs the same file.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, List

from ...shared.json_types import JsonObject
from ...shared.vocab import Owner

IMPORTS = "import onnx\nfrom onnx.reference import ReferenceEvaluator\n"
SCRIPT = "onnx_reference.py"
CONVERTED = "model.onnx"  # what repro.py's conversion writes beside it
INVALID = "INVALID ONNX:"


def lines() -> List[str]:
    """The judging script's run: checks ``model.onnx`` (written by ``repro.py``) and evaluates it
    with ONNX's reference evaluator; sets ``names`` and ``outputs`` for the comparison with Paddle."""
    return [
        "# The file repro.py converted (run it first), judged by ONNX's own semantics: valid ONNX, then",
        "# every operator as the specification defines it (onnx.reference, numpy).",
        f'onnx_file = os.path.join(here, "{CONVERTED}")',
        "model = onnx.load(onnx_file)",
        "try:",
        "    onnx.checker.check_model(model, full_check=True)",
        "except Exception as exc:",
        f'    print("{INVALID}", " ".join(str(exc).split())[:400])',
        "    sys.exit(3)",
        "names = [o.name for o in model.graph.output]",
        "outputs = ReferenceEvaluator(model).run(None, {i.name: inputs[i.name] for i in model.graph.input if i.name in inputs.files})",
    ]


@dataclasses.dataclass(frozen=True)
class ConversionJudge:
    """How a runtime that reads ``converter``'s file has its failures judged: a script of
    ``IMPORTS`` and ``lines()`` beside the reproducer (the cell's generic reproducer writes it with
    its own comparison code and runs once in a fresh interpreter), read back by ``judged``."""

    converter: str
    runtime: str
    # Whether a stage's error is the converter's own finding (its words, or a file that differs by
    # memory): those words already name one cause in every runtime's session; nothing to judge.
    converter_said: Callable[[str], bool] = lambda message: False
    imports: str = IMPORTS
    script: str = SCRIPT
    converted: str = CONVERTED

    @staticmethod
    def lines() -> List[str]:
        return lines()

    def judged(self, ran: JsonObject, op: str) -> JsonObject:
        return judged(ran["exit"], ran["output"], ran["last_line"], self.converter, op, self.runtime)


def judged(exit_code: "int | None", output: str, last_line: str, converter: str, op: str, runtime: str) -> JsonObject:
    """The judgement from the script's run: its owner and, for the converter, the words that name
    the cause the same way in every runtime's session (converter and Paddle op)."""
    what = f"{converter} converts {op}" if op else f"{converter}'s conversion"
    if exit_code == 3 and INVALID in output:
        said = next((ln for ln in output.splitlines() if ln.startswith(INVALID)), INVALID)
        return {"owner": Owner.CONVERTER.value, "last_line": said,
                "words": f"{what} into a file ONNX's checker rejects ({said[len(INVALID):].strip()[:200]})"}
    if exit_code == 1 and "MISMATCH: reproduced" in output:
        return {"owner": Owner.CONVERTER.value, "last_line": last_line,
                "words": (f"{what} into ONNX that computes otherwise than Paddle: ONNX's reference evaluator "
                          f"on the converted file is beyond the tolerance")}
    if exit_code == 0 and "not reproduced" in output:
        return {"owner": Owner.RUNTIME.value, "last_line": last_line,
                "words": (f"the converted file, as ONNX's reference evaluator computes it, agrees with Paddle: "
                          f"{runtime}'s bug, not {converter}'s")}
    return {"owner": Owner.UNDECIDED.value, "last_line": last_line,
            "words": f"ONNX's reference evaluator could not judge the converted file ({last_line[:200] or 'no output'})"}


__all__ = ["ConversionJudge", "IMPORTS", "SCRIPT", "lines", "judged"]
