"""Inside a user's export process: every ``paddle.jit.save`` followed by its dygraph reference.

Loaded by ``hook/sitecustomize.py`` by file path (the harness package is not importable in the
user's process), so it imports only the standard library, numpy, Paddle (already imported by
then) and two harness files loaded by path: ``shared/inputs.py`` (the one input synthesizer)
and ``cell/base/structure.py`` (Paddle's flattening order).

For each save it writes ``<out>/<pid>-<n>/``: ``export/`` (a copy of the saved program and
params: a later TIPC command may overwrite the folder), ``inputs.npz`` (seeded arrays from the
InputSpecs, named as the program's feeds), ``dygraph.npz`` (the layer's outputs on them, run in
dygraph with dynamic-to-static switched off, so the Python forward runs, not the traced program)
and, last, ``meta.json``. The comparison itself is the harness's: each capture becomes a cell
whose ``baseline`` stage feeds the program by name and matches every output. Whatever goes wrong
here is written into ``meta.json`` and never reaches the user's script: its save and exit code
are untouched.
"""

import functools
import importlib.util
import inspect
import json
import os
import shutil
import sys
import time
import traceback

import numpy as np

_HARNESS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # harness/tipc/hook/ -> harness/
# Free dims (None / -1) of an InputSpec: the batch axis gets 2, the others 32, unless
# HARNESS_TIPC_SHAPES (JSON {name: [dims]}) gives the input's shape.
FREE_BATCH, FREE_OTHER = 2, 32
_count = [0]


def _load(name, relative):
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HARNESS, relative))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _errors():
    """The harness's rule of whose failure it is (standard library only at import)."""
    return sys.modules.get("_harness_errors") or _load("_harness_errors", os.path.join("shared", "errors.py"))


def install(jit_package, out):
    api = sys.modules["paddle.jit.api"]
    original = api.save

    @functools.wraps(original)
    def save(layer, path, input_spec=None, **configs):
        result = original(layer, path, input_spec=input_spec, **configs)
        try:
            capture(layer, path, input_spec, out)
        except Exception as exc:  # noqa: BLE001 - the user's export must not see our failures
            # capture() records its own failures in meta.json; this is one it could not write
            # (the capture folder itself): said in the command's log, where the harness reads it.
            print(f"[harness tipc] jit.save to {path} not captured: {type(exc).__name__}: {exc}", file=sys.stderr)
        return result

    api.save = save
    jit_package.save = save


