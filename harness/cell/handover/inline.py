"""A source reproducer that needs nothing but Paddle (cell side): the suite's own source written in.

``source_repro.Writer`` imports a class from an installed package (a suite's) by its name, so its
script runs only where that suite installs — at releases the suite supports. ``StandaloneWriter``
writes every class and function the piece is built from into the script instead, whatever package
it comes from, down to the helpers, constants and module-level objects they read; only Paddle,
numpy and the standard library stay imports. What the suite's modules do around those definitions
is rewritten so that the script runs alone, and said in the script:

* a suite module a definition reads as a namespace (``F.act(x)`` where ``F`` is the suite's
  ``functional``): a ``types.SimpleNamespace`` of the names it reads from it, each written in;
* an import inside a function body from the suite (``from .ops import act``): the names bound at
  module level instead, the statement replaced by ``pass``;
* a decorator that is the suite's own (a registry's ``@register``, ``@serializable``): dropped — it
  files the class in the suite's registry, which the script has not; Paddle's and Python's stay;
* a module-level object with no literal form (a logger, a compiled pattern, a registry dict): the
  statement that made it, from the module's source, with what it reads.

* a suite name the script cannot write in (a global made by no statement it can copy, an import
  inside a function of a module it does not write in): bound to a ``_LeftOut`` that raises when the
  script uses it, said where it is bound. The script is verified, so a name the failing run needs
  cannot go unnoticed; one it does not (a download helper, a config's ``from_pretrained``) costs
  nothing, and the minimizer takes it out.

Two suite definitions of one name from two modules: the later one renamed, and every definition that
reads it rewritten (``renames.py``); Paddle's newer aliases (``nn.Conv2d``) spelled by the names they
alias (``aliases.py``), so that older releases can be asked. The script is then verified like every
reproducer and minimized (``minimize.py``)."""

from __future__ import annotations

import ast
import builtins
import collections
import importlib
import importlib.util
import inspect
import sys
import types
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

from .aliases import explicit_super, spelled_by_own_names
from .guarded import split as guarded_imports
from .order import in_definition_order
from .renames import Renames
from .unused import attributes_read, without_unread_methods
from .source_repro import Unspellable, Writer, _installed, _names_read

# What a standalone script may import: Paddle, numpy and the standard library.
KEPT_ROOTS = ("paddle", "numpy")


def kept(module_name: str) -> bool:
    """Whether a standalone script imports ``module_name`` rather than writing its source in."""
    root = (module_name or "").split(".")[0]
    if root in KEPT_ROOTS or root in sys.builtin_module_names:
        return True
    stdlib = getattr(sys, "stdlib_module_names", None)
    if stdlib is not None:
        return root in stdlib
    return _installed(root) and "site-packages" not in (getattr(sys.modules.get(root), "__file__", "") or "")


def imports_of(script: str) -> List[str]:
    """The top-level module names a script imports (statically), and a dynamic import's argument."""
    found: List[str] = []
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            found.append(str(node.args[0].value))
    return found


def foreign_imports(script: str) -> List[str]:
    """What the model's source a script writes in imports beyond Paddle, numpy and the standard library (a
    relative import included). The harness's check around it imports the stage's runtime (ONNX Runtime,
    OpenVINO, paddle2onnx): that is the stage, not the suite, and is not counted."""
    from .source_repro import MODEL_SOURCE, MODEL_SOURCE_END

    if MODEL_SOURCE in script and MODEL_SOURCE_END in script:
        script = script[script.index(MODEL_SOURCE):script.index(MODEL_SOURCE_END)]
    return sorted({name for name in imports_of(script) if name.startswith(".") or not kept(name)})


# Bound to a suite name the script does not write in: any use raises, in words that name it.
LEFT_OUT = '''class _LeftOut:
    """A name of the suite this script does not write in: using it raises (the failing run did not)."""

    def __init__(self, name, why):
        self._name, self._why = name, why

    def _said(self):
        return RuntimeError(f"{self._name} is left out of this standalone script: {self._why}")

    def __call__(self, *args, **kwargs):
        raise self._said()

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self._said()
'''


