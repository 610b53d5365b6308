"""A runtime is one vertical: a toy runtime added to a copy of the harness with exactly two files
(its descriptor and its cell module) and a test matrix runs a real cell, end to end.

The toy runs the exported program through ``paddle.inference`` with the plainest config it has, and
multiplies its outputs by a factor its typed options carry: 1 at ``fp32`` (a pass against the
baseline), 1.01 at ``fp16`` (a fail: the comparison can fail, and does).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import ROOT, installed_paddle, matrix_text, stages_by_name

DESCRIPTOR = '''
"""A toy runtime's descriptor: Paddle Inference at its plainest config, outputs scaled."""
import dataclasses
from typing import List

from typing import ClassVar

from ...shared.config import StageConfig
from ...shared.runtime import Backend, LadderContext, Requirement, StagePlan, register
from ...shared.vocab import Precision, Reference

TOY = Requirement("toy", "the toy runtime")


@dataclasses.dataclass(frozen=True)
class ToyConfig(StageConfig):
    runtime: ClassVar[str] = "toy"
    device: str = "cpu"
    threads: int = 1
    factor: float = 1.0


@register
class Toy(Backend):
    word = "toy"
    runtime = "toy"
    cell = "harness.runtimes.toy.cell:ToyRuntime"
    precisions = (Precision.FP32, Precision.FP16)
    config = ToyConfig

    def deploy(self, fmt, precision, options):
        return ToyConfig(factor=1.0 if precision == Precision.FP32 else 1.01)

    def requires(self, fmt, precision):
        return (TOY,)

    def stages(self, ladder: LadderContext) -> List[StagePlan]:
        return [StagePlan(self.stage_name(ladder.precision), self.deploy(ladder.fmt, ladder.precision, ladder.options),
                          ladder.precision, Reference.BASELINE, "the toy's plain run",
                          requires=self.requires(ladder.fmt, ladder.precision), dtypes_visible=False,
                          tolerance_of=Precision.FP32)]
'''

CELL = '''
"""The toy runtime's cell side."""
import numpy as np

import paddle.inference

from ...cell.base.runtime import Runtime, Session
from . import TOY


class ToySession(Session):
    def __init__(self, predictor, factor):
        super().__init__({"toy": True, "factor": factor})
        self.predictor, self.factor = predictor, factor

    def input_names(self):
        return list(self.predictor.get_input_names())

    def run(self, feeds):
        for name in self.predictor.get_input_names():
            handle = self.predictor.get_input_handle(name)
            handle.reshape(list(feeds[name].shape))
            handle.copy_from_cpu(feeds[name])
        self.predictor.run()
        names = list(self.predictor.get_output_names())
        return names, [self.predictor.get_output_handle(n).copy_to_cpu() * self.factor for n in names]

    def run_with_evidence(self, feeds):
        names, outputs = self.run(feeds)
        return names, outputs, {"output_dtypes": {str(o.dtype): 1 for o in outputs}}


class ToyRuntime(Runtime):
    name = "toy"

    def unmet(self, requirement):
        return None if requirement == TOY else f"the toy does not know {requirement}"

    def session(self, files, config, feeds, scratch, variants=()):
        plain = paddle.inference.Config(files["program"], files["params"])
        plain.disable_mkldnn()
        return ToySession(paddle.inference.create_predictor(plain), config.factor)

    def search_items(self, plan, evidence, baseline_evidence):
        return []

    def without(self, plan, disabled):
        raise NotImplementedError

    def config_calls(self, files, config):
        return []

    def reproducer_lines(self, model, params, config, files):
        return ""
'''

TOY_SESSIONS = """
[sessions.cpu_toy_fp32]
device = "cpu"
backend = "toy"
precision = "fp32"

[sessions.cpu_toy_fp16]
device = "cpu"
backend = "toy"
precision = "fp16"
"""


def _copy_with_toy(tmp: Path) -> Path:
    root = tmp / "checkout"
    shutil.copytree(ROOT / "harness", root / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    toy = root / "harness" / "runtimes" / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text(textwrap.dedent(DESCRIPTOR), encoding="utf-8")
    (toy / "cell.py").write_text(textwrap.dedent(CELL), encoding="utf-8")
    return root


def _named_outside_its_package(word: str):
    """Files of the shipped harness that name ``word``: none may, for the toy to be found by looking."""
    pattern = re.compile(rf"\b{word}\b")
    return [str(p.relative_to(ROOT)) for p in (ROOT / "harness").rglob("*.py") if pattern.search(p.read_text("utf-8"))]


def test_a_toy_runtime_is_two_files_and_matrix_entries(tmp_path):
    version = installed_paddle()
    # Nothing of the harness knows the toy: what runs it below is the registry finding its two files.
    assert _named_outside_its_package("toy") == []
    root = _copy_with_toy(tmp_path)
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(version, {"resnet18": "harness.models:resnet18"},
                                  extra="inputs.image = { shape = [1, 3, 32, 32] }\n" + TOY_SESSIONS)
                      + "[tolerances.fp16]\natol = 1e-4\nrtol = 1e-4\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(root))
    results = tmp_path / "results"
    for session, exit_code in (("cpu_toy_fp32", 0), ("cpu_toy_fp16", 1)):  # 1: the fp16 cell fails, as it must
        proc = subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(matrix), "--session", session,
                               "--results", str(results), "--run", "toy"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == exit_code, proc.stderr[-3000:]
    fp32 = json.loads((results / "toy" / f"cpu_toy_fp32/{version}/normal/resnet18.json").read_text())
    fp16 = json.loads((results / "toy" / f"cpu_toy_fp16/{version}/normal/resnet18.json").read_text())
    assert [s["name"] for s in fp32["stages"]] == ["baseline", "toy_fp32"]
    ran = stages_by_name(fp32)["toy_fp32"]
    assert ran["status"] == "pass" and ran["runtime"] == "toy" and ran["evidence"]["toy"] is True
    # its own config, nothing of Paddle Inference's
    assert ran["config"] == {"runtime": "toy", "device": "cpu", "threads": 1, "factor": 1.0}
    scaled = stages_by_name(fp16)["toy_fp16"]
    assert scaled["status"] == "fail" and fp16["verdict"]["status"] == "fail"  # 1% off at a 1e-4 tolerance
    assert scaled["evidence"]["factor"] == 1.01
