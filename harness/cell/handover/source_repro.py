"""A reproducer in source (cell side): one script that runs at every Paddle release.

The program reproducer (``repro.py``) loads the program this Paddle wrote, which another release may refuse or
crash on (a 3.x ``.json`` segfaults 2.6.2; a ``.json`` holding an interpolate written by 3.3 is refused by
3.0–3.2). This one rebuilds the failing piece — the reduction's answer, or the whole model when no smaller piece
reproduces — from its classes, with the constructor arguments recorded when the model was built
(``models/construction.py``) and its weights from a file, then, at whatever Paddle runs it: the piece's dygraph
outputs, ``to_static`` + ``jit.save`` (``.pdmodel`` on 2.6, ``.json`` on 3.x) into a temporary folder, the
stage's runtime calls, and the outputs judged against that release's own dygraph at the stage's tolerance (an
error is let through, Paddle's message last).

Classes from installed packages (Paddle's layers, a suite's) are imported by their public name; classes from the
model's own source files (the harness's built-in models, a user's module) are written into the script, with the
module-level names they read (imports, helpers, constants). What cannot be spelled (a layer built outside the
recorder, an argument that is an arbitrary object, a class defined inside a function) is said as the reason
there is no source reproducer.

The script prints ``BUILT:`` once the program is written: what fails before it failed to build at that release
(an API or a package missing there: the release *could not run* it), what fails after it is the stage's failure
or not."""

from __future__ import annotations

import ast
import builtins
import collections
import enum
import importlib.util
import inspect
import json
import sys
import sysconfig
import textwrap
import types
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ...shared.releases import BUILT, MODEL_SOURCE, MODEL_SOURCE_END
from ...shared.json_types import JsonObject

