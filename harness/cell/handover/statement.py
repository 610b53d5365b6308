"""Export errors down to the statement (cell side): the model's function whose line raised while
``to_static`` traced the model, called alone with what it was passed in that trace.

A dy2static error is raised while the program is traced: what raises is a statement of the model's
source reading a static value (``max(0, pos - window + 1)`` on a traced position asks ``bool`` of a
``Value``), and what it needs is the shapes, dtypes and Python values its function was passed — not
the model's weights nor its numbers. So the error's innermost frame in the model's files (Paddle
names each traced frame by the model's own file and line) gives the function; the model is traced
once more under a profile hook that keeps the arguments of the last call of that function (the call
in progress when the error ended the trace: a traced value stays a ``Value``, whose shape and dtype
are read); and the script is that function with the suite's source written in (``StandaloneWriter``),
called from a small layer whose inputs are the traced values — each an ``InputSpec`` of its shape and
dtype — and traced by ``to_static`` at whichever release runs it.

PaddleFormers' Gemma 3 (3.3.1) raises "bool(Tensor) is not supported in static graph mode" at
``generation/utils.py``'s ``_make_sliding_window_mask``: its script is that function, called with
``input_shape=[in0, in1]`` (two 0-D int64 values, the traced batch and sequence lengths) — where the
whole model's script needs 3.3's ``paddle.tensor`` and cannot be asked below it.
"""

from __future__ import annotations

import dataclasses
import linecache
import re
import sys
import textwrap
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...shared.causes import shareable_path
from ...shared.releases import BUILT, MODEL_SOURCE, MODEL_SOURCE_END
from . import source_repro

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
# Where Paddle writes its rewrite of a function it converts (a while loop's, SLANet's head): its
# file, not the model's; the model's own frame around it is the place.
_REWRITES = "/to_static_tmp/"


@dataclasses.dataclass(frozen=True)
class Place:
    """The model's line that raised while the model was traced, and the function it is in."""

    file: str
    line: int
    function: str

    @property
    def text(self) -> str:
        return linecache.getline(self.file, self.line).strip()


def raising_place(message: str, skip_roots: Tuple[str, ...]) -> Optional[Place]:
    """The innermost frame of Paddle's traced-code report in ``message`` that is the model's (outside
    ``skip_roots``: Paddle, the harness, the standard library)."""
    found = [Place(m.group(1), int(m.group(2)), m.group(3)) for m in _FRAME.finditer(message)
             if not m.group(1).startswith(skip_roots) and not m.group(1).startswith("<") and _REWRITES not in m.group(1)]
    return found[-1] if found else None


@dataclasses.dataclass(frozen=True)
class Owner:
    """How the function is reached: a module's function, a class's static or class method (``holder``
    the class), or a method of the layer passed as its first argument."""

    function: Callable[..., Any]
    holder: Optional[type] = None
    bound: bool = False  # a method: its first argument is the instance


def _spans(code: types.CodeType, line: int) -> bool:
    lines = [ln for _, _, ln in code.co_lines() if ln is not None]
    return bool(lines) and code.co_firstlineno <= line <= max(lines)


def owner_of(place: Place) -> Optional[Owner]:
    """The function object ``place`` is in, found among the loaded modules of its file."""
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) != place.file:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, types.FunctionType) and value.__name__ == place.function \
                    and value.__code__.co_filename == place.file and _spans(value.__code__, place.line):
                return Owner(value)
            if isinstance(value, type) and value.__module__ == module.__name__:
                member = vars(value).get(place.function)
                function = getattr(member, "__func__", member)
                if isinstance(function, types.FunctionType) and _spans(function.__code__, place.line):
                    return Owner(function, value, bound=not isinstance(member, (staticmethod, classmethod)))
    return None


@dataclasses.dataclass(frozen=True)
class Traced:
    """A traced value as the call received it: its shape (-1 where the trace did not know it) and dtype."""

    shape: Tuple[int, ...]
    dtype: str


def _frozen(value: Any, kinds: Tuple[type, ...]) -> Any:
    """``value`` with each traced value read into a ``Traced`` while its program lives (a ``Value``
    read after the trace ended reads freed memory: the process dies, measured on Gemma 3)."""
    if kinds and isinstance(value, kinds):
        return Traced(tuple(int(d) for d in value.shape), str(value.dtype).split(".")[-1].lower())
    if type(value) in (list, tuple):
        return type(value)(_frozen(v, kinds) for v in value)
    if type(value) is dict:
        return {k: _frozen(v, kinds) for k, v in value.items()}
    return value


