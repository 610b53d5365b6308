"""Cell side: everything one cell does inside one Paddle environment.

``python -m harness cell --spec SPEC --work DIR`` runs the cell's setup (build the model,
lite training, export once, seeded inputs, dygraph outputs) and then its stages, writing
each stage's result to the journal as soon as it ends. When the host restarts a worker
after a crash it passes the same arguments: finished stages are read back from the
journal, the saved inputs/outputs from ``.npz`` files, and the run goes on with the next
stage, so a crash costs one fresh ``import paddle`` and nothing else.

Exit codes: 0 done (whatever the stages' statuses), 2 user error (a model factory that
cannot be imported or returns the wrong thing; one line on stderr), anything else: the
process died, and the host records ``crash`` for the stage the journal says was running.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..compare import compare_tol, worst
from ..errors import UserError
from ..records import WORKAROUND_SEP, Journal, workaround_label

SETUP = "setup"
ANALYSIS = "analysis:"
# Stages that switch one knob on; the knob has the stage's name in stage_knobs().
KNOB_STAGES = ("memory", "ir")


def paddle_message(exc: BaseException) -> str:
    """Paddle's own first message line, without the C++ traceback around it."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Error Message Summary"):
            rest = [ln for ln in lines[i + 1:] if not set(ln) <= set("-=")]
            if rest:
                return f"{type(exc).__name__}: {rest[0]}"
    for line in lines:
        if set(line) <= set("-="):
            continue
        if line.startswith("C++ Traceback") or line.startswith("0 ") or "paddle::" in line:
            continue
        return f"{type(exc).__name__}: {line}"
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


# -- inputs and outputs ----------------------------------------------------

def flatten_spec(input_spec: List[Any]) -> List[Any]:
    """The InputSpecs in the order Paddle flattens them (dicts by sorted key)."""
    flat: List[Any] = []
    for item in input_spec:
        if isinstance(item, dict):
            flat.extend(item[k] for k in sorted(item))
        elif isinstance(item, (list, tuple)):
            flat.extend(flatten_spec(list(item)))
        else:
            flat.append(item)
    return flat


def make_inputs(input_spec: List[Any], declared: Dict[str, Dict[str, Any]], seed: int, where: str) -> Dict[str, np.ndarray]:
    """Seeded synthetic arrays for every named InputSpec; ``None`` dims sized by the matrix."""
    rng = np.random.default_rng(seed)
    arrays: Dict[str, np.ndarray] = {}
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
        dtype = np.dtype(str(spec.dtype).replace("paddle.", ""))
        low, high = entry.get("low"), entry.get("high")
        if np.issubdtype(dtype, np.integer):
            lo = int(low if low is not None else 0)
            hi = int(high if high is not None else 2)
            arrays[name] = rng.integers(lo, hi, size=shape).astype(dtype)
        elif dtype == np.bool_:
            arrays[name] = rng.integers(0, 2, size=shape).astype(bool)
        elif low is not None or high is not None:
            lo = float(low if low is not None else 0.0)
            hi = float(high if high is not None else lo + 1.0)
            arrays[name] = rng.uniform(lo, hi, size=shape).astype(dtype)
        else:
            arrays[name] = rng.standard_normal(size=shape).astype(dtype)
    unknown = sorted(set(declared) - set(arrays))
    if unknown:
        raise UserError(f"{where}.inputs: {unknown} name no InputSpec of the model (it has {sorted(arrays)}).")
    return arrays


def build_call_args(paddle: Any, input_spec: List[Any], arrays: Dict[str, np.ndarray]) -> List[Any]:
    """Dygraph arguments with the same structure as the InputSpecs."""
    args = []
    for item in input_spec:
        if isinstance(item, dict):
            args.append({k: paddle.to_tensor(arrays[v.name]) for k, v in item.items()})
        elif isinstance(item, (list, tuple)):
            args.append(type(item)(build_call_args(paddle, list(item), arrays)))
        else:
            args.append(paddle.to_tensor(arrays[item.name]))
    return args


