"""Pure logic of the reports and the shared vocabulary, without Paddle or a run: the renderers
over a RunModel of hand-made records, causes counted once, the naming rules, the verdict rules."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.report.junit import junit_xml
from harness.report.model import RunModel
from harness.report.tables import markdown_report, short_summary, terminal_table
from harness.running.runner import verdict_of
from harness.shared.causes import cause_of, group
from harness.shared.record_model import StageRecord
from harness.shared.records import Unreadable
from harness.shared.spec import OUTPUTS
from harness.shared.vocab import (Reference, Stage, Status, backend_stage_name, cell_id, session_name,
                                  verdict_status)

from .conftest import as_record

DATA = Path(__file__).parent / "data"


def test_naming_rules_are_written_once():
    assert session_name("cpu", "native", "fp32") == "cpu_fp32"
    assert session_name("gpu", "trt", "fp16") == "gpu_trt_fp16"
    assert backend_stage_name("cpu", "onednn", "bf16") == "onednn_bf16"
    assert backend_stage_name("gpu", "native", "fp16") == "gpu_fp16"
    assert cell_id("cpu_fp32", "3.3.1", "normal", "resnet18") == "cpu_fp32/3.3.1/normal/resnet18"
    # str-enums read back from records and compare with the words
    assert Reference("baseline") is Reference.BASELINE and Reference.DYGRAPH == "dygraph"
    assert Stage.BASELINE == "baseline" and Status.of("no such word") is Status.CRASH


def test_verdict_rules():
    assert verdict_status([Status.PASS, Status.FAIL, Status.ERROR]) is Status.FAIL
    assert verdict_status([Status.PASS, Status.VACUOUS]) is Status.VACUOUS
    assert verdict_status([Status.NOOP, Status.SKIP]) is None
    def stages(*entries):
        return [StageRecord.from_dict(e) for e in entries]

    setup = StageRecord.from_dict({"status": "pass"}, "setup")
    passed = stages({"name": "baseline", "status": "pass"}, {"name": "ir", "status": "noop"})
    assert verdict_of(setup, passed).status is Status.PASS
    only_noop = verdict_of(setup, stages({"name": "ir", "status": "noop", "message": "same program"}))
    assert only_noop.status is Status.SKIP and only_noop.message == "same program"
    failed = verdict_of(setup, stages({"name": "baseline", "status": "pass"},
                                      {"name": "ir", "status": "error", "message": "E"}))
    assert failed.status is Status.ERROR and failed.first_failing_stage == "ir"
    errored = StageRecord.from_dict({"status": "error", "message": "boom"}, "setup")
    assert verdict_of(errored, []).first_failing_stage == "setup"


def test_causes_are_counted_once_whatever_varies_between_occurrences():
    a = "RuntimeError: (NotFound) Cannot find constant_folding@_179544827597885305211 in scope at 0x55aa/x/y.cc:12"
    b = "RuntimeError: (NotFound) Cannot find constant_folding@_998877665544332211 in scope at 0x77bb/z/w.cc:99"
    assert cause_of(a) == cause_of(b)
    causes = group([("error", a, "c1"), ("error", b, "c2"), ("error", b, "c2"), ("crash", "worker died", "c3")])
    assert [(c.kind, c.count, c.places) for c in causes] == [("error", 3, ["c1", "c2"]), ("crash", 1, ["c3"])]


def _record(model, stages, verdict, setup=None):
    return as_record({"id": f"cpu_fp32/3.3.1/normal/{model}",
            "cell": {"session": {"name": "cpu_fp32"}, "paddle": "3.3.1", "mode": "normal", "model": {"name": model}},
            "machine": {"cpu": "Test CPU <x>", "flags": ["avx2"], "onednn": {"isa": "avx2", "version": "3.6"},
                        "cores": 2, "usable_cores": 2, "key": "k1"},
            "paddle": {"version": "3.3.1", "commit": "abc"}, "setup": {"status": "pass", **(setup or {})},
            "stages": stages, "verdict": verdict, "analysis": {}})


@pytest.fixture
def model():
    variants = [{"index": 1, "label": "image=1x3x97x97", "status": "skip",
                 "message": "the dygraph model cannot take this shape: ValueError: concat"},
                {"index": 2, "label": "image=1x3x16x16", "status": "pass"}]
    ok = _record("ok", [{"name": "baseline", "status": "pass", "worst": {"max_abs": 1e-6, "status": "pass"}}],
                 {"status": "pass", "first_failing_stage": None}, {"shape_variants": variants})
    bad = _record("bad", [{"name": "baseline", "status": "pass"},
                          {"name": "ir", "status": "error", "message": "ValueError: (InvalidArgument) <script>x</script>"}],
                  {"status": "error", "first_failing_stage": "ir", "message": "ValueError"})
    return RunModel([ok, bad], [], [Unreadable("/r/cpu_fp32/3.3.1/normal/cut.json", "not valid JSON")])


def test_renderers_show_verdicts_causes_machine_and_unreadable_records(model):
    text = terminal_table(model)
    assert "2 cells: 1 error, 1 pass" in text and "[C1]" in text and "FIRST FAILURE" in text
    assert text.count("Machine: Test CPU <x>") == 1 and "isa avx2" in text
    assert "Unreadable records (1;" in text and "cut.json: not valid JSON" in text
    # A shape the dygraph model could not take is said, not dropped.
    assert "Shapes not run: the dygraph model raised there (1):" in text
    assert "cpu_fp32/3.3.1/normal/ok image=1x3x97x97: the dygraph model cannot take this shape" in text
    md = markdown_report(model, "T")
    assert md.startswith("# T") and "## Unreadable records" in md and "| ok · normal" in md
    summary = short_summary(model, "S")
    assert "cut.json" in summary and "Machine: Test CPU" in summary


def test_junit_has_a_case_per_stage_and_an_error_per_unreadable_record(model):
    xmlschema = pytest.importorskip("xmlschema")
    text = junit_xml(model)
    xmlschema.XMLSchema(str(DATA / "junit.xsd")).validate(text)
    root = ET.fromstring(text)
    assert root.get("tests") == "4" and root.get("errors") == "2"
    unreadable = [c for c in root.iter("testcase") if c.get("classname") == "unreadable"]
    assert [c.get("name") for c in unreadable] == ["/r/cpu_fp32/3.3.1/normal/cut.json"]


def test_outputs_file_round_trip(tmp_path):
    import numpy as np

    arrays = [np.arange(3, dtype="float32"), np.ones((2, 2), dtype="int64")]
    OUTPUTS.save(tmp_path / "o.npz", arrays)
    back = OUTPUTS.load(tmp_path / "o.npz")
    assert len(back) == 2 and all(np.array_equal(a, b) for a, b in zip(arrays, back))
    assert len(OUTPUTS.load(tmp_path / "o.npz", 1)) == 1


def test_an_ops_error_inside_a_program_is_named_by_the_ops_words_not_by_the_user_code_header():
    from harness.shared.causes import paddle_message

    raised = ValueError("In user code:\n\n\n    InvalidArgumentError: Input dimension size should be equal to 5, "
                        "but received dimension size is 4.\n      [Hint: Expected arity(dims) == D]")
    assert paddle_message(raised) == ("ValueError: InvalidArgumentError: Input dimension size should be equal to 5, "
                                      "but received dimension size is 4.")
    assert paddle_message(ValueError("plain message")) == "ValueError: plain message"


def test_a_dy2static_error_is_named_by_its_own_line_not_by_the_transformed_code_header():
    """Paddle 3.3.1, jit.save under pir_utils.OldIrGuard on a PaddleClas MobileNetV3 (its words)."""
    from harness.shared.causes import paddle_message

    raised = TypeError('In transformed code:\n\n    File "mobilenet_v3.py", line 228, in forward\n\tx = self.blocks(x)\n\n'
                       "    TypeError: (InvalidType) multiply(): argument (position 1) must be Value, but got Variable "
                       "(at /paddle/paddle/fluid/pybind/eager_utils.cc:2308)")
    assert paddle_message(raised) == ("TypeError: (InvalidType) multiply(): argument (position 1) must be Value, "
                                      "but got Variable (at /paddle/paddle/fluid/pybind/eager_utils.cc:2308)")


def test_a_dy2static_exception_under_a_quoted_raise_is_named_by_its_last_line():
    """Paddle 3.3.1, jit.save of PaddleX's SLANet (its decode loop): the code lines quote
    ``raise Dygraph2StaticException(``; the words are the exception's own last line."""
    from harness.shared.causes import paddle_message

    class Dygraph2StaticException(Exception):
        pass

    raised = Dygraph2StaticException(
        'In transformed code:\n\n    File "zoo_documents.py", line 134, in forward\n'
        '        return self.head(self.backbone(image))\n'
        '    File "convert_operators.py", line 261, in _run_py_while\n\traise Dygraph2StaticException(\n\n'
        "    paddle.jit.dy2static.utils.Dygraph2StaticException: python while pred change from bool to variable.")
    assert paddle_message(raised) == "Dygraph2StaticException: python while pred change from bool to variable."
