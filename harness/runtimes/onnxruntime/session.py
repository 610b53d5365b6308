"""ONNX Runtime as a runtime: the saved Paddle program converted by ``paddle2onnx.export``, run
by an ``onnxruntime.InferenceSession`` on the CPU execution provider.

Evidence, read back rather than assumed: the converter's opset, ONNX node counts and op types
before ONNX Runtime's optimizations (the converted graph) and after them (the graph the session
writes to ``optimized_model_filepath``), the execution providers the session really uses, and the
output dtypes. A session whose optimized graph equals the converted one says so (``not_as_claimed``):
the stage that switched the optimizations on is then ``noop``, never a pass.

The conversion (``harness.runtimes.paddle2onnx.convert``: paddle2onnx in a forked child, converted twice, its failures
the converter's findings) is shared with OpenVINO at Paddle 3.

Root cause: the search space is what ORT's verbose log says changed the graph (``search_items``);
the per-tensor diff (``tensor_diff``) fetches every converted value and pairs it with Paddle's.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...cell.base.runtime import Runtime, Session, unimportable
from ...shared.compare import Tolerance
from ...shared.errors import calling
from ...shared.config import PredictorConfig, StageConfig
from ...shared.runtime import Requirement, StagePlan
from ..paddle2onnx import PADDLE2ONNX, convert as conversion
from . import ONNXRUNTIME
from ..paddle2onnx.convert import ExportOptions, converter, graph_evidence
from ..paddle2onnx.reference import ConversionJudge
from .options import LEVELS, ort_options, session_options
from ...shared.json_types import JsonObject
from ...shared.tensor_diff import TensorDiff

# What ONNX Runtime's verbose log says of each graph transformer it applied (1.2x-1.32 wording).
_MODIFIED = re.compile(r"GraphTransformer (\w+) modified: 1")
# The level-1 rule-based transformer applies rewrite rules it does not log one by one; a rule is
# switched off by its own name (``disabled_optimizers``), as a transformer is. ORT ignores a name it
# does not know, so a name missing from this ORT can never come out of the search as a culprit.
RULE_CONTAINER = re.compile(r"Level\d_RuleBasedTransformer")
LEVEL1_RULES = ("EliminateIdentity", "EliminateSlice", "UnsqueezeElimination", "EliminateDropout",
                "ExpandElimination", "CastElimination", "PreShapeNodeElimination", "NoopElimination",
                "DivMulFusion", "FuseReluClip", "GemmSumFusion", "GemmTransposeFusion", "NotWhereFusion",
                "ConvAddFusion", "ConvMulFusion", "ConvBNFusion", "ClipQuantFusion", "ReluQuantFusion",
                "LabelEncoderFusion")


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """File descriptor 2 (where ONNX Runtime's C++ logger writes) into ``path`` for a while."""
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


class OrtSession(Session):
    def __init__(self, session: Any, evidence: JsonObject, settle: Any = None):
        super().__init__(evidence, settle)
        self.session = session

    def input_names(self) -> List[str]:
        return [i.name for i in self.session.get_inputs()]

    def run(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        names = [o.name for o in self.session.get_outputs()]
        wanted = {i.name for i in self.session.get_inputs()}
        with calling("InferenceSession.run()"):
            outputs = self.session.run(names, {k: v for k, v in feeds.items() if k in wanted})
        return names, [np.asarray(o) for o in outputs]

    def run_with_evidence(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray], JsonObject]:
        names, outputs = self.run_settled(feeds)
        dtypes = dict(collections.Counter(str(o.dtype) for o in outputs))
        return names, outputs, {"output_dtypes": dtypes, "providers": self.session.get_providers()}


class OnnxRuntime(Runtime):
    name = "onnxruntime"
    reproducer_imports = "import onnxruntime as ort\n"

    def unmet(self, requirement: Requirement) -> Optional[str]:
        if requirement == PADDLE2ONNX:
            return conversion.unmet()
        return unimportable("onnxruntime") if requirement == ONNXRUNTIME else None

    def session(self, files: Dict[str, str], config: StageConfig, feeds: Dict[str, np.ndarray],
                scratch: Path, variants: Sequence[Dict[str, np.ndarray]] = ()) -> OrtSession:
        import onnx
        import onnxruntime as ort

        path, converted = converter().convert(files, ExportOptions.of(config))
        evidence = dict(converted)  # the cached conversion evidence stays as it was
        options, kwargs = session_options(config)
        ours = ort_options(config)
        optimized = Path(f"{scratch}.optimized.onnx")
        optimized.parent.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(optimized)
        options.log_severity_level = 0  # verbose: the only place ORT says which transformers changed the graph
        log = Path(f"{scratch}.ort.log")
        try:
            with _stderr_to(log), calling("onnxruntime.InferenceSession()"):
                session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"], **kwargs)
        except Exception:
            converter().settle(Path(files["program"]), ExportOptions.of(config))  # a conversion of memory first
            raise
        applied = list(dict.fromkeys(_MODIFIED.findall(log.read_text(encoding="utf-8", errors="replace"))))
        log.unlink()
        after = graph_evidence(onnx.load(str(optimized)))
        evidence.update(
            runtime=f"onnxruntime {ort.__version__}", level=LEVELS[ours.level],
            # The session's own options (its copy), not the object this code filled in.
            providers=session.get_providers(), config_read_back={
                "graph_optimization_level": str(session.get_session_options().graph_optimization_level),
                "intra_op_num_threads": session.get_session_options().intra_op_num_threads},
            optimized=after, ops=after["nodes"], op_types=after["op_types"], optimizers_applied=applied,
            disabled_optimizers=list(ours.disabled_optimizers),
            op_sequence_sha1=after["op_sequence_sha1"])
        if ours.level != "disabled" and after["op_sequence_sha1"] == evidence["converted"]["op_sequence_sha1"]:
            evidence["not_as_claimed"] = (f"ONNX Runtime's {LEVELS[ours.level]} left the converted graph as it was "
                                     f"({after['nodes']} nodes)")
        return OrtSession(session, evidence, settle=lambda: converter().settle(Path(files["program"]), ExportOptions.of(config)))

    def search_items(self, plan: StagePlan, evidence: Mapping[str, Any], baseline_evidence: Mapping[str, Any]) -> List[str]:
        """The transformers ORT's log says changed the graph, the rule container replaced by its
        rewrite rules (which the log does not name)."""
        applied = evidence.get("optimizers_applied") or []
        items = [name for name in applied if not RULE_CONTAINER.fullmatch(name)]
        if any(RULE_CONTAINER.fullmatch(name) for name in applied):
            items += [rule for rule in LEVEL1_RULES if rule not in items]
        return items

    def without(self, plan: StagePlan, disabled: List[str]) -> StageConfig:
        return ort_options(plan.config).replace(disabled_optimizers=tuple(disabled))

    def conversion_candidates(self, plan: StagePlan, files: Dict[str, str]) -> List[Tuple[str, StageConfig]]:
        return conversion.option_candidates(plan.config)

    def coarser(self, plan: StagePlan) -> List[Tuple[str, StageConfig]]:
        """Lower graph optimization levels than the stage's (the conversion itself is no option of
        the session's: a converter's failure is out of this space)."""
        ort = ort_options(plan.config)
        order = list(LEVELS)
        return [(f"graph_optimization_level {level}", ort.replace(level=level))
                for level in reversed(order[:order.index(ort.level)])]

    def config_calls(self, files: Dict[str, str], config: StageConfig) -> List[str]:
        ort = ort_options(config)
        calls = ["options = ort.SessionOptions()",
                 f"options.graph_optimization_level = ort.GraphOptimizationLevel.{LEVELS[ort.level]}",
                 f"options.intra_op_num_threads = {ort.threads}",
                 "options.inter_op_num_threads = 1"]
        return conversion.conversion_calls(config) + calls

    def reproducer_lines(self, model: str, params: str, config: StageConfig, files: Dict[str, str]) -> str:
        disabled = ort_options(config).disabled_optimizers
        return "\n".join([
            *conversion.reproducer_lines(model, params, ExportOptions.of(config)),
            *self.config_calls(files, config),
            "session = ort.InferenceSession(onnx_file, options, providers=[\"CPUExecutionProvider\"]"
            + (f", disabled_optimizers={list(disabled)!r})" if disabled else ")"),
            "names = [o.name for o in session.get_outputs()]",
            "outputs = session.run(names, {i.name: inputs[i.name] for i in session.get_inputs()})",
        ]) + "\n"

    def tensor_diff(self, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                    test: StageConfig, out: Path, tolerance: Tolerance) -> TensorDiff:
        from .tensor_diff import against_paddle

        return against_paddle(self, files, feeds, base, test, out, tolerance)

    def conversion_judge(self, files: Dict[str, str]) -> ConversionJudge:
        return conversion.judge("ONNX Runtime")

    def for_trials(self, numeric: bool, message: str) -> None:
        conversion.for_trials(numeric, message)

    def cause_words(self, message: str) -> str:
        """A conversion the converter aborted: its own words (the harness's sentence around them
        is not what the script prints)."""
        from ...shared.causes import stage_cause

        return conversion.cause_words(message) or stage_cause(message)[:120]

    def causes(self, message: str) -> List[str]:
        """A conversion that names the ops it could not convert: one cause per op."""
        return conversion.causes(message) or super().causes(message)
