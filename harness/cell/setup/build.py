"""A cell's setup (cell side): the model from its source, lite training in the cell's train mode
with the run's shared weights, one export, seeded inputs and the dygraph outputs every stage is
measured against. A captured export (TIPC) brings all of these with it instead.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ...shared.json_types import JsonObject
from ...shared import shapes
from ...shared.causes import paddle_message
from ...shared.records import file_sha256
from ...shared.errors import HarnessFailure, UserError
from ...shared.inputs import InputSpec, synthesize
from ...shared.vocab import SETUP, Status
from ..base.context import CellContext
from ..base.modes import ModeUnsupported
from . import shared_setup
from .rebuild import read_weights, weights_differ
from ..base.structure import build_call_args, flatten_outputs, flatten_spec


def input_specs(input_spec: List[Any], declared: Dict[str, JsonObject], where: str) -> List[InputSpec]:
    """The model's named inputs at their primary shapes (``None`` dims sized by the matrix)."""
    specs: List[InputSpec] = []
    for spec in flatten_spec(input_spec):
        name = getattr(spec, "name", None)
        if not name:
            raise UserError(f"{where}: an InputSpec has no name; give every InputSpec a name (feeding is by name).")
        shape = [int(d) if d is not None else -1 for d in spec.shape]
        entry = declared.get(name, {})
        if "shape" in entry:
            given = entry["shape"]
            if len(given) != len(shape) or any(s not in (-1, g) for s, g in zip(shape, given)):
                raise UserError(
                    f"{where}.inputs.{name}.shape: {given} does not fit the InputSpec shape "
                    f"{[None if s == -1 else s for s in shape]}; give a shape of that rank with its fixed dims."
                )
            shape = list(given)
        elif -1 in shape:
            raise UserError(
                f"{where}.inputs.{name}.shape: missing; the InputSpec has free dims "
                f"{[None if s == -1 else s for s in shape]}, so the matrix must give a concrete shape."
            )
        specs.append(InputSpec(name, shape, str(spec.dtype).replace("paddle.", ""), entry.get("low"), entry.get("high")))
    unknown = sorted(set(declared) - {s.name for s in specs})
    if unknown:
        raise UserError(f"{where}.inputs: {unknown} name no InputSpec of the model (it has {sorted(s.name for s in specs)}).")
    return specs


def shape_variants(ctx: CellContext, input_spec: List[Any], specs: List[InputSpec]) -> List[shapes.Shapes]:
    """The other shapes every stage runs at: the matrix's, else derived from the free dims."""
    primary = {s.name: list(s.shape) for s in specs}
    declared = shapes.declared(ctx.cell.model.get("inputs", {}), primary)
    if declared or not ctx.cell.model.get("derive_shapes", False):
        return declared
    free = {getattr(s, "name", None): [None if d is None or d < 0 else int(d) for d in s.shape]
            for s in flatten_spec(input_spec)}
    return shapes.derive(free, primary)


def variant_references(ctx: CellContext, layer: Any, input_spec: List[Any], specs: List[InputSpec],
                       variants: List[shapes.Shapes]) -> List[JsonObject]:
    """Inputs and dygraph outputs at each variant shape (``inputs_s<k>.npz``, ``dygraph_s<k>.npz``).
    A shape the dygraph model itself cannot take is skipped with its words: it is no deployment's."""
    paddle = ctx.paddle
    fixed = {getattr(s, "name", None): list(s.shape) for s in flatten_spec(input_spec)}
    found = []
    for k, variant in enumerate(variants, 1):
        entry: JsonObject = {"index": k, "label": shapes.label(variant), "inputs": variant}
        off = [name for name, shape in variant.items()
               if any(f is not None and f >= 0 and f != d for f, d in zip(fixed.get(name, []), shape))]
        if off:
            entry["note"] = (f"{', '.join(off)}: differs from the InputSpec's fixed dims "
                             f"({', '.join(str(fixed[n]) for n in off)}); the program was exported for those")
        arrays = synthesize([dataclasses.replace(s, shape=variant[s.name]) for s in specs], ctx.cell.seed + k)
        try:
            with paddle.no_grad():
                outputs = flatten_outputs(paddle, layer(*build_call_args(paddle, input_spec, arrays)))
        except Exception as exc:
            found.append(dict(entry, status=Status.SKIP,
                              message=f"the dygraph model cannot take this shape: {paddle_message(exc)}"))
            continue
        np.savez(ctx.work / ctx.file("inputs", k), **arrays)
        ctx.save_outputs(ctx.file("dygraph", k), [a for _, a in outputs])
        found.append(dict(entry, status=Status.PASS))
    return found


