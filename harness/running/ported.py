"""Host side: a script an older release cannot build because it names what that release lacks,
asked there written without it — only where the cause still reproduces without it at its own release.

A standalone script is written from suite code of the cell's release, and names what older releases
do not have: ``F.flashmask_attention`` (3.3.0 on), ``pad(..., pad_from_left_axis=...)`` (absent at
2.6.2), a module of ``paddle.distributed`` (seen on the zoo: Gemma 3, Qwen2.5-VL, ERNIE 4.5). Often the
name sits on a path the failure never takes — bound at import, a branch for another device — and the
release, answering "not built", says nothing about the cause: the span stays "first bad X or
earlier". Here the release's own words say what it lacks (``lacking``), and the script is written
without it (``written``): a keyword argument dropped from the calls of that function, an attribute of
that module read as ``None`` (else the statement holding it left out), a name imported from it or a
module bound to ``None``. The written script is run at the cause's own release first; only where it
reproduces the cause there (its words, or its numbers) is it asked at the older release, and that
answer says what the script was written without. A release may lack several names: up to ``ROUNDS``,
each verified anew. A script that no longer reproduces without the name keeps the release's first
answer, with why.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import hashlib
import re
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from ..shared.releases import PORTED, RunOutcome

ROUNDS = 4

Answer = Tuple[RunOutcome, str]


class LackKind(str, enum.Enum):
    ATTRIBUTE = "attribute"  # a module's attribute: ``F.flashmask_attention``
    KEYWORD = "keyword"  # a keyword argument of a call: ``pad(..., pad_from_left_axis=False)``
    IMPORTED = "imported"  # a name imported from a module: ``from paddle.x import y``
    MODULE = "module"  # a module: ``import paddle.distributed.flex_checkpoint``


@dataclasses.dataclass(frozen=True)
class Lack:
    """What a release lacks, as its error says it: ``owner`` is the module (or the function, for a
    keyword), ``name`` what it lacks."""

    kind: LackKind
    owner: str
    name: str

    @property
    def words(self) -> str:
        if self.kind is LackKind.KEYWORD:
            return f"`{self.name}=` in calls of `{self.owner}`"
        if self.kind is LackKind.MODULE:
            return f"module `{self.owner}`"
        return f"`{self.owner}.{self.name}`"


_LACKS = (
    (LackKind.ATTRIBUTE, re.compile(r"AttributeError: module '(paddle[\w.]*)' has no attribute '(\w+)'")),
    (LackKind.KEYWORD, re.compile(r"TypeError: ([\w.]+)\(\) got an unexpected keyword argument '(\w+)'")),
    (LackKind.IMPORTED, re.compile(r"ImportError: cannot import name '(\w+)' from '(paddle[\w.]*)'")),
    (LackKind.MODULE, re.compile(r"ModuleNotFoundError: No module named '(paddle[\w.]*)'")),
)


def lacking(line: str) -> Optional[Lack]:
    """What a release's answer says it lacks of Paddle's, or None (any other end)."""
    for kind, pattern in _LACKS:
        found = pattern.search(line)
        if not found:
            continue
        if kind is LackKind.IMPORTED:
            return Lack(kind, found.group(2), found.group(1))
        if kind is LackKind.MODULE:
            return Lack(kind, found.group(1), "")
        return Lack(kind, found.group(1), found.group(2))
    return None


def _modules(tree: ast.Module) -> Dict[str, str]:
    """The module-level names the script binds to a module by its imports: ``F`` -> ``paddle.nn.functional``."""
    bound: Dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _dotted(node: ast.AST, bound: Dict[str, str]) -> Optional[str]:
    """The module a ``Name``/``Attribute`` chain reads, by the script's imports (None: not a module chain)."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value, bound)
        return f"{owner}.{node.attr}" if owner else None
    return None


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


# An edit: the node's span (first line, byte column, last line, byte column) and its new text.
Edit = Tuple[int, int, int, int, str]


def _span(node: ast.AST, text: str) -> Edit:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0, text)


def _edits(tree: ast.Module, lack: Lack, strategy: int) -> List[Edit]:
    """The edits that take ``lack`` out of the script (``strategy`` 0: read as None; 1: the statement
    left out), or none where the script does not name it."""
    bound = _modules(tree)
    if lack.kind is LackKind.KEYWORD:
        function = lack.owner.split(".")[-1]
        if function == "__init__" and "." in lack.owner:
            function = lack.owner.split(".")[-2]  # ``Conv2D.__init__()``: the calls of the class
        found: List[Edit] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _callee(node) == function and any(k.arg == lack.name for k in node.keywords):
                node.keywords = [k for k in node.keywords if k.arg != lack.name]
                found.append(_span(node, ast.unparse(node)))
        return _outermost(found)
    if lack.kind is LackKind.ATTRIBUTE:
        reads = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == lack.name
                 and _dotted(n.value, bound) == lack.owner]
        if strategy == 0:
            return [_span(n, "None") for n in reads]
        return _outermost([_span(s, "pass") for s in _statements_holding(tree, reads)])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if lack.kind is LackKind.IMPORTED and node.module == lack.owner:
                gone = [a for a in node.names if a.name == lack.name]
            elif lack.kind is LackKind.MODULE and (node.module == lack.owner or node.module.startswith(lack.owner + ".")):
                gone = list(node.names)
            else:
                continue
            if gone:
                kept = [a for a in node.names if a not in gone]
                text = "; ".join(([ast.unparse(ast.ImportFrom(node.module, kept, 0))] if kept else [])
                                 + [f"{a.asname or a.name} = None" for a in gone])
                found.append(_span(node, text))
        elif isinstance(node, ast.Import) and lack.kind is LackKind.MODULE:
            gone = [a for a in node.names if a.name == lack.owner or a.name.startswith(lack.owner + ".")]
            if gone:
                kept = [a for a in node.names if a not in gone]
                text = "; ".join(([ast.unparse(ast.Import(kept))] if kept else [])
                                 + [f"{a.asname} = None" for a in gone if a.asname] or ["pass"])
                found.append(_span(node, text))
    return found