SCRIPT = "source_repro.py"
MODEL_PLACEHOLDER = "__harness_model__"
PARAMS_PLACEHOLDER = "__harness_params__"
# Where installed packages and the standard library live: a class from there is imported, never copied.
_INSTALLED_ROOTS = tuple({sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib", "platstdlib")})


class Unspellable(Exception):
    """Why the piece cannot be written as source."""


def _installed(module_name: str) -> bool:
    root = module_name.split(".")[0]
    if root in sys.builtin_module_names:
        return True
    module = sys.modules.get(root)
    where = getattr(module, "__file__", None) or ""
    if not where:
        spec = importlib.util.find_spec(root)
        where = (spec.origin or "") if spec is not None else ""
    return bool(where) and where.startswith(_INSTALLED_ROOTS)


class Writer:
    """Spells values as Python source, collecting the imports and inlined definitions they need."""

    # Annotations left unevaluated (``from __future__ import annotations``): definitions written in from
    # many modules name each other in their signatures before all are defined (``StandaloneWriter``).
    lazy_annotations = False

    def __init__(self, paddle: Any):
        self.paddle = paddle
        self.imports: Dict[str, str] = {}       # import line -> itself (ordered, once)
        self.definitions: Dict[str, str] = {}   # qualified name -> source, dependencies first
        self._busy: set = set()

    # values -------------------------------------------------------------------------------
    def value(self, value: Any) -> str:
        paddle = self.paddle
        if isinstance(value, enum.Enum):  # before the literals: an IntEnum's repr is ``<E.A: 3>``, not source
            return f"{self.reference(type(value))}.{value.name}"
        if value is None or type(value) in (bool, int, str):  # a subclass's repr need not be source
            return repr(value)
        if type(value) is float:
            return repr(value) if np.isfinite(value) else f"float({str(value)!r})"
        if isinstance(value, np.generic):
            return self.value(value.item())
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.value(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        if type(value) in (collections.defaultdict, collections.OrderedDict):  # a literal would lose its kind
            self.imports["import collections"] = ""
            items = ", ".join(f"{self.value(k)}: {self.value(v)}" for k, v in value.items())
            if type(value) is collections.OrderedDict:
                return f"collections.OrderedDict({{{items}}})"
            factory = value.default_factory
            named = factory is not None and getattr(builtins, getattr(factory, "__name__", ""), None) is factory
            spelled = "None" if factory is None else factory.__name__ if named else self.value(factory)
            return f"collections.defaultdict({spelled}, {{{items}}})"
        if type(value) in (set, frozenset):
            inner = ", ".join(sorted(self.value(v) for v in value))
            return (f"{{{inner}}}" if inner else "set()") if type(value) is set else f"frozenset({{{inner}}})"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.value(k)}: {self.value(v)}" for k, v in value.items()) + "}"
        if isinstance(value, paddle.nn.Layer):
            return self.layer(value)
        if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
            return self.reference(value)
        if isinstance(value, types.ModuleType) and self.imports_module(value.__name__):  # a module handed to a layer
            return self._module_name(value.__name__)
        if isinstance(value, paddle.Tensor):
            return self.tensor(value)
        if type(value) is paddle.ParamAttr:
            return self.param_attr(value)
        if type(value).__name__ == "DataType" or type(value).__name__ == "VarType":  # a paddle dtype
            return f"paddle.{str(value).split('.')[-1].lower()}"
        if callable(getattr(value, "to_dict", None)) and _installed(type(value).__module__):
            # A suite's model config (PaddleX's, PaddleFormers' PretrainedConfig): rebuilt from its
            # own dict, as the suites load a saved config.json; the cell's run says whether it holds.
            try:
                data = dict(value.to_dict())
            except Exception as exc:
                raise Unspellable(f"{type(value).__qualname__}.to_dict() raised {type(exc).__name__}") from None
            own = _beyond_defaults(type(value), data)
            return f"{self.reference(type(value))}({'**' + self.value(own) if own else ''})"
        raise Unspellable(f"an argument of type {type(value).__module__}.{type(value).__qualname__} has no source form")

    PARAM_ATTR_DEFAULTS = {"learning_rate": 1.0, "trainable": True, "do_model_average": True, "need_clip": True}

    def param_attr(self, attr: Any) -> str:
        """A ``ParamAttr`` by what shapes the program: its initializer, regularizer and name are left
        out — the script sets the trained weights after the layer is built and trains nothing, and
        Paddle names each parameter apart (set_state_dict matches by the layers' paths)."""
        self.imports["import paddle"] = ""
        own = {k: getattr(attr, k) for k, default in self.PARAM_ATTR_DEFAULTS.items() if getattr(attr, k) != default}
        return f"paddle.ParamAttr({', '.join(f'{k}={self.value(v)}' for k, v in own.items())})"

    TENSOR_LITERAL = 1024  # values of a tensor spelled at most: a larger one would be a script of numbers
    def tensor(self, value: Any) -> str:
        """A tensor handed to a constructor (PaddleSpeech's ``ZScore(mu, sigma)``) with its values, exactly."""
        count = int(np.prod(value.shape))
        if count > self.TENSOR_LITERAL:
            raise Unspellable(f"a tensor argument of {count} values has no literal form (at most {self.TENSOR_LITERAL})")
        return f"paddle.to_tensor({self.value(value.numpy().tolist())}, dtype={str(value.dtype).split('.')[-1]!r})"

    def layer(self, layer: Any) -> str:
        from ...models.construction import made_with  # harness.models imports paddle: only when a cell runs

        made = made_with(layer)
        if made is None:
            raise Unspellable(f"{type(layer).__qualname__} was not built while the model's factory ran "
                              f"(its constructor arguments were not recorded)")
        args, kwargs = made
        words = [self.value(a) for a in args] + [f"{k}={self.value(v)}" for k, v in kwargs.items()]
        return f"{self.reference(type(layer))}({', '.join(words)})"

    # names --------------------------------------------------------------------------------
    def reference(self, obj: Any) -> str:
        """A class or function by a name the script can use."""
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
        if not module or "<locals>" in qualname or "<lambda>" in qualname:
            raise Unspellable(f"{qualname or obj!r} is defined inside a function: it has no name to import or copy")
        public = self._public_paddle_name(obj)
        if public:
            return public
        if self.imports_module(module):
            if module == "builtins" and getattr(builtins, qualname, None) is not obj:
                # An interpreter type the builtins do not name (``mappingproxy``: requests' and urllib3's
                # ``MappingProxyType``, found on the zoo): by its name in ``types``.
                named = next((n for n, v in vars(types).items() if v is obj), None)
                if named is None:
                    raise Unspellable(f"the interpreter's type {qualname} has no importable name")
                self.imports["import types"] = ""
                return f"types.{named}"
            return f"{self._module_name(module)}.{qualname}"
        self.inline(obj)
        return qualname

    def imports_module(self, module: str) -> bool:
        """Whether the script imports ``module`` (an installed package's) rather than writing its source in."""
        return _installed(module)

    def _module_name(self, module: str) -> str:
        """How the script names an installed module: its dotted path where that path reaches it, else
        an alias ``importlib`` binds (a package whose ``__init__`` rebinds a submodule's name: with
        PaddleSpeech 1.5.0, ``paddlespeech.t2s.models.fastspeech2`` is, by attribute, its ``fastspeech2.py``)."""
        top, *rest = module.split(".")
        found: Any = sys.modules.get(top)
        for part in rest:
            found = getattr(found, part, None)
        if found is sys.modules.get(module):
            self.imports[f"import {module}"] = ""
            return module
        alias = "_" + module.replace(".", "_")
        self.imports["import importlib"] = ""
        self.imports[f"{alias} = importlib.import_module({module!r})"] = ""
        return alias

    def _public_paddle_name(self, obj: Any) -> Optional[str]:
        """Paddle's layers and functions by their documented names (module paths move between
        releases; ``paddle.nn.Conv2D`` does not)."""
        if not (getattr(obj, "__module__", "") or "").startswith("paddle"):
            return None
        paddle = self.paddle
        for prefix, namespace in (("paddle.nn", paddle.nn), ("paddle.nn.functional", paddle.nn.functional),
                                  ("paddle", paddle), ("paddle.nn.initializer", paddle.nn.initializer)):
            if getattr(namespace, obj.__name__, None) is obj:
                return f"{prefix}.{obj.__name__}"
        return None

    def inline(self, obj: Any) -> None:
        key = f"{obj.__module__}.{obj.__qualname__}"
        if key in self.definitions or key in self._busy:
            return
        if "." in obj.__qualname__:
            raise Unspellable(f"{obj.__qualname__} is nested in a class; it is not copied on its own")
        self._claim(obj.__name__, key, obj)
        self._busy.add(key)
        try:
            source = textwrap.dedent(inspect.getsource(obj))
        except (OSError, TypeError) as exc:
            raise Unspellable(f"the source of {key} cannot be read ({exc})") from None
        module = sys.modules[obj.__module__]
        source = self._as_written(source, module, key)
        if isinstance(obj, type):
            for base in obj.__bases__:
                if base is not object:
                    self.reference(base)
        for name in sorted(_names_read(source) - {obj.__name__}):
            self._read(module, name, key, source)
        self._busy.discard(key)
        self.definitions[key] = source

    # What a writer that writes in more (``inline.StandaloneWriter``) does besides.
    def _claim(self, name: str, key: str, obj: Any = None) -> str:
        return name  # the name ``key``'s definition (of ``obj``) has in the script's namespace

    def _as_written(self, source: str, module: types.ModuleType, key: str) -> str:
        """A definition's source as the script holds it."""
        return source

    def _read(self, module: types.ModuleType, name: str, user: str, source: str) -> None:
        """A module global that ``user``'s ``source`` reads."""
        self._global(module, name, user)

    def _global(self, module: types.ModuleType, name: str, user: str) -> None:
        if name not in vars(module) or hasattr(builtins, name) and getattr(builtins, name) is vars(module)[name]:
            return
        value = vars(module)[name]
        if isinstance(value, types.ModuleType):
            line = f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"
            self.imports[line] = ""
        elif isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
            spelled = self.reference(value)
            if spelled != name:
                self.definitions[f"{module.__name__}.{name}=alias"] = f"{name} = {spelled}\n"
        elif value is None or isinstance(value, (bool, int, float, str, tuple, list, dict, set, frozenset)):
            try:
                spelled = self.value(value)
            except Unspellable:
                raise Unspellable(f"{user} reads the module constant {name!r}, which has no source form") from None
            self.definitions[f"{module.__name__}.{name}=constant"] = f"{name} = {spelled}\n"
        elif name == "__name__" or name.startswith("__"):
            return
        else:
            raise Unspellable(f"{user} reads the module global {name!r} ({type(value).__qualname__}), which has "
                              f"no source form")

    def header(self, said: "set[str]" = frozenset()) -> str:  # type: ignore[assignment]
        """The import lines the written definitions need, those in ``said`` (the script's own) left out."""
        lines = sorted((ln for ln in self.imports if ln not in said),
                       key=lambda ln: (not ln.startswith("import paddle"), not ln.startswith("import "), ln))
        return "\n".join(lines) + ("\n" if lines else "")

    def body(self) -> str:
        return "\n\n".join(s.rstrip("\n") + "\n" for s in self.definitions.values())


def _beyond_defaults(cls: type, data: Dict[str, Any]) -> Dict[str, Any]:
    """A config's dict without what its class's own defaults give (PaddleX's PP-LCNet config: 96 keys
    written, 3 its own), when the class rebuilt from what is left gives the whole dict back; else all
    of it (a key whose default another key computes stays)."""
    try:
        defaults = dict(cls().to_dict())
        own = {k: v for k, v in data.items() if k not in defaults or not _same(defaults[k], v)}
        if _same(dict(cls(**own).to_dict()), data):
            return own
    except Exception:  # noqa: BLE001 - a class that cannot be built with its defaults: written whole
        pass
    return data


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:  # noqa: BLE001 - a value whose == is not a bool (an array)
        return False


def _names_read(source: str) -> set:
    tree = ast.parse(source)
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _spec_words(paddle: Any, spec: Any) -> str:
    dtype = str(spec.dtype).split(".")[-1].lower()
    return f"paddle.static.InputSpec({list(spec.shape)!r}, {dtype!r}, {spec.name!r})"


class Source:
    """What the script builds: ``build`` (lines defining ``layer``, ``spec``, ``feed_names``)
    after ``definitions``, with ``weights`` (the layer's state, by its names) and ``inputs``."""

    def __init__(self, writer: Writer, build: str, weights: Dict[str, np.ndarray], inputs: Dict[str, np.ndarray],
                 what: str, how: str = "rebuilt from its classes with the weights it had", feed_names: Sequence[str] = ()):
        self.writer, self.build, self.weights, self.inputs, self.what = writer, build, weights, inputs, what
        self.how, self.feed_names = how, list(feed_names)
        self.setup = ""  # what runs before anything of the model is imported (``factory_setup``)
        # Inputs of an eager call made after the reference and before the export: a cause that depends
        # on an earlier eager call at another shape (``eager.npz``).
        self.eager: Optional[Dict[str, np.ndarray]] = None
        # A quantization mode's: its preparation and training before the reference, its export to ``path``.
        self.trained, self.exported = "", ""


def whole_model(paddle: Any, model: Any, input_spec: Sequence[Any], feeds: Dict[str, np.ndarray],
                writer: Optional["Writer"] = None) -> Source:
    """The model itself, exported with its own InputSpecs (a flat list of them only); ``writer``: how
    classes are spelled (default: installed packages imported, the rest written into the script)."""
    if not all(isinstance(s, paddle.static.InputSpec) for s in input_spec):
        raise Unspellable("the model takes structured inputs (a dict of InputSpec); only a flat list is written")
    writer = writer or Writer(paddle)
    expression = writer.layer(model)
    specs = ", ".join(_spec_words(paddle, s) for s in input_spec)
    build = f"layer = {expression}\nspec = [{specs}]\nfeed_names = {[s.name for s in input_spec]!r}\n"
    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    return Source(writer, build, weights, dict(feeds), f"the whole model ({type(model).__qualname__})",
                  feed_names=[s.name for s in input_spec])


def piece(paddle: Any, piece_module: str, members: Sequence[Any], feeds: Dict[str, np.ndarray], what: str,
          writer: Optional["Writer"] = None) -> Source:
    """The reduction's piece: its generated ``Piece`` class (``pieces.piece_source``) around its
    members rebuilt from their classes, fed ``in0..``."""
    writer = writer or Writer(paddle)
    built = ", ".join(writer.layer(m) for m in members)
    writer.definitions["harness.piece"] = _piece_class(piece_module)
    build = (f"layer = Piece([{built}])\n"
             f"feed_names = {sorted(feeds, key=lambda n: int(n[2:]))!r}\n"
             "spec = [paddle.static.InputSpec(list(inputs[n].shape), str(inputs[n].dtype), n) for n in feed_names]\n")
    weights: Dict[str, np.ndarray] = {}
    for k, member in enumerate(members):
        weights.update({f"members.{k}.{name}": v.numpy() for name, v in member.state_dict().items()})
    return Source(writer, build, weights, dict(feeds), what, feed_names=sorted(feeds, key=lambda n: int(n[2:])))


def op_program(paddle: Any, op_module: str, held: Dict[str, np.ndarray], feeds: Dict[str, np.ndarray],
               what: str) -> Source:
    """The reduction's op program (``op_source.written``: one op, a pair, a chain, a branch), fed ``in0..``: its
    module imports Paddle alone (the public calls the model made, ``_C_ops`` where it made none), so the script
    runs at any release with those calls; the parameters the ops read are buffers (``p0..``) set from the weights."""
    writer = Writer(paddle)
    writer.definitions["harness.oneop"] = _piece_class(op_module)
    build = ("layer = OneOp()\n"
             f"feed_names = {sorted(feeds, key=lambda n: int(n[2:]))!r}\n"
             "spec = [paddle.static.InputSpec(list(inputs[n].shape), str(inputs[n].dtype), n) for n in feed_names]\n")
    return Source(writer, build, dict(held), dict(feeds), what,
                  "written in Paddle's public API with the tensors it was fed, needing no other package",
                  feed_names=sorted(feeds, key=lambda n: int(n[2:])))


_ANCHORED = '''class Anchored(paddle.nn.Layer):
    """The ops, and one parameter of their program returned apart (so that a params file exists)."""

    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.anchor = self.create_parameter([1], default_initializer=paddle.nn.initializer.Constant(0.0))

    def forward(self, *args):
        return [*self.ops(*args), self.anchor * 1.0]
'''


def _piece_class(module_source: str) -> str:
    """The generated piece module without its docstring and imports (the script has them)."""
    tree = ast.parse(module_source)
    kept = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr))]
    lines = module_source.splitlines(keepends=True)
    first = kept[0].lineno - 1 - len(getattr(kept[0], "decorator_list", []) or [])
    return "import copy\n\n" + "".join(lines[first:])