def setup(ctx: CellContext) -> JsonObject:
    if ctx.cell.captured:
        return setup_from_capture(ctx, Path(ctx.cell.model["capture"]))
    cell = ctx.cell
    timings: Dict[str, float] = {}
    t0 = time.perf_counter()
    check_mode_packages(ctx)
    ctx.mode.before_paddle()
    api = ctx.paddle_api
    paddle = ctx.paddle
    timings["import"] = time.perf_counter() - t0
    info = api.paddle_info()

    reason = _skip_reason(ctx, api)
    if reason:
        return {"status": Status.SKIP, "paddle": info, "message": reason}
    reused = shared_setup.reuse(ctx, info)  # another session's cell made this program's setup already
    if reused is not None:
        return dict(reused, paddle=info)

    # Imported here: the built-in models import paddle, which must wait for the mode's before_paddle and
    # for paddle_api's settings (glog level, zlib); at module level it came first in a fresh interpreter.
    from ...models import sources

    layer, input_spec = _build(ctx, sources)
    timings["build"] = sources.LAST_BUILD.get("seconds", 0.0)
    write_build_imports(ctx)
    specs = input_specs(input_spec, cell.model.get("inputs", {}), ctx.where)
    arrays = synthesize(specs, cell.seed)
    np.savez(ctx.work / "inputs.npz", **arrays)
    variants = shape_variants(ctx, input_spec, specs)

    t = time.perf_counter()
    try:
        layer, weights, losses = train(ctx, layer, input_spec, arrays)
    except ModeUnsupported as exc:
        return {"status": Status.SKIP, "paddle": info, "message": str(exc),
                "mode_evidence": getattr(ctx.mode, "evidence", {}), "findings": ctx.mode.findings}
    timings["train"] = time.perf_counter() - t

    # The dygraph reference first: a mode's export may convert the layer or (PaddleSlim) leave
    # Paddle in static mode.
    t = time.perf_counter()
    with paddle.no_grad():
        outputs = flatten_outputs(paddle, layer(*build_call_args(paddle, input_spec, arrays)))
    if not outputs:
        raise UserError(f"{ctx.where}.factory: the model's forward returns no tensor; return a tensor, list or dict of tensors.")
    shape_entries = variant_references(ctx, layer, input_spec, specs, variants)
    timings["dygraph"] = time.perf_counter() - t
    repeated = repeatability(ctx, layer, build_call_args(paddle, input_spec, arrays), outputs)
    if repeated["agrees"] is False and repeated["random_ops"]:
        return {"status": Status.UNTESTABLE, "paddle": info, "message": repeated["words"], "repeatability": repeated,
                "weights": weights, "losses": losses, "findings": ctx.mode.findings}
    if ctx.mode.reducible:  # the instance this process trained (and exports): what later steps take apart
        ctx.built = (layer, input_spec)
    t = time.perf_counter()
    files = phase(ctx, "export", lambda: ctx.mode.export(ctx.saved, layer, input_spec, ctx.work / "export" / "model"))
    timings["export"] = time.perf_counter() - t
    labels = [label for label, _ in outputs]
    ctx.save_outputs("dygraph.npz", [a for _, a in outputs])
    result = {
        "status": Status.PASS,
        "paddle": info,
        "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
        "signature_order": [getattr(s, "name", None) for s in _signature_specs(input_spec)],
        "outputs": labels,
        "output_shapes": {label: list(a.shape) for label, a in outputs},
        "shape_variants": shape_entries,
        "export": files,
        "model_packages": sources.model_packages(layer, cell.model["factory"]),
        "losses": losses,
        "weights": weights,
        "repeatability": repeated,
        "timings": {k: round(v, 4) for k, v in timings.items()},
        "findings": ctx.mode.findings,
    }
    not_shared = shared_setup.publish(ctx, result)
    result["program"] = {"made_by": ctx.cell.id, "reused": False,
                         "words": not_shared or "made here; published for the program's other sessions"}
    return result


