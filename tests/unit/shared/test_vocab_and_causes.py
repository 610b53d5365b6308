"""The vocabulary (``harness.shared.vocab``) and causes (``harness.shared.causes``): plain code."""

from __future__ import annotations

import json

import pytest

from harness.shared.causes import cause_of, group
from harness.shared.vocab import Status, verdict_status


def test_statuses_read_back_from_json_and_decide_the_verdict():
    assert json.dumps({"s": Status.NOOP}) == '{"s": "noop"}' and Status.of("noop") is Status.NOOP
    assert Status.of("whatever") is Status.CRASH
    assert verdict_status([Status.PASS, Status.SKIP, Status.ERROR, Status.FAIL]) is Status.ERROR
    assert verdict_status([Status.PASS, Status.NOOP, Status.VACUOUS]) is Status.VACUOUS
    assert verdict_status([Status.PASS, Status.NOOP]) is Status.PASS
    assert verdict_status([Status.NOOP, Status.SKIP]) is None  # nothing really passed


@pytest.mark.parametrize("a, b", [
    ("ValueError: (InvalidArgument) Not find predictor_id 0 and pass_name memory_optimize_pass",
     "ValueError: (InvalidArgument) Not find predictor_id 17 and pass_name memory_optimize_pass"),
    ("RuntimeError: (NotFound) Cannot find constant_folding@_179538630108626625411 in scope.",
     "RuntimeError: (NotFound) Cannot find constant_folding@_179538647014530138311 in scope."),
    ("worker died with SIGSEGV at 0x7f3a2b", "worker died with SIGSEGV at 0x55d0"),
    ("cannot open /tmp/pytest-of-root/a/export/model.json", "cannot open /work/results/b/export/model.json"),
])
def test_messages_that_differ_only_in_ids_share_a_cause(a, b):
    assert cause_of(a) == cause_of(b)
    causes = group([("error", a, "cell1"), ("error", b, "cell2"), ("error", a, "cell1")])
    assert len(causes) == 1 and causes[0].count == 3 and causes[0].places == ["cell1", "cell2"]


def test_different_messages_or_kinds_are_different_causes():
    assert cause_of("(NotFound) a") != cause_of("(InvalidArgument) a")
    assert len(group([("error", "x", "c"), ("crash", "x", "c")])) == 2


def test_words_are_cut_at_a_word_and_lengthened_where_two_causes_would_read_alike():
    from harness.shared.causes import at_word, shown_apart

    assert at_word("one two three four", 9) == "one two …"
    assert at_word("short", 90) == "short"
    prefix = "paddle2onnx could not convert the program; it said: Cannot convert op "
    said = shown_apart([prefix + "roi_align with opset 11", prefix + "yolo_box with opset 11", "other"], 40)
    assert len(set(said)) == 3 and "roi_align" in said[0] and "yolo_box" in said[1] and said[2] == "other"
    assert shown_apart(["same words", "same words"], 5) == ["same …", "same …"]  # one text: one reading


def test_an_op_named_by_its_module_path_in_one_release_is_the_same_cause_named_by_its_name_in_another():
    from harness.shared.causes import cause_of

    older = "Variable value (input) of OP(fluid.layers.embedding) expected >= 0 and < 1024, but got -354."
    newer = "Variable value (input) of OP(embedding) expected >= 0 and < 1024, but got -354."
    assert cause_of(older) == cause_of(newer)
    assert cause_of("OP(fluid.layers.embedding) failed") != cause_of("OP(fluid.layers.gather) failed")


