"""``harness.shared.notes``: one line per stage and analysis, in the words of the runtime that ran it."""

from __future__ import annotations

from harness.shared.notes import analysis_note, evidence_note, stage_note
from harness.shared.record_model import AnalysisEntry, StageRecord


def _stage(**data) -> StageRecord:
    return StageRecord.from_dict({"name": "ir", "status": "pass", **data})


def test_a_stage_note_is_said_by_its_runtimes_descriptor():
    paddle = _stage(runtime="paddle_inference", evidence={"passes": ["a", "b"], "ops": 7})
    ort = _stage(runtime="onnxruntime", evidence={"opset": 13, "converted": {"nodes": 40}, "ops": 12,
                                                  "providers": ["CPUExecutionProvider"]})
    openvino = _stage(runtime="openvino", evidence={"runtime_precisions": {"bf16": 3, "f32": 2}, "ops": 5,
                                                    "config_read_back": {"INFERENCE_PRECISION_HINT": "bf16"}})
    assert evidence_note(paddle) == "2 passes, 7 ops"
    assert evidence_note(ort) == "opset 13, 40 → 12 nodes, CPU"
    assert evidence_note(openvino) == "hint bf16; 5 nodes: 3 bf16, 2 f32"
    # A record without its runtime (or of an unknown one) reads as Paddle's.
    assert evidence_note(_stage(evidence={"passes": [], "ops": 1})) == "0 passes, 1 ops"
    assert evidence_note(_stage()) == ""


def test_a_culprit_search_reads_with_its_search_spaces_words():
    found = {"stage": "ort_fp32", "status": "pass", "kind": "ort_optimizers", "culprits": ["ConvAddFusion"],
             "builds": 5, "candidates": 9}
    note = analysis_note(AnalysisEntry.from_dict("bisect", found))
    assert note.startswith("ort_fp32: culprit ONNX Runtime optimizers: ConvAddFusion")
    assert "culprit IR passes" in analysis_note(AnalysisEntry.from_dict("bisect", dict(found, kind="passes")))


def test_a_failed_stage_says_which_output_and_by_how_much():
    stage = _stage(status="fail", worst={"output": "logits", "mismatched": 3, "total": 10, "atol": 1e-4,
                                         "rtol": 1e-4, "status": "fail"})
    assert stage_note(stage) == "logits: 3/10 out of atol 0.0001 rtol 0.0001"