def _skip_reason(ctx: CellContext, api: Any) -> Optional[str]:
    """Why this cell does not run here (its mode, device or family), or None; a family's packages
    must be installed (the matrix's fault otherwise, in one line)."""
    cell = ctx.cell
    reason = cell.declared_skip or ctx.mode.unsupported(api)
    if reason is None and cell.mode_requires_device == "gpu" and not api.gpu_available():
        reason = f"train mode {cell.mode} needs a GPU"
    family = cell.model.get("family")
    if reason is None and family and family.get("apart") and missing_package(family["packages"]):
        reason = (f"model family {family['name']} installs apart from the other families (families."
                  f"{family['name']}.apart: pins that fight theirs), not in this environment; `python -m harness "
                  f"pool --session {cell.session.name} --model {cell.model['name']}` gives it one of its own")
    if reason is None and family:
        check_packages(ctx, family["packages"], f"families.{family['name']}.packages",
                       "nox installs a family's packages in its zoo sessions")
    return reason


def _build(ctx: CellContext, sources: Any) -> Tuple[Any, List[Any]]:
    """The model from its factory. A family whose packages lack what its suite imports cannot build
    it here: the matrix's to fix (the harness's, untestable), never a finding about Paddle."""
    cell, family = ctx.cell, ctx.cell.model.get("family")
    try:
        return sources.build(cell.model["factory"], ctx.paddle, cell.seed, f"{ctx.where}.factory")
    except ModuleNotFoundError as exc:
        if not family or str(exc.name or "").partition(".")[0] == "paddle":
            raise
        raise HarnessFailure(f"model family {family['name']} cannot build {cell.model['name']} in this environment: "
                             f"its code imports {exc.name!r}, which is not installed (No module named {exc.name!r}); "
                             f"add it to families.{family['name']}.packages") from exc
    except AttributeError as exc:
        if not _raised_in_factory(exc, cell.model["factory"]):
            raise  # in the suite's code or Paddle's: what this Paddle does to that code
        raise HarnessFailure(f"the factory of {cell.model['name']} ({cell.model['factory']}) asks for what is not "
                             f"there: {exc}; the factory's to fix, not a finding") from exc


def _raised_in_factory(exc: BaseException, factory: str) -> bool:
    """Whether ``exc`` was raised in the factory's own module (its innermost frame): a name the
    factory asked a package for, which that package lacks (not the suite's code, not Paddle's)."""
    import sys

    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    module = sys.modules.get(factory.partition(":")[0])
    where = getattr(module, "__file__", None)
    return frame is not None and where is not None and Path(frame.tb_frame.f_code.co_filename) == Path(where)


def write_build_imports(ctx: CellContext) -> None:
    """What building the model imported (in setup, or when an analysis rebuilt it), for the
    environment's fork server to preload (the host reads it: ``BUILD_IMPORTS``); nothing when this
    process built nothing; a file that cannot be written only costs the next cells an import."""
    import sys

    sources = sys.modules.get("harness.models.sources")
    if sources is None or not sources.LAST_BUILD or not ctx.cell.preload_key:
        return
    from ...shared.protocol import BUILD_IMPORTS

    try:
        (ctx.work / BUILD_IMPORTS).write_text(json.dumps(dict(sources.LAST_BUILD, preload_key=ctx.cell.preload_key)),
                                              encoding="utf-8")
    except OSError:
        pass


