"""Which op is tried alone first, and the one-op program's source (pure logic: no Paddle)."""

import numpy as np

from harness.cell.rootcause.descent import parts
from harness.cell.anatomy.isolation import OpCall, chains, schedule, suspicion, written
from harness.cell.anatomy.pieces import Slot

MESSAGE = ("NotImplementedError: (Unimplemented) ConvertPirAttribute2RuntimeAttribute not support "
           "[pir::ArrayAttribute<pir::DoubleAttribute>]")


def candidates(calls, message, first_divergence):
    return schedule(calls, message, first_divergence)[0]


def _op(name, order, *attrs, inputs=((1, 8, 16, 16),)):
    arrays = [np.zeros(shape, "float32") for shape in inputs]
    return OpCall(name, order, [*[Slot(k) for k in range(len(arrays))], *attrs], arrays, returns=[((), False)])


def test_the_messages_attribute_kind_puts_the_op_that_carries_it_first():
    conv = _op("conv2d", 0, [1, 1], [1, 1], "EXPLICIT", [1, 1], 1, "NCHW", inputs=((1, 3, 16, 16), (8, 3, 3, 3)))
    add = _op("add", 1, inputs=((1, 8, 16, 16), (1, 8, 1, 1)))
    interp = _op("bilinear_interp", 2, None, None, None, "NCHW", -1, -1, -1, [2.0, 2.0], "bilinear", False, 0)
    ranked = candidates([conv, add, interp], MESSAGE, None)
    assert [c.name for c in ranked] == ["bilinear_interp", "conv2d", "add"]
    assert suspicion(interp, MESSAGE, None) > suspicion(conv, MESSAGE, None) == 0


def test_an_op_named_in_the_message_or_first_diverging_comes_first_and_duplicates_go():
    relu = _op("relu", 0)
    again = _op("relu", 3)
    softmax = _op("softmax", 1, -1)
    assert [c.name for c in candidates([relu, softmax, again], "InvalidArgument: softmax's axis", None)] == ["softmax", "relu"]
    assert [c.name for c in candidates([relu, softmax], "", "pd_op.relu")] == ["relu", "softmax"]


def test_ops_that_make_tensors_from_nothing_or_return_only_their_inputs_are_no_candidates():
    full = OpCall("full", 0, [[8], 0.0], [], returns=[((), False)])
    inplace = _op("relu_", 1)
    inplace.returns = [((), True)]
    assert candidates([full, inplace], MESSAGE, None) == []


def test_the_one_op_source_calls_the_op_as_the_forward_did_and_returns_its_main_output():
    bn = _op("batch_norm", 0, True, 0.9, 1e-05, "NCHW", True, False, inputs=((1, 8, 4, 4),) + ((8,),) * 4)
    bn.returns = [((0,), False), ((1,), True), ((2,), True), ((3,), False)]
    source = written([bn], public=False).source
    assert "def forward(self, in0, in1, in2, in3, in4):" in source
    assert "r0 = paddle._C_ops.batch_norm(in0, in1, in2, in3, in4, True, 0.9, 1e-05, 'NCHW', True, False)" in source
    assert "return [r0[0]]" in source
    compile(source, "oneop.py", "exec")
    # Spoken publicly: F.batch_norm builds the op from the same attributes and returns its main output.
    public = written([bn])
    assert ("r0 = paddle.nn.functional.batch_norm(in0, in1, in2, weight=in3, bias=in4, training=False, momentum=0.9, "
            "epsilon=1e-05, data_format='NCHW', use_global_stats=True)") in public.source
    assert "return [r0]" in public.source and not public.harness_form and public.as_c_ops().source == source


def test_parts_are_contiguous_nonempty_and_cover_the_group():
    paths = [str(i) for i in range(7)]
    for n in range(1, 8):
        chunks = parts(paths, [1, 5, 1, 1, 2, 1, 1], n)
        assert [p for c in chunks for p in c] == paths and all(chunks) and len(chunks) == n


def test_an_op_family_and_a_dynamic_shape_in_the_message_point_at_the_op():
    message = ("ValueError: (InvalidArgument) the input of Op(pool) should be 4-D or 5-D Tensor. But received: "
               "3-D Tensor and it's shape is [-1, 768, 49].")
    pool = _op("pool2d", 5, [1, 1], [1, 1], [0, 0], False, True, "NCHW", "avg", False, True, "EXPLICIT",
               inputs=((2, 768, 49),))
    relu = _op("relu", 0, inputs=((2, 768, 49),))
    assert suspicion(pool, message, None) > suspicion(relu, message, None) == 2
    assert candidates([relu, pool], message, None)[0] is pool


