"""ONNX Runtime as a runtime: the saved Paddle program converted by ``paddle2onnx.export``, run
by an ``onnxruntime.InferenceSession`` on the CPU execution provider.

Evidence, read back rather than assumed: the converter's opset, ONNX node counts and op types
before ONNX Runtime's optimizations (the converted graph) and after them (the graph the session
writes to ``optimized_model_filepath``), the execution providers the session really uses, and the
output dtypes. A session whose optimized graph equals the converted one says so (``not_as_claimed``):
the stage that switched the optimizations on is then ``noop``, never a pass.

The conversion (``onnx_conversion``: paddle2onnx in a forked child, converted twice, its failures
the converter's findings) is shared with OpenVINO at Paddle 3.

Root cause: the search space is what ORT's verbose log says changed the graph (``search_items``);
the per-tensor diff fetches every converted value and pairs it with Paddle's (``tensor_diff``).
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ...shared.backends import Requirement, StagePlan
from ...shared.config import PredictorConfig
from . import onnx_conversion
from .base import Runtime, Session
from .onnx_conversion import converter, graph_evidence

LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
          "all": "ORT_ENABLE_ALL"}
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


def _session_options(config: PredictorConfig) -> Tuple[Any, Dict[str, Any]]:
    """The SessionOptions and InferenceSession keywords of a stage's config (``config_calls``
    writes the same as code for reproducers)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[config.ort.level])
    options.intra_op_num_threads = config.ort.threads
    options.inter_op_num_threads = 1
    kwargs = {"disabled_optimizers": list(config.ort.disabled_optimizers)} if config.ort.disabled_optimizers else {}
    return options, kwargs


class OrtSession(Session):
    def __init__(self, session: Any, evidence: Dict[str, Any], settle: Any = None):
        self.session = session
        self.build_evidence = evidence
        self.settle = settle  # raises when the program's second conversion differed

    def input_names(self) -> List[str]:
        return [i.name for i in self.session.get_inputs()]

    def run(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        names = [o.name for o in self.session.get_outputs()]
        wanted = {i.name for i in self.session.get_inputs()}
        outputs = self.session.run(names, {k: v for k, v in feeds.items() if k in wanted})
        return names, [np.asarray(o) for o in outputs]

    def run_with_evidence(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray], Dict[str, Any]]:
        names, outputs = self.run(feeds)
        if self.settle is not None:
            self.settle()
        dtypes = dict(collections.Counter(str(o.dtype) for o in outputs))
        return names, outputs, {"output_dtypes": dtypes, "providers": self.session.get_providers()}


