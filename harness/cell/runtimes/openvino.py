"""OpenVINO as a runtime: ``openvino.Core().read_model`` on the saved ``.pdmodel`` (OpenVINO's
Paddle frontend), ``compile_model`` for the CPU plugin.

Evidence, read back rather than assumed: the frontend's op count, the compiled model's properties
(``INFERENCE_PRECISION_HINT``, threads, streams) and, per node of the runtime model the plugin
really executes, its ``runtimePrecision``. OpenVINO runs bf16 by default on a CPU with bf16: a
stage that claims fp32 and whose runtime model holds bf16 nodes did not run fp32
(``not_as_claimed``: ``noop`` with the reason, never a pass). The low-precision check of a bf16
stage reads the same histogram (``output_dtypes`` carries it, as for Paddle's op outputs).
"""

from __future__ import annotations

import collections
import hashlib
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...shared.backends import Requirement, StagePlan
from ...shared.config import PredictorConfig
from .base import Runtime, Session

# OpenVINO's element type names as the dtype names the stage checks use.
DTYPE_NAMES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "i8": "int8", "u8": "uint8",
               "i32": "int32", "i64": "int64"}


def _properties(config: PredictorConfig) -> Dict[str, Any]:
    ov = config.openvino
    properties: Dict[str, Any] = {"INFERENCE_NUM_THREADS": ov.threads, "NUM_STREAMS": 1}
    if ov.precision_hint:
        properties["INFERENCE_PRECISION_HINT"] = ov.precision_hint
    return properties


class OpenVinoSession(Session):
    def __init__(self, compiled: Any, evidence: Dict[str, Any]):
        self.compiled = compiled
        self.build_evidence = evidence

    def input_names(self) -> List[str]:
        return [i.get_any_name() for i in self.compiled.inputs]

    def run(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        results = self.compiled({name: feeds[name] for name in self.input_names()})
        return ([o.get_any_name() for o in self.compiled.outputs],
                [np.asarray(results[o]) for o in self.compiled.outputs])

    def run_with_evidence(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray], Dict[str, Any]]:
        names, outputs = self.run(feeds)
        return names, outputs, {}