def capture(layer, path, input_spec, out):
    _count[0] += 1
    folder = os.path.join(out, f"{os.getpid()}-{_count[0]}")
    os.makedirs(folder, exist_ok=True)
    started = time.perf_counter()
    import paddle

    meta = {"saved_to": os.path.abspath(str(path)), "argv": list(sys.argv), "cwd": os.getcwd(),
            "pid": os.getpid(), "paddle": paddle.__version__, "layer": _layer_name(layer)}
    try:
        meta.update(_copy_files(str(path), folder))
        problem = _reference(paddle, layer, input_spec, folder, meta)
        if problem:
            meta["unverified"] = problem
    except Exception as exc:  # noqa: BLE001 - recorded, the harness reports it
        meta["error"] = (f"{type(exc).__name__}: {exc}".strip().splitlines() or [type(exc).__name__])[0]
        # Whose it is, by where it was raised (``shared/errors.py``): the saved layer's forward or
        # jit.save's files are the user's and Paddle's; anything else is the capture's own.
        meta["raised_by"] = _errors().called(exc)
        meta["traceback"] = traceback.format_exc()[-4000:]
    meta["seconds"] = round(time.perf_counter() - started, 4)
    tmp = os.path.join(folder, ".meta.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1, default=str)
    os.replace(tmp, os.path.join(folder, "meta.json"))


def _quant_layers(layer, most=10):
    """Class names of the sublayers that quantize (PaddleSlim's QuantizedConv2D and FakeQuant*,
    paddle.quantization's Quanted*/quanters, a repository's own PACT quanter): evidence that the
    saved layer was trained quantization-aware."""
    names = sorted({type(m).__name__ for m in layer.sublayers(include_self=True) if "quant" in type(m).__name__.lower()})
    return names[:most]


def _layer_name(layer):
    kind = type(layer)
    return f"{kind.__module__}.{kind.__qualname__}"


def _copy_files(prefix, folder):
    export = os.path.join(folder, "export")
    os.makedirs(export, exist_ok=True)
    # The file this save wrote: the newest, should an older export of the other IR lie beside it.
    written = [prefix + ext for ext in (".json", ".pdmodel") if os.path.exists(prefix + ext)]
    program = max(written, key=os.path.getmtime) if written else None
    if program is None:
        raise _errors().theirs(FileNotFoundError(f"jit.save wrote neither {prefix}.json nor {prefix}.pdmodel"),
                               "paddle.jit.save()")
    ext = os.path.splitext(program)[1]
    files = {"program": os.path.join(export, "model" + ext), "params": "",
             "format": "pir" if ext == ".json" else "legacy"}  # ProgramFormat's words; no harness import here
    shutil.copyfile(program, files["program"])
    if os.path.exists(prefix + ".pdiparams"):
        files["params"] = os.path.join(export, "model.pdiparams")
        shutil.copyfile(prefix + ".pdiparams", files["params"])
    return {"files": files, "format": files["format"]}


def _specs(paddle, layer, input_spec):
    """The InputSpecs of the save: jit.save's own argument, else the to_static forward's."""
    if input_spec is not None:
        return list(input_spec), "jit.save(input_spec=...)"
    forward = getattr(layer, "forward", None)
    for owner in (forward, getattr(forward, "_function_spec", None)):
        spec = getattr(owner, "_input_spec", None) if owner is not None else None
        if spec is None and owner is not None:
            spec = getattr(owner, "input_spec", None)
        if spec:
            return list(spec), "to_static(input_spec=...)"
    return None, None


def _named(paddle, layer, specs, shapes):
    """Specs with every name and free dim filled: names from the spec, else the forward's
    parameter at that position (as Paddle names the feeds); dims from ``shapes`` or the defaults."""
    forward = getattr(layer, "forward", None)
    target = getattr(forward, "dygraph_function", None) or getattr(forward, "_dygraph_function", None) or forward
    try:
        params = [p for p in inspect.signature(target).parameters if p != "self"]
    except (TypeError, ValueError):
        params = []

    def one(spec, position):
        if isinstance(spec, paddle.Tensor):
            spec = paddle.static.InputSpec.from_tensor(spec)
        name = spec.name or (params[position] if position < len(params) else f"input_{position}")
        dims = [int(d) if d is not None else -1 for d in spec.shape]
        given = shapes.get(name)
        if given is not None:
            dims = [int(d) for d in given]
        else:
            dims = [d if d >= 0 else (FREE_BATCH if i == 0 else FREE_OTHER) for i, d in enumerate(dims)]
        return paddle.static.InputSpec(shape=dims, dtype=spec.dtype, name=name)

    named = []
    for position, item in enumerate(specs):
        if isinstance(item, dict):
            named.append({k: one(v, position) for k, v in item.items()})
        elif isinstance(item, (list, tuple)):
            named.append(type(item)(one(v, position) for v in item))
        elif isinstance(item, (paddle.static.InputSpec, paddle.Tensor)):
            named.append(one(item, position))
        else:
            return None  # a Python value in the signature: not something the program is fed
    return named


def _reference(paddle, layer, input_spec, folder, meta):
    """Inputs from the specs and the layer's dygraph outputs on them; a reason when there can
    be none."""
    if not isinstance(layer, paddle.nn.Layer):
        return "jit.save of a function, not a Layer: there is no dygraph layer to compare with"
    specs, source = _specs(paddle, layer, input_spec)
    if not specs:
        return "no InputSpec: neither jit.save(input_spec=...) nor to_static(input_spec=...) gave one"
    shapes = json.loads(os.environ.get("HARNESS_TIPC_SHAPES") or "{}")
    named = _named(paddle, layer, specs, shapes)
    if named is None:
        return "the InputSpecs hold a non-tensor value: the saved program cannot be fed it"
    structure = _load("_harness_structure", os.path.join("cell", "base", "structure.py"))
    inputs = _load("_harness_inputs", os.path.join("shared", "inputs.py"))
    flat = structure.flatten_spec(named)
    arrays = inputs.synthesize([inputs.InputSpec(s.name, list(s.shape), str(s.dtype).replace("paddle.", ""))
                                for s in flat], int(os.environ.get("HARNESS_TIPC_SEED", "2026")))
    was_static = not paddle.in_dynamic_mode()
    translator = paddle.jit.dy2static.program_translator.ProgramTranslator.get_instance()
    was_to_static = translator.enable_to_static
    if was_static:
        paddle.disable_static()
    paddle.jit.enable_to_static(False)  # the Python forward, not the traced program
    try:
        with paddle.no_grad():
            call_args = structure.build_call_args(paddle, named, arrays)
            with _errors().calling("the saved layer's forward"):
                returned = layer(*call_args)
            outputs = structure.flatten_outputs(paddle, returned)
    finally:
        paddle.jit.enable_to_static(was_to_static)
        if was_static:
            paddle.enable_static()
    if not outputs:
        return "the layer's forward returns no tensor"
    np.savez(os.path.join(folder, "inputs.npz"), **arrays)
    np.savez(os.path.join(folder, "dygraph.npz"), **{f"o{i}": a for i, (_, a) in enumerate(outputs)})
    meta.update({
        "spec_source": source, "training": bool(layer.training), "static_mode_at_save": was_static,
        # What the layer says of its training, beside what the config's trainer name claims.
        "quant_layers": _quant_layers(layer),
        "feed_names": [s.name for s in flat],
        "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
        "outputs": [label for label, _ in outputs],
        "output_shapes": {label: list(a.shape) for label, a in outputs},
    })
    return None
