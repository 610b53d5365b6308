"""Which change of a cause is tried where (``running/across.py``): a change another cell's own search
already tried is that cell's answer, nothing run; one in the model's code or another runtime's config is
said as not tried, with why. (The reproducer run itself: ``tests/test_crossversion.py``.)"""

from __future__ import annotations

from harness.report.workarounds import CellWorkaround
from harness.running.across import tried_on
from harness.shared.record_model import AnalysisEntry


def _cell(name, entry):
    return CellWorkaround(name, "ir", "the cause", AnalysisEntry.from_dict("workaround", entry), None, "key")


DELETE = {"verified": True, "change": "passes: switch off constant_folding_pass",
          "change_lines": ["config.delete_pass('constant_folding_pass')"], "config": {"runtime": "paddle_inference"},
          "tried": [], "status": "pass"}


def test_a_change_the_other_cell_tried_itself_is_its_own_answer_and_nothing_runs():
    other = _cell("b", {"verified": False, "status": "pass", "tried": [
        {"change": DELETE["change"], "verdicts": {"0": "fail"}}]})
    ran = []
    found = tried_on([_cell("a", DELETE), other], {}, lambda record: ran.append(record), print)
    assert [t.words for t in found] == ["tried in its own search: shape 0: fail"] and ran == []
    assert found[0].line().startswith("`config.delete_pass('constant_folding_pass')` (verified on `a`) on `b`")


def test_the_same_change_verified_in_both_cells_needs_no_trial():
    assert tried_on([_cell("a", DELETE), _cell("b", DELETE)], {}, lambda record: None, print) == []


def test_a_model_side_change_and_another_runtimes_config_are_said_as_not_tried():
    model_side = dict(DELETE, change="in the model's code ...", change_lines=["f(...) → g(...)"], model_side={"api": "f"})
    ort = dict(DELETE, change="ORT: level basic", change_lines=["options.x = 1"], config={"runtime": "onnxruntime"})
    other = _cell("b", {"verified": False, "status": "pass", "tried": []})
    found = tried_on([_cell("a", model_side), _cell("c", ort), other], {}, lambda record: None, print)
    words = {(t.source, t.cell): t.words for t in found}
    assert words[("a", "b")].startswith("not tried: a change to the model's code")
    assert words[("c", "b")].startswith("not tried: only Paddle Inference Config calls")


def test_a_change_many_cells_verified_is_tried_once_on_each_other_cell_and_says_how_many_verified_it():
    other = _cell("c", {"verified": False, "status": "pass", "tried": []})
    found = tried_on([_cell("a", DELETE), _cell("b", DELETE), other], {}, lambda record: None, print)
    assert [(t.source, t.cell) for t in found] == [("a", "c")]
    assert "(verified on `a` and 1 other cell) on `c`" in found[0].line()


def test_a_kept_answer_is_taken_only_for_the_very_script_and_change_that_produced_it(tmp_path):
    from harness.running.across import ANSWER, change_key, tried_earlier, variant

    script = tmp_path / "repro" / "repro.py"
    script.parent.mkdir()
    script.write_text("config = make()\npredictor = create_predictor(config)\n")
    lines = DELETE["change_lines"]
    assert tried_earlier(script, lines) is None  # never run
    patched = variant(script, lines, script.parent / "across" / change_key(lines))
    assert patched.read_text().index("delete_pass") < patched.read_text().index("create_predictor")
    (patched.parent / ANSWER).write_text("does not fix its reproducer\n")
    assert tried_earlier(script, lines) == "does not fix its reproducer"
    assert tried_earlier(script, ["config.switch_ir_optim(False)"]) is None  # another change: its own folder
    script.write_text("config = make(1)\npredictor = create_predictor(config)\n")
    assert tried_earlier(script, lines) is None  # the reproducer changed since: asked again