def repeatability(ctx: CellContext, layer: Any, args: List[Any], outputs: List[Any]) -> JsonObject:
    """A copy of the model run again on the same inputs, against the reference it just gave, at the
    fp32 tolerance. A model that draws random numbers at inference gives different outputs each run,
    and no stage compared with it can pass or fail for Paddle's reasons: ``agrees`` False with the
    random ops its forward runs (and their lines) makes the setup ``untestable``. Outputs that differ
    with no random op come from state the forward keeps (a counter, a cache): a property the export
    analysis explains, said here and judged as any other. The copy leaves the model that is exported
    after exactly the eager calls it had (its state is what the export reads)."""
    import copy

    from ...shared.compare import Tolerance, compare_all

    paddle = ctx.paddle
    try:
        twin = copy.deepcopy(layer)
    except Exception as exc:  # a layer holding what does not copy (a handle, a lock): not checked, said
        return {"agrees": None, "why": f"not checked: the model does not copy ({type(exc).__name__}: {exc})"[:300]}
    with paddle.no_grad():
        again = flatten_outputs(paddle, twin(*args))
    stats = compare_all([a for _, a in outputs], [a for _, a in again], Tolerance.of(ctx.cell.tolerances["fp32"]),
                        "a second dygraph run's outputs")
    worst = max((s.max_abs or 0.0) for s in stats)
    if all(s.passed for s in stats):
        return {"agrees": True, "max_abs": worst}
    from ..anatomy.isolation import random_draws

    draws = random_draws(paddle, copy.deepcopy(layer), args)
    said = f"the model's dygraph outputs differ between two runs of the same inputs (max abs {worst:.3g})"
    if not draws:
        return {"agrees": False, "max_abs": worst, "random_ops": [],
                "words": f"{said}, with no random op: state its forward keeps (judged as any other model)"}
    drawn = ", ".join(f"`{d['op']}` ({d['at']})" for d in draws[:3])
    return {"agrees": False, "max_abs": worst, "random_ops": draws,
            "words": f"{said}: nothing compared with them can be judged; random ops its forward runs: {drawn}"}


def setup_from_capture(ctx: CellContext, capture: Path) -> JsonObject:
    """A model someone else trained and exported: a TIPC command's ``jit.save``, intercepted
    (``harness.tipc.hook.capture``). Its inputs, dygraph outputs and saved files are the capture's;
    the ladder then runs as for any cell (``baseline`` is the export's consistency check)."""
    t0 = time.perf_counter()
    meta = json.loads((capture / "meta.json").read_text(encoding="utf-8"))
    info = ctx.paddle_api.paddle_info()
    source = {"source": "tipc", "command": meta.get("argv"), "cwd": meta.get("cwd"),
              "saved_to": meta.get("saved_to"), "layer": meta.get("layer"), "capture": str(capture)}
    if meta.get("error") and "raised_by" in meta and meta["raised_by"] is None:
        # Raised by the capture's own code, not by the layer's forward or jit.save: the harness's.
        return {"status": Status.UNTESTABLE, "paddle": info, "phase": "capture", "weights": source,
                "message": f"the harness could not capture {meta.get('saved_to')}: {meta['error']}"}
    if meta.get("error"):
        return {"status": Status.ERROR, "paddle": info, "phase": "capture", "weights": source,
                "message": f"the dygraph reference of {meta.get('saved_to')} failed: {meta['error']}"}
    if meta.get("unverified"):
        return {"status": Status.SKIP, "paddle": info, "weights": source,
                "message": f"{meta.get('saved_to')} not verified: {meta['unverified']}"}
    export = ctx.work / "export"
    export.mkdir(parents=True, exist_ok=True)
    files = {"format": meta["files"]["format"], "program": "", "params": ""}
    for key in ("program", "params"):
        if meta["files"].get(key):
            files[key] = str(export / Path(meta["files"][key]).name)
            shutil.copyfile(meta["files"][key], files[key])
    for name in ("inputs.npz", "dygraph.npz"):
        shutil.copyfile(capture / name, ctx.work / name)
    return {
        "status": Status.PASS,
        "paddle": info,
        "inputs": meta["inputs"],
        "signature_order": meta["feed_names"],
        "outputs": meta["outputs"],
        "output_shapes": meta["output_shapes"],
        "export": files,
        "losses": [],
        "weights": dict(source, training_at_save=meta.get("training"), spec_source=meta.get("spec_source"),
                        static_mode_at_save=meta.get("static_mode_at_save"),
                        quant_layers=meta.get("quant_layers"), mode_note=(ctx.cell.tipc or {}).get("mode_note")),
        "timings": {"capture": meta.get("seconds"), "setup": round(time.perf_counter() - t0, 4)},
        "findings": [],
    }


def train(ctx: CellContext, layer: Any, input_spec: List[Any], arrays: Dict[str, np.ndarray]):
    """The mode's preparation, then the run's shared weights if another cell trained them,
    else a lite training in the mode (saved for the other cells); the layer in eval."""
    paddle = ctx.paddle
    paddle.seed(ctx.cell.seed)
    ctx.paddle_api.set_flags_for_determinism()
    layer = ctx.mode.prepare(paddle, layer)
    weights = load_checkpoint(ctx, layer)
    losses: List[float] = []
    if weights is None:
        args = build_call_args(paddle, input_spec, arrays)
        losses = phase(ctx, "train", lambda: ctx.mode.train(paddle, layer, args, ctx.cell.train_steps, ctx.cell.seed))
        weights = save_checkpoint(ctx, layer)
    layer.eval()
    return layer, weights, losses


