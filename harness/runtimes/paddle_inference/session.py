"""Paddle Inference's cell side: ``paddle.inference.Config`` + ``create_predictor``.

The version logic (which config call is the real lever, PIR vs legacy, TensorRT paths) lives in
``harness.cell.paddle_api`` (``config``, ``predictor``: the one place that knows Paddle versions);
this module adapts them to the seam, as the other runtimes' ``session`` modules do.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...shared.compare import Tolerance
from ...shared.config import PredictorConfig
from ...shared.runtime import Requirement, StagePlan
from ...shared.shapes import shape_range
from ...shared.tensor_diff import TensorDiff
from ...cell.paddle_api import config as paddle_config, predictor as paddle_predictor, unmet
from ...cell.base.runtime import Runtime, Session
from ...shared.vocab import ProgramFormat
from ..paddle_inference import PASSES, PIR_LOWEST_LEVEL, TENSORRT_OPS


class PaddleSession(Session):
    def __init__(self, predictor: Any, evidence: Dict[str, Any]):
        super().__init__(evidence)
        self.predictor = predictor

    def input_names(self) -> List[str]:
        return paddle_predictor.input_names(self.predictor)

    def run(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        return paddle_predictor.run_predictor(self.predictor, feeds)

    def run_with_evidence(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray], Dict[str, Any]]:
        return paddle_predictor.run_with_evidence(self.predictor, feeds)


class PaddleInference(Runtime):
    name = "paddle_inference"
    reproducer_imports = "import paddle  # noqa: F401  (paddle.inference below)\nimport paddle.inference\n"

    def unmet(self, requirement: Requirement) -> Optional[str]:
        return unmet(requirement)

    def session(self, files: Dict[str, str], config: PredictorConfig, feeds: Dict[str, np.ndarray],
                scratch: Path, variants: Sequence[Dict[str, np.ndarray]] = ()) -> PaddleSession:
        every = [feeds, *variants]
        shapes = shape_range([{k: list(v.shape) for k, v in one.items()} for one in every]) if config.trt else None
        shape_file = None
        if config.trt is not None and files["format"] == ProgramFormat.LEGACY:
            # Legacy TensorRT's dynamic shapes, collected the way Paddle documents, over every shape.
            shape_file = paddle_predictor.collect_shape_range(files, config, every,
                                                              scratch.with_name(scratch.name + ".shape_range.pbtxt"))
        predictor, evidence = paddle_predictor.build_predictor(files, config, shapes, shape_file)
        return PaddleSession(predictor, evidence)

    def search_items(self, plan: StagePlan, evidence: Dict[str, Any], baseline_evidence: Dict[str, Any]) -> List[str]:
        if plan.search == TENSORRT_OPS:
            # The op types the baseline program executed: what TensorRT may take into engines.
            return list(baseline_evidence.get("op_types") or {})
        if plan.search == PASSES:
            return list(dict.fromkeys(evidence.get("passes") or []))
        return []

    def probe_search_items(self, plan: StagePlan, folder: Path) -> Tuple[List[str], str]:
        if plan.search != PASSES:
            return [], ""
        probe = paddle_predictor.probe_passes(plan.config, folder)
        said = ("the passes a build of the same config printed on a probe program (a conv, a batch norm, a relu, "
                "an interpolate): the stage's own build raised before printing its passes")
        if probe["raised"]:
            said += f"; the probe's build raised too ({probe['raised'][:160]}), after printing these"
        return list(dict.fromkeys(probe["passes"])), said

    def without(self, plan: StagePlan, disabled: List[str]) -> PredictorConfig:
        if plan.search == PASSES:
            return plan.config.replace(deleted_passes=tuple(disabled))
        return plan.config.replace(trt=dataclasses.replace(plan.config.trt, disabled_ops=tuple(disabled)))

    def coarser(self, plan: StagePlan) -> List[Tuple[str, PredictorConfig]]:
        config = plan.config
        found: List[Tuple[str, PredictorConfig]] = []
        if config.opt_level is not None:  # PIR: the optimization level chooses the passes
            found += [(f"set_optimization_level({level})", config.replace(opt_level=level))
                      for level in range(config.opt_level - 1, PIR_LOWEST_LEVEL - 1, -1)]
        elif config.ir:
            found.append(("switch_ir_optim(False)", config.replace(ir=False)))
        if config.onednn:
            dropped = " and with it " + ("bf16" if config.bf16 else "int8") if config.bf16 or config.int8 else ""
            found.append((f"oneDNN off (disable_mkldnn){dropped}",
                          config.replace(onednn=False, bf16=False, int8=False, onednn_ops=None, bf16_ops=None)))
        return found

    def config_calls(self, files: Dict[str, str], config: PredictorConfig) -> List[str]:
        calls: List[str] = []
        paddle_config.make_config(files, config, None, None, calls=calls, spell_only=True)  # spelled, not built
        return calls

    def reproducer_lines(self, model: str, params: str, config: PredictorConfig, files: Dict[str, str]) -> str:
        params_path = f"os.path.join(here, {params!r})" if params else '""'
        return "\n".join([
            f"config = paddle.inference.Config(os.path.join(here, {model!r}), {params_path})",
            *self.config_calls(files, config),
            "",
            "predictor = paddle.inference.create_predictor(config)",
            "for name in predictor.get_input_names():",
            "    handle = predictor.get_input_handle(name)",
            "    handle.reshape(list(inputs[name].shape))",
            "    handle.copy_from_cpu(inputs[name])",
            "predictor.run()",
            "names = predictor.get_output_names()",
            "outputs = [predictor.get_output_handle(n).copy_to_cpu() for n in names]",
        ]) + "\n"

    def tensor_diff(self, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                    test: PredictorConfig, out: Path, tolerance: Tolerance) -> TensorDiff:
        from ...cell.anatomy import layerwise

        result = layerwise.run_diff(files, feeds, base, test, out / "dump", tolerance)
        layerwise.write_result(out / "result.json", result)
        return result