class StandaloneWriter(Writer):
    """``Writer`` that writes in every definition not from Paddle, numpy or the standard library."""

    lazy_annotations = True  # a config class named in a signature before its definition (PaddleFormers', measured)

    def __init__(self, paddle: Any):
        super().__init__(paddle)
        self.dropped: List[str] = []  # the suite's decorators left out, said in the script
        self.renames = Renames()  # a bare name written in -> the definition it is; the renamed
        self._module_trees: Dict[str, Optional[ast.Module]] = {}
        self._namespaces: Dict[str, Dict[str, Any]] = {}  # a suite module read as a namespace: attribute -> spelling
        self.left_out: List[str] = []  # suite names bound to a _LeftOut, with why
        self.unread: Dict[str, "tuple[type, Set[str]]"] = {}  # a class written in -> (it, its methods left out)
        self._read_attributes: Set[str] = set()  # attribute names the written definitions read (``unused.py``)
        self.aliases: Set[str] = set()  # Paddle's aliases written by their own names (``aliases.py``), said

    def imports_module(self, module: str) -> bool:
        return kept(module)

    def _as_written(self, source: str, module: types.ModuleType, key: str) -> str:
        source = self._without_suite_decorators(source, module)
        source, aliased = spelled_by_own_names(source, vars(module))
        self.aliases |= aliased
        cls = vars(module).get(key[len(module.__name__) + 1:])
        if isinstance(cls, type) and vars(module).get(cls.__name__) is cls:
            source, explicit = explicit_super(source, cls.__name__)
            self.aliases |= {"super() as super(Class, self)"} if explicit else set()
        if isinstance(cls, type):  # its methods nothing reads left out before what they read is followed
            source, unread = without_unread_methods(source, cls, self._read_attributes, kept)
            self.unread.pop(key, None)
            if unread:
                self.unread[key] = (cls, unread)
        self._read_attributes |= attributes_read(source)
        return self._imports_in_bodies(source, module, key)

    def settle(self) -> None:
        """Every class whose left-out method a written definition reads, written again with it —
        until none is (a class written before the code that calls its method)."""
        while True:
            for source in self.definitions.values():
                self._read_attributes |= attributes_read(source)
            stale = [key for key, (_, unread) in self.unread.items() if unread & self._read_attributes]
            if not stale:
                return
            for key in stale:
                cls, _ = self.unread.pop(key)
                self.definitions.pop(key, None)
                self.inline(cls)

    def header(self, said: "set[str]" = frozenset()) -> str:  # type: ignore[assignment]
        self.settle()  # what the settled definitions import
        plain, _ = guarded_imports(super().header(said).splitlines())
        return "".join(f"{line}\n" for line in plain)

    def _read(self, module: types.ModuleType, name: str, user: str, source: str) -> None:
        self._global(module, name, user, source)

    def _claim(self, name: str, key: str, obj: Any = None) -> str:
        """One bare name, one definition (the script has a single namespace): a later one renamed."""
        return self.renames.claim(name, key, obj)

    def value(self, value: Any) -> str:
        if isinstance(value, types.ModuleType) and not kept(value.__name__):
            raise Unspellable(f"the suite module {value.__name__} is handed to a layer as a value: it has no source form")
        return super().value(value)

    def reference(self, obj: Any) -> str:
        spelled = super().reference(obj)
        return self.renames.name_of(obj, spelled) if spelled == getattr(obj, "__qualname__", None) else spelled

    def _global(self, module: types.ModuleType, name: str, user: str, source: str = "") -> None:  # type: ignore[override]
        try:
            self._written_in(module, name, user, source)
        except Unspellable as exc:
            self._leave_out(module, name, str(exc))

    def _leave_out(self, module: types.ModuleType, name: str, why: str) -> None:
        """``name`` bound to a ``_LeftOut`` (it raises when used): what the script could not write in."""
        qualified = f"{module.__name__}.{name}"
        key = f"{qualified}=left out"
        if key in self.definitions:
            return
        self._claim(name, key, vars(module).get(name))
        self.left_out.append(f"{qualified} ({' '.join(why.split())[:160]})")
        self.definitions[key] = f"{name} = _LeftOut({qualified!r}, {why[:200]!r})\n"

    def _written_in(self, module: types.ModuleType, name: str, user: str, source: str = "") -> None:
        if name.startswith("__"):
            return  # a module's own dunder (``__name__``): the script has its own
        if name not in vars(module) or hasattr(builtins, name) and getattr(builtins, name) is vars(module)[name]:
            return
        value = vars(module)[name]
        if isinstance(value, types.ModuleType) and not kept(value.__name__):
            self._namespace(module, name, value, user, source)
            return
        if isinstance(value, types.ModuleType):  # the standard library's, Paddle's, numpy's: imported
            bound = self._claim(name, f"import {value.__name__} as {name}", value)
            self.imports[f"import {value.__name__}" if value.__name__ == bound else f"import {value.__name__} as {bound}"] = ""
            return
        if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
            spelled = self.reference(value)  # a definition: written in (or why not, said as it is)
            if spelled != self.renames.name_of(value, name):  # bound by another name: an alias of it
                bound = self._claim(name, f"{module.__name__}.{name}=alias", value)
                self.definitions[f"{module.__name__}.{name}=alias"] = f"{bound} = {spelled}\n"
            return
        # A literal's own type only: a dict subclass (PaddleX's ``ACT2FN = ClassInstantier(ACT2CLS)``, whose
        # lookup builds the layer) written as a dict literal would hand back the class (measured on the zoo).
        # A defaultdict or an OrderedDict by its own kind; a table an import-time statement computed from the
        # installed package (PaddleX's ``BASE_DEP_SPECS``, from its metadata) by the value the suite had.
        if value is None or type(value) in (bool, int, float, str, tuple, list, dict, set, frozenset,
                                            collections.defaultdict, collections.OrderedDict):
            try:
                super()._global(module, name, user)
                self._claim(name, f"{module.__name__}.{name}=constant", value)
                return
            except Unspellable:
                pass  # a constant with no literal form: the statement that made it, below
        self._assignment(module, name, user)

    def _namespace(self, module: types.ModuleType, name: str, value: types.ModuleType, user: str, source: str) -> None:
        """A suite module read as ``name.attr``: a namespace of the attributes read, each written in; a
        suite module read through it (``colorlog.escape_codes.parse_colors``, colorlog's formatter:
        PaddleFormers' logger) a namespace inside it, of what is read through it."""
        # Keyed by the module it stands for: two suite modules reading one module by one name (PaddleX's
        # ``logging``, PaddleSeg's ``layers``: found on the zoo) share one namespace of what both read.
        key = f"{value.__name__} as {name}=namespace"
        bound = self._claim(name, key, value)
        held = self._namespaces.setdefault(key, {})
        self._fill(held, value, _chains(source or "pass", name))
        self.imports["import types"] = ""
        # After what it names (written in just now): a namespace is built when the script runs it.
        self.definitions.pop(key, None)
        self.definitions[key] = f"{bound} = {_spelled_namespace(held)}\n"

    def _fill(self, held: Dict[str, Any], value: types.ModuleType, chains: "Set[tuple]") -> None:
        for chain in sorted(chains):
            attr, rest = chain[0], chain[1:]
            if not hasattr(value, attr):
                continue
            got = getattr(value, attr)
            if isinstance(got, types.ModuleType) and not kept(got.__name__):
                inner = held[attr] if isinstance(held.get(attr), dict) else held.setdefault(attr, {})
                self._fill(inner, got, {rest} if rest else set())
            elif attr not in held:
                held[attr] = self.value(got)

    def _assignment(self, module: types.ModuleType, name: str, user: str) -> None:
        """The module-level statement that bound ``name``, with what it reads."""
        key = f"{module.__name__}.{name}=statement"
        if key in self.definitions or key in self._busy:
            return
        tree = self._tree(module)
        found = None
        for node in tree.body if tree is not None else []:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and getattr(node, "value", None) is not None:
                found = node
        if found is None:
            origin = self._imported_from(tree, module, name)
            if origin is not None and kept(origin[0].__name__):
                # Imported from Paddle, numpy or the standard library as an object with no source form
                # (Paddle 3.3's ``from paddle import tensor``: a ``_TensorMethodOrModule``): imported so.
                bound = self._claim(name, key, vars(module)[name])
                self.imports[f"from {origin[0].__name__} import {origin[1]}"
                             + (f" as {bound}" if bound != origin[1] else "")] = ""
                return
            if origin is not None:  # made in the module it was imported from: its statement there
                target, original = origin
                self._global(target, original, user)
                if original != name:  # an alias, spelled in the script's names (never rewritten as the module's)
                    alias = f"{module.__name__}.{name}=alias"
                    bound = self._claim(name, alias, vars(module)[name])
                    self.definitions[alias] = f"{bound} = {self.renames.name_of(vars(target)[original], original)}\n"
                return
            raise Unspellable(f"{user} reads the module global {name!r} ({type(vars(module)[name]).__qualname__}), "
                              f"made by no statement of {module.__name__} the script can copy")
        self._claim(name, key, vars(module)[name])
        self._busy.add(key)
        statement = ast.unparse(found) + "\n"
        for read in sorted(_names_read(statement) - {name}):
            self._global(module, read, key, statement)
        self._busy.discard(key)
        self.definitions[key] = statement

    @staticmethod
    def _imported_from(tree: Optional[ast.Module], module: types.ModuleType, name: str) -> "Optional[tuple]":
        """The module and name a top-level ``from X import original as name`` of ``module`` binds (a kept
        module's too: Paddle's, numpy's, the standard library's); else None."""
        for node in tree.body if tree is not None else []:
            if not isinstance(node, ast.ImportFrom):
                continue
            for alias in node.names:
                if (alias.asname or alias.name) != name:
                    continue
                target = (importlib.util.resolve_name("." * node.level + (node.module or ""), module.__package__ or "")
                          if node.level else node.module or "")
                found = sys.modules.get(target) or importlib.import_module(target)
                return (found, alias.name) if alias.name in vars(found) else None
        return None

    def _tree(self, module: types.ModuleType) -> Optional[ast.Module]:
        if module.__name__ not in self._module_trees:
            try:
                self._module_trees[module.__name__] = ast.parse(inspect.getsource(module))
            except (OSError, TypeError, SyntaxError):
                self._module_trees[module.__name__] = None
        return self._module_trees[module.__name__]

    def _without_suite_decorators(self, source: str, module: types.ModuleType) -> str:
        """The definition without the decorators of its top statement that are the suite's own."""
        tree = ast.parse(source)
        node = tree.body[0]
        lines = source.splitlines(keepends=True)
        drop: Set[int] = set()
        for decorator in getattr(node, "decorator_list", []):
            root = decorator
            while isinstance(root, (ast.Attribute, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            value = vars(module).get(root.id) if isinstance(root, ast.Name) else None
            owner = getattr(value, "__name__", "") if isinstance(value, types.ModuleType) else getattr(value, "__module__", "")
            if value is not None and owner and not kept(owner):
                drop.update(range(decorator.lineno - 1, decorator.end_lineno))
                self.dropped.append(ast.unparse(decorator))
        return "".join(line for i, line in enumerate(lines) if i not in drop)

    def _imports_in_bodies(self, source: str, module: types.ModuleType, user: str) -> str:
        """Imports from the suite inside the definition's bodies: their names bound at module level
        (written in), the statement replaced by ``pass``."""
        tree = ast.parse(source)
        top = tree.body[0]
        lines = source.splitlines(keepends=True)
        replaced: Dict[int, str] = {}
        for node in ast.walk(top):
            if node is top or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.ImportFrom):
                target = importlib.util.resolve_name("." * node.level + (node.module or ""), module.__package__ or "") \
                    if node.level else node.module or ""
                if kept(target):
                    continue
                try:
                    self._bind_imported(target, node, user)
                    said = "pass  # {} (written in above)"
                except (Unspellable, ImportError) as exc:  # the function raises here, as the script says
                    said = self._left_out_import(node, user, exc)
            elif any(not kept(a.name) for a in node.names):
                said = self._left_out_import(node, user, Unspellable(f"{user} imports a module inside a function"))
            else:
                continue
            indent = lines[node.lineno - 1][: len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())]
            replaced[node.lineno - 1] = f"{indent}{said.format(ast.unparse(node))}\n"
            for i in range(node.lineno, node.end_lineno):
                replaced[i] = ""
        return "".join(replaced.get(i, line) for i, line in enumerate(lines))

    def _bind_imported(self, target: str, node: ast.ImportFrom, user: str) -> None:
        """The names a function imports from the suite, bound at module level (written in)."""
        imported = importlib.import_module(target)
        for alias in node.names:
            value = getattr(imported, alias.name, None)
            if value is None:
                value = importlib.import_module(f"{target}.{alias.name}")
            bound = alias.asname or alias.name
            spelled = self.value(value) if not isinstance(value, types.ModuleType) else None
            if spelled is None:
                raise Unspellable(f"{user} imports the module {target}.{alias.name} inside a function")
            if spelled != bound:
                if self._claim(bound, f"{user}:{bound}", value) != bound:  # read inside the function: not rewritten
                    raise Unspellable(f"{user} imports {bound!r} inside a function, a name another definition holds")
                self.definitions[f"{user}:{bound}=bound"] = f"{bound} = {spelled}\n"

    def _left_out_import(self, node: ast.AST, user: str, exc: Exception) -> str:
        """A function's import the script cannot write in: the statement becomes a raise (a run that
        reaches it says so; the verification would see it)."""
        why = f"{ast.unparse(node)} is left out ({type(exc).__name__}: {str(exc)[:120]})"
        self.left_out.append(f"{user}: {' '.join(why.split())}")
        return "raise ImportError(" + repr(why).replace("{", "{{").replace("}", "}}") + ")  # {}"

    def body(self) -> str:
        self.settle()
        self.definitions = in_definition_order({key: self.renames.rewritten(key, source, _home(key))
                                                for key, source in self.definitions.items()})
        _, guarded = guarded_imports(super().header().splitlines())
        left = (f"# Left out (using one raises; the failing run did not): {'; '.join(self.left_out)}\n\n"
                if self.left_out else "") + (LEFT_OUT + "\n\n" if self.left_out or guarded else "")
        left += "".join(guarded) + ("\n" if guarded else "")
        unread = sorted(f"{key.rsplit('.', 1)[-1]}.{name}" for key, (_, names) in self.unread.items() for name in names)
        left += (f"# Left out: {len(unread)} method(s) of the suite's classes that nothing in this script reads "
                 f"({', '.join(unread[:12])}{', ...' if len(unread) > 12 else ''}).\n\n" if unread else "")
        said = left + (f"# Left out: the suite's own decorator(s) {', '.join(sorted(set(self.dropped)))} (they file a "
                       f"class in the suite's registry).\n\n" if self.dropped else "")
        said += (f"# Paddle's aliases written by the names they alias, as older releases read them (the same objects, "
                 f"parameters and classes at this release): {', '.join(sorted(self.aliases))}.\n\n" if self.aliases else "")
        return said + super().body()


