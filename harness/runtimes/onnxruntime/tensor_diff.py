"""ONNX Runtime's per-tensor diff (cell side): Paddle's predictor at the baseline's config (every op
output hooked) against the converted graph at the stage's config with every value paddle2onnx
named after a Paddle op made a graph output (what Polygraphy calls marking all), paired by that name
(``conversion.pairing``).

Marking outputs keeps ONNX Runtime from fusing across them: the marked run's final outputs are
compared with an unmarked session's, and a difference is said (``hooks_changed_output``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from ...cell.anatomy import layerwise
from ...shared.compare import Tolerance
from ...shared.config import PredictorConfig, StageConfig
from ...shared.errors import calling
from ...shared.tensor_diff import Dump, DumpedTensor, TensorDiff
from ..paddle2onnx import convert as conversion
from ..paddle2onnx.convert import ExportOptions, converter
from .options import session_options


def against_paddle(runtime: Any, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                   test: StageConfig, out: Path, tolerance: Tolerance) -> TensorDiff:
    marked = layerwise.OtherRuntime(dump=lambda folder: _dump_marked(runtime, files, test, feeds, folder,
                                                                     out / "session"),
                                    pair=conversion.pairing(files))
    return layerwise.diff_against_paddle(files, feeds, base, test, tolerance, out, marked)


def _marked_entry(node: Any, value: str, legacy: bool) -> Optional[DumpedTensor]:
    if not legacy:  # paddle2onnx 2.x: p2o.<op>.<k>.<output>
        return conversion.marked_entry([value])
    if not value.startswith("p2o."):  # 1.x: the legacy variable's own name
        return DumpedTensor(node.op_type, value)
    return None


def _dump_marked(runtime: Any, files: Dict[str, str], config: StageConfig, feeds: Dict[str, np.ndarray],
                 out_dir: Path, scratch: Path) -> Dump:
    import onnx
    import onnxruntime as ort

    _, plain_outputs = runtime.session(files, config, feeds, scratch).run(feeds)
    path, _ = converter().convert(files, ExportOptions.of(config))
    model = onnx.load(str(path))
    legacy = Path(files["program"]).suffix != ".json"
    finals = [o.name for o in model.graph.output]
    marked: List[DumpedTensor] = []
    for node in model.graph.node:
        for value in node.output:
            if value in finals or node.op_type == "Constant":
                continue
            entry = _marked_entry(node, value, legacy)
            if entry is not None:
                marked.append(entry)
                model.graph.output.append(onnx.ValueInfoProto(name=value))
    options, kwargs = session_options(config)  # the stage's own options, outputs marked
    with calling("onnxruntime.InferenceSession()"):
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"], **kwargs)
    wanted = {i.name for i in session.get_inputs()}
    with calling("InferenceSession.run()"):
        got = session.run(finals + [m.raw for m in marked], {k: v for k, v in feeds.items() if k in wanted})
    index = layerwise.save_tensors(out_dir, list(zip(marked, got[len(finals):])))
    outputs = [np.asarray(a) for a in got[:len(finals)]]
    return Dump(index, outputs, not layerwise.same_outputs(plain_outputs, outputs))
