"""Host side: a cause's script in its short form, ``compact.py`` beside the script ``releases`` asks.

The script every release is asked with (``source_repro.py``, minimized where it was) carries the
harness's whole check: a names check of the weights, a params file for a program of none, a report
of every output. What a Paddle developer reads first is shorter: the model's source as the script
has it, its weights and inputs set, the export, the stage's own config calls copied as the script
makes them, and ``np.testing.assert_allclose`` at the stage's tolerance (``atol`` plus the scaled
part, as the harness compares) or Paddle's own error. Then each config call, and the wrapper that
gives a program of no parameter a params file, is left out where the form still reproduces without
it at the cause's own release (``removals``): what stays is what the cause needs there. Written for the stages Paddle runs itself —
Paddle Inference and the export; a converter's stage (ONNX Runtime, OpenVINO) keeps its script.

It is a handover form, never a verdict: ``standalone.prepare`` runs it at the cause's own release
beside the script, and it is kept only where it says what the script says (the cause's words, or
``MISMATCH: reproduced``); otherwise it is removed and the span says why."""

from __future__ import annotations

import ast
import contextlib
import json
import re
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from ..shared.releases import BUILT, MODEL_SOURCE, MODEL_SOURCE_END

COMPACT = "compact.py"
_INPUTS = 'inputs = np.load(os.path.join(here, "inputs.npz"))\n'
_STATE = 'state = np.load(os.path.join(here, "weights.npz"))\n'
_CONFIG = "config = paddle.inference.Config("
_PREDICTOR = "predictor = paddle.inference.create_predictor(config)"
_EXPORT_ONLY = 'print("exported: not reproduced")'
_EAGER = 'if os.path.exists(os.path.join(here, "eager.npz")):'
_STANDARD = {"import os", "import sys", "import tempfile", "import numpy as np", "import paddle"}


def _between(text: str, start: str, end: str) -> Optional[str]:
    at = text.find(start)
    until = text.find(end, at + len(start)) if at >= 0 else -1
    return text[at + len(start):until] if until >= 0 else None


def _unused_imports(source: str) -> set:
    """The top-level ``import x`` lines of ``source`` whose name nothing else in it reads (the
    ``import copy`` an op program's module carries)."""
    tree = ast.parse(source)
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return {ast.get_source_segment(source, node) for node in tree.body if isinstance(node, ast.Import)
            and all("." not in a.name and (a.asname or a.name) not in read for a in node.names)}


def _docstring_lines(source: str) -> set:
    """The line numbers (1-based) of the docstrings of ``source``'s classes and functions."""
    found: set = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and len(node.body) > 1:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found |= set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return found


def _model(source: str) -> str:
    """The model's source with runs of blank lines made one; comment-only lines, docstrings and
    unused imports left out."""
    kept: List[str] = []
    source = source.strip("\n")
    try:
        unused, docstrings = _unused_imports(source), _docstring_lines(source)
    except SyntaxError:
        unused, docstrings = set(), set()
    for number, line in enumerate(source.splitlines(), 1):
        if line.lstrip().startswith("#") or line in unused or number in docstrings:
            continue
        if not line.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(line.rstrip())
    return "\n".join(kept).strip("\n") + "\n"


def _eager(tail: str) -> str:
    """The eager call before the export, where the script makes one (four lines, as written)."""
    at = tail.find(_EAGER)
    return "".join(tail[at:].splitlines(keepends=True)[:4]) if at >= 0 else ""


def _config(tail: str) -> Optional[str]:
    """The stage's config lines as the script writes them (its PIR and legacy branches included)."""
    at, until = tail.find(_CONFIG), tail.find(_PREDICTOR)
    if at < 0 or until < at:
        return None
    lines = [ln for ln in tail[at:until].splitlines() if ln.strip()]
    lines[0] = 'config = paddle.inference.Config(os.path.join(out, model_file), params_file)'
    return "\n".join(lines) + "\n"