def test_a_converters_output_of_unwritten_memory_is_one_cause_whatever_values_that_memory_held():
    """paddle2onnx 2.1.0 writes pad3d's Pad value from memory it never wrote: each cell's message holds
    the values its two conversions happened to read, and the zoo counted the one defect three times
    (PP-HGNetV2 and the text recognizers, SCINet under ORT, SCINet and TCN). Keyed by the nodes that
    differ — their kind and the Paddle op they came from — the cells are one cause; another node kind
    is another."""
    from harness.shared.causes import cause_of, group

    head = ("paddle2onnx's output depends on memory it never wrote (paddle2onnx 2.1.0; converted again with "
            "glibc's M_PERTURB filling fresh memory with 0xa5 ^ 0xff): ")
    cells = {
        "cpu_openvino_fp32/3.3.1/normal/ts_tcn": "node Pad.0 (Pad, from pd_op.pad3d) attribute value: 0.0 vs "
                                                 "-2.8735182454018313e-16; node Pad.1 (Pad, from pd_op.pad3d) attribute value …",
        "cpu_ort_fp32/3.3.1/normal/ts_scinet": "node Pad.0 (Pad, from pd_op.pad3d) attribute value: 1.5694542800437951e-43 "
                                               "vs 1.5365221879119872e+16; node Pad.1 (Pad, from pd_op.pad3d) attribute …",
        "cpu_ort_fp32/3.3.1/normal/pp_hgnetv2": "node Pad.3 (Pad, from pd_op.pad3d) attribute value: 1.82e+31 vs 0.0",
    }
    keys = {cause_of(head + said) for said in cells.values()}
    assert len(keys) == 1 and next(iter(keys)).endswith("Pad from pd_op.pad3d differ"), keys
    other = cause_of(head + "initializer w (input of Conv.0 (Conv, from pd_op.conv2d)): [0.0] vs [1.0]")
    assert other not in keys and other.endswith("Conv from pd_op.conv2d differ"), other
    causes = group([("error", head + said, place, "ort_convert") for place, said in cells.items()])
    assert len(causes) == 1 and sorted(causes[0].places) == sorted(cells), causes


def test_a_backward_s_error_is_one_cause_whatever_its_grad_node_is_named():
    """Paddle 3.3 names the grad node (after the model's own PyLayer class) before the words of its
    backward's check; earlier releases say the same check without it: one cause, at every release."""
    from harness.shared.causes import cause_of

    words = "The number of outputs of `PyLayer.backward` should be 1, but received 2. (at /paddle/py_layer_node.cc:196)"
    assert cause_of(f"ValueError: (InvalidArgument) GradNodePyLayer_XDropout : {words}") == cause_of(
        f"ValueError: (InvalidArgument) {words}") == cause_of(f"ValueError: (InvalidArgument) GradNodePyLayer_Other : {words}")


def test_cells_of_one_conversion_defect_are_one_cause_whatever_nodes_each_said():
    """A converter reading memory it never wrote says other nodes in every cell (a Pad in one, a
    LeakyRelu beside it in another), and a runtime whose two conversions read the same bytes judged the
    op's conversion wrong on its numbers: one converter and version sharing a Paddle op, one of them by
    memory, are one cause. An op no memory cause names, a chain of ops, another converter's version
    and two converter bugs by numbers alone stay apart."""
    from harness.shared.causes import group, one_defect

    head = ("paddle2onnx's output depends on memory it never wrote (paddle2onnx 2.1.0; converted again with "
            "glibc's M_PERTURB filling fresh memory with 0xa5 ^ 0xff): ")
    items = [
        ("error", head + "initializer helper.constant.20 (input of Pad.0 (Pad, from pd_op.pad3d)) holds 0 and 1e30", "a", "ort_convert"),
        ("error", head + "initializer helper.constant.7 (input of Pad.3 (Pad, from pd_op.pad3d)) holds 2 and 7e12", "b", "ort_convert"),
        ("error", head + "node LeakyRelu.1 (LeakyRelu, from pd_op.leaky_relu) attribute alpha 0.1 and nan; "
                         "initializer c (input of Pad.0 (Pad, from pd_op.pad3d)) holds 0 and 5", "c", "ort_convert"),
        ("converter", "paddle2onnx 2.1.0 converts pd_op.leaky_relu into ONNX that computes otherwise", "d",
         "openvino_convert", "paddle2onnx 2.1.0 pd_op.leaky_relu"),
        ("converter", "paddle2onnx 2.1.0 converts pd_op.max into a file the checker rejects", "e", "ort_convert",
         "paddle2onnx 2.1.0 pd_op.max"),
        ("converter", "paddle2onnx 2.1.0 converts pd_op.conv2d -> pd_op.pad3d otherwise", "f", "ort_convert",
         "paddle2onnx 2.1.0 pd_op.conv2d -> pd_op.pad3d"),
        ("converter", "paddle2onnx 1.3.1 converts pd_op.pad3d otherwise", "g", "ort_convert", "paddle2onnx 1.3.1 pd_op.pad3d"),
    ]
    causes = one_defect(group(items))
    one = next(c for c in causes if "a" in c.places)
    assert sorted(one.places) == ["a", "b", "c", "d"] and one.count == 4 and one.kind == "error", one
    assert one.stages["d"] == ["openvino_convert"] and len(one.joined) == 2, one
    apart = sorted(tuple(c.places) for c in causes if c is not one)
    assert apart == [("e",), ("f",), ("g",)], apart
    # Nothing to make one: the causes as they were.
    plain = group(items[4:6])
    assert one_defect(plain) == plain
