"""Imports of Paddle that older releases may lack, guarded in a standalone script (cell side).

A suite written against the newest Paddle imports what older releases do not have — PaddleFormers'
Gemma 3 imports ``paddle.distributed.flex_checkpoint`` (3.3 only), PaddleX ``swiglu`` from
``paddle.nn.functional`` — often for code the failing run never reaches. Written as plain imports,
the script stops there at every older release ("No module named ...") and the release says nothing
about the cause. Guarded, an import that fails binds the name to a ``_LeftOut`` that raises the
import's own words when used: a release whose run needs it still stops on it (and says so), one
whose run does not goes on to answer. Paddle's public namespaces that every release asked has
(``paddle.nn``, ``paddle.nn.functional``, ...) stay plain imports."""

from __future__ import annotations

import re
from typing import List, Tuple

# Paddle modules present at every release the harness asks (2.6 on): imported plainly.
STABLE = frozenset({"paddle", "paddle.nn", "paddle.nn.functional", "paddle.nn.initializer", "paddle.inference",
                    "paddle.static", "paddle.jit", "paddle.io", "paddle.optimizer", "paddle.amp", "paddle.distributed",
                    "paddle.utils", "paddle.framework", "paddle.linalg", "paddle.fft", "paddle.signal",
                    "paddle.incubate", "paddle.autograd", "paddle.metric", "paddle.tensor", "paddle.device",
                    "paddle.vision", "paddle.base", "paddle.regularizer", "paddle.distribution"})
_IMPORT = re.compile(r"import (?P<module>[\w.]+)(?: as (?P<alias>\w+))?")
_FROM = re.compile(r"from (?P<module>[\w.]+) import (?P<name>\w+)(?: as (?P<alias>\w+))?")
_DYNAMIC = re.compile(r"(?P<alias>\w+) = importlib\.import_module\('(?P<module>[\w.]+)'\)")


def _paddle(module: str) -> bool:
    return module == "paddle" or module.startswith("paddle.")


def _guard(statement: str, bound: str, what: str) -> str:
    fallback = f"    {bound} = _LeftOut({what!r}, str(missing))" if bound else "    pass"
    return (f"try:\n    {statement}\nexcept ImportError as missing:  # not in every Paddle release: raises if used\n"
            f"{fallback}\n")


def split(lines: List[str]) -> Tuple[List[str], List[str]]:
    """``lines`` (a script's import lines) as the plain ones and the guarded blocks."""
    plain: List[str] = []
    guarded: List[str] = []
    for line in lines:
        found = _IMPORT.fullmatch(line) or _FROM.fullmatch(line) or _DYNAMIC.fullmatch(line)
        module = found.group("module") if found else ""
        if not found or not _paddle(module):
            plain.append(line)
            continue
        groups = found.groupdict()
        name = groups.get("name")
        if name is not None:  # from X import name
            if module == "paddle" and f"paddle.{name}" in STABLE:
                plain.append(line)
                continue
            guarded.append(_guard(line, groups["alias"] or name, f"{module}.{name}"))
        elif module in STABLE:
            plain.append(line)
        else:
            # ``import paddle.x.y`` binds ``paddle``, which the script imports anyway: nothing to bind.
            guarded.append(_guard(line, groups["alias"] or "", module))
    return plain, guarded


__all__ = ["split", "STABLE"]