def _feed_as_stored(build: str, stored: Optional[List[str]]) -> str:
    """``build`` reading the feed's names from ``inputs.npz`` (``inputs.files``) where the file
    holds exactly those names in the feed's order: one line the reader need not check."""
    found = re.search(r"^feed_names = (\[.*\])$", build, re.MULTILINE)
    if not found or stored is None or ast.literal_eval(found.group(1)) != stored:
        return build
    return build.replace(found.group(0) + "\n", "", 1)


def _tolerances(tail: str) -> Optional[list]:
    found = re.search(r"^tolerances = (\[.*\])$", tail, re.MULTILINE)
    return json.loads(found.group(1)) if found else None


def compact_form(script_text: str, title: str, eager: bool = False,
                 stored: Optional[List[str]] = None) -> Tuple[Optional[str], str]:
    """The short form of a written source reproducer, or None with why there is none; ``eager``:
    its folder holds ``eager.npz`` (the cell's eager call before the export, made again);
    ``stored``: the names ``inputs.npz`` holds, in its order (the feed's order when they agree)."""
    head, rest = script_text.split(MODEL_SOURCE, 1) if MODEL_SOURCE in script_text else ("", "")
    if MODEL_SOURCE_END not in rest:
        return None, "not a source reproducer the harness wrote"
    model, tail = rest.split(MODEL_SOURCE_END, 1)
    if _STATEMENT in tail:  # a statement traced alone: its short form is its model without comments
        return _statement_form(head, model, tail, title), ""
    if "def lite_train(" in tail:
        return None, "a train mode's script: its preparation, training and export stay as they are"
    build = _between(tail, _INPUTS, _STATE)
    if build is None:
        return None, "its script builds the layer otherwise than the harness writes"
    imports = [ln for ln in head.splitlines() if ln.startswith(("import ", "from ")) and ln not in _STANDARD
               and ln != "import paddle.inference" and not ln.startswith("from __future__")]
    future = "from __future__ import annotations\n\n" if "from __future__ import annotations" in head else ""
    build = _feed_as_stored(build, stored)
    numeric = "MISMATCH: reproduced" in tail  # a numeric cause: the script compares with dygraph
    try:  # the model's source may read what the script's head imports (an inlined suite reads sys)
        read = {node.id for node in ast.walk(ast.parse(model)) if isinstance(node, ast.Name)}
    except SyntaxError:
        read = {"sys"}
    title = title.replace("\\", "/").replace('"', "'")  # Paddle's words inside the docstring, as text
    tolerances = _tolerances(tail) if numeric else None
    uniform = bool(tolerances) and all(tol == tolerances[0] for tol in tolerances)
    lines = [f'"""{title}; python {COMPACT} exits 1 when it reproduces (the short form of the verified script)."""',
             *(([future.strip()]) if future else []), "import os",
             *(["import sys"] if (numeric and not uniform) or "sys" in read else []),
             "import tempfile", "import numpy as np", "import paddle", *imports, "", _model(model).rstrip("\n"), "",
             "here = os.path.dirname(os.path.abspath(__file__))",
             _INPUTS.rstrip("\n") + "; " + _STATE.rstrip("\n"), *build.strip("\n").splitlines(),
             "layer.set_state_dict({name: paddle.to_tensor(state[name]) for name in layer.state_dict()})",
             # An op program's calls spell out every attribute: the train/eval switch changes none of them.
             *([] if _OP_PROGRAM in model else ["layer.eval()"])]
    if _EXPORT_ONLY in tail:  # the export is the failing stage: Paddle's own error says it
        lines += ["layer(*[paddle.to_tensor(inputs[name]) for name in feed_names])",
                  f'print("{BUILT} Paddle", paddle.__version__, flush=True)',
                  'paddle.jit.save(layer, os.path.join(tempfile.mkdtemp(), "model"), input_spec=spec)',
                  _EXPORT_ONLY]
        return _named(lines), ""
    config = _config(tail)
    if config is None:
        return None, "its stage is not run by Paddle Inference (a converter's script stays as it is)"
    dygraph = "layer(*[paddle.to_tensor(inputs[n]) for n in feed_names])"  # it must run in dygraph too
    lines += [f"expected = [t.numpy() for t in paddle.utils.flatten({dygraph})]" if numeric else dygraph,
              *(_eager(tail).rstrip("\n").splitlines() if eager else []),
              "out = tempfile.mkdtemp()",
              'paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), os.path.join(out, "model"))',
              'model_file = "model.json" if os.path.exists(os.path.join(out, "model.json")) else "model.pdmodel"',
              'params_file = os.path.join(out, "model.pdiparams") if os.path.exists(os.path.join(out, "model.pdiparams")) else ""',
              f'print("{BUILT} Paddle", paddle.__version__, model_file, flush=True)',
              *config.rstrip("\n").splitlines(), _PREDICTOR,
              "for name in predictor.get_input_names():",
              "    predictor.get_input_handle(name).copy_from_cpu(inputs[name])",
              "predictor.run()"]
    if tolerances and all(tol == tolerances[0] for tol in tolerances):  # one tolerance: written as numbers
        tol = tolerances[0]
        lines += ["outputs = [predictor.get_output_handle(n).copy_to_cpu() for n in predictor.get_output_names()]",
                  "for got, want in zip(outputs, expected):  # atol plus a part of |want|, as the harness compares",
                  f"    atol = {tol['atol']!r} + {tol.get('scaled_atol', 0.0)!r} * np.abs(want[np.isfinite(want)]).max(initial=0.0)",
                  f'    np.testing.assert_allclose(got, want, rtol={tol["rtol"]!r}, atol=atol, err_msg="MISMATCH: reproduced")',
                  'print("match: not reproduced")']
    elif tolerances:
        lines += ["outputs = [predictor.get_output_handle(n).copy_to_cpu() for n in predictor.get_output_names()]",
                  f"tolerances = {json.dumps(tolerances)}",
                  "for i, (got, want) in enumerate(zip(outputs, expected)):",
                  "    tol, finite = tolerances[i % len(tolerances)], np.abs(want[np.isfinite(want)])",
                  "    atol = tol[\"atol\"] + tol.get(\"scaled_atol\", 0.0) * finite.max(initial=0.0)",
                  "    try:",
                  "        np.testing.assert_allclose(got, want, rtol=tol[\"rtol\"], atol=atol)",
                  "    except AssertionError as mismatch:",
                  "        sys.exit(f\"output {i}: {mismatch}\\nMISMATCH: reproduced\")",
                  'print("match: not reproduced")']
    else:
        lines.append('print("ran without error: not reproduced")')
    return _named(lines), ""


