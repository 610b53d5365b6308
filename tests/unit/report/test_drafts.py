"""Issue drafts a maintainer can file: a title cut at a word, naming the op and the culprit pass;
the change to try; where the cause was met (pure logic over records)."""

from __future__ import annotations

from harness.report.drafts import draft, title
from harness.report.model import Diagnosis

from tests.conftest import as_record

MESSAGE = ("NotImplementedError: (Unimplemented) ConvertPirAttribute2RuntimeAttribute not support "
           "[pir::ArrayAttribute<pir::DoubleAttribute>] (at /paddle/paddle/fluid/framework/new_executor/"
           "instruction/onednn/onednn_instruction.cc:116)")


def test_a_title_is_cut_at_a_word_and_names_the_op_and_the_culprit_pass():
    said = title("cpu_onednn_fp32", "pd_op.bilinear_interp", MESSAGE, ["onednn_placement_pass"], "3.3.1")
    assert said.startswith("# [cpu_onednn_fp32] pd_op.bilinear_interp raises NotImplementedError:")
    assert said.endswith(" under onednn_placement_pass (Paddle 3.3.1)")
    words = said.split(" raises ", 1)[1].split(" under ")[0]
    assert words.endswith(" …") and "DoubleA" not in words and "/paddle/" not in said
    assert all(part in MESSAGE for part in words[:-2].split())  # whole words of Paddle's, none cut
    bare = title("cpu_onednn_fp32", "the model", "predictor.run() raised RuntimeError: std::exception under "
                 "onednn_fp32", [], "3.3.1")
    assert "fails: predictor.run() raised" in bare and "raises predictor.run()" not in bare
    assert title("cpu_fp32", "conv", "", [], "3.3.1") == "# [cpu_fp32] conv gives different numbers (Paddle 3.3.1)"


def test_a_draft_names_the_change_to_try_and_every_cell_the_cause_was_met_in(tmp_path):
    script = tmp_path / "repro.py"
    script.write_text("print('x')\n")
    record = as_record({
        "id": "cpu_onednn_fp32/3.3.1/normal/interp", "paddle": {"version": "3.3.1", "commit": "abc"},
        "stages": [{"name": "onednn_fp32", "status": "error", "message": MESSAGE, "lever": "enable_mkldnn()"}],
        "verdict": {"status": "error", "first_failing_stage": "onednn_fp32", "message": MESSAGE},
        "analysis": {"bisect": {"status": "pass", "stage": "onednn_fp32", "kind": "passes",
                                "culprits": ["onednn_placement_pass"]},
                     "reduce": {"status": "pass", "stage": "onednn_fp32", "op": "pd_op.bilinear_interp",
                                "op_call": "pd_op.bilinear_interp(...)"}}})
    found = Diagnosis(stage="onednn_fp32", layer="decoder (Upsample)", op="pd_op.bilinear_interp", script=str(script))
    cells = ["cpu_onednn_fp32/3.3.1/normal/interp", "cpu_onednn_bf16/3.3.1/normal/interp"]
    text = draft(record, found, MESSAGE, "error", None, cells)
    assert 'config.delete_pass("onednn_placement_pass")' in text and "not yet verified" in text
    assert "**Met in** 2 cells: `cpu_onednn_fp32/3.3.1/normal/interp`, `cpu_onednn_bf16/3.3.1/normal/interp`" in text
    assert str(tmp_path) not in text  # names relative to the draft's folder: no path of this machine


def test_a_draft_names_a_file_the_runtime_read_from_the_run_folder(tmp_path):
    """ONNX Runtime's words name the file it could not load by this machine's absolute path: the draft,
    meant to be filed, names it from the run folder (as it names the reproducer), the words otherwise as said."""
    from harness.report.drafts import write_all
    from harness.report.model import RunModel

    run = tmp_path / "results" / "zoo"
    cell = "cpu_ort_fp32/2.6.2/normal/seg"
    folder = run / cell / "reproducer"
    folder.mkdir(parents=True)
    (folder / "repro.py").write_text("print('x')\n")
    said = f"Fail: Load model from {run}/{cell}/export/model.onnx failed:Node (AveragePool.4) strides"
    record = as_record({
        "id": cell, "paddle": {"version": "2.6.2", "commit": "abc"},
        "stages": [{"name": "ort_convert", "status": "error", "message": said}],
        "verdict": {"status": "error", "first_failing_stage": "ort_convert", "message": said},
        "analysis": {"reproducer": {"status": "pass", "stage": "ort_convert", "verified": True,
                                    "script": f"{cell}/reproducer/repro.py", "folder": f"{cell}/reproducer"}}},
        run=run)
    written = write_all(RunModel([record]))
    assert written == [folder / "issue.md"], written
    text = written[0].read_text()
    assert f"Load model from {cell}/export/model.onnx failed:Node (AveragePool.4)" in text and str(tmp_path) not in text