def check_mode_packages(ctx: CellContext) -> None:
    check_packages(ctx, ctx.cell.mode_packages, f"modes.{ctx.cell.mode}.packages", "nox installs a mode's packages")


def check_packages(ctx: CellContext, requirements: List[str], key: str, how: str) -> None:
    """Declared packages must be installed: a missing one is the matrix's (or the environment's)
    fault, said in one line, not an ImportError deep in a mode or a model factory."""
    missing = missing_package(requirements)
    if missing:
        requirement, dist = missing
        raise UserError(f"{ctx.cell.matrix or 'matrix'}: {key}: {dist!r} is not installed in this Paddle "
                        f"environment; {how} (or pip install {requirement!r}).")


def missing_package(requirements: List[str]) -> Optional[Tuple[str, str]]:
    """The first requirement whose distribution is not installed here, with that distribution's name."""
    from importlib import metadata

    for requirement in requirements:
        dist = requirement.split(";")[0].strip()
        for sep in ("==", ">=", "<=", "~=", "!=", "<", ">", "["):
            dist = dist.split(sep)[0]
        try:
            metadata.version(dist.strip())
        except metadata.PackageNotFoundError:
            return requirement, dist.strip()
    return None


# -- version-neutral weights ------------------------------------------------

def _checkpoint_meta(ctx: CellContext) -> JsonObject:
    cell = ctx.cell
    # The model's source too: weights trained for an edited model are not this model's.
    return {"factory": cell.model["factory"], "mode": cell.mode, "seed": cell.seed,
            "train_steps": cell.train_steps, "inputs": cell.model.get("inputs", {}),
            "source": (cell.produced_by or {}).get("model_source")}


def load_checkpoint(ctx: CellContext, layer: Any) -> Optional[JsonObject]:
    """Load the run's shared checkpoint of this model, if one was trained already.

    The first cell of a run to train a model saves its state as plain ``.npz``; every
    other cell (another session, another Paddle version) loads it, so versions are
    compared on the same weights. A checkpoint made for another factory, seed or input
    shape is ignored and overwritten.
    """
    path = ctx.cell.checkpoint
    if not path or not Path(path).exists():
        return None
    with np.load(path) as data:
        meta = json.loads(str(data["__meta__"])) if "__meta__" in data.files else None
        if meta != _checkpoint_meta(ctx):
            return None
    state = read_weights(path)
    differs = weights_differ(layer.state_dict(), state, "checkpoint")
    if differs:
        raise RuntimeError(f"checkpoint {path} does not fit this Paddle's model: {differs}")
    layer.set_state_dict({k: ctx.paddle.to_tensor(v) for k, v in state.items()})
    return {"source": "checkpoint", "path": str(path), "sha256": file_sha256(Path(path))}


def save_checkpoint(ctx: CellContext, layer: Any) -> JsonObject:
    path = Path(ctx.cell.checkpoint or ctx.work / "weights.npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {k: v.numpy() for k, v in layer.state_dict().items()}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, __meta__=np.array(json.dumps(_checkpoint_meta(ctx))), **arrays)
    os.replace(tmp, path)
    return {"source": "trained", "path": str(path), "sha256": file_sha256(path)}


def _signature_specs(input_spec: List[Any]) -> List[Any]:
    """InputSpecs in the order the forward's signature lists them (dicts in insertion order)."""
    out: List[Any] = []
    for item in input_spec:
        if isinstance(item, dict):
            out.extend(item.values())
        elif isinstance(item, (list, tuple)):
            out.extend(_signature_specs(list(item)))
        else:
            out.append(item)
    return out


def phase(ctx: CellContext, name: str, fn):
    """Run ``fn``; an exception it raises says which phase of setup it came from, and so does the
    journal first, for a worker that dies inside it (a crash in lite training gets its reproducer)."""
    ctx.journal.phase(SETUP, name)
    try:
        return fn()
    except Exception as exc:
        exc.phase = name  # type: ignore[attr-defined]
        raise