# The cell exported after an eager call at another shape (its triage: the export depends on an earlier
# eager call): that call, the last before the export. Left out of a minimized script that has no eager.npz.
EAGER_CALL = textwrap.dedent('''\
    if os.path.exists(os.path.join(here, "eager.npz")):  # the cell's eager call before its export
        eager = np.load(os.path.join(here, "eager.npz"))
        with paddle.no_grad():
            layer(*[paddle.to_tensor(eager[name]) for name in feed_names])
    ''')


def rebuilt(source: Source) -> str:
    """The script's lines that rebuild the layer, set its recorded weights and run it once in dygraph
    (``dygraph``): what both kinds of source reproducer start with."""
    return textwrap.dedent('''

        here = os.path.dirname(os.path.abspath(__file__))
        inputs = np.load(os.path.join(here, "inputs.npz"))
        ''') + source.build + textwrap.dedent('''\
        state = np.load(os.path.join(here, "weights.npz"))
        if sorted(layer.state_dict()) != sorted(state.files):
            sys.exit("not built: the rebuilt layer's weights are named otherwise than the recorded ones")
        layer.set_state_dict({name: paddle.to_tensor(state[name]) for name in state.files})
        layer.eval()
        with paddle.no_grad():
            dygraph = layer(*[paddle.to_tensor(inputs[name]) for name in feed_names])
        ''') + EAGER_CALL