def _statements_holding(tree: ast.Module, reads: List[ast.AST]) -> Iterator[ast.stmt]:
    """The innermost simple statement around each of ``reads`` (a compound one's header is not left out)."""
    wanted = {id(r) for r in reads}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            if any(id(inner) in wanted for inner in ast.walk(node)):
                yield node


def _outermost(edits: List[Edit]) -> List[Edit]:
    """Edits not inside another (an outer call's text holds its inner calls' edits already)."""
    def inside(a: Edit, b: Edit) -> bool:
        return a != b and (b[0], b[1]) <= (a[0], a[1]) and (a[2], a[3]) <= (b[2], b[3])

    return [e for e in edits if not any(inside(e, other) for other in edits)]


def applied(source: str, edits: List[Edit]) -> str:
    """``source`` with each span replaced by its text (columns are UTF-8 byte offsets, as ``ast`` gives them)."""
    raw = source.encode()
    starts = [0]
    for line in source.encode().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for first, col, last, end_col, text in sorted(edits, reverse=True):
        raw = raw[:starts[first - 1] + col] + text.encode() + raw[starts[last - 1] + end_col:]
    return raw.decode()


def without(source: str, lacks: Tuple[Lack, ...], strategies: Tuple[int, ...]) -> Optional[str]:
    """``source`` written without every one of ``lacks``, each by its strategy (0: read as None, 1:
    its statements left out), or None where it names one of them nowhere (the release lacks it in
    code the script does not hold: a suite's package, Paddle's own)."""
    for lack, strategy in zip(lacks, strategies):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
        edits = _edits(tree, lack, strategy)
        if not edits:
            return None
        source = applied(source, edits)
    return source


@dataclasses.dataclass
class Porting:
    """One cause's scripts written without what older releases lack. ``ask(version, script)`` runs a
    script at a release (without porting it); ``own`` is the cause's own release."""

    own: str
    ask: Callable[[str, Path], Answer]
    say: Callable[[str], object]
    # (script, lacks) -> the script written without them (None: not reproducing), why not, each lack's strategy
    made: Dict[Tuple[Path, Tuple[Lack, ...]], Tuple[Optional[Path], str, Tuple[int, ...]]] = dataclasses.field(
        default_factory=dict)

    def answer(self, version: str, script: Path, first: Answer) -> Answer:
        """The release's answer to ``script``, written without what ``first`` (its answer) says it lacks."""
        answer: Answer = first
        lacks: Tuple[Lack, ...] = ()
        note = ""
        for _ in range(ROUNDS):
            lack = lacking(answer[1]) if answer[0] is RunOutcome.NOT_BUILT else None
            if lack is None or lack in lacks:
                break
            written, note = self._written(script, lacks + (lack,), version)
            if written is None:
                break
            lacks = lacks + (lack,)
            answer = self.ask(version, written)
        tail = f"; {note}" if note else ""
        if not lacks:
            return first[0], f"{first[1][:160]}{tail}" if tail else first[1]
        what = ", ".join(lack.words for lack in lacks)
        # The release's own words first (what a person reads of a truncated line), then how it was asked.
        return answer[0], f"{answer[1][:240]}{tail} [{PORTED} {what}: absent at {version}, reproducing at {self.own} without]"

    def _written(self, script: Path, lacks: Tuple[Lack, ...], version: str) -> Tuple[Optional[Path], str]:
        """The script without ``lacks`` that reproduces at the cause's own release (written once)."""
        key = (script, lacks)
        if key not in self.made:
            self.made[key] = self._verified(script, lacks, version)
        return self.made[key][:2]

    def _verified(self, script: Path, lacks: Tuple[Lack, ...],
                  version: str) -> Tuple[Optional[Path], str, Tuple[int, ...]]:
        """The lacks before the last keep the ways they were taken out (a round before verified
        them); the last is read as None, else its statements are left out."""
        source = script.read_text(encoding="utf-8")
        earlier = self.made.get((script, lacks[:-1]))
        kept = earlier[2] if earlier is not None and earlier[0] is not None else (0,) * (len(lacks) - 1)
        what = ", ".join(lack.words for lack in lacks)
        said = "it names none of them"
        for strategy in (0, 1):
            strategies = kept + (strategy,)
            text = without(source, lacks, strategies)
            if text is None:
                continue
            how = ", ".join(f"{lack.words} {_HOW[s]}" for lack, s in zip(lacks, strategies))
            tag = hashlib.sha256(repr((lacks, strategies)).encode()).hexdigest()[:8]
            path = script.with_name(f"{script.stem}.without-{tag}.py")
            path.write_text(f"# Written without {how}: Paddle {version} lacks them. Run at Paddle {self.own}\n"
                            f"# before it was asked there, it reproduced the cause without them.\n{text}",
                            encoding="utf-8")
            outcome, line = self.ask(self.own, path)
            self.say(f"[releases] written without {how} at {self.own}: {outcome.value} ({line[:120]})")
            if outcome is RunOutcome.REPRODUCED:
                return path, "", strategies
            path.unlink()
            said = f"{_HOW[strategy]}, it does not reproduce at {self.own} ({outcome.value}: {line[:120]})"
        return None, f"written without {what}: {said}", ()


_HOW = ("read as None", "its statements left out")


__all__ = ["Lack", "LackKind", "Porting", "PORTED", "ROUNDS", "lacking", "without", "applied"]
