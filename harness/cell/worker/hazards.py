"""Cell side: config hazards, probed once per Paddle version and machine (every backend's).

A hazard is a documented knob combination that raises in some Paddle version. It is a finding
about Paddle, not about a model: it is probed here with the plain documented calls on a small
probe model exported by this Paddle, recorded with Paddle's message (and the Paddle issue where
one exists), shown once in the tables and reports, and never sets a cell's verdict. The stages
themselves follow the deployment profile, which avoids these combinations (see
``harness.shared.backends``), so a hazard does not hide the numbers behind it.

``python -m harness.cell hazards --device cpu --out FILE`` (run by the host through a launcher of
that version, before the first cell of the version; every session of the version reads the one
probe, each the hazards of its backend: ``Hazard.backends``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ...shared.backends import LEGACY, PIR
from ...shared.causes import paddle_message
from ...shared.records import atomic_write_json
from ...shared.run_records import HazardCheck, HazardProbe
from ...shared.vocab import HAZARD
from ..paddle_api import paddle

CLEAR = "clear"  # probed: the combination works in this version


@dataclasses.dataclass(frozen=True)
class Hazard:
    id: str
    calls: str  # what a user writes, verbatim
    formats: Tuple[str, ...]
    backends: Tuple[str, ...]  # session backend words it concerns; () = every CPU session
    configure: Callable[[Any, str], None]  # (paddle.inference.Config, program format)
    issue: Optional[str] = None


def _bare_memory_optim(config: Any, fmt: str) -> None:
    config.enable_memory_optim()


def _placement_pass(fmt: str) -> str:
    return "onednn_placement_pass" if fmt == PIR else "mkldnn_placement_pass"


def _delete_placement(config: Any, fmt: str) -> None:
    config.enable_mkldnn()
    config.switch_ir_optim(True)
    config.delete_pass(_placement_pass(fmt))


def _delete_dce(config: Any, fmt: str) -> None:
    config.enable_new_ir(True)
    config.enable_new_executor(True)
    config.set_optimization_level(3)
    config.delete_pass("dead_code_elimination_pass")


HAZARDS = (
    Hazard("memory_optim_without_new_executor", "config.enable_memory_optim() on a PIR (.json) program",
           (PIR,), (), _bare_memory_optim, "https://github.com/PaddlePaddle/Paddle/issues/75496"),
    Hazard("delete_onednn_placement_pass",
           "config.enable_mkldnn(); config.delete_pass('<mkldnn|onednn>_placement_pass')",
           (PIR, LEGACY), ("onednn",), _delete_placement),
    Hazard("delete_dead_code_elimination_pass",
           "config.set_optimization_level(3); config.delete_pass('dead_code_elimination_pass') (PIR)",
           (PIR,), (), _delete_dce),
)


def applicable(device: str, fmt: str) -> List[Hazard]:
    """Every backend's hazards of a device for a program format (each names the backends it
    concerns). Probes build CPU predictors: GPU sessions are probed on a GPU machine by their own
    backend's hazards (none listed yet)."""
    if device != "cpu":
        return []
    return [h for h in HAZARDS if fmt in h.formats]


class ProbeNet(paddle.nn.Layer):
    """conv + BN + ReLU, a residual add + ReLU and a linear head: enough for the IR and oneDNN
    fuse passes (conv_bn, conv/elementwise activation fuses) to have work to do."""

    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(3, 3, 3, padding=1)
        self.bn = paddle.nn.BatchNorm2D(3)
        self.fc = paddle.nn.Linear(3 * 8 * 8, 3)

    def forward(self, image):
        x = paddle.nn.functional.relu(self.bn(self.conv(image)))
        x = paddle.nn.functional.relu(x + image)
        return self.fc(paddle.flatten(x, 1))


def _probe_model(paddle: Any, folder: Path) -> Dict[str, str]:
    from ..paddle_api.export import export

    paddle.seed(0)
    layer = ProbeNet()
    layer.eval()
    spec = [paddle.static.InputSpec([None, 3, 8, 8], "float32", "image")]
    return export(layer, spec, folder / "probe")


def probe(device: str) -> HazardProbe:
    from ..paddle_api import paddle_infer, predictor as paddle_predictor

    feeds = {"image": np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype("float32")}
    results: List[HazardCheck] = []
    with tempfile.TemporaryDirectory(prefix="harness-hazards-") as tmp:
        files = _probe_model(paddle, Path(tmp))
        fmt = files["format"]
        for hazard in applicable(device, fmt):
            checked = functools.partial(HazardCheck, hazard.id, hazard.calls, issue=hazard.issue, format=fmt,
                                        backends=list(hazard.backends))
            config = paddle_infer.Config(files["program"], files["params"])
            try:
                hazard.configure(config, fmt)
                with paddle_predictor.captured_native_output():
                    predictor = paddle_predictor.create_predictor(config)
                    paddle_predictor.run_predictor(predictor, feeds)
            except Exception as exc:
                traceback.print_exc()
                results.append(checked(status=HAZARD, message=paddle_message(exc)))
            else:
                results.append(checked(status=CLEAR))
    return HazardProbe(paddle=paddle.__version__, device=device, hazards=results, format=fmt)


def main(device: str, out: Path) -> int:
    result = probe(device)
    atomic_write_json(out, result.to_dict())
    print(json.dumps({h.id: h.status for h in result.hazards}), file=sys.stderr)
    return 0