_STATEMENT = "class Statement(paddle.nn.Layer):"


def _statement_form(head: str, model: str, tail: str, title: str) -> str:
    """A statement's script (``cell/handover/statement.py``) in short: a one-line docstring, its imports,
    the function's source without docstrings and comments, and the traced call as written."""
    imports = [ln for ln in head.splitlines() if ln.startswith(("import ", "from "))]
    title = title.replace("\\", "/").replace('"', "'")
    return "\n".join([f'"""{title}; python {COMPACT} exits 1 when it reproduces (the short form of the verified script)."""',
                      *imports, "", _model(model).rstrip("\n"), "", tail.strip("\n")]) + "\n"


def _named(lines: List[str]) -> str:
    text = "\n".join(lines) + "\n"
    return text if re.search(r"^feed_names = ", text, re.MULTILINE) else text.replace("in feed_names]", "in inputs.files]")


_ANCHOR_CLASS = "class Anchored(paddle.nn.Layer):"
_ANCHOR_LINE = "layer = Anchored(layer)"


def removals(text: str) -> List[List[int]]:
    """What the short form may do without, each a set of line numbers (0-based) left out together,
    tried in turn by ``standalone`` and kept only where the form still reproduces: each of the
    stage's config calls (not the ``Config`` itself), and the wrapper that gives a program of no
    parameter a params file (the release the cause is asked at may load one without it)."""
    lines = text.splitlines()
    found = [[k] for k, line in enumerate(lines) if line.strip().startswith("config.")]
    if _ANCHOR_CLASS in lines and _ANCHOR_LINE in lines:
        start = lines.index(_ANCHOR_CLASS)
        end = next((k for k in range(start + 1, len(lines)) if lines[k] and not lines[k].startswith((" ", "\t"))),
                   len(lines))
        found.append([*range(start, end), lines.index(_ANCHOR_LINE)])
    return found