def flatten_tensors(paddle: Any, value: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """(label, tensor) pairs in Paddle's flattening order: dicts by sorted key, then sequence order."""
    if isinstance(value, paddle.Tensor):
        return [(prefix or "output", value)]
    if isinstance(value, dict):
        return [x for key in sorted(value)
                for x in flatten_tensors(paddle, value[key], f"{prefix}.{key}" if prefix else str(key))]
    if isinstance(value, (list, tuple)):
        return [x for i, item in enumerate(value)
                for x in flatten_tensors(paddle, item, f"{prefix}.{i}" if prefix else str(i))]
    return []  # non-tensor returns are not program outputs


def flatten_outputs(paddle: Any, value: Any) -> List[Tuple[str, np.ndarray]]:
    return [(label, tensor.numpy()) for label, tensor in flatten_tensors(paddle, value)]


# -- the cell ------------------------------------------------------------------

class Cell:
    def __init__(self, spec: Dict[str, Any], work: Path):
        self.spec = spec
        self.work = Path(work)
        self.journal = Journal(self.work / "journal.jsonl")
        self.where = f"{spec.get('matrix', 'matrix')}: models.{spec['model']['name']}"
        self._paddle = None
        self._compat = None

    # Paddle is imported lazily so that a resumed worker whose stages are all done
    # costs nothing, and so that import failures are recorded like any other error.
    @property
    def paddle(self):
        if self._paddle is None:
            from . import compat

            compat.silence_native_info_log()
            import paddle

            self._paddle = paddle
            self._compat = compat
        return self._paddle

    @property
    def compat(self):
        self.paddle  # noqa: B018 - imports compat alongside paddle
        return self._compat

    def run(self) -> int:
        done = self.journal.finished()
        if SETUP not in done:
            self.journal.start(SETUP)
            try:
                result = self.setup()
            except UserError as exc:
                self.journal.finish(SETUP, {"status": "error", "user_error": str(exc)})
                print(str(exc), file=sys.stderr)
                return 2
            except Exception as exc:  # the model or Paddle raised while building/training/exporting
                traceback.print_exc()
                result = {"status": "error", "message": paddle_message(exc), "phase": getattr(exc, "phase", None)}
            self.journal.finish(SETUP, result)
            done[SETUP] = result
        if done[SETUP].get("status") != "pass":
            return 2 if done[SETUP].get("user_error") else 0
        for stage, knobs in self.plan(done):
            if stage in done:
                continue
            self.journal.start(stage)
            started = time.perf_counter()
            try:
                result = self.run_stage(stage, knobs)
            except Exception as exc:
                traceback.print_exc()
                result = {"status": "error", "message": paddle_message(exc), "config": _plain(knobs)}
            result.setdefault("seconds", round(time.perf_counter() - started, 4))
            if WORKAROUND_SEP in stage:
                result["workaround"] = workaround_label(stage)
            self.journal.finish(stage, result)
            done[stage] = result
        self.analyse(done)
        return 0

    # -- root cause of the first numeric failure ----------------------------
    def analyse(self, done: Dict[str, Dict[str, Any]]) -> None:
        """Per-tensor diff and culprit search for the first stage that failed on numbers.

        ``baseline`` failing means dygraph and the predictor disagree: there is no second
        predictor to diff against, so nothing runs. Errors and crashes have Paddle's message.
        """
        target = next((name for name, r in done.items()
                       if name not in (SETUP, "baseline") and not name.startswith(ANALYSIS)
                       and r.get("status") == "fail"), None)
        if target is None:
            return
        knobs = dict(done[target].get("config") or {})
        precision = self.stage_precision(target)
        tol = self.spec["tolerances"][precision]
        for kind, fn in ((ANALYSIS + "diff", self.tensor_diff), (ANALYSIS + "bisect", self.bisect)):
            if kind in done:
                continue
            self.journal.start(kind)
            started = time.perf_counter()
            try:
                result = fn(target, knobs, tol)
            except UserError as exc:
                result = {"status": "error", "message": str(exc)}
            except Exception as exc:
                traceback.print_exc()
                result = {"status": "error", "message": paddle_message(exc)}
            result.setdefault("stage", target)
            result["seconds"] = round(time.perf_counter() - started, 3)
            self.journal.finish(kind, result)
            done[kind] = result

    def tensor_diff(self, stage: str, knobs: Dict[str, Any], tol: Dict[str, float]) -> Dict[str, Any]:
        from .. import tensor_report
        from . import layerwise

        setup = self.journal.finished()[SETUP]
        feeds = dict(np.load(self.work / "inputs.npz"))
        out = self.work / "tensors"
        base = self.stage_knobs("baseline")
        result = layerwise.run_diff(setup["export"], feeds, base, knobs, out / "dump", tol)
        title = f"{self.spec['id']}: baseline vs {stage}"
        try:
            files = tensor_report.write_all(out, result, title)
        except ImportError as exc:  # openpyxl / matplotlib missing in this env: keep what we can
            files = tensor_report.write_all(out, result, title, ["csv", "md"])
            files["missing"] = str(exc)
        first = result.get("first_divergence")
        return {
            "status": "done", "files": files, "summary": tensor_report.summary_line(result),
            "first_divergence": {k: first[k] for k in ("index", "op", "name", "max_abs", "max_rel")} if first else None,
            "tensors": len(result["rows"]), "unmatched": len(result["unmatched"]),
            "hooks_changed_output": result["hooks_changed_output"],
        }

    def bisect(self, stage: str, knobs: Dict[str, Any], tol: Dict[str, float]) -> Dict[str, Any]:
        from ..search import FAIL, INVALID, PASS, build_budget, find_culprits

        compat = self.compat
        setup = self.journal.finished()[SETUP]
        files = setup["export"]
        feeds = dict(np.load(self.work / "inputs.npz"))
        labels = setup["outputs"]
        ref_file = "baseline.npz" if (self.work / "baseline.npz").exists() else "dygraph.npz"
        reference = self._load_outputs(ref_file, labels)
        if knobs.get("trt"):
            kind, ir = "tensorrt_ops", None
            items = compat.program_op_types(files, knobs, feeds)
        elif knobs.get("ir"):
            kind = "passes"
            ir, items = compat.pass_list(files, knobs)
        else:
            return {"status": "skip", "message": f"{stage} runs no IR passes or TensorRT ops to search"}
        messages: List[str] = []

        def probe(disabled: List[str]) -> str:
            trial = dict(knobs)
            if kind == "passes":
                trial["deleted_passes"] = disabled
            else:
                trial["trt"] = dict(knobs["trt"], disabled_ops=disabled)
            try:
                predictor = compat.create_predictor(compat.make_config(files, **trial))
                _, got = compat.run_predictor(predictor, feeds)
            except Exception as exc:
                messages.append(paddle_message(exc))
                return INVALID
            ok = len(got) == len(reference) and all(
                compare_tol(r, g, tol)["status"] == "pass" for r, g in zip(reference, got))
            return PASS if ok else FAIL

        found = find_culprits(items, probe)
        return {
            "status": found.status, "kind": kind, "ir": ir, "candidates": len(items), "items": items,
            "culprits": found.culprits, "builds": found.builds,
            "budget": build_budget(len(items), max(len(found.culprits), 1)),
            "message": found.message, "invalid_sets": len(found.invalid),
            "invalid_messages": list(dict.fromkeys(messages))[:5], "reference": ref_file.split(".")[0],
        }

    # -- setup ----------------------------------------------------------------
    def setup(self) -> Dict[str, Any]:
        spec = self.spec
        timings: Dict[str, float] = {}
        t0 = time.perf_counter()
        paddle = self.paddle
        compat = self.compat
        timings["import"] = time.perf_counter() - t0
        info = compat.paddle_info()

        mode = spec["mode"]
        if mode != "normal":
            return {"status": "skip", "paddle": info,
                    "message": f"train mode {mode} is declared in the schema but not run by harness "
                               f"{_harness_version()} yet"}
        if spec.get("mode_requires_device") == "gpu" and not compat.gpu_available():
            return {"status": "skip", "paddle": info, "message": f"train mode {mode} needs a GPU"}

        layer, input_spec = self.build_model()
        arrays = make_inputs(input_spec, spec["model"].get("inputs", {}), spec["seed"], self.where)
        np.savez(self.work / "inputs.npz", **arrays)

        t = time.perf_counter()
        paddle.seed(spec["seed"])
        compat.set_flags_for_determinism()
        weights = self.load_checkpoint(layer)
        losses: List[float] = []
        if weights is None:
            losses = _phase("train", lambda: lite_train(paddle, layer, input_spec, arrays, spec["train_steps"], spec["seed"]))
            weights = self.save_checkpoint(layer)
        timings["train"] = time.perf_counter() - t
        layer.eval()

        t = time.perf_counter()
        files = _phase("export", lambda: compat.export(layer, input_spec, self.work / "export" / "model"))
        timings["export"] = time.perf_counter() - t

        t = time.perf_counter()
        with paddle.no_grad():
            outputs = flatten_outputs(paddle, layer(*build_call_args(paddle, input_spec, arrays)))
        timings["dygraph"] = time.perf_counter() - t
        if not outputs:
            raise UserError(f"{self.where}.factory: the model's forward returns no tensor; return a tensor, list or dict of tensors.")
        labels = [label for label, _ in outputs]
        np.savez(self.work / "dygraph.npz", **{f"o{i}": a for i, (_, a) in enumerate(outputs)})
        return {
            "status": "pass",
            "paddle": info,
            "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
            "signature_order": [getattr(s, "name", None) for s in _signature_specs(input_spec)],
            "outputs": labels,
            "output_shapes": {label: list(a.shape) for label, a in outputs},
            "export": files,
            "losses": losses,
            "weights": weights,
            "timings": {k: round(v, 4) for k, v in timings.items()},
        }

    # -- version-neutral weights ------------------------------------------------
    def _checkpoint_meta(self) -> Dict[str, Any]:
        spec = self.spec
        return {"factory": spec["model"]["factory"], "mode": spec["mode"], "seed": spec["seed"],
                "train_steps": spec["train_steps"], "inputs": spec["model"].get("inputs", {})}

    def load_checkpoint(self, layer: Any) -> Optional[Dict[str, Any]]:
        """Load the run's shared checkpoint of this model, if one was trained already.

        The first cell of a run to train a model saves its state as plain ``.npz``; every
        other cell (another session, another Paddle version) loads it, so versions are
        compared on the same weights. A checkpoint made for another factory, seed or input
        shape is ignored and overwritten.
        """
        path = self.spec.get("checkpoint")
        if not path or not Path(path).exists():
            return None
        with np.load(path) as data:
            meta = json.loads(str(data["__meta__"])) if "__meta__" in data.files else None
            if meta != self._checkpoint_meta():
                return None
            state = {k: data[k] for k in data.files if k != "__meta__"}
        own = layer.state_dict()
        if set(own) != set(state):
            missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
            raise RuntimeError(f"checkpoint {path} does not fit this Paddle's model: missing {missing[:5]}, "
                               f"unexpected {extra[:5]}")
        layer.set_state_dict({k: self.paddle.to_tensor(v) for k, v in state.items()})
        return {"source": "checkpoint", "path": str(path), "sha256": _sha256(Path(path))}

    def save_checkpoint(self, layer: Any) -> Dict[str, Any]:
        path = self.spec.get("checkpoint")
        if not path:
            path = str(self.work / "weights.npz")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {k: v.numpy() for k, v in layer.state_dict().items()}
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
        np.savez(tmp, __meta__=np.array(json.dumps(self._checkpoint_meta())), **arrays)
        os.replace(tmp, path)
        return {"source": "trained", "path": str(path), "sha256": _sha256(path)}

    def build_model(self):
        factory_path = self.spec["model"]["factory"]
        where = f"{self.where}.factory"
        module_name, _, attr = factory_path.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise UserError(f"{where}: cannot import {module_name!r} ({exc}); install it or fix the module path.") from None
        factory = getattr(module, attr, None)
        if not callable(factory):
            raise UserError(f"{where}: {module_name!r} has no callable {attr!r}; fix the function name.")
        self.paddle.seed(self.spec["seed"])
        built = _phase("build", factory)
        if not (isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], self.paddle.nn.Layer)
                and isinstance(built[1], (list, tuple))):
            raise UserError(f"{where}: {factory_path} must return (paddle.nn.Layer, [InputSpec or dict of InputSpec]).")
        return built[0], list(built[1])

    # -- stages ----------------------------------------------------------------
    def stage_knobs(self, stage: str) -> Dict[str, Any]:
        spec = self.spec
        session = spec["session"]
        ref_threads = spec["reference_threads"]
        if stage == "baseline":
            return {"device": "cpu", "ir": False, "memory": False, "onednn": False, "threads": ref_threads}
        if stage == "memory":
            return {"device": "cpu", "ir": False, "memory": True, "onednn": False, "threads": ref_threads}
        if stage == "ir":
            return {"device": "cpu", "ir": True, "memory": True, "onednn": False, "threads": ref_threads}
        # The backend stage is the deployment configuration of the session.
        knobs: Dict[str, Any] = {"device": session["device"], "ir": True, "memory": True,
                                 "threads": spec["deploy_threads"]}
        backend, precision = session["backend"], session["precision"]
        if session["device"] == "cpu":
            knobs["onednn"] = backend == "onednn"
            knobs["bf16"] = precision == "bf16"
        elif backend == "trt":
            knobs["trt"] = {"precision": precision}
        else:
            knobs["gpu_precision"] = precision
        return knobs

    def plan(self, done: Dict[str, Dict[str, Any]]):
        """The stages in order, each followed by its workaround variant when one applies.

        When ``memory`` or ``ir`` raises (a Paddle error, not a numeric failure), every later
        stage, which switches that knob on too, would only repeat the error. The original
        stage still runs and keeps its status (the finding); next to it runs a variant with
        the broken knob off, named ``<stage>~no_<knob>``, clearly labelled a workaround and
        never counted in the cell's verdict. Generated lazily: which variants exist depends
        on the results so far (read back from the journal after a restart).
        """
        broken: List[str] = []
        for stage in self.spec["stages"]:
            knobs = self.stage_knobs(stage)
            yield stage, knobs
            original = done.get(stage, {})
            if broken and any(knobs.get(k) for k in broken):
                variant = f"{stage}{WORKAROUND_SEP}no_{'_'.join(broken)}"
                yield variant, dict(knobs, **{k: False for k in broken})
                if done.get(variant, {}).get("status") == "error" and stage in KNOB_STAGES:
                    broken.append(stage)
            elif original.get("status") == "error" and stage in KNOB_STAGES:
                broken.append(stage)

    def stage_precision(self, stage: str) -> str:
        stage = stage.split(WORKAROUND_SEP)[0]
        if stage in ("baseline", "memory", "ir"):
            return "fp32"
        return self.spec["session"]["precision"]

    def skip_reason(self, knobs: Dict[str, Any]) -> Optional[str]:
        compat = self.compat
        if knobs["device"] == "gpu" and not compat.gpu_available():
            return "no CUDA device visible to this Paddle build (paddle.is_compiled_with_cuda() or device count is 0)"
        if knobs.get("trt") is not None and not compat.trt_available():
            return "this Paddle build has no TensorRT"
        precision = self.spec["session"]["precision"]
        if knobs.get("bf16") and not compat.bf16_supported():
            return ("this CPU does not support bfloat16 (paddle supports_bfloat16() is False); "
                    "enable_mkldnn_bfloat16 would silently run fp32")
        if knobs["device"] == "cpu" and precision in ("fp16", "int8"):
            return f"{precision} on CPU is not a backend this harness runs"
        return None

    def run_stage(self, stage: str, knobs: Dict[str, Any]) -> Dict[str, Any]:
        compat = self.compat
        knobs = dict(knobs)
        reason = self.skip_reason(knobs)
        if reason:
            return {"status": "skip", "message": reason, "config": knobs}
        setup = self.journal.finished()[SETUP]
        feeds = dict(np.load(self.work / "inputs.npz"))
        labels = setup["outputs"]
        precision = self.stage_precision(stage)
        if stage == "baseline":
            reference_name, reference = "dygraph", self._load_outputs("dygraph.npz", labels)
        elif (self.work / "baseline.npz").exists():
            reference_name, reference = "baseline", self._load_outputs("baseline.npz", labels)
        else:
            # The baseline predictor never produced outputs (it crashed or raised):
            # compare with dygraph so the stage still says something, and say so.
            reference_name, reference = "dygraph", self._load_outputs("dygraph.npz", labels)

        t = time.perf_counter()
        if knobs.get("trt") is not None:
            knobs["input_shapes"] = {k: list(v.shape) for k, v in feeds.items()}
        config = compat.make_config(setup["export"], **knobs)
        predictor = compat.create_predictor(config)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        out_names, got = compat.run_predictor(predictor, feeds)
        run_s = time.perf_counter() - t
        if len(got) != len(labels):
            return {
                "status": "error",
                "message": f"the predictor returns {len(got)} outputs ({out_names}) but the dygraph "
                           f"forward returns {len(labels)} ({labels}); they cannot be matched",
                "config": _plain(knobs), "reference": reference_name,
            }
        if stage == "baseline":
            np.savez(self.work / "baseline.npz", **{f"o{i}": a for i, a in enumerate(got)})
        outputs = {}
        for i, label in enumerate(labels):
            tol = dict(self.spec["tolerances"][precision])
            tol.update(self.spec.get("output_tolerances", {}).get(precision, {}).get(label, {}))
            stats = compare_tol(reference[i], got[i], tol)
            stats["predictor_name"] = out_names[i]
            outputs[label] = stats
        failing = [k for k, v in outputs.items() if v["status"] != "pass"]
        result = {
            "status": "fail" if failing else "pass",
            "reference": reference_name,
            "precision": precision,
            "config": _plain(knobs),
            "outputs": outputs,
            "worst": worst(outputs),
            "feed_order": compat.input_names(predictor),
            "timings": {"build": round(build_s, 4), "run": round(run_s, 4)},
        }
        if any(v.get("vacuous") for v in outputs.values()):
            result["vacuous"] = True
        if reference_name == "dygraph" and stage != "baseline":
            result["message"] = "no baseline predictor outputs; compared with dygraph"
        return result

    def _load_outputs(self, name: str, labels: List[str]) -> List[np.ndarray]:
        data = np.load(self.work / name)
        return [data[f"o{i}"] for i in range(len(labels))]


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


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _plain(knobs: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in knobs.items() if k != "input_shapes"}