def _calls_of(name: str, kinds: Tuple[type, ...]) -> Tuple[List[Dict[str, Any]], Callable[..., None]]:
    """A profile hook keeping the arguments of every call of a function named ``name`` (Paddle's
    rewrite of it too: the same name and parameters, in another file), and the list it fills."""
    calls: List[Dict[str, Any]] = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == name:
            code = frame.f_code
            count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
            calls.append({n: _frozen(frame.f_locals.get(n), kinds) for n in code.co_varnames[:count]})

    return calls, hook


def traced_kinds(paddle: Any) -> Tuple[type, ...]:
    """The types a traced value has: PIR's ``Value`` (3.x), the legacy ``Variable`` (2.6)."""
    return tuple(k for k in (getattr(getattr(paddle, "pir", None), "Value", None),
                             getattr(paddle.static, "Variable", None)) if isinstance(k, type))


def _parameters(function: Callable[..., Any]) -> Tuple[str, ...]:
    code = function.__code__
    return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04)
                            + bool(code.co_flags & 0x08)]


class _Spelling:
    """Arguments spelled as source, each traced value an input ``in<k>`` of its shape and dtype."""

    def __init__(self, paddle: Any, writer: source_repro.Writer):
        self.paddle, self.writer = paddle, writer
        self.specs: List[str] = []

    def __call__(self, value: Any) -> str:
        if isinstance(value, Traced):
            name = f"in{len(self.specs)}"
            shape = [None if d < 0 else d for d in value.shape]
            self.specs.append(f"paddle.static.InputSpec({shape!r}, {value.dtype!r}, {name!r})")
            return name
        if type(value) in (list, tuple):
            inner = ", ".join(self(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        if type(value) is dict:
            return "{" + ", ".join(f"{self.writer.value(k)}: {self(v)}" for k, v in value.items()) + "}"
        return self.writer.value(value)


def _plain_fields(instance: Any, writer: source_repro.Writer) -> str:
    """``name=value, ...`` for the instance's own attributes of a literal form (numbers, strings,
    their lists and dicts): its configuration, not its sublayers nor its weights."""
    plain = (type(None), bool, int, float, str, list, tuple, dict)
    words = []
    for name, value in sorted(vars(instance).items()):
        if name.startswith("_") or not isinstance(value, plain):
            continue
        try:
            words.append(f"{name}={writer.value(value)}")
        except source_repro.Unspellable:
            continue
    return ", ".join(words)


def script(paddle: Any, place: Place, owner: Owner, arguments: Dict[str, Any], writer: source_repro.Writer,
           setup: str = "") -> str:
    """The script: the function written in, called from a layer fed the traced values, traced by
    ``to_static``; raises ``source_repro.Unspellable`` for an argument with no source form."""
    spell = _Spelling(paddle, writer)
    code = owner.function.__code__
    values = list(arguments.items())
    init, first = "", []
    if owner.bound:  # the instance it is a method of: rebuilt from its class, as the model built it
        (_, instance), values = values[0], values[1:]
        try:
            init = f"        self.owner = {writer.value(instance)}\n"
            callee = f"self.owner.{code.co_name}"
        except source_repro.Unspellable:
            # Built otherwise than by its class's constructor (a suite's from_config): the method is
            # called on a namespace of the instance's plain attributes — what a statement reads of it.
            writer.imports["import types"] = ""
            callee = f"{writer.reference(type(instance))}.{code.co_name}"
            first = [f"types.SimpleNamespace({_plain_fields(instance, writer)})"]
    else:
        callee = f"{writer.reference(owner.holder)}.{code.co_name}" if owner.holder else writer.reference(owner.function)
    star, double = bool(code.co_flags & 0x04), bool(code.co_flags & 0x08)
    words = list(first)
    for k, (name, value) in enumerate(values):
        if double and k == len(values) - 1:
            words.append(f"**{spell(value)}")
        elif star and k == len(values) - 1 - double:
            words.append(f"*{spell(value)}")
        else:
            words.append(f"{name}={spell(value)}")
    inputs = ", ".join(["self"] + [f"in{k}" for k in range(len(spell.specs))])
    lazy = "from __future__ import annotations\n\n" if writer.lazy_annotations else ""
    where = f"{shareable_path(place.file)}:{place.line}"
    doc = textwrap.dedent(f'''\
        """Source reproducer written by the Paddle qualification harness: the statement at {where}
        (`{place.text[:100]}`) in `{owner.function.__qualname__}`, called with what it was passed while the model was
        exported — each traced value an input of its shape and dtype — and traced by to_static by the
        Paddle that runs this script: raising is the bug. It runs at any release: python source_repro.py
        (exits non-zero when it reproduces; "{BUILT}" is printed once its function is written)."""
        ''')
    head = lazy + "import paddle\n"
    return (doc + head + MODEL_SOURCE + setup + writer.header(set(head.splitlines())) + "\n\n" + writer.body()
            + MODEL_SOURCE_END + "\n\n" + "class Statement(paddle.nn.Layer):\n"
            + ("    def __init__(self):\n        super().__init__()\n" + init + "\n" if init else "")
            + f"    def forward({inputs}):\n        return {callee}({', '.join(words)})\n\n\n"
            + f"spec = [{', '.join(spell.specs)}]\nlayer = Statement()\n"
            + f'print(f"{BUILT} Paddle {{paddle.__version__}}, its function written", flush=True)\n'
            + "paddle.jit.to_static(layer, input_spec=spec, full_graph=True).forward.concrete_program\n"
            + 'print("traced without error: not reproduced")\n')


def main(argv: Optional[List[str]] = None) -> int:
    """Run the whole model's script (it traces the model and raises) with the hook on, then write the
    statement's script from the last call of the function the error was raised in: one JSON line says
    where it is, or why there is none. A fresh process: a trace that raised inside a converted loop
    leaves Paddle's program builder where a second trace in the same process dies (Gemma 3, measured)."""
    import argparse
    import json
    import os
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m harness.cell.handover.statement")
    parser.add_argument("script", type=Path)
    parser.add_argument("--file", required=True)
    parser.add_argument("--line", type=int, required=True)
    parser.add_argument("--function", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--setup", type=Path, default=None, help="a file of what runs before the suite is imported")
    args = parser.parse_args(argv)
    place = Place(args.file, args.line, args.function)
    import paddle

    calls, hook = _calls_of(place.function, traced_kinds(paddle))
    os.chdir(args.script.parent)
    sys.setprofile(hook)
    # The script as a module of its own name: definitions it writes in (a model whose source is not an
    # installed package's) are found by their file, and written in again from that module's globals.
    module = types.ModuleType(args.script.stem)
    module.__file__ = str(args.script)
    sys.modules[module.__name__] = module
    try:
        exec(compile(args.script.read_text(encoding="utf-8"), str(args.script), "exec"), module.__dict__)
    except BaseException:  # the export raising is what was asked for; SystemExit too (its exit code)
        pass
    finally:
        sys.setprofile(None)
    setup = args.setup.read_text(encoding="utf-8") if args.setup else ""
    print(json.dumps(_written(place, calls, args.out, setup)), flush=True)
    return 0


def _written(place: Place, calls: List[Dict[str, Any]], out: "Any", setup: str) -> Dict[str, str]:
    import paddle

    from .inline import StandaloneWriter, foreign_imports, writer_failed

    owner = owner_of(place)
    if owner is None:
        return {"why": f"no function of the loaded modules holds {shareable_path(place.file)}:{place.line}"}
    names = _parameters(owner.function)
    own = [c for c in calls if tuple(c) == names]
    if not own:
        return {"why": f"{owner.function.__qualname__} was not called while the model was traced"}
    try:
        text = script(paddle, place, owner, own[-1], StandaloneWriter(paddle), setup)
        foreign = foreign_imports(text)
    except source_repro.Unspellable as why:
        return {"why": str(why)}
    except Exception as exc:  # the writer's own bug: the harness's gap, said
        return {"why": str(writer_failed(exc).get("why", exc))}
    if foreign:
        return {"why": f"it would still import {', '.join(foreign[:3])}"}
    out.mkdir(parents=True, exist_ok=True)
    (out / source_repro.SCRIPT).write_text(text, encoding="utf-8")
    return {"script": str(out / source_repro.SCRIPT), "what": f"the statement {shareable_path(place.file)}:{place.line} "
                                                            f"in {owner.function.__qualname__}, traced alone"}


__all__ = ["Place", "Owner", "Traced", "raising_place", "owner_of", "traced_kinds", "script", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
