"""A source reproducer's spelling (``cell/source_repro.py``): layers rebuilt from their classes
with the constructor arguments recorded while the factory ran, the model's own classes copied
with what they read, Paddle's by their public names; what cannot be spelled says why."""

import numpy as np
import paddle
import pytest

from harness.cell.handover import replay, source_repro
from harness.cell.handover.formats import by_format
from harness.models.construction import made_with, recording_construction
from tests import factories


def _rebuilt(writer: source_repro.Writer, expression: str):
    namespace: dict = {}
    exec(compile(writer.header() + writer.body() + f"\nbuilt = {expression}\n", "<source>", "exec"), namespace)
    return namespace["built"]


def test_a_layer_is_spelled_with_the_arguments_it_was_built_with_and_rebuilds():
    with recording_construction(paddle):
        backbone = factories.Backbone()
    writer = source_repro.Writer(paddle)
    stage = backbone.stages[1]
    expression = writer.layer(stage)
    # The blocks were constructor arguments: spelled as their own constructions, in order.
    assert expression == "Stage([Block(8), CountingBlock(8), Block(8)])"
    assert "import paddle.nn as nn" in writer.header()
    body = writer.body()
    assert body.index("class Block(") < body.index("class CountingBlock(Block)") < body.index("class Stage(")
    rebuilt = _rebuilt(writer, expression)
    want = {k: list(v.shape) for k, v in stage.state_dict().items()}
    assert {k: list(v.shape) for k, v in rebuilt.state_dict().items()} == want
    assert writer.layer(backbone.stem) == "paddle.nn.Conv2D(3, 8, 3, padding=1)"  # Paddle's own, by its public name


def test_layers_build_as_before_outside_the_recorder_and_a_list_is_kept_as_passed():
    sizes = [4, 4]
    with recording_construction(paddle):
        layer = factories.Block(sizes[0])
        stage = factories.Stage([factories.Block(4)])
    assert made_with(layer) == ((4,), {})
    blocks = made_with(stage)[0][0]
    assert isinstance(blocks, list) and len(blocks) == 1
    # Outside it a layer takes its constructor's arguments as ever (CPython cannot give a class's
    # __new__ back: the recorder stays installed, recording nothing) and keeps nothing.
    after = factories.Stage([factories.Block(4), factories.Block(4)])
    assert made_with(after) is None and len(after.blocks) == 2


def test_what_cannot_be_spelled_says_why():
    writer = source_repro.Writer(paddle)
    with pytest.raises(source_repro.Unspellable, match="not built while the model's factory ran"):
        writer.layer(factories.Block(4))

    def local_factory():
        class Local(paddle.nn.Layer):
            pass
        return Local()
    with recording_construction(paddle):
        local = local_factory()
    with pytest.raises(source_repro.Unspellable, match="defined inside a function"):
        writer.layer(local)
    with pytest.raises(source_repro.Unspellable, match="has no source form"):
        writer.value(object())


def test_values_spell_as_python_that_reads_back():
    writer = source_repro.Writer(paddle)
    for value in (None, True, 3, -0.5, "bilinear", [1, (2,), {"a": 2.0}], np.float32(0.25)):
        assert eval(writer.value(value)) == (value.item() if isinstance(value, np.generic) else value)
    assert writer.value(float("inf")) == "float('inf')"
    # A tensor handed to a constructor: its values, exactly, in its dtype; one too large to write, said.
    stats = paddle.to_tensor(np.array([0.1, -3.3e-8, np.nan, 7.0], dtype="float32"))
    spelled = writer.value(stats)
    back = eval(spelled, {"paddle": paddle})
    assert back.dtype == paddle.float32 and np.array_equal(back.numpy(), stats.numpy(), equal_nan=True), spelled
    assert writer.value(paddle.to_tensor([[1, 2]], dtype="int64")) == "paddle.to_tensor([[1, 2]], dtype='int64')"
    with pytest.raises(source_repro.Unspellable, match="tensor argument of 2048 values"):
        writer.value(paddle.zeros([2, 1024]))


def test_the_stage_per_program_format_shares_what_both_formats_call():
    pir = "config = C(m)\nconfig.enable_new_ir(True)\nconfig.disable_gpu()\n\npredictor = create(config)\n"
    legacy = "config = C(m)\nconfig.disable_gpu()\n\npredictor = create(config)\n"
    text = by_format({"pir": pir, "legacy": legacy}, "ir")
    assert text.count("config = C(m)") == 1 and text.count("predictor = create(config)") == 1
    assert 'if model_file.endswith(".json"):' in text and "    config.enable_new_ir(True)" in text
    missing = by_format({"pir": pir, "legacy": None}, "memory")
    assert "cannot run here: the stage memory does not exist for a legacy program" in missing


