"""Whose failure it is, by where it was raised: a call into Paddle, a runtime or a converter that
raises — whatever its type, whatever its words, none at all — is theirs; the harness's own logic
around it is the harness's. Real exceptions with real tracebacks, no Paddle needed."""

from __future__ import annotations

import pytest

from harness.shared.causes import paddle_message, raised_status, stage_cause
from harness.shared.errors import HarnessFailure, calling, called, harness_made
from harness.shared.vocab import Status


def _raise_in_harness_frame(exc: BaseException) -> None:
    raise exc  # this file's frame stands for the harness's line that calls a C++ extension


def _caught(fn) -> BaseException:
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        return exc
    raise AssertionError("nothing raised")


def test_a_wordless_exception_from_a_marked_call_is_theirs_and_named_by_the_call_and_stage():
    def run():
        with calling("predictor.run()"):
            _raise_in_harness_frame(RuntimeError("std::exception"))

    exc = _caught(run)
    assert type(exc) is RuntimeError and str(exc) == "std::exception"  # unchanged for whoever reads it
    assert called(exc) == "predictor.run()"
    assert harness_made(exc) is None
    assert paddle_message(exc) == "predictor.run() raised RuntimeError: std::exception"
    status, message = raised_status(exc, under="onednn_fp32")
    assert status is Status.ERROR
    assert message == "predictor.run() raised RuntimeError: std::exception under onednn_fp32"
    # What a reproducer running the call alone prints is what a trial and a script are matched on.
    assert stage_cause(message) == "std::exception"
    # Raised at a second shape while the primary passed within bf16's floor: the ladder's message
    # (shape first, the primary's note after) has the same cause its reproducer prints.
    from harness.shared.causes import PRIMARY_NOTE

    at_shape = f"at image=2x3x97x97: {message}{PRIMARY_NOTE}within what bf16 explains (output: max abs 8.58)"
    assert stage_cause(at_shape) == "std::exception"


def test_the_same_words_raised_by_the_harness_itself_stay_the_harness_s():
    exc = _caught(lambda: _raise_in_harness_frame(RuntimeError("std::exception")))
    assert called(exc) is None
    # tests/ is not harness code; named among the harness's own roots (as a reduction's generated
    # pieces are), its frame is the harness's.
    from pathlib import Path

    status, message = raised_status(exc, [Path(__file__).parent], under="onednn_fp32")
    assert status is Status.UNTESTABLE and message.startswith("the harness raised RuntimeError: std::exception at ")


def test_an_empty_message_is_named_and_matched_by_its_type():
    def build():
        with calling("paddle.inference.create_predictor()"):
            _raise_in_harness_frame(RuntimeError())

    exc = _caught(build)
    status, message = raised_status(exc, under="ir")
    assert (status, message) == (Status.ERROR, "paddle.inference.create_predictor() raised RuntimeError with no "
                                               "message under ir")
    assert stage_cause(message) == "RuntimeError"


def test_paddle_s_own_words_are_kept_as_they_are():
    def run():
        with calling("predictor.run()"):
            raise ValueError("(InvalidArgument) Broadcast dimension mismatch. Operands could not be broadcast.")

    status, message = raised_status(_caught(run), under="onednn_fp32")
    assert status is Status.ERROR and message.startswith("ValueError: (InvalidArgument) Broadcast")
    assert "under" not in message


def test_the_innermost_call_names_it_and_the_harness_s_own_failures_pass_unmarked():
    def nested():
        with calling("paddle.jit.save()"):
            with calling("paddle.jit.to_static()"):
                raise RuntimeError("")

    assert called(_caught(nested)) == "paddle.jit.to_static()"

    def harness_own():
        with calling("predictor.run()"):
            raise HarnessFailure("the cell's inputs are gone")

    exc = _caught(harness_own)
    assert called(exc) is None and raised_status(exc)[0] is Status.UNTESTABLE


def test_an_exception_that_takes_no_attribute_becomes_a_finding_in_the_call_s_words():
    class Slotted(Exception):
        __slots__ = ()

        def __setattr__(self, name, value):
            raise AttributeError(name)

    def run():
        with calling("CompiledModel()"):
            raise Slotted("boom")

    exc = _caught(run)
    assert raised_status(exc) == (Status.ERROR, "CompiledModel() raised Slotted: boom")


@pytest.mark.parametrize("text", ["std::exception", "bad_alloc", ""])
def test_a_paddle_category_in_a_short_message_is_words_enough(text):
    def run():
        with calling("predictor.run()"):
            raise RuntimeError(f"(Fatal) {text}".strip())

    assert "predictor.run() raised" not in paddle_message(_caught(run))


def test_the_model_s_place_is_read_from_paddle_s_transformed_code_block():
    from harness.shared.causes import traced_at

    text = ("In transformed code:\n\n"
            '    File "/root/x/venv/lib/python3.11/site-packages/suite/model.py", line 10, in forward\n'
            '    File "/root/x/venv/lib/python3.11/site-packages/suite/config.py", line 5, in get\n'
            '    File "/root/x/venv/lib/python3.11/site-packages/suite/config.py", line 5, in get\n'
            '    File "/root/x/venv/lib/python3.11/site-packages/paddle/utils/gast/astn.py", line 54, in generic_visit\n'
            '    File "/usr/lib/python3.11/ast.py", line 418, in visit\n'
            "    RecursionError: maximum recursion depth exceeded")
    assert traced_at(RecursionError(text)) == ["suite/model.py:10 in forward", "suite/config.py:5 in get (repeated)"]
    assert traced_at(RuntimeError("plain message")) == []


def test_an_error_dy2static_reraises_is_said_with_its_own_line_not_its_module_path():
    class EnforceNotMet(Exception):
        pass

    exc = EnforceNotMet("In transformed code:\n\n    File \"m.py\", line 3, in forward\n        for e in range(4):\n\n"
                        "    paddle.base.libpaddle.EnforceNotMet: () Does not support rank inconsistency: rank1=2, rank2=1\n"
                        "  [Hint: Expected dim1.size() == dim2.size() == true]")
    assert raised_status(exc)[1] == "EnforceNotMet: () Does not support rank inconsistency: rank1=2, rank2=1"


def test_a_c_function_whose_python_callee_raised_is_said_with_the_callee_s_words():
    # Paddle 3.3.1 with numpy 2 (PaddleSpeech's make_pad_mask): ``expand([paddle.shape(lengths), n])``
    # calls ``Tensor.__index__`` on a one-element 1-D tensor, which numpy 2 refuses; the C function's
    # own words only say that its callee raised.
    def expand():
        try:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        except TypeError as inner:
            raise SystemError("<built-in function expand> returned a result with an exception set") from inner

    assert paddle_message(_caught(expand)) == ("TypeError: only 0-dimensional arrays can be converted to Python "
                                               "scalars (in <built-in function expand>)")
    bare = SystemError("<built-in function expand> returned a result with an exception set")
    assert paddle_message(bare) == "SystemError: <built-in function expand> returned a result with an exception set"
