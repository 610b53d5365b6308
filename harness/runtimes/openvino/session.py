"""OpenVINO as a runtime: ``openvino.Core().read_model``, ``compile_model`` for the CPU plugin.

What it reads depends on the program's format, as deployments reach it: a legacy ``.pdmodel``
(Paddle 2.6) through OpenVINO's Paddle frontend; a PIR ``.json`` (Paddle 3), which that frontend
cannot read (OpenVINO issue #30911), through the ONNX paddle2onnx makes of it — the route PaddleX's
high-performance inference takes, and the same conversion ONNX Runtime's sessions use
(``harness.runtimes.paddle2onnx.convert``; its failures are the converter's findings, in its words). Measured at 3.3.1 on
the built-in models: an export in a fresh interpreter with ``FLAGS_enable_pir_api=0`` (the other
route) raises in dy2static for the detector and the encoder ("In transformed code"), while
paddle2onnx converts both; the stage's evidence says which route it took (``program_read``).

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
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...cell.base.runtime import Runtime, Session, unimportable
from ...shared.compare import Tolerance
from ...shared.config import PredictorConfig, StageConfig
from ...shared.errors import Finding, calling
from ...shared.runtime import Requirement, StagePlan
from ...shared.tensor_diff import Dump, DumpedTensor, TensorDiff
from ..paddle2onnx import PADDLE2ONNX, convert as onnx_conversion
from ..paddle2onnx.reference import ConversionJudge
from . import OPENVINO, OpenVinoConfig
from ...shared.json_types import JsonObject

# OpenVINO's element type names as the dtype names the stage checks use.
DTYPE_NAMES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "i8": "int8", "u8": "uint8",
               "i32": "int32", "i64": "int64"}


def ov_options(config: StageConfig) -> OpenVinoConfig:
    """A stage's config as OpenVINO's (a plan that hands it another runtime's is the harness's fault)."""
    if not isinstance(config, OpenVinoConfig):
        raise TypeError(f"an OpenVINO stage was planned with a {type(config).__name__}, not an OpenVinoConfig")
    return config


def _properties(config: StageConfig) -> Dict[str, Any]:
    ov = ov_options(config)
    properties: Dict[str, Any] = {"INFERENCE_NUM_THREADS": ov.threads, "NUM_STREAMS": 1}
    if ov.precision_hint:
        properties["INFERENCE_PRECISION_HINT"] = ov.precision_hint
    return properties


OV_SAID = "; OpenVINO said:"
_OV_FRAME = re.compile(r"^(?:Exception from |Check '.*' failed at )\S+:\d+:?")


def openvino_words(exc: BaseException) -> str:
    """OpenVINO's own words of an exception, past the source locations it opens with: the lines of
    its conversion summary ("Conversion is failed for: ReduceProd-17"), else its first line that is
    not a location."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if "Summary:" in lines:
        summary = [ln.lstrip("- ").strip() for ln in lines[lines.index("Summary:") + 1:] if ln.startswith("--")]
        if summary:
            return "; ".join(summary)
    said = [ln for ln in lines if not _OV_FRAME.match(ln)]
    return said[0] if said else (lines[0] if lines else type(exc).__name__)


def by_input_name(compiled: Any, feeds: Dict[str, np.ndarray]) -> Dict[Any, np.ndarray]:
    """Feeds keyed by the compiled model's input ports. A port can carry several tensor names (the
    ONNX frontend merges a value's aliases, e.g. a piece's ``in0`` and the cast paddle2onnx put after
    it), and ``get_any_name`` may give another than the one fed: the port takes the array whose
    name is one of its names."""
    chosen = {}
    for port in compiled.inputs:
        name = next((n for n in sorted(port.get_names()) if n in feeds), port.get_any_name())
        chosen[port] = feeds[name]
    return chosen


class OpenVinoSession(Session):
    def __init__(self, compiled: Any, evidence: JsonObject, settle: Any = None):
        super().__init__(evidence, settle)
        self.compiled = compiled

    def input_names(self) -> List[str]:
        return [i.get_any_name() for i in self.compiled.inputs]

    def run(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        with calling("CompiledModel()"):
            results = self.compiled(by_input_name(self.compiled, feeds))
        return ([o.get_any_name() for o in self.compiled.outputs],
                [np.asarray(results[o]) for o in self.compiled.outputs])

    def run_with_evidence(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray], JsonObject]:
        return (*self.run_settled(feeds), {})


