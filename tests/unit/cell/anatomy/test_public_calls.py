"""Which public call made each op (``cell/public_api.py``), on real Paddle: a ``Tensor`` method that
is one of Paddle's public functions is recorded as that function's call, so the one-op program is
written in the form every release traces (``_C_ops.transpose`` under 2.6's ``to_static`` raises
"must be OpResult, but got Variable")."""

import importlib.util

import numpy as np
import paddle

from harness.cell.anatomy import isolation


class Methods(paddle.nn.Layer):
    def forward(self, x):
        y = x.transpose([0, 2, 1])   # a Tensor method: paddle.transpose
        return paddle.nn.functional.relu(y).sum(axis=-1)


def test_a_tensor_method_is_recorded_and_written_as_its_public_function():
    x = paddle.to_tensor(np.arange(24, dtype="float32").reshape(2, 3, 4) - 10)
    calls = isolation.record_ops(paddle, lambda: Methods()(x))
    by_op = {c.name: c for c in calls}
    assert by_op["transpose"].public.name == "paddle.transpose"
    assert by_op["transpose"].public.describe() == "paddle.transpose(float32[2, 3, 4], [0, 2, 1])"
    assert by_op["relu"].public.name == "paddle.nn.functional.relu"
    assert by_op["sum"].public.name == "paddle.sum"
    source = isolation.written([by_op["transpose"]]).source
    assert "paddle.transpose(in0, [0, 2, 1])" in source and "_C_ops.transpose" not in source
    assert not isolation.written([by_op["transpose"]]).harness_form
    # The methods are Paddle's own again afterwards.
    assert paddle.Tensor.transpose is paddle.transpose


def test_the_written_call_traces_and_computes_what_the_model_did(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")
    calls = isolation.record_ops(paddle, lambda: Methods()(paddle.to_tensor(x)))
    program = isolation.written([next(c for c in calls if c.name == "transpose")])
    (tmp_path / "oneop.py").write_text(program.source)  # to_static reads the forward's source file
    spec = importlib.util.spec_from_file_location("oneop", tmp_path / "oneop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layer = getattr(module, isolation.ONE_OP)()
    static = paddle.jit.to_static(layer, input_spec=[paddle.static.InputSpec([2, 3, 4], "float32")], full_graph=True)
    out = static(paddle.to_tensor(x))
    np.testing.assert_array_equal(paddle.utils.flatten(out)[0].numpy(), x.transpose(0, 2, 1))


class Embeds(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.table = paddle.nn.Embedding(10, 4)  # its forward passes every keyword, max_norm=None among them

    def forward(self, ids):
        return paddle.nn.functional.embedding(ids, self.table.weight, padding_idx=None, sparse=True)


def test_a_keyword_passed_at_its_default_is_left_out_of_the_written_call():
    """Paddle's ``Embedding`` hands ``F.embedding`` ``max_norm=None``, a keyword 2.6.2's ``embedding``
    does not take: the written call leaves out what equals the default (found on the zoo, where
    2.6.2 answered "embedding() got an unexpected keyword argument 'max_norm'"), keeps the rest."""
    ids = paddle.to_tensor([[1, 2, 3]], dtype="int64")
    model = Embeds()
    calls = isolation.record_ops(paddle, lambda: (model.table(ids), model(ids)))
    layer_call, own_call = [c.public for c in calls if c.name == "embedding"][:2]
    assert "max_norm" not in layer_call.describe() and "padding_idx" not in layer_call.describe(), layer_call.describe()
    assert own_call.describe().endswith("sparse=True)"), own_call.describe()  # not the default: kept
    assert "padding_idx" not in own_call.describe()
