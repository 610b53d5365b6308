"""The public calls written for ops a layer reaches through a private path (``equivalents.py``),
on real Paddle: under ``to_static`` they build the very ops the ``_C_ops`` form builds, with the same
numbers — ``F.conv2d`` with the channels as groups builds ``depthwise_conv2d``."""

import importlib.util

import numpy as np


def _exported(source, name, tmp_path, fed, held):
    """The written layer, exported by ``to_static``: the op types of its program and its outputs."""
    import paddle

    (tmp_path / f"{name}.py").write_text(source)  # dy2static reads the layer's source from its file
    spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layer = module.OneOp()
    layer.set_state_dict({k: paddle.to_tensor(v) for k, v in held.items()})
    layer.eval()
    static = paddle.jit.to_static(layer, input_spec=[paddle.static.InputSpec(list(a.shape), str(a.dtype)) for a in fed],
                                  full_graph=True)
    outputs = [o.numpy() for o in static(*[paddle.to_tensor(a) for a in fed])]
    program = static.forward.concrete_program.main_program
    ops = [op.name() for op in program.global_block().ops]
    return [o for o in ops if o.startswith("pd_op.") and o not in ("pd_op.data", "pd_op.fetch")], outputs


def test_the_public_equivalents_build_the_same_ops_with_the_same_numbers(tmp_path):
    from harness.cell.anatomy.isolation import OpCall, written
    from harness.cell.anatomy.pieces import Slot

    rng = np.random.default_rng(0)

    def call(name, order, attrs, arrays, ins, outs, held, returns):
        made = OpCall(name, order, [*[Slot(k) for k in range(len(arrays))], *attrs], arrays, returns=returns)
        made.input_ids, made.output_ids, made.held = ins, outs, held
        return made

    x = rng.standard_normal((1, 8, 16, 16)).astype("float32")
    depthwise = call("depthwise_conv2d", 0, [[2, 2], [2, 2], "EXPLICIT", 8, [1, 1], "NCHW"],
                     [x, rng.standard_normal((8, 1, 5, 5)).astype("float32")], [1, 2], [3], (1,), [((), False)])
    stats = [rng.standard_normal(8).astype("float32"), rng.uniform(0.5, 2, 8).astype("float32"),
             rng.standard_normal(8).astype("float32"), rng.standard_normal(8).astype("float32")]
    norm = call("batch_norm", 1, [True, 0.9, 1e-5, "NCHW", True, False], [np.zeros((1, 8, 8, 8), "float32"), *stats],
                [3, 4, 5, 6, 7], [8, 9, 10], (1, 2, 3, 4), [((0,), False), ((1,), True), ((2,), True)])
    conv = call("conv2d", 2, [[1, 1], [0, 0], "EXPLICIT", [1, 1], 1, "NCHW"],
                [np.zeros((1, 8, 8, 8), "float32"), rng.standard_normal((4, 8, 1, 1)).astype("float32")],
                [8, 11], [12], (1,), [((), False)])
    add = call("add", 3, [], [np.zeros((1, 4, 8, 8), "float32"), rng.standard_normal((1, 4, 1, 1)).astype("float32")],
               [12, 13], [14], (), [((), False)])
    public, private = written([depthwise, norm, conv, add]), written([depthwise, norm, conv, add], public=False)
    assert "_C_ops" not in public.source and not public.harness_form, public.source
    assert "paddle._C_ops.depthwise_conv2d(" in private.source
    ops, numbers = _exported(public.source, "public_form", tmp_path, public.fed, public.held)
    c_ops, c_numbers = _exported(private.source, "c_ops_form", tmp_path, private.fed, private.held)
    # The same ops (F.batch_norm may build the in-place batch_norm_ where the layer built batch_norm).
    assert [o.rstrip("_") for o in ops] == [o.rstrip("_") for o in c_ops], (ops, c_ops)
    assert "pd_op.depthwise_conv2d" in ops and "pd_op.conv2d" in ops
    np.testing.assert_allclose(numbers[0], c_numbers[0], rtol=1e-5, atol=1e-5)
