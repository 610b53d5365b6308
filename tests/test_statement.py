"""Export errors down to the statement (real Paddle, real processes): a dy2static error raised deep in
the model's source is handed over as the function it was raised in, called alone with what the trace
passed it — each traced value an input of its shape and dtype — in a script of Paddle alone."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from harness.cell.handover import statement
from harness.cell.handover.inline import StandaloneWriter, foreign_imports
from harness.shared.releases import RunOutcome, outcome

from .conftest import load_record, run_harness

WORDS = "bool(Tensor) is not supported in static graph mode"
REPORT = '''In transformed code:
    File "/env/site-packages/suite/model.py", line 40, in forward
        mask = helper(x.shape[:2])
    File "/env/site-packages/suite/utils.py", line 12, in helper
        return any(v > 0 for v in [t])
    File "/env/site-packages/suite/utils.py", line 12, in <genexpr>
        return any(v > 0 for v in [t])
    File "/env/site-packages/paddle/pir/math_op_patch.py", line 950, in _bool_
        raise TypeError(textwrap.dedent(error_msg))
'''


def test_the_raising_place_is_the_innermost_frame_of_the_models_files():
    place = statement.raising_place(REPORT, ("/env/site-packages/paddle/",))
    assert place == statement.Place("/env/site-packages/suite/utils.py", 12, "helper")  # not the generator, not Paddle's
    assert statement.raising_place("TypeError: bool(Tensor) is not supported", ()) is None  # last words only
    rewritten = REPORT.replace('File "/env/site-packages/suite/utils.py", line 12, in helper',
                               'File "/root/.cache/paddle/to_static_tmp/7/helper_x1.py", line 63, in helper')
    place = statement.raising_place(rewritten, ("/env/site-packages/paddle/",))
    assert place.function == "forward"  # Paddle's rewrite of a function is not the model's file


def test_a_method_of_an_instance_its_class_cannot_rebuild_is_called_on_its_plain_attributes(tmp_path):
    """A suite's model built by ``from_config`` has no recorded constructor call: the method is called
    on a namespace of the instance's configuration — what a statement reads of ``self``."""
    import paddle

    from tests.factories import BandedAttention

    layer = BandedAttention()  # built outside any factory: its construction was not recorded
    place = statement.Place(BandedAttention.forward.__code__.co_filename, 0, "forward")
    owner = statement.Owner(BandedAttention.forward, BandedAttention, bound=True)
    text = statement.script(paddle, place, owner, {"self": layer, "x": statement.Traced((-1, -1, 8), "float32")},
                            StandaloneWriter(paddle))
    assert "types.SimpleNamespace(training=True, window=2)" in text and "BandedAttention.forward(" in text, text
    assert "paddle.static.InputSpec([None, None, 8], 'float32', 'in0')" in text and foreign_imports(text) == []


def test_an_export_raising_in_a_helper_is_handed_over_as_that_helper_traced_alone(write_matrix, tmp_path, paddle_version):
    if not paddle_version.startswith("3."):
        pytest.skip("Paddle 2.6 traces Python's max of a traced value without raising")
    matrix = write_matrix({"banded": "tests.factories:banded_attention"}, inputs={"banded": "x = { shape = [2, 4, 8] }"})
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(tmp_path / "r"))
    record = load_record(tmp_path / "r" / "default", f"cpu_fp32/{paddle_version}/normal/banded")
    assert record["setup"]["phase"] == "export" and WORDS in record["setup"]["message"], record["setup"]
    source = record["analysis"]["reproducer"]["source"]
    alone = source["standalone"]
    assert source["verified"] is True and alone["program"] == "inlined", source
    assert "_banded_mask" in alone["what"] and "statement" in Path(alone["script"]).parent.name, alone
    script = Path(alone["script"])
    text = script.read_text()
    assert foreign_imports(text) == [] and "def _banded_mask(" in text and "class BandedAttention" not in text, text
    assert "paddle.static.InputSpec([], 'int64', 'in0')" in text, text  # the traced batch and sequence lengths
    assert len(text.splitlines()) <= 45, len(text.splitlines())
    ran = subprocess.run([sys.executable, script.name], cwd=script.parent, capture_output=True, text=True, timeout=600)
    said, line = outcome(ran.returncode, ran.stdout + ran.stderr, source["cause_words"], False)
    assert said is RunOutcome.REPRODUCED, (line, (ran.stdout + ran.stderr)[-2000:])