class OnnxRuntime(Runtime):
    name = "onnxruntime"
    reproducer_imports = "import onnxruntime as ort\n"

    def unmet(self, requirement: Requirement) -> Optional[str]:
        if requirement is Requirement.PADDLE2ONNX:
            return onnx_conversion.unmet()
        if requirement is not Requirement.ONNXRUNTIME:
            return None
        try:
            import onnxruntime  # noqa: F401  (the import is the check)
        except Exception as exc:
            return f"onnxruntime cannot be imported here ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        return None

    def session(self, files: Dict[str, str], config: PredictorConfig, feeds: Dict[str, np.ndarray],
                scratch: Path, variants: Sequence[Dict[str, np.ndarray]] = ()) -> OrtSession:
        import onnx
        import onnxruntime as ort

        path, converted = converter().convert(files)
        evidence = dict(converted)  # the cached conversion evidence stays as it was
        options, kwargs = _session_options(config)
        optimized = Path(f"{scratch}.optimized.onnx")
        optimized.parent.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(optimized)
        options.log_severity_level = 0  # verbose: the only place ORT says which transformers changed the graph
        log = Path(f"{scratch}.ort.log")
        with _stderr_to(log):
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"], **kwargs)
        applied = list(dict.fromkeys(_MODIFIED.findall(log.read_text(encoding="utf-8", errors="replace"))))
        log.unlink()
        after = graph_evidence(onnx.load(str(optimized)))
        evidence.update(
            runtime=f"onnxruntime {ort.__version__}", level=LEVELS[config.ort.level],
            # The session's own options (its copy), not the object this code filled in.
            providers=session.get_providers(), config_read_back={
                "graph_optimization_level": str(session.get_session_options().graph_optimization_level),
                "intra_op_num_threads": session.get_session_options().intra_op_num_threads},
            optimized=after, ops=after["nodes"], op_types=after["op_types"], optimizers_applied=applied,
            disabled_optimizers=list(config.ort.disabled_optimizers),
            op_sequence_sha1=after["op_sequence_sha1"])
        if config.ort.level != "disabled" and after["op_sequence_sha1"] == evidence["converted"]["op_sequence_sha1"]:
            evidence["not_as_claimed"] = (f"ONNX Runtime's {LEVELS[config.ort.level]} left the converted graph as it was "
                                     f"({after['nodes']} nodes)")
        return OrtSession(session, evidence, settle=lambda: converter().settle(Path(files["program"])))

    def search_items(self, plan: StagePlan, evidence: Dict[str, Any], baseline_evidence: Dict[str, Any]) -> List[str]:
        """The transformers ORT's log says changed the graph, the rule container replaced by its
        rewrite rules (which the log does not name)."""
        applied = evidence.get("optimizers_applied") or []
        items = [name for name in applied if not RULE_CONTAINER.fullmatch(name)]
        if any(RULE_CONTAINER.fullmatch(name) for name in applied):
            items += [rule for rule in LEVEL1_RULES if rule not in items]
        return items

    def without(self, plan: StagePlan, disabled: List[str]) -> PredictorConfig:
        import dataclasses

        return plan.config.replace(ort=dataclasses.replace(plan.config.ort, disabled_optimizers=tuple(disabled)))

    def config_calls(self, files: Dict[str, str], config: PredictorConfig) -> List[str]:
        ort = config.ort
        calls = ["options = ort.SessionOptions()",
                 f"options.graph_optimization_level = ort.GraphOptimizationLevel.{LEVELS[ort.level]}",
                 f"options.intra_op_num_threads = {ort.threads}",
                 "options.inter_op_num_threads = 1"]
        return calls

    def reproducer_lines(self, model: str, params: str, config: PredictorConfig, files: Dict[str, str]) -> str:
        disabled = config.ort.disabled_optimizers
        return "\n".join([
            *onnx_conversion.reproducer_lines(model, params),
            *self.config_calls(files, config),
            "session = ort.InferenceSession(onnx_file, options, providers=[\"CPUExecutionProvider\"]"
            + (f", disabled_optimizers={list(disabled)!r})" if disabled else ")"),
            "names = [o.name for o in session.get_outputs()]",
            "outputs = session.run(names, {i.name: inputs[i.name] for i in session.get_inputs()})",
        ]) + "\n"

    def tensor_diff(self, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                    test: PredictorConfig, out: Path, tolerance: Dict[str, float]) -> Dict[str, Any]:
        """Paddle's predictor at ``base`` (every op output hooked) against the converted graph at
        ``test`` with every value paddle2onnx named after a Paddle op made a graph output (what
        Polygraphy calls marking all), paired by that name (``layerwise.match_converted``).

        Marking outputs keeps ONNX Runtime from fusing across them: the marked run's final outputs
        are compared with an unmarked session's, and a difference is said (``hooks_changed_output``)."""
        from .. import layerwise

        return layerwise.diff_against_paddle(files, feeds, base, test, tolerance, out,
                                             lambda folder: self._dump_marked(files, test, feeds, folder, out / "session"),
                                             onnx_conversion.pairing(files))

    def _dump_marked(self, files: Dict[str, str], config: PredictorConfig, feeds: Dict[str, np.ndarray],
                     out_dir: Path, scratch: Path) -> Dict[str, Any]:
        import onnx
        import onnxruntime as ort

        from .. import layerwise

        plain = self.session(files, config, feeds, scratch)
        _, plain_outputs = plain.run(feeds)
        path, _ = converter().convert(files)
        model = onnx.load(str(path))
        legacy = Path(files["program"]).suffix != ".json"
        finals = [o.name for o in model.graph.output]
        marked: List[Dict[str, Any]] = []
        for node in model.graph.node:
            for value in node.output:
                if value in finals or node.op_type == "Constant":
                    continue
                if not legacy:  # paddle2onnx 2.x: p2o.<op>.<k>.<output>
                    entry = onnx_conversion.marked_entry([value])
                elif not value.startswith("p2o."):  # 1.x: the legacy variable's own name
                    entry = {"op": node.op_type, "raw": value, "occurrence": -1, "output": -1}
                else:
                    entry = None
                if entry is not None:
                    marked.append(entry)
                    model.graph.output.append(onnx.ValueInfoProto(name=value))
        options, kwargs = _session_options(config)  # the stage's own options, outputs marked
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"], **kwargs)
        wanted = {i.name for i in session.get_inputs()}
        got = session.run(finals + [m["raw"] for m in marked], {k: v for k, v in feeds.items() if k in wanted})
        index = layerwise.save_tensors(out_dir, list(zip(marked, got[len(finals):])))
        outputs = [np.asarray(a) for a in got[:len(finals)]]
        return {"index": index, "outputs": outputs, "hooks_changed_output": not layerwise.same_outputs(plain_outputs, outputs)}

    def cause_words(self, message: str) -> str:
        """A conversion the converter aborted: its own words (the harness's sentence around them
        is not what the script prints)."""
        from ...shared.causes import stage_cause

        return onnx_conversion.cause_words(message) or stage_cause(message)[:120]