def test_what_a_factory_module_does_to_other_modules_is_replayed_before_the_model_is_imported(tmp_path, monkeypatch):
    """A factory module that patches a package at import (PaddleTS 1.1.0 needs ``collections.Iterable``
    put back): its statements that change other modules, with the imports and functions they read,
    in its order; its other statements (definitions, its own names) stay out."""
    (tmp_path / "patching_factory.py").write_text(
        "import json\n"
        "import os.path\n"
        "import string as text\n"
        "LIMIT = 3\n"
        "def loose(value):\n"
        "    return value[:LIMIT]\n"
        "json.harness_loose = loose  # a suite's check widened\n"
        "setattr(text, 'harness_stub', 'stubbed')\n"
        "def build():\n"
        "    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import patching_factory  # noqa: F401 - the module factory_setup reads, as a cell has it imported

    setup = replay.factory_setup(paddle, "patching_factory:build")
    assert "import json\n" in setup and "import string as text\n" in setup and "import os.path" not in setup
    assert setup.index("def loose(") < setup.index("json.harness_loose = loose") < setup.index("setattr(text,")
    assert "LIMIT = 3" in setup and "def build(" not in setup
    import json
    import string

    try:
        del json.harness_loose, string.harness_stub  # as before the factory module was imported
        exec(compile(setup, "<setup>", "exec"), {})
        assert json.harness_loose("abcdef") == "abc" and string.harness_stub == "stubbed"
    finally:
        json.__dict__.pop("harness_loose", None)
        string.__dict__.pop("harness_stub", None)
    assert replay.factory_setup(paddle, "tests.factories:trial_dies") == ""  # changes nothing elsewhere
    import harness.models.zoo_timeseries  # noqa: F401 - the zoo's own factory module patches collections

    zoo = replay.factory_setup(paddle, "harness.models.zoo_timeseries:ts_nhits")
    assert "import collections.abc\n" in zoo and "collections.Iterable = collections.abc.Iterable" in zoo, zoo
    assert "class PastTarget" not in zoo and "LOOKBACK" not in zoo


def test_a_class_whose_package_rebinds_its_module_s_name_is_reached_through_importlib(tmp_path, monkeypatch):
    # PaddleSpeech 1.5.0's shape: models/__init__ star-imports the package models.net, whose namespace
    # holds its submodule net.py under the same name, so models.net is net.py by attribute.
    package = tmp_path / "shadowsuite"
    (package / "models" / "net").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models" / "__init__.py").write_text("from .net import *\n")
    (package / "models" / "net" / "__init__.py").write_text("from .net import *\n")
    (package / "models" / "net" / "net.py").write_text(
        "import paddle\n\nclass Net(paddle.nn.Layer):\n    def __init__(self, width):\n"
        "        super().__init__()\n        self.fc = paddle.nn.Linear(width, width)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(source_repro, "_INSTALLED_ROOTS", (str(tmp_path),))
    import shadowsuite.models  # noqa: F401

    from shadowsuite.models.net.net import Net
    with recording_construction(paddle):
        net = Net(4)
    writer = source_repro.Writer(paddle)
    expression = writer.layer(net)
    assert expression == "_shadowsuite_models_net_net.Net(4)", expression
    assert "_shadowsuite_models_net_net = importlib.import_module('shadowsuite.models.net.net')" in writer.header()
    rebuilt = _rebuilt(writer, expression)
    assert type(rebuilt) is Net and list(rebuilt.fc.weight.shape) == [4, 4]


def test_a_param_attr_is_spelled_by_what_shapes_the_program_and_its_layer_rebuilds():
    """Paddle3D's PointPillars hands ``ParamAttr(initializer=..., regularizer=...)`` to its convs: the
    script sets the trained weights after building, so the initializer and regularizer are left out."""
    writer = source_repro.Writer(paddle)
    attr = paddle.ParamAttr(name="w", initializer=paddle.nn.initializer.Normal(0.0, 0.01),
                            regularizer=paddle.regularizer.L2Decay(1e-4), learning_rate=2.0, trainable=False)
    assert writer.value(attr) == "paddle.ParamAttr(learning_rate=2.0, trainable=False)"
    assert writer.value(paddle.ParamAttr()) == "paddle.ParamAttr()"
    conv = _rebuilt(writer, f"paddle.nn.Conv2D(3, 4, 3, weight_attr={writer.value(attr)})")
    assert list(conv.weight.shape) == [4, 3, 3, 3] and conv.weight.stop_gradient
