"""Type tests the trace answers otherwise (cell side): a reading of what the export lost.

``isinstance(x, paddle.Tensor)`` (and ``type(x) is paddle.Tensor``) is True for every tensor in dygraph,
and False for the same tensor while ``to_static`` traces it (a static ``Value``/``Variable``, measured at 2.6.2 and 3.3.1: a layer
returning ``mask.shape[-1] if isinstance(mask, paddle.Tensor) else -7`` gives 3 in dygraph and -7 in
the saved program). The program silently takes the other branch — no error, no ``if`` op — so the
lost and gained ops rarely point at it. PaddleX 3.7.2's PaddleOCR-VL decoder builds its causal mask
one column too wide that way (``_ernie.py``: ``attention_mask.shape[-1] if isinstance(attention_mask,
paddle.Tensor) else past_seen_tokens + sequence_length + 1``).

So the forward runs once with the lines it executes outside Paddle and the harness recorded
(``sys.settrace``, the model's files only), and every such type test on an executed line is named."""

from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path
from typing import Any, Callable, DefaultDict, Dict, List, Set, Tuple

from ...shared.json_types import JsonObject

KEPT = 3


def executed_lines(forward: Callable[[], Any], skip_roots: Tuple[str, ...]) -> Dict[str, Set[int]]:
    """The lines ``forward()`` executed in files outside ``skip_roots`` (``isolation.not_the_model``)."""
    lines: DefaultDict[str, Set[int]] = collections.defaultdict(set)

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            lines[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def calls(frame: Any, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        if name.startswith(skip_roots) or name.startswith("<"):
            return None  # Paddle's and the harness's own lines are not traced line by line
        return local

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        forward()
    finally:
        sys.settrace(previous)
    return dict(lines)


def _names_tensor(node: ast.AST) -> bool:
    """The class argument of an ``isinstance`` names Paddle's tensor (``paddle.Tensor``, ``Tensor``,
    or a tuple holding one)."""
    if isinstance(node, ast.Tuple):
        return any(_names_tensor(e) for e in node.elts)
    return (isinstance(node, ast.Attribute) and node.attr == "Tensor") or (isinstance(node, ast.Name) and node.id == "Tensor")


def _tests_a_tensors_type(node: ast.AST) -> bool:
    """``isinstance(x, paddle.Tensor)``, or ``type(x) is paddle.Tensor`` (and ``==``, ``is not``, ``!=``):
    both False while ``to_static`` traces (measured at 3.3.1; ``paddle.is_tensor`` stays True there)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "isinstance" and len(node.args) == 2 and _names_tensor(node.args[1])
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        sides = [node.left, node.comparators[0]]
        typed = any(isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id == "type" for x in sides)
        return typed and any(_names_tensor(x) for x in sides)
    return False


def tensor_type_tests(lines: Dict[str, Set[int]]) -> List[JsonObject]:
    """Each test of a tensor's type on an executed line, with its file:line and source."""
    found: List[JsonObject] = []
    for path, executed in sorted(lines.items()):
        try:
            source = Path(path).read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, SyntaxError, ValueError):
            continue
        text = source.splitlines()
        for node in ast.walk(tree):
            if _tests_a_tensors_type(node) and node.lineno in executed:
                found.append({"at": f"{path}:{node.lineno}", "test": ast.get_source_segment(source, node) or "",
                              "line": text[node.lineno - 1].strip()[:120]})
    return sorted(found, key=lambda f: (f["at"].rpartition(":")[0], int(f["at"].rpartition(":")[2])))[:KEPT]


def words(found: List[JsonObject], shareable: Callable[[str], str]) -> str:
    if not found:
        return ""
    tests = "; ".join(f"`{f['test']}` ({shareable(f['at'])})" for f in found)
    return (f"the forward tests a tensor's type: {tests} — True in dygraph, False while to_static traces it "
            f"(a static value): the program takes the other branch")


__all__ = ["executed_lines", "tensor_type_tests", "words"]
