"""The verdict in the model's terms: greedy tokens and top-5 overlap of logits, a detector's top
detections (class and IoU), and the matrix's ``task`` key checked at load."""

from __future__ import annotations

import numpy as np
import pytest

from harness.shared.task import Task, TaskKind, iou, judge, worst_verdict


def _logits(tokens, vocab=10, rows_shape=None):
    out = np.zeros((len(tokens), vocab), np.float32)
    for row, token in enumerate(tokens):
        out[row] = np.arange(vocab)[::-1] * 0.01  # a fixed runner-up order: 0 > 1 > 2 ...
        out[row, token] = 5.0
    return out.reshape(*(rows_shape or out.shape[:1]), vocab)


def test_tokens_agree_counts_each_position_and_top5_overlap_is_their_mean():
    ref = _logits([1, 2, 3, 4], rows_shape=(2, 2))
    got = _logits([1, 2, 3, 9], rows_shape=(2, 2))
    verdict = judge(Task(TaskKind.CAUSAL_LM), ["logits"], [ref], [got])
    assert (verdict.agree, verdict.of, verdict.changed) == (3, 4, True)
    # Position 4: ref top-5 {4,0,1,2,3}, got {9,0,1,2,3}: 4 of 5 shared; the rest share all 5.
    assert verdict.top5_overlap == pytest.approx((1 + 1 + 1 + 0.8) / 4)
    assert verdict.summary == "tokens agree 3/4, top-5 overlap 0.95"
    same = judge(Task(TaskKind.CAUSAL_LM), ["logits"], [ref], [ref + 1e-3])
    assert not same.changed and same.to_dict()["summary"] == "tokens agree 4/4, top-5 overlap 1.00"


def test_the_logits_output_is_named_or_the_only_float_one():
    ids = np.zeros((2, 3), np.int64)
    ref = _logits([1, 2])
    verdict = judge(Task.of("classifier"), ["ids", "head"], [ids, ref], [ids, _logits([1, 3])])
    assert verdict.output == "head" and verdict.summary.startswith("top-1 agree 1/2")
    two = judge(Task.of("classifier"), ["a", "b"], [ref, ref], [ref, ref])
    assert two.of == 0 and "task.logits" in two.summary  # two candidates: said, never guessed
    named = judge(Task.of({"kind": "classifier", "logits": "b"}), ["a", "b"], [ref, ref], [ref, _logits([0, 0])])
    assert named.output == "b" and named.agree == 0


def test_a_detector_keeps_a_detection_with_its_class_and_an_iou_above_0_9():
    scores = np.array([[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]], np.float32)
    boxes = np.array([[[0, 0, 10, 10], [5, 5, 15, 15], [0, 0, 2, 2]]], np.float32)
    moved = boxes.copy()
    moved[0, 1] += 3.0  # IoU 49/151
    flipped = scores.copy()
    flipped[0, 2] = [0.3, 0.7]
    verdict = judge(Task.of("detector"), ["scores", "bbox"], [scores, boxes], [flipped, moved])
    assert (verdict.agree, verdict.of) == (1, 3)
    assert verdict.min_iou == pytest.approx(49 / 151, rel=1e-4)
    cx = Task.of({"kind": "detector", "box_format": "cxcywh", "logits": "scores", "boxes": "bbox"})
    assert judge(cx, ["scores", "bbox"], [scores, boxes], [scores, boxes]).summary.startswith("detections kept 3/3")


def test_iou_of_known_boxes():
    a = np.array([[0, 0, 2, 2], [0, 0, 1, 1], [0, 0, 0, 0]], np.float64)
    b = np.array([[1, 1, 3, 3], [0, 0, 1, 1], [0, 0, 0, 0]], np.float64)
    assert iou(a, b).tolist() == pytest.approx([1 / 7, 1.0, 1.0])


def test_the_worst_shape_decides_the_stage_s_task_verdict():
    kept = {"agree": 4, "of": 4}
    lost = {"agree": 1, "of": 8}
    assert worst_verdict([kept, None, lost]) == lost
    assert worst_verdict([None]) is None


@pytest.mark.parametrize("raw, words", [("regression", "kind 'regression'"), ({"kind": "detector", "box_format": "yxyx"},
                                        "box_format"), ({"kind": "causal_lm", "vocab": 3}, "unknown key")])
def test_a_wrong_task_is_refused_with_its_reason(raw, words):
    with pytest.raises(ValueError, match=words):
        Task.of(raw)


def test_the_matrix_names_a_wrong_task_in_one_line(tmp_path):
    from harness.matrix import load
    from harness.shared.errors import UserError

    from tests.conftest import matrix_text

    path = tmp_path / "m.toml"
    path.write_text(matrix_text("3.3.1", {"lm": "tests.factories:causal_lm"}, tasks={"lm": '"translation"'}))
    with pytest.raises(UserError) as caught:
        load(path)
    assert "models.lm.task" in str(caught.value) and "\n" not in str(caught.value)