class OpenVino(Runtime):
    name = "openvino"
    reproducer_imports = "import openvino as ov\n"

    def unmet(self, requirement: Requirement) -> Optional[str]:
        if requirement is not Requirement.OPENVINO:
            from .. import compat

            return compat.unmet(requirement)
        try:
            import openvino  # noqa: F401
        except Exception as exc:
            return f"openvino cannot be imported here ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        return None

    def program_files(self, files: Dict[str, str]) -> Dict[str, str]:
        """The frontend reads legacy ``.pdmodel`` programs only: a PIR export's legacy twin
        (``compat.legacy_twin``), or the export itself when it is legacy."""
        if files.get("legacy_program"):
            return {"program": files["legacy_program"], "params": files.get("legacy_params", ""), "format": "legacy"}
        if Path(files["program"]).suffix == ".json":
            raise RuntimeError(f"OpenVINO's Paddle frontend reads .pdmodel, not PIR .json, and this export has no "
                               f"legacy twin: {files.get('legacy_error') or 'none was written'}")
        return files

    def session(self, files: Dict[str, str], config: PredictorConfig, feeds: Dict[str, np.ndarray],
                scratch: Path, variants: Sequence[Dict[str, np.ndarray]] = ()) -> OpenVinoSession:
        import openvino as ov

        core = ov.Core()
        source = self.program_files(files)
        model = core.read_model(source["program"])  # the Paddle frontend finds the params beside it
        compiled = core.compile_model(model, "CPU", _properties(config))
        runtime_model = compiled.get_runtime_model()
        precisions: Dict[str, int] = collections.Counter()
        kinds: List[str] = []
        for op in runtime_model.get_ops():
            info = op.get_rt_info()
            precisions[info["runtimePrecision"].astype(str) if "runtimePrecision" in info else "?"] += 1
            kinds.append(info["layerType"].astype(str) if "layerType" in info else op.get_type_name())
        read = compiled.get_property("INFERENCE_PRECISION_HINT")
        hint = read.to_string() if hasattr(read, "to_string") else str(read)  # an ov.Type: "bf16", "f32"
        evidence: Dict[str, Any] = {
            "runtime": f"openvino {ov.get_version()}", "frontend_ops": len(model.get_ops()),
            "program_read": Path(source["program"]).name + (" (legacy twin of the PIR export)" if source is not files else ""),
            "config_read_back": {"INFERENCE_PRECISION_HINT": hint,
                                 "INFERENCE_NUM_THREADS": int(compiled.get_property("INFERENCE_NUM_THREADS")),
                                 "NUM_STREAMS": str(compiled.get_property("NUM_STREAMS"))},
            "runtime_precisions": dict(precisions), "ops": len(kinds),
            "op_types": dict(collections.Counter(kinds)),
            "op_sequence_sha1": hashlib.sha1("\n".join(kinds).encode()).hexdigest()[:16],
            # What the nodes ran in: the low-precision check reads it as it reads Paddle's op outputs.
            "output_dtypes": {DTYPE_NAMES.get(k, k): v for k, v in precisions.items()},
        }
        lower = {k: v for k, v in precisions.items() if k in ("bf16", "f16")}
        asked = config.openvino.precision_hint
        if config.low_precision is None and lower:
            evidence["not_as_claimed"] = (
                f"OpenVINO ran {', '.join(f'{v} nodes in {k}' for k, v in lower.items())} (its precision hint "
                f"reads back {hint}{'' if asked else ', the default on this CPU'}): this stage says nothing "
                f"about fp32; INFERENCE_PRECISION_HINT=f32 keeps fp32")
        return OpenVinoSession(compiled, evidence)

    def search_items(self, plan: StagePlan, evidence: Dict[str, Any], baseline_evidence: Dict[str, Any]) -> List[str]:
        return []  # the CPU plugin's transformations cannot be switched off one by one from Python

    def without(self, plan: StagePlan, disabled: List[str]) -> PredictorConfig:
        raise NotImplementedError("OpenVINO's CPU plugin offers nothing to switch off one by one here")

    def config_calls(self, files: Dict[str, str], config: PredictorConfig) -> List[str]:
        return [f"properties = {_properties(config)!r}"]

    def tensor_diff(self, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                    test: PredictorConfig, out: Path, tolerance: Dict[str, float]) -> Dict[str, Any]:
        """Paddle's predictor at ``base`` (every op output hooked) against the frontend's model at
        ``test`` with every named op output added as a model output, paired by the Paddle variable
        name the frontend gives each tensor. Extra outputs can keep the plugin from fusing across
        them: the marked run's final outputs are compared with a plain compile's, and a difference
        is said (``hooks_changed_output``)."""
        from .. import layerwise

        return layerwise.diff_against_paddle(files, feeds, base, test, tolerance, out,
                                             lambda folder: self._dump_marked(files, test, feeds, folder, out / "session"),
                                             layerwise.match_by_tensor_name)

    def _dump_marked(self, files: Dict[str, str], config: PredictorConfig, feeds: Dict[str, np.ndarray],
                     out_dir: Path, scratch: Path) -> Dict[str, Any]:
        import openvino as ov

        from .. import layerwise

        _, plain = self.session(files, config, feeds, scratch).run(feeds)
        core = ov.Core()
        model = core.read_model(self.program_files(files)["program"])
        finals = len(model.outputs)
        marked = [(op.get_type_name(), port) for op in model.get_ordered_ops()
                  if op.get_type_name() not in ("Constant", "Parameter", "Result")
                  for port in op.outputs() if port.get_names()]
        model.add_outputs([port for _, port in marked])
        compiled = core.compile_model(model, "CPU", _properties(config))
        results = compiled({i.get_any_name(): feeds[i.get_any_name()] for i in compiled.inputs})
        got = [np.asarray(results[o]) for o in compiled.outputs]
        index = layerwise.save_tensors(out_dir, [({"op": kind, "raw": sorted(port.get_names())[0]}, array)
                                                 for (kind, port), array in zip(marked, got[finals:])])
        return {"index": index, "outputs": got[:finals],
                "hooks_changed_output": not layerwise.same_outputs(plain, got[:finals])}

    def reproducer_lines(self, model: str, params: str, config: PredictorConfig, files: Dict[str, str]) -> str:
        return "\n".join([
            "core = ov.Core()",
            f"model = core.read_model(os.path.join(here, {model!r}))  # finds the params file beside it",
            *self.config_calls(files, config),
            'compiled = core.compile_model(model, "CPU", properties)',
            "results = compiled({i.get_any_name(): inputs[i.get_any_name()] for i in compiled.inputs})",
            "names = [o.get_any_name() for o in compiled.outputs]",
            "outputs = [results[o] for o in compiled.outputs]",
        ]) + "\n"
