"""Op isolation beyond one op, on real Paddle: an ``if`` on a Parameter (``to_static`` writes a
``pd_op.if`` whose condition ``constant_folding_pass`` folds; Paddle 3.x raises "The size 0 of
regions must be equal to 2") is placed at the compare, the ``if`` and the op of its branch,
written as the smallest layer that makes the same program, with the model's parameters kept as
parameters; its reproducer is verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import load_record, matrix_text, run_harness, stages_by_name


def test_an_if_on_a_parameter_is_isolated_as_the_branch_the_model_took(tmp_path):
    from harness.shared.spec import release
    from .conftest import installed_paddle

    version = installed_paddle()
    if release(version) < (3, 0, 0):
        pytest.skip(f"a one-op program is a PIR program (Paddle >= 3.0; this environment has {version})")
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(version, {"ifp": "tests.factories:if_on_parameter"}))
    results = tmp_path / "r"
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(results))
    record = load_record(results / "default", f"cpu_fp32/{version}/normal/ifp")
    ir = stages_by_name(record)["ir"]
    assert ir["status"] == "error" and "regions" in ir["message"], proc.stdout[-3000:]
    reduce = record["analysis"]["reduce"]
    assert reduce["outcome"] == "isolated", reduce.get("isolation")
    assert reduce["ops"] == ["pd_op.greater_than", "pd_op.if", "pd_op.multiply"], reduce["isolation"]["tried"]
    assert reduce["isolation"]["rules"]["branches"] == 1
    # Neither op alone reproduces (asked alone or side by side with the others): the failure is the if.
    before = [t for t in reduce["isolation"]["tried"] if "pd_op.if" not in t["op"]]
    asked = " ".join(t["op"] for t in before)
    assert "pd_op.greater_than" in asked and "pd_op.multiply" in asked, before
    assert not any(t["reproduces"] for t in before), before
    reproducer = record["analysis"]["reproducer"]
    assert reproducer["verified"], reproducer
    text = Path(reproducer["script"]).read_text()  # load_record resolved it against the run folder
    assert "if r0:" in text and "register_buffer('p0'" in text and "held.npz" in text
    # The parameters it holds are read from the file its export wrote beside the program: a runtime handed
    # none (paddle2onnx) writes a graph that reads a name nothing defines (PP-LCNet under ORT, the zoo).
    assert "'op/model.pdiparams'" in text, text