def test_a_member_with_no_op_of_its_own_does_not_keep_the_answer_above_it():
    """A dropout in eval (an identity) cannot hold the failure: its vacuous piece is not a trial
    that said nothing, so a layer none of whose members reproduce alone is concluded on."""
    from harness.cell.rootcause.descent import Trial, descend
    from harness.cell.anatomy.pieces import Call

    calls = {"": Call("", None, -1, children=["a", "drop", "b"], leaves=3)}
    for order, path in enumerate(["a", "drop", "b"]):
        calls[path] = Call(path, None, order)

    def reproduces(members):
        if members == ["drop"]:
            return Trial(members, False, note="no op of its own", untestable=True, vacuous=True)
        return Trial(members, reproduces=len(members) == 3)

    found = descend(calls, reproduces)
    assert found.members == [""] and "no one of its 3 sublayers reproduces alone" in found.why, found.why


def test_every_op_type_gets_a_program_before_any_type_gets_a_second_and_each_rule_is_counted():
    """A SegFormer-like piece: many linears and adds first, the interpolate (by ``size=``, so the
    message's attribute kind does not point at it) at the end; a cap on the first N ops would
    never reach it."""
    from harness.cell.anatomy.isolation import PER_TYPE

    calls = [_op("matmul", k, False, False, inputs=((1, 8, 16), (16, 16 + k))) for k in range(10)]
    calls += [_op("add", 10 + k, inputs=((1, 8, 16 + k), (16 + k,))) for k in range(10)]
    calls.append(_op("softmax", 20, -1))
    calls.append(_op("bilinear_interp", 21, None, [64, 64], None, "NCHW", -1, -1, -1, [], "bilinear", False, 0))
    ordered, rules = schedule(calls, "InvalidArgument: softmax's axis", "pd_op.matmul")
    names = [c.name for c in ordered]
    assert names[:2] == ["softmax", "matmul"]  # named by the message, then the first divergence's type
    assert set(names[:4]) == {"softmax", "matmul", "add", "bilinear_interp"}
    assert names.count("matmul") == PER_TYPE and names.count("add") == PER_TYPE
    assert rules == {"named": 1, "divergence": PER_TYPE, "hints": 0, "rest": 1 + PER_TYPE,
                     "capped": 2 * (10 - PER_TYPE)}


def test_a_dygraph_only_op_is_built_through_its_public_call():
    linear = _op("linear", 0, inputs=((2, 12, 16), (16, 3), (3,)))
    source = written([linear]).source
    assert "paddle.nn.functional.linear(in0, in1, in2)" in source and "_C_ops.linear" not in source


def test_a_convolution_is_written_as_the_public_call_with_its_attributes():
    """``nn.Conv2D`` reaches ``_C_ops.conv2d``/``depthwise_conv2d`` through a private function: the
    public ``F.conv2d`` with the same attributes is written (2.6.2's legacy trace refuses ``_C_ops``)."""
    conv = _op("conv2d", 0, [1, 1], [0, 0], "EXPLICIT", [1, 1], 1, "NCHW", inputs=((1, 8, 4, 4), (4, 8, 1, 1)))
    depthwise = _op("depthwise_conv2d", 0, [2, 2], [2, 2], "EXPLICIT", 8, [1, 1], "NCHW",
                    inputs=((1, 8, 16, 16), (8, 1, 5, 5)))
    same = _op("conv2d", 0, [1, 1], [0, 0], "SAME", [2, 2], 1, "NHWC", inputs=((1, 4, 4, 8), (4, 8, 3, 3)))
    assert ("paddle.nn.functional.conv2d(in0, in1, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1, "
            "data_format='NCHW')") in written([conv]).source
    assert ("paddle.nn.functional.conv2d(in0, in1, stride=[2, 2], padding=[2, 2], dilation=[1, 1], groups=8, "
            "data_format='NCHW')") in written([depthwise]).source
    assert "padding='SAME', dilation=[2, 2], groups=1, data_format='NHWC')" in written([same]).source
    odd = _op("conv2d", 0, [1, 1], [0, 0], "EXPLICIT", [1, 1], 1, "NCDHW", inputs=((1, 8, 4, 4), (4, 8, 1, 1)))
    assert "paddle._C_ops.conv2d(" in written([odd]).source  # an attribute with no public spelling: as the op