_OP_PROGRAM = "class OneOp(paddle.nn.Layer):"  # the op program a chain reduction writes
_OPENS = re.compile(r"^\s*(if |elif |else\b).*:\s*(#.*)?$")  # a branch's head, its comment after the colon
_RETURN = re.compile(r"^(\s+)return \[(r\d+(?:, r\d+)+)\]$")
_ASSIGNED = re.compile(r"^\s+(r\d+) = ")
_BUFFER = re.compile(r"^\s+self\.register_buffer\('(p\d+)'")


def fewer_outputs(text: str) -> List[str]:
    """The short form of an op program (the harness's ``OneOp``) returning one output fewer, each
    output in turn, with what only that output read left out: an output the cause does not need
    (``standalone`` keeps a candidate only where it still reproduces)."""
    lines = text.splitlines()
    at = next((k for k, line in enumerate(lines) if _RETURN.match(line)), None)
    if at is None or _OP_PROGRAM not in lines:
        return []
    indent, names = _RETURN.match(lines[at]).group(1), _RETURN.match(lines[at]).group(2).split(", ")
    out = []
    for dropped in names:
        edited = [*lines[:at], f"{indent}return [{', '.join(n for n in names if n != dropped)}]", *lines[at + 1:]]
        out.append(_unread_left_out(edited))
    return out


def _unread_left_out(lines: List[str]) -> str:
    """An op program without the assignments and buffers nothing reads any more."""
    while True:
        source = "\n".join(lines)
        unread = [k for k, line in enumerate(lines)
                  if (m := _ASSIGNED.match(line) or _BUFFER.match(line))
                  and not re.search(rf"\b(self\.)?{m.group(1)}\b", source.replace(line, "", 1))]
        if not unread:
            return source + "\n"
        lines = [line for k, line in enumerate(lines) if k not in unread]


def without(text: str, left_out: List[int]) -> str:
    """``text`` without the lines ``left_out``; an ``if``/``else`` left with no body goes too."""
    lines = [line for k, line in enumerate(text.splitlines()) if k not in set(left_out)]
    kept: List[str] = []
    for k, line in enumerate(lines):
        opens = bool(_OPENS.match(line))
        follows = lines[k + 1] if k + 1 < len(lines) else ""
        indent = len(line) - len(line.lstrip())
        if opens and not (follows.strip() and len(follows) - len(follows.lstrip()) > indent):
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def write(script: Path, title: str) -> Tuple[Optional[Path], str]:
    """``compact.py`` beside ``script`` (reading the same data files), or None with why none."""
    stored = script.parent / "inputs.npz"
    with (np.load(stored) if stored.is_file() else contextlib.nullcontext()) as held:
        names = list(held.files) if held is not None else None
    text, why = compact_form(script.read_text(encoding="utf-8"), title, (script.parent / "eager.npz").is_file(), names)
    if text is None:
        return None, why
    path = script.parent / COMPACT
    path.write_text(text, encoding="utf-8")
    return path, ""


__all__ = ["COMPACT", "compact_form", "write", "removals", "without", "fewer_outputs"]