class OpenVino(Runtime):
    name = "openvino"
    reproducer_imports = "import openvino as ov\n"

    def unmet(self, requirement: Requirement) -> Optional[str]:
        if requirement == PADDLE2ONNX:
            return onnx_conversion.unmet()
        if requirement != OPENVINO:
            from ...cell import paddle_api

            return paddle_api.unmet(requirement)
        return unimportable("openvino")

    def _readable(self, files: Dict[str, str], config: StageConfig) -> Dict[str, str]:
        """What OpenVINO reads: the ``.pdmodel`` itself, or the ONNX of a PIR program (converted
        once per program; a conversion that fails raises the converter's finding)."""
        if Path(files["program"]).suffix != ".json":
            return files
        path, evidence = onnx_conversion.converter().convert(files, onnx_conversion.ExportOptions.of(config))
        return {"program": str(path), "params": "", "format": "onnx", "converted_from": files["program"],
                "conversion": dict(evidence)}

    def session(self, files: Dict[str, str], config: StageConfig, feeds: Dict[str, np.ndarray],
                scratch: Path, variants: Sequence[Dict[str, np.ndarray]] = ()) -> OpenVinoSession:
        import openvino as ov

        core = ov.Core()
        source = self._readable(files, config)
        try:
            with calling("Core.read_model()"):
                model = core.read_model(source["program"])  # the Paddle frontend finds the params beside it
            with calling("Core.compile_model()"):
                compiled = core.compile_model(model, "CPU", _properties(config))
        except RuntimeError as exc:
            if source.get("converted_from"):  # a conversion of memory is the cause of what OpenVINO then read
                onnx_conversion.converter().settle(Path(files["program"]), onnx_conversion.ExportOptions.of(config))
            raise Finding(f"OpenVINO could not read or compile the model{OV_SAID} {openvino_words(exc)}") from exc
        runtime_model = compiled.get_runtime_model()
        precisions: Dict[str, int] = collections.Counter()
        kinds: List[str] = []
        for op in runtime_model.get_ops():
            info = op.get_rt_info()
            precisions[info["runtimePrecision"].astype(str) if "runtimePrecision" in info else "?"] += 1
            kinds.append(info["layerType"].astype(str) if "layerType" in info else op.get_type_name())
        read = compiled.get_property("INFERENCE_PRECISION_HINT")
        hint = read.to_string() if hasattr(read, "to_string") else str(read)  # an ov.Type: "bf16", "f32"
        evidence: JsonObject = {
            "runtime": f"openvino {ov.get_version()}", "frontend_ops": len(model.get_ops()),
            "program_read": self._what_it_read(source),
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
        asked = ov_options(config).precision_hint
        if asked != "bf16" and lower:  # the stage claims fp32
            evidence["not_as_claimed"] = (
                f"OpenVINO ran {', '.join(f'{v} nodes in {k}' for k, v in lower.items())} (its precision hint "
                f"reads back {hint}{'' if asked else ', the default on this CPU'}): this stage says nothing "
                f"about fp32; INFERENCE_PRECISION_HINT=f32 keeps fp32")
        if not source.get("converted_from"):
            return OpenVinoSession(compiled, evidence)
        evidence["conversion"] = source["conversion"]
        program = Path(files["program"])
        return OpenVinoSession(compiled, evidence, settle=lambda: onnx_conversion.converter().settle(
            program, onnx_conversion.ExportOptions.of(config)))

    @staticmethod
    def _what_it_read(source: Dict[str, str]) -> str:
        if source.get("converted_from"):
            return (f"{Path(source['program']).name} (paddle2onnx's conversion of {Path(source['converted_from']).name}: "
                    f"OpenVINO's Paddle frontend reads .pdmodel only)")
        return f"{Path(source['program']).name} (OpenVINO's Paddle frontend)"

    def search_items(self, plan: StagePlan, evidence: Mapping[str, Any], baseline_evidence: Mapping[str, Any]) -> List[str]:
        return []  # the CPU plugin's transformations cannot be switched off one by one from Python

    def without(self, plan: StagePlan, disabled: List[str]) -> StageConfig:
        raise NotImplementedError("OpenVINO's CPU plugin offers nothing to switch off one by one here")

    def conversion_candidates(self, plan: StagePlan, files: Dict[str, str]) -> List[Tuple[str, StageConfig]]:
        """paddle2onnx's options, where OpenVINO reads its ONNX (a PIR program; at 2.6 it reads the
        ``.pdmodel`` itself and no converter runs)."""
        return onnx_conversion.option_candidates(plan.config) if Path(files["program"]).suffix == ".json" else []

    def config_calls(self, files: Dict[str, str], config: StageConfig) -> List[str]:
        converting = Path(files["program"]).suffix == ".json"
        return ((onnx_conversion.conversion_calls(config) if converting else [])
                + [f"properties = {_properties(config)!r}"])

    def tensor_diff(self, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                    test: StageConfig, out: Path, tolerance: Tolerance) -> TensorDiff:
        """Paddle's predictor at ``base`` (every op output hooked) against OpenVINO's model at
        ``test`` with every named op output added as a model output, paired by what names it: the
        Paddle variable name the Paddle frontend keeps, or paddle2onnx's op-occurrence name in a
        converted PIR program. Extra outputs can keep the plugin from fusing across them: the
        marked run's final outputs are compared with a plain compile's, and a difference is said
        (``hooks_changed_output``)."""
        from ...cell.anatomy import layerwise

        marked = layerwise.OtherRuntime(dump=lambda folder: self._dump_marked(files, test, feeds, folder,
                                                                              out / "session"),
                                        pair=onnx_conversion.pairing(files))
        return layerwise.diff_against_paddle(files, feeds, base, test, tolerance, out, marked)

    def _dump_marked(self, files: Dict[str, str], config: StageConfig, feeds: Dict[str, np.ndarray],
                     out_dir: Path, scratch: Path) -> Dump:
        import openvino as ov

        from ...cell.anatomy import layerwise

        _, plain = self.session(files, config, feeds, scratch).run(feeds)
        core = ov.Core()
        source = self._readable(files, config)
        model = core.read_model(source["program"])
        finals = len(model.outputs)
        marked = []
        for op in model.get_ordered_ops():
            if op.get_type_name() in ("Constant", "Parameter", "Result"):
                continue
            for port in op.outputs():
                names = port.get_names()
                if not names:
                    continue
                entry = (onnx_conversion.marked_entry(names) if source.get("converted_from") else
                         DumpedTensor(op.get_type_name(), sorted(names)[0]))
                if entry is not None:
                    marked.append((entry, port))
        model.add_outputs([port for _, port in marked])
        with calling("Core.compile_model()"):
            compiled = core.compile_model(model, "CPU", _properties(config))
        with calling("CompiledModel()"):
            results = compiled(by_input_name(compiled, feeds))
        got = [np.asarray(results[o]) for o in compiled.outputs]
        index = layerwise.save_tensors(out_dir, [(entry, array) for (entry, _), array in zip(marked, got[finals:])])
        return Dump(index, got[:finals], not layerwise.same_outputs(plain, got[:finals]))

    def reproducer_lines(self, model: str, params: str, config: StageConfig, files: Dict[str, str]) -> str:
        """At Paddle 3 the script converts the PIR program as the harness did (paddle2onnx, twice),
        then OpenVINO reads the ONNX; at 2.6 OpenVINO reads the ``.pdmodel`` itself."""
        converted = Path(files["program"]).suffix == ".json"
        read = ("model = core.read_model(onnx_file)" if converted else
                f"model = core.read_model(os.path.join(here, {model!r}))  # finds the params file beside it")
        return "\n".join([
            *(onnx_conversion.reproducer_lines(model, params, onnx_conversion.ExportOptions.of(config))
              if converted else []),
            "core = ov.Core()",
            read,
            *self.config_calls(files, config),
            'compiled = core.compile_model(model, "CPU", properties)',
            "# an input can carry several names (the ONNX frontend merges a value's aliases): feed the one in inputs.npz",
            "results = compiled({i: inputs[next(n for n in i.get_names() if n in inputs.files)] for i in compiled.inputs})",
            "names = [o.get_any_name() for o in compiled.outputs]",
            "outputs = [results[o] for o in compiled.outputs]",
        ]) + "\n"

    def conversion_judge(self, files: Dict[str, str]) -> Optional[ConversionJudge]:
        """At Paddle 3 OpenVINO reads paddle2onnx's file; at 2.6 the ``.pdmodel`` itself (no converter)."""
        return onnx_conversion.judge("OpenVINO") if Path(files["program"]).suffix == ".json" else None

    def for_trials(self, numeric: bool, message: str) -> None:
        onnx_conversion.for_trials(numeric, message)

    def cause_words(self, message: str) -> str:
        """A conversion paddle2onnx aborted: its own words, as ONNX Runtime's sessions say them;
        OpenVINO's own failure: the first of its words (what its script prints on a line)."""
        from ...shared.causes import cause_of, stage_cause

        if OV_SAID in message:
            return cause_of(message.split(OV_SAID, 1)[1].split("; ")[0].strip())[:120]
        return onnx_conversion.cause_words(message) or stage_cause(message)[:120]

    def causes(self, message: str) -> List[str]:
        """A conversion that names the ops it could not convert: one cause per op."""
        return onnx_conversion.causes(message) or super().causes(message)
