"""GPU and TensorRT stage configs, checked without a GPU: built by harness.cell.paddle_api on the CPU
wheel and read back through ``paddle.inference.Config``'s own getters. What a CPU build ignores
or refuses is part of the answer: a GPU stage's record shows it, and these paths are marked as
never run on a GPU in the README."""

from __future__ import annotations

import pytest

from harness.shared.backends import DeployOptions, plan_by_name, plan_stages
from harness.shared.config import TensorRT
from harness.shared.shapes import shape_range

from .conftest import installed_paddle


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    installed_paddle()
    from harness.cell import paddle_api as api
    import harness.cell.paddle_api.config, harness.cell.paddle_api.export, harness.cell.paddle_api.predictor  # noqa: F401  (rooms of api)
    from harness.models import resnet18

    api.paddle.seed(0)
    layer, spec = resnet18()
    layer.eval()
    return api, api.export.export(layer, spec, tmp_path_factory.mktemp("gpu") / "model")


def test_gpu_fp16_profile_reaches_paddle_and_a_cpu_build_ignores_it(exported):
    api, files = exported
    plan = plan_by_name(plan_stages("gpu", "native", "fp16", files["format"], DeployOptions()))["gpu_fp16"]
    config = api.config.make_config(files, plan.config)
    back = api.config.read_back(config)
    # Paddle keeps the pool size and device it was given...
    assert config.memory_pool_init_size_mb() == 100 and config.gpu_device_id() == 0
    # ...but a CPU build does not switch to the GPU, and says so through its getter.
    assert back["use_gpu"] is bool(api.gpu_available())
    assert back["onednn"] is False  # the GPU profile disables oneDNN
    if files["format"] == "pir":
        assert back["new_ir"] is True


def test_gpu_stages_skip_with_the_reason_on_a_cpu_build(exported):
    api, files = exported
    from harness.runtimes import paddle_inference as backends

    if api.gpu_available():
        pytest.skip("a GPU is visible: the GPU stages would run")
    assert "no CUDA device" in api.unmet(backends.GPU)
    assert "no TensorRT" in api.unmet(backends.TENSORRT)


def test_legacy_tensorrt_config_is_refused_by_a_build_without_tensorrt(exported, tmp_path):
    api, files = exported
    plan = plan_by_name(plan_stages("gpu", "trt", "fp16", "legacy", DeployOptions(trt_workspace_mb=256)))["trt_fp16"]
    assert plan.config.trt == TensorRT(precision="fp16", workspace_mb=256, min_subgraph_size=3, calibration=False)
    legacy = dict(files, format="legacy")
    if api.trt_available():
        pytest.skip("this build has TensorRT")
    with pytest.raises(Exception, match="compile with TENSORRT"):
        api.config.make_config(legacy, plan.config, shape_range([{"image": [1, 3, 32, 32]}]))


def test_pir_tensorrt_conversion_arguments():
    """What ``paddle.tensorrt`` is handed for a PIR program (the CPU wheel has no paddle.tensorrt
    to call, so the arguments are checked as data)."""
    from harness.cell.paddle_api.config import pir_trt_arguments

    ranges = shape_range([{"image": [2, 3, 64, 64], "im_shape": [2, 2]}, {"image": [1, 3, 64, 64], "im_shape": [1, 2]},
                          {"image": [3, 3, 97, 81], "im_shape": [3, 2]}])
    args = pir_trt_arguments(TensorRT(precision="int8", min_subgraph_size=5, disabled_ops=("pd_op.conv2d",)), ranges)
    # min/opt/max from the shapes the cell runs: the primary is opt, the variants stretch the range.
    assert args["inputs"] == [{"name": "image", "min_input_shape": (1, 3, 64, 64), "optim_input_shape": (2, 3, 64, 64),
                               "max_input_shape": (3, 3, 97, 81)},
                              {"name": "im_shape", "min_input_shape": (1, 2), "optim_input_shape": (2, 2),
                               "max_input_shape": (3, 2)}]
    assert args["precision_mode"] == "INT8" and args["min_subgraph_size"] == 5
    assert args["disable_ops"] == ["pd_op.conv2d"] and args["workspace_size"] == 1024 << 20


def test_every_read_back_value_is_plain_json(exported):
    import json

    api, files = exported
    for device, word, precision in (("cpu", "onednn", "fp32"), ("gpu", "native", "fp16")):
        for plan in plan_stages(device, word, precision, files["format"], DeployOptions()):
            back = api.config.read_back(api.config.make_config(files, plan.config))
            assert json.loads(json.dumps(back)) == back
            assert back["tensorrt_precision"] == "Precision.Float32"  # a pybind enum, kept as its name


def test_legacy_tensorrt_dynamic_shapes_come_from_a_collected_shape_range_file(exported, tmp_path):
    """Collected as Paddle documents (a run under collect_shape_range_info, which a CPU build can
    do), then handed to enable_tuned_tensorrt_dynamic_shape: the getter says so."""
    import numpy as np

    api, files = exported
    plan = plan_by_name(plan_stages("cpu", "native", "fp32", files["format"], DeployOptions()))["baseline"]
    feeds = [{"image": np.zeros(shape, "float32")} for shape in ((2, 3, 32, 32), (1, 3, 32, 32), (3, 3, 49, 41))]
    path = api.predictor.collect_shape_range(files, plan.config, feeds, tmp_path / "shapes.pbtxt")
    ranges = _shape_ranges(path.read_text())
    # Over every shape the cell runs: distinct min, opt and max for the input (a real dynamic range).
    image = ranges["image"]
    assert image["min_shape"] == [1, 3, 32, 32] and image["max_shape"] == [3, 3, 49, 41], image
    assert len({tuple(image["min_shape"]), tuple(image["opt_shape"]), tuple(image["max_shape"])}) >= 2
    config = api.paddle_infer.Config(files["program"], files["params"])
    config.enable_tuned_tensorrt_dynamic_shape(str(path), True)
    assert config.tuned_tensorrt_dynamic_shape() is True


def _shape_ranges(text: str):
    """The text proto collect_shape_range_info writes: shape_range_info { name min_shape* max_shape* opt_shape* }."""
    import re

    found = {}
    for block in re.findall(r"shape_range_info\s*\{(.*?)\}", text, re.S):
        name = re.search(r'name:\s*"([^"]+)"', block).group(1)
        found[name] = {key: [int(v) for v in re.findall(rf"{key}:\s*(-?\d+)", block)]
                       for key in ("min_shape", "max_shape", "opt_shape")}
    return found
