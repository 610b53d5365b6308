"""The standalone writer's judgement of a script, and what it says when a definition cannot be written in."""

from __future__ import annotations

from harness.cell.handover.inline import foreign_imports, kept
from harness.cell.handover.source_repro import MODEL_SOURCE, MODEL_SOURCE_END


def test_the_stage_s_runtime_is_the_check_s_import_not_the_model_s():
    """A standalone script imports only Paddle, numpy and the standard library in the model's source;
    the harness's check after it imports the stage's runtime (found on the zoo: every ONNX Runtime and
    OpenVINO piece was refused for its runtime's import)."""
    script = ("import os\nimport onnxruntime as ort\nimport paddle2onnx\n" + MODEL_SOURCE +
              "import paddle.nn as nn\nimport types\nimport math\n" + MODEL_SOURCE_END + "import openvino\n")
    assert foreign_imports(script) == []
    suite = script.replace("import types\n", "import types\nimport ppdet.modeling\nfrom . import ops\n")
    assert foreign_imports(suite) == [".", "ppdet.modeling"]
    assert kept("paddle.nn.functional") and kept("numpy") and kept("collections.abc") and not kept("paddleseg")