def write(folder: Path, source: Source, run_lines: str, imports: str, tolerances: List[JsonObject],
          compare_code: str) -> Path:
    """``source_repro.py``, ``weights.npz`` and ``inputs.npz`` in ``folder``."""
    if not source.weights:
        # Paddle 3.0 writes no params file for a program of no parameter and loads none without one (each way
        # raises, measured); 2.6 refuses none. One parameter, returned apart, gives every release a file.
        source.writer.definitions["harness.anchored"] = _ANCHORED.replace("*args", ", ".join(source.feed_names))
        source.build += "layer = Anchored(layer)\n"
        source.weights = {"anchor": np.zeros([1], "float32")}
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "weights.npz", **source.weights)
    np.savez(folder / "inputs.npz", **source.inputs)
    if source.eager is not None:
        np.savez(folder / "eager.npz", **source.eager)
    run = run_lines
    for placeholder, path in ((MODEL_PLACEHOLDER, "os.path.join(out, model_file)"), (PARAMS_PLACEHOLDER, "params_file")):
        run = run.replace(f"os.path.join(here, {placeholder!r})", path).replace(repr(placeholder), path)
    script = textwrap.dedent('''\
        """Source reproducer written by the Paddle qualification harness: @WHAT@, @HOW@,
        exported by the Paddle that runs this script, then run with the
        stage's runtime calls and compared with that Paddle's own dygraph outputs. It runs at any release:
        python source_repro.py (exits non-zero when it reproduces; "@BUILT@" is printed once it is exported)."""
        @FUTURE@import os
        import sys
        import tempfile

        import numpy as np
        import paddle
        ''').replace("@WHAT@", source.what).replace("@HOW@", source.how).replace("@BUILT@", BUILT).replace(
        "@FUTURE@", "from __future__ import annotations\n\n" if source.writer.lazy_annotations else "")
    said = {ln.split("#")[0].strip() for ln in script.splitlines()}  # each import once, whatever its comment
    imports = "".join(ln for ln in imports.splitlines(keepends=True) if ln.split("#")[0].strip() not in said - {""})
    said |= {ln.split("#")[0].strip() for ln in imports.splitlines()}
    script += imports + "\n" + MODEL_SOURCE + source.setup + source.writer.header(said) + \
        "\n\n" + source.writer.body() + MODEL_SOURCE_END + \
        rebuilt(source) + source.trained + textwrap.dedent('''\
        reference = [t.numpy() for t in paddle.utils.flatten(dygraph) if isinstance(t, paddle.Tensor)]
        scratch = tempfile.TemporaryDirectory(prefix="source-repro-")  # removed when the script exits
        out = scratch.name
        path = os.path.join(out, "model")
        ''') + (source.exported or "paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), path)\n") \
        + textwrap.dedent('''\
        model_file = "model.json" if os.path.exists(os.path.join(out, "model.json")) else "model.pdmodel"
        params_file = os.path.join(out, "model.pdiparams")
        if not layer.state_dict() or not os.path.exists(params_file):
            # A program of no parameter (an op alone): 3.0 writes no params file and refuses a missing
            # one ("Load operator fail to open file"), 2.6 refuses to load none (load_combine).
            params_file = ""
        print(f"@BUILT@ Paddle {paddle.__version__}, {model_file}", flush=True)
        ''').replace("@BUILT@", BUILT) + run + textwrap.dedent(f'''\
        ref = {{f"o{{i}}": a for i, a in enumerate(reference)}}
        if len(reference) != len(outputs):
            print(f"the program returns {{len(outputs)}} outputs, dygraph {{len(reference)}}: compared in order")
        tolerances = {json.dumps(tolerances)}
        tolerances = (tolerances * len(outputs))[:len(outputs)]
        ''') + compare_code
    path = folder / SCRIPT
    path.write_text(script, encoding="utf-8")
    return path


__all__ = ["SCRIPT", "MODEL_SOURCE", "MODEL_SOURCE_END", "Unspellable", "Writer", "Source", "whole_model", "piece", "op_program",
           "write", "rebuilt"]