def _chains(source: str, name: str) -> "Set[tuple]":
    """The attribute chains ``source`` reads from the bare name ``name`` (``a.b.c`` -> ``("b", "c")``, ``("b",)``)."""
    found: Set[tuple] = set()
    for node in ast.walk(ast.parse(source)):
        parts: List[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if parts and isinstance(node, ast.Name) and node.id == name:
            found.add(tuple(reversed(parts)))
    return found


def _spelled_namespace(held: Dict[str, Any]) -> str:
    return "types.SimpleNamespace(" + ", ".join(
        f"{a}={_spelled_namespace(v) if isinstance(v, dict) else v}" for a, v in sorted(held.items())) + ")"


def writer_failed(exc: BaseException) -> Dict[str, Any]:
    """A standalone script the writer itself failed to write (its own bug, not the model's nor Paddle's):
    said as the harness's gap, with where it raised; the cell's other reproducers stand."""
    import traceback

    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame is not None else ""
    return {"why": f"not written: the harness's writer failed ({type(exc).__name__}: {str(exc)[:200]}{where})",
            "harness_gap": True}


def _home(key: str) -> Optional[Dict[str, Any]]:
    """The globals of the module a definition came from (its bare names are that module's), from its
    key; None for what the writer spelled itself (a namespace, a name a function imported)."""
    # An alias is written in the script's names already: rewritten as its module's, requests'
    # ``BaseHTTPError = HTTPError`` (urllib3's) became ``= HTTPError_2`` (requests' own; found on the zoo).
    if key.endswith(("=namespace", "=bound", "=alias")) or key.startswith("import "):
        return None
    qualified = key.rsplit("=", 1)[0]
    module = sys.modules.get(qualified.rsplit(".", 1)[0])
    return vars(module) if module is not None else None


__all__ = ["StandaloneWriter", "writer_failed", "kept", "imports_of", "foreign_imports", "in_definition_order"]