def _phase(name: str, fn):
    try:
        return fn()
    except Exception as exc:
        exc.phase = name  # type: ignore[attr-defined]
        raise


def _harness_version() -> str:
    from .. import __version__

    return __version__


def lite_train(paddle: Any, layer: Any, input_spec: List[Any], arrays: Dict[str, np.ndarray], steps: int, seed: int) -> List[float]:
    """A few optimizer steps on the synthetic batch, towards seeded unit-scale targets.

    First a BatchNorm recalibration pass (momentum 0 for one train-mode forward) so
    running statistics come from data: random-init networks evaluated with default
    statistics produce outputs around 1e-7, which no tolerance can judge. Targets are
    unit-scale random tensors so training keeps the outputs' magnitude meaningful.
    """
    norms = [m for m in layer.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    saved = [m._momentum for m in norms]
    for m in norms:
        m._momentum = 0.0
    layer.train()
    args = build_call_args(paddle, input_spec, arrays)
    with paddle.no_grad():
        layer(*args)
    for m, momentum in zip(norms, saved):
        m._momentum = momentum
    if steps <= 0:
        return []
    params = [p for p in layer.parameters() if not p.stop_gradient]
    if not params:
        return []
    optimizer = paddle.optimizer.Adam(learning_rate=1e-3, parameters=params)
    rng = np.random.default_rng(seed + 1)
    targets = None
    losses = []
    for _ in range(steps):
        outputs = [t for _, t in flatten_tensors(paddle, layer(*args))
                   if str(t.dtype).endswith(("float32", "float16", "bfloat16", "float64"))]
        if targets is None:
            targets = [paddle.to_tensor(rng.standard_normal(t.shape).astype("float32")) for t in outputs]
        loss = paddle.add_n([((o.astype("float32") - y) ** 2).mean() for o, y in zip(outputs, targets)])
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
    return losses


def main(spec_path: Path, work: Path) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    return Cell(spec, work).run()
