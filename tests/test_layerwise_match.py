"""Tensor matching of the per-tensor diff: pure logic over dump indexes, no Paddle."""

from __future__ import annotations

import json

import numpy as np

from harness.cell.anatomy.layerwise import (
    _first_divergence, _mark_suspects, key_name, match, normalized_op, to_plain_layout)
from harness.shared.tensor_diff import DumpedTensor, TensorDiff, TensorRow
from harness.shared.vocab import Status


def _row(op, raw, shape=(1, 4), file=True):
    return DumpedTensor(op, raw, tuple(shape), "float32", raw if file else "")


def test_names_lose_the_pir_prefix_and_ops_their_dialect():
    assert key_name("0x55d3a1_inner_var_111") == "inner_var_111"
    assert normalized_op("pd_op.conv2d:0") == normalized_op("onednn_op.conv2d:5") == "conv2d"
    assert normalized_op("pd_op.relu_:3") == "relu"
    assert normalized_op("onednn_op.fused_conv2d:1") == "fused_conv2d"


def test_name_then_occurrence_then_value_and_the_rest_unmatched():
    base = [_row("pd_op.conv2d:0", "0xa_inner_var_1"), _row("pd_op.batch_norm_:0", "0xa_inner_var_2"),
            _row("pd_op.relu:0", "0xa_inner_var_3"), _row("pd_op.pool2d:0", "0xa_inner_var_4"),
            _row("pd_op.scale:0", "0xa_inner_var_9")]
    test = [_row("onednn_op.fused_conv2d:0", "0xb_inner_var_7"), _row("onednn_op.pool2d:0", "0xb_inner_var_8"),
            _row("pd_op.scale:0", "0xb_inner_var_9")]
    values = {("base", 2): np.array([1.0, 2.0]), ("test", 0): np.array([1.0, 2.0001]),
              ("base", 0): np.array([5.0, -1.0]), ("base", 1): np.array([0.1, 9.0])}
    pairs, unmatched = match(base, test, lambda side, k: values[(side, k)])
    assert (4, 2, "name") in pairs  # inner_var_9 on both sides, same op
    assert (3, 1, "occurrence") in pairs  # the one pool2d on each side
    assert (2, 0, "value") in pairs  # the fused conv equals the relu that ends its pattern
    assert {u.name for u in unmatched} == {"inner_var_1", "inner_var_2"}


def test_a_name_shared_by_different_ops_is_not_a_pair():
    pairs, unmatched = match([_row("pd_op.conv2d:0", "v1")], [_row("pd_op.relu:0", "v1")])
    assert pairs == [] and {u.side for u in unmatched} == {"base", "test"}
    assert "op differs" in unmatched[0].reason


def test_onednn_nhwc_storage_is_undone():
    nchw = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    stored = np.ascontiguousarray(nchw.transpose(0, 2, 3, 1)).reshape(2, 3, 4, 5)  # NHWC bytes, NCHW shape
    assert np.array_equal(to_plain_layout(stored, "ONEDNN"), nchw)
    assert to_plain_layout(stored, "NCHW") is stored


def test_a_mismatch_whose_next_tensors_agree_is_suspect_not_the_first_divergence():
    rows = [TensorRow(k, "pd_op.relu", "pd_op.relu", f"v{k}", "name", (1,), (1,), Status(status))
            for k, status in enumerate(["pass", "fail", "pass", "pass", "fail"])]
    rows = _first_divergence(_mark_suspects(rows))
    assert rows[1].suspect and not rows[4].suspect
    assert [r.index for r in rows if r.first_divergence] == [4]
    diff = TensorDiff(rows, [], 5, 5, 5, 1e-4, 1e-4)
    again = TensorDiff.from_dict(json.loads(json.dumps(diff.to_dict(), default=str)))
    assert again == diff and again.first_divergence.index == 4