def _wired(name, order, ins, outs, *attrs, held=()):
    """An op reading tensors ``ins`` and making ``outs`` (ids, as the recording keeps them)."""
    arrays = [np.full((2, 4), float(i), "float32") for i in ins]
    call = OpCall(name, order, [*[Slot(k) for k in range(len(arrays))], *attrs], arrays,
                  returns=[((), False)] * len(outs))
    call.input_ids, call.output_ids, call.held = list(ins), list(outs), tuple(held)
    return call


def test_a_parameter_of_the_model_stays_a_parameter_of_the_op_s_program():
    matmul = _wired("matmul", 0, [1, 2], [3], False, False, held=(1,))
    program = written([matmul])
    assert "def forward(self, in0):" in program.source
    assert "r0 = paddle._C_ops.matmul(in0, self.p0, False, False)" in program.source
    assert "self.register_buffer('p0', paddle.zeros([2, 4], dtype='float32'), persistable=True)" in program.source
    assert len(program.fed) == 1 and list(program.held) == ["p0"] and program.held["p0"][0, 0] == 2.0
    compile(program.source, "oneop.py", "exec")


def test_a_chain_wires_each_op_to_the_output_of_the_one_before_and_feeds_the_rest():
    matmul = _wired("matmul", 0, [1, 2], [3], False, False)
    add = _wired("add", 1, [3, 4], [5])
    program = written([matmul, add])
    assert "def forward(self, in0, in1, in2):" in program.source
    assert "r1 = paddle.add(r0, in2)" in program.source and "return [r1]" in program.source
    assert program.op_type == "pd_op.matmul -> pd_op.add"
    compile(program.source, "pair.py", "exec")


def test_pairs_and_chains_follow_the_data_one_per_sequence_of_types_with_counts():
    ops = [_wired("matmul", 0, [1, 2], [3], False, False), _wired("add", 1, [3, 4], [5]),
           _wired("relu", 2, [5], [6]), _wired("matmul", 3, [6, 7], [8], False, False), _wired("add", 4, [8, 9], [10]),
           _wired("scale", 5, [1], [11], 2.0, 0.0, True)]  # reads a model input, no op's output
    groups, rules = chains(ops, "", None)
    names = [[c.name for c in g] for g in groups]
    assert names[:3] == [["matmul", "add"], ["add", "relu"], ["relu", "matmul"]]  # forward order, each once
    assert ["matmul", "add", "relu"] in names and not any("scale" in n for n in names)
    assert rules == {"pairs": 3, "chains": 3, "capped_pairs": 0, "capped_chains": 0}


def test_an_if_the_model_took_is_written_as_an_if_over_the_op_it_branched_on():
    compare = _wired("greater_than", 0, [1, 2], [3], held=(0, 1))
    body = _wired("multiply", 1, [4, 1], [5], held=(1,))
    program = written([compare, body], branched_at=1)
    assert program.op_types == ["pd_op.greater_than", "pd_op.if", "pd_op.multiply"]
    assert "        out = in0\n        if r0:\n            r1 = paddle.multiply(in0, self.p0)\n" \
           "            out = r1\n        return [out]" in program.source
    assert list(program.held) == ["p0", "p1"]  # the parameter read twice is one parameter
    compile(program.source, "branch.py", "exec")


def test_the_shortest_run_of_ops_that_reproduces_is_found_by_two_binary_searches():
    """A failure that needs ops 3..5 of 10 together (and is held by any run containing them)."""
    from harness.cell.rootcause.descent import Trial
    from harness.cell.rootcause.reduction import _smallest_window

    ops = [_wired("relu", k, [k], [k + 1]) for k in range(10)]
    needed = {3, 4, 5}

    class Trials:
        failed = None

        def one_op(self, program):
            orders = {c.order for c in program.calls}
            return Trial(members=program.op_types, reproduces=needed <= orders)

    tried = []
    found, runs = _smallest_window(Trials(), ops, tried)
    program, _ = found
    assert [c.order for c in program.calls] == [3, 4, 5]
    assert runs == len(tried) <= 1 + 2 * 4  # the whole run, then two searches over 10
    assert _smallest_window(Trials(), ops[:3], [])[0] is None  # too short to be a longer chain
