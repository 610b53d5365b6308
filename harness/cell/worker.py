"""Cell side: everything one cell does inside one Paddle environment.

``python -m harness cell --spec SPEC --work DIR`` runs the cell's setup (build the model, lite
training in the cell's train mode, export once, seeded inputs, dygraph outputs) and then the
stage ladder planned for the exported program's format (``harness.shared.backends``), writing
each stage's result to the journal as soon as it ends. When the host restarts a worker after a
crash it passes the same arguments: finished stages are read back from the journal, the saved
inputs/outputs from ``.npz`` files, and the run goes on with the next stage, so a crash costs
one fresh ``import paddle`` and nothing else.

Every stage records evidence of what ran (the passes the predictor build printed, Paddle's
read-back of the config, the executed op count, op-type histogram and a digest of the op
sequence), so a stage whose program is the same as its reference's is ``noop``, not a pass.

Exit codes: 0 done (whatever the stages' statuses), 2 user error (a model factory that cannot be
imported or returns the wrong thing; one line on stderr), anything else: the process died, and
the host records ``crash`` for the stage the journal says was running.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..shared.backends import QUANTIZED_MODES, DeployOptions, SearchSpace, StagePlan, plan_stages
from ..shared.causes import paddle_message
from ..shared.compare import compare_tol, worst
from ..shared.config import TensorRT
from ..shared.errors import UserError
from ..shared.inputs import InputSpec, synthesize
from ..shared.records import Journal
from ..shared.vocab import SETUP, Analysis, Stage, Status
from .modes import ModeUnsupported, mode_for
from .structure import build_call_args, flatten_outputs, flatten_spec

USER_ERROR = 2  # the child-process protocol of harness.launch
# What a low-precision stage's ops must produce somewhere for the precision to have run.
LOW_PRECISION_DTYPES = {"int8": ("int8", "uint8"), "bf16": ("bfloat16", "uint16"), "fp16": ("float16",)}


# -- inputs and outputs ----------------------------------------------------

def make_inputs(input_spec: List[Any], declared: Dict[str, Dict[str, Any]], seed: int, where: str) -> Dict[str, np.ndarray]:
    """Seeded synthetic arrays for every named InputSpec; ``None`` dims sized by the matrix."""
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
    arrays = synthesize(specs, seed)
    unknown = sorted(set(declared) - set(arrays))
    if unknown:
        raise UserError(f"{where}.inputs: {unknown} name no InputSpec of the model (it has {sorted(arrays)}).")
    return arrays


def same_program(evidence: Dict[str, Any], reference: Dict[str, Any]) -> bool:
    """Same passes ran and the same op sequence executed: the two predictors ran one program."""
    keys = ("passes", "analysis_passes", "op_sequence_sha1")
    return all(k in evidence and k in reference for k in keys) and all(evidence[k] == reference[k] for k in keys)


# -- the cell ------------------------------------------------------------------

class Cell:
    def __init__(self, spec: Dict[str, Any], work: Path):
        self.spec = spec
        self.work = Path(work)
        self.journal = Journal(self.work / "journal.jsonl")
        self.where = f"{spec.get('matrix', 'matrix')}: models.{spec['model']['name']}"
        self.mode = mode_for(spec["mode"])
        self._compat = None

    # Paddle is imported lazily so that a resumed worker whose stages are all done costs
    # nothing, and so that import failures are recorded like any other error.
    @property
    def compat(self):
        if self._compat is None:
            from . import compat

            self._compat = compat
        return self._compat

    @property
    def paddle(self):
        return self.compat.paddle

    def run(self) -> int:
        done = self.journal.finished()
        if SETUP not in done:
            self.journal.start(SETUP)
            try:
                result = self.setup()
            except UserError as exc:
                self.journal.finish(SETUP, {"status": Status.ERROR, "user_error": str(exc)})
                print(f"error: {exc}", file=sys.stderr)
                return USER_ERROR
            except Exception as exc:  # the model or Paddle raised while building/training/exporting
                traceback.print_exc()
                result = {"status": Status.ERROR, "message": paddle_message(exc), "phase": getattr(exc, "phase", None)}
            result.setdefault("machine", self.machine())
            self.journal.finish(SETUP, result)
            done[SETUP] = result
        if Status.of(done[SETUP].get("status")) is not Status.PASS:
            if done[SETUP].get("user_error"):
                print(f"error: {done[SETUP]['user_error']}", file=sys.stderr)
                return USER_ERROR
            return 0
        for plan in self.plan(done[SETUP]):
            if plan.name in done:
                continue
            self.journal.start(plan.name)
            started = time.perf_counter()
            try:
                result = self.run_stage(plan, done)
            except Exception as exc:
                traceback.print_exc()
                result = self._planned(plan, status=Status.ERROR, message=paddle_message(exc))
            result.setdefault("seconds", round(time.perf_counter() - started, 4))
            self.journal.finish(plan.name, result)
            done[plan.name] = result
        self.analyse(done)
        return 0

    def machine(self) -> Dict[str, Any]:
        """The machine as this environment sees it (inside its container, if any), with the ISA
        oneDNN chose; without oneDNN's word when Paddle itself could not be imported."""
        try:
            return self.compat.machine()
        except Exception as exc:  # Paddle failed to import: the setup's error says why
            from ..shared.machine import describe

            return dict(describe(None), onednn={"isa": None, "error": paddle_message(exc)})

    # -- planning ---------------------------------------------------------------
    def plan(self, setup: Dict[str, Any]) -> List[StagePlan]:
        spec = self.spec
        session = spec["session"]
        options = DeployOptions(reference_threads=spec["reference_threads"], deploy_threads=spec["deploy_threads"],
                                trt_workspace_mb=spec.get("trt_workspace_mb", 1024),
                                trt_min_subgraph_size=spec.get("trt_min_subgraph_size", 3))
        return plan_stages(session["device"], session["backend"], session["precision"],
                           setup["export"]["format"], options, quantized=spec["mode"] in QUANTIZED_MODES)

    def tolerance(self, precision: str, label: Optional[str] = None) -> Dict[str, float]:
        """The precision's tolerance with the matrix's per-output override for ``label``."""
        tol = dict(self.spec["tolerances"][precision])
        if label is not None:
            tol.update(self.spec.get("output_tolerances", {}).get(precision, {}).get(label, {}))
        return tol

    # -- setup ----------------------------------------------------------------
    def setup(self) -> Dict[str, Any]:
        if self.spec["model"].get("capture"):
            return self.setup_from_capture(Path(self.spec["model"]["capture"]))
        spec = self.spec
        timings: Dict[str, float] = {}
        t0 = time.perf_counter()
        self.check_mode_packages()
        self.mode.before_paddle()
        compat = self.compat
        paddle = self.paddle
        timings["import"] = time.perf_counter() - t0
        info = compat.paddle_info()

        reason = self.mode.unsupported(compat)
        if reason is None and spec.get("mode_requires_device") == "gpu" and not compat.gpu_available():
            reason = f"train mode {spec['mode']} needs a GPU"
        if reason:
            return {"status": Status.SKIP, "paddle": info, "message": reason}

        layer, input_spec = self.build_model()
        arrays = make_inputs(input_spec, spec["model"].get("inputs", {}), spec["seed"], self.where)
        np.savez(self.work / "inputs.npz", **arrays)

        t = time.perf_counter()
        try:
            layer, weights, losses = self.train(layer, input_spec, arrays)
        except ModeUnsupported as exc:
            return {"status": Status.SKIP, "paddle": info, "message": str(exc),
                    "mode_evidence": getattr(self.mode, "evidence", {}), "findings": self.mode.findings}
        timings["train"] = time.perf_counter() - t

        # The dygraph reference first: a mode's export may convert the layer or (PaddleSlim) leave
        # Paddle in static mode.
        t = time.perf_counter()
        with paddle.no_grad():
            outputs = flatten_outputs(paddle, layer(*build_call_args(paddle, input_spec, arrays)))
        timings["dygraph"] = time.perf_counter() - t

        t = time.perf_counter()
        files = _phase("export", lambda: self.mode.export(compat, layer, input_spec, self.work / "export" / "model"))
        timings["export"] = time.perf_counter() - t
        if not outputs:
            raise UserError(f"{self.where}.factory: the model's forward returns no tensor; return a tensor, list or dict of tensors.")
        labels = [label for label, _ in outputs]
        np.savez(self.work / "dygraph.npz", **{f"o{i}": a for i, (_, a) in enumerate(outputs)})
        return {
            "status": Status.PASS,
            "paddle": info,
            "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
            "signature_order": [getattr(s, "name", None) for s in _signature_specs(input_spec)],
            "outputs": labels,
            "output_shapes": {label: list(a.shape) for label, a in outputs},
            "export": files,
            "losses": losses,
            "weights": weights,
            "timings": {k: round(v, 4) for k, v in timings.items()},
            "findings": self.mode.findings,
        }

    def setup_from_capture(self, capture: Path) -> Dict[str, Any]:
        """A model someone else trained and exported: a TIPC command's ``jit.save``, intercepted
        (``harness.tipc.capture``). Its inputs, dygraph outputs and saved files are the capture's;
        the ladder then runs as for any cell (``baseline`` is the export's consistency check)."""
        t0 = time.perf_counter()
        meta = json.loads((capture / "meta.json").read_text(encoding="utf-8"))
        info = self.compat.paddle_info()
        source = {"source": "tipc", "command": meta.get("argv"), "cwd": meta.get("cwd"),
                  "saved_to": meta.get("saved_to"), "layer": meta.get("layer"), "capture": str(capture)}
        if meta.get("error"):
            return {"status": Status.ERROR, "paddle": info, "phase": "capture", "weights": source,
                    "message": f"the dygraph reference of {meta.get('saved_to')} failed: {meta['error']}"}
        if meta.get("unverified"):
            return {"status": Status.SKIP, "paddle": info, "weights": source,
                    "message": f"{meta.get('saved_to')} not verified: {meta['unverified']}"}
        export = self.work / "export"
        export.mkdir(parents=True, exist_ok=True)
        files = {"format": meta["files"]["format"], "program": "", "params": ""}
        for key in ("program", "params"):
            if meta["files"].get(key):
                files[key] = str(export / Path(meta["files"][key]).name)
                shutil.copyfile(meta["files"][key], files[key])
        for name in ("inputs.npz", "dygraph.npz"):
            shutil.copyfile(capture / name, self.work / name)
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
                            quant_layers=meta.get("quant_layers"), mode_note=(self.spec.get("tipc") or {}).get("mode_note")),
            "timings": {"capture": meta.get("seconds"), "setup": round(time.perf_counter() - t0, 4)},
            "findings": [],
        }

    def train(self, layer: Any, input_spec: List[Any], arrays: Dict[str, np.ndarray]):
        """The mode's preparation, then the run's shared weights if another cell trained them,
        else a lite training in the mode (saved for the other cells); the layer in eval."""
        paddle = self.paddle
        paddle.seed(self.spec["seed"])
        self.compat.set_flags_for_determinism()
        layer = self.mode.prepare(paddle, layer)
        weights = self.load_checkpoint(layer)
        losses: List[float] = []
        if weights is None:
            args = build_call_args(paddle, input_spec, arrays)
            losses = _phase("train", lambda: self.mode.train(paddle, layer, args, self.spec["train_steps"],
                                                             self.spec["seed"]))
            weights = self.save_checkpoint(layer)
        layer.eval()
        return layer, weights, losses

    def check_mode_packages(self) -> None:
        """The mode's declared packages must be installed: a missing one is the matrix's (or the
        environment's) fault, said in one line, not an ImportError deep in the mode."""
        from importlib import metadata

        for requirement in self.spec.get("mode_packages", []):
            dist = requirement.split(";")[0].strip()
            for sep in ("==", ">=", "<=", "~=", "!=", "<", ">", "["):
                dist = dist.split(sep)[0]
            try:
                metadata.version(dist.strip())
            except metadata.PackageNotFoundError:
                raise UserError(f"{self.spec.get('matrix', 'matrix')}: modes.{self.spec['mode']}.packages: {dist.strip()!r} "
                                f"is not installed in this Paddle environment; nox installs a mode's packages "
                                f"(or pip install {requirement!r}).") from None

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
        path = Path(self.spec.get("checkpoint") or self.work / "weights.npz")
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
    @staticmethod
    def _planned(plan: StagePlan, **fields: Any) -> Dict[str, Any]:
        return {"reference": plan.reference, "precision": plan.precision, "lever": plan.lever,
                "config": plan.config.to_dict(), **fields}

    def unmet(self, plan: StagePlan) -> Optional[str]:
        if plan.skip:
            return plan.skip
        for requirement in plan.requires:
            reason = self.compat.unmet(requirement)
            if reason:
                return reason
        return None

    def run_stage(self, plan: StagePlan, done: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
        reason = self.unmet(plan)
        if reason:
            return self._planned(plan, status=Status.SKIP, message=reason)
        compat = self.compat
        setup = done[SETUP]
        feeds = dict(np.load(self.work / "inputs.npz"))
        labels = setup["outputs"]
        baseline = done.get(Stage.BASELINE.value, {})
        reference_name, reference, note = self._reference(plan, labels)

        t = time.perf_counter()
        shapes = {k: list(v.shape) for k, v in feeds.items()} if plan.config.trt else None
        shape_file = None
        if plan.config.trt is not None and setup["export"]["format"] == "legacy":
            shape_file = compat.collect_shape_range(setup["export"], plan.config, feeds,
                                                    self.work / f"{plan.name}.shape_range.pbtxt")
        predictor, evidence = compat.build_predictor(setup["export"], plan.config, shapes, shape_file)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        out_names, got, ran = compat.run_with_evidence(predictor, feeds)
        run_s = time.perf_counter() - t
        evidence.update(ran)
        result = self._planned(plan, reference=reference_name, evidence=evidence,
                               feed_order=compat.input_names(predictor),
                               timings={"build": round(build_s, 4), "run": round(run_s, 4)})
        if len(got) != len(labels):
            return dict(result, status=Status.ERROR,
                        message=f"the predictor returns {len(got)} outputs ({out_names}) but the dygraph "
                                f"forward returns {len(labels)} ({labels}); they cannot be matched")
        if plan.name == Stage.BASELINE.value:
            np.savez(self.work / "baseline.npz", **{f"o{i}": a for i, a in enumerate(got)})
        outputs = {}
        for i, label in enumerate(labels):
            stats = compare_tol(reference[i], got[i], self.tolerance(plan.precision, label))
            stats["predictor_name"] = out_names[i]
            outputs[label] = stats
        result.update(outputs=outputs, worst=worst(outputs), status=self.stage_status(plan, outputs, evidence, baseline))
        unrun = _low_precision_note(plan, evidence)
        if result["status"] is Status.NOOP and unrun:
            note = f"{unrun}: its pass says nothing about {plan.config.low_precision}"
        elif result["status"] is Status.NOOP:
            note = (f"ran the same program as baseline ({len(evidence['passes'])} passes, "
                    f"{evidence['ops']} ops): {plan.lever} changed nothing here")
        else:
            note = unrun or note
        if note:
            result["message"] = note
        return result

    def _reference(self, plan: StagePlan, labels: List[str]) -> Tuple[str, List[np.ndarray], str]:
        """What the stage's outputs are compared with: its planned reference, or dygraph (said so)
        when the baseline predictor never produced outputs (it crashed or raised)."""
        if plan.reference == "dygraph":
            return "dygraph", self._load_outputs("dygraph.npz", labels), ""
        if not (self.work / "baseline.npz").exists():
            return ("dygraph", self._load_outputs("dygraph.npz", labels),
                    "no baseline predictor outputs; compared with dygraph")
        return "baseline", self._load_outputs("baseline.npz", labels), ""

    @staticmethod
    def stage_status(plan: StagePlan, outputs: Dict[str, Dict[str, Any]], evidence: Dict[str, Any],
                     baseline: Dict[str, Any]) -> Status:
        statuses = {Status.of(o["status"]) for o in outputs.values()}
        if Status.FAIL in statuses:
            return Status.FAIL
        if plan.reference == "baseline" and same_program(evidence, baseline.get("evidence") or {}):
            return Status.NOOP
        if _low_precision_note(plan, evidence):
            return Status.NOOP  # the precision the stage is named after never ran
        if Status.VACUOUS in statuses:
            return Status.VACUOUS
        return Status.PASS

    def _load_outputs(self, name: str, labels: List[str]) -> List[np.ndarray]:
        data = np.load(self.work / name)
        return [data[f"o{i}"] for i in range(len(labels))]

    # -- root cause of the first numeric failure ----------------------------
    def analyse(self, done: Dict[str, Dict[str, Any]]) -> None:
        """Per-tensor diff and culprit search for the first stage that failed on numbers.

        ``baseline`` failing means dygraph and the predictor disagree: there is no second
        predictor to diff against, so nothing runs. ``vacuous`` and ``noop`` stages start
        nothing either: there is no divergence to look for. Errors and crashes have Paddle's
        message.
        """
        plans = {p.name: p for p in self.plan(done[SETUP])}
        target = next((name for name, plan in plans.items()
                       if name != Stage.BASELINE.value and Status.of(done.get(name, {}).get("status")) is Status.FAIL),
                      None)
        if target is None or Stage.BASELINE.value not in plans or not self.spec.get("root_cause", True):
            return
        for kind, fn in ((Analysis.DIFF, self.tensor_diff), (Analysis.BISECT, self.bisect)):
            if kind.journal_key in done:
                continue
            self.journal.start(kind.journal_key)
            started = time.perf_counter()
            try:
                result = fn(plans[target], plans[Stage.BASELINE.value], done)
            except UserError as exc:
                result = {"status": Status.ERROR, "message": str(exc)}
            except Exception as exc:
                traceback.print_exc()
                result = {"status": Status.ERROR, "message": paddle_message(exc)}
            result["stage"] = target
            result["seconds"] = round(time.perf_counter() - started, 3)
            self.journal.finish(kind.journal_key, result)
            done[kind.journal_key] = result

    def tensor_diff(self, plan: StagePlan, baseline: StagePlan, done: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
        from . import layerwise

        feeds = dict(np.load(self.work / "inputs.npz"))
        out = self.work / "tensors"
        tol = self.tolerance(plan.precision)
        result = layerwise.run_diff(done[SETUP]["export"], feeds, baseline.config, plan.config, out / "dump", tol)
        layerwise.write_result(out / "result.json", result)
        first = result.get("first_divergence")
        return {
            "status": Status.PASS, "outcome": "diverges" if first else "no tensor diverges",
            "result": str(out / "result.json"),
            "title": f"{self.spec['id']}: baseline vs {plan.name}",
            "first_divergence": {k: first[k] for k in ("index", "op", "name", "max_abs", "max_rel")} if first else None,
            "tensors": len(result["rows"]), "unmatched": len(result["unmatched"]),
            "hooks_changed_output": result["hooks_changed_output"],
        }

    def bisect(self, plan: StagePlan, baseline: StagePlan, done: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
        from ..shared.search import build_budget, find_culprits
        from ..shared.vocab import Probe

        compat = self.compat
        setup = done[SETUP]
        files = setup["export"]
        feeds = dict(np.load(self.work / "inputs.npz"))
        labels = setup["outputs"]
        reference = self._load_outputs("baseline.npz", labels)
        evidence = done[plan.name].get("evidence") or {}
        if plan.search is SearchSpace.TENSORRT_OPS:
            # The op types the baseline program executed: what TensorRT may take into engines.
            items = list((done[Stage.BASELINE.value].get("evidence") or {}).get("op_types") or {})
        elif plan.search is SearchSpace.PASSES:
            items = list(dict.fromkeys(evidence.get("passes") or []))
        else:
            items = []
        if not items:
            return {"status": Status.SKIP, "message": f"{plan.name} ran no IR passes or TensorRT ops to search"}
        messages: List[str] = []
        tolerances = [self.tolerance(plan.precision, label) for label in labels]

        def probe(disabled: List[str]) -> Probe:
            if plan.search is SearchSpace.PASSES:
                trial = plan.config.replace(deleted_passes=tuple(disabled))
            else:
                trial = plan.config.replace(trt=TensorRT(**{**plan.config.trt.__dict__, "disabled_ops": tuple(disabled)}))
            try:
                predictor, _ = compat.build_predictor(files, trial, {k: list(v.shape) for k, v in feeds.items()})
                _, got = compat.run_predictor(predictor, feeds)
            except Exception as exc:
                messages.append(paddle_message(exc))
                return Probe.INVALID
            ok = len(got) == len(reference) and all(
                Status.of(compare_tol(r, g, tol)["status"]) is Status.PASS for r, g, tol in zip(reference, got, tolerances))
            return Probe.PASS if ok else Probe.FAIL

        found = find_culprits(items, probe)
        return {
            "status": Status.PASS, "outcome": found.status, "kind": plan.search.value, "candidates": len(items),
            "items": items, "culprits": found.culprits, "builds": found.builds,
            "budget": build_budget(len(items), max(len(found.culprits), 1)),
            "message": found.message, "invalid_sets": len(found.invalid),
            "invalid_messages": list(dict.fromkeys(messages))[:5], "reference": "baseline",
        }


def _low_precision_note(plan: StagePlan, evidence: Dict[str, Any]) -> str:
    """The config claims a low precision; the op outputs say whether it ran. (TensorRT engines
    hide their layers from the hook: their evidence is the engine op.)"""
    claimed = plan.config.low_precision
    produced = evidence.get("output_dtypes", {})
    if not claimed or plan.config.trt or any(d in LOW_PRECISION_DTYPES.get(claimed, ()) for d in produced):
        return ""
    return (f"no op produced {'/'.join(LOW_PRECISION_DTYPES[claimed])}: the {claimed} backend ran this "
            f"program in {', '.join(sorted(produced))}")


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


def _phase(name: str, fn):
    try:
        return fn()
    except Exception as exc:
        exc.phase = name  # type: ignore[attr-defined]
        raise


def main(spec_path: Path, work: Path) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    return Cell(spec, work).run()
