"""The call a model's code made into Paddle when building it raised (``cell/handover/call_site.py``):
found on the model's innermost line, re-evaluated in its frame, Paddle's class or function named."""

import importlib.util
import sys

import paddle
import pytest

from harness.cell.handover.call_site import paddle_call

SUITE = '''
import paddle

WIDTH = 4


class Conv(paddle.nn.Conv2D):
    """As PaddleSpeech's ``align.Conv2D``: every argument by position, to a Paddle that takes fewer."""

    def __init__(self, cin, cout):
        super(Conv, self).__init__(cin, cout, 3, 1, 0, 1, 1, "zeros", None, None, "NCHW", "one too many")


class Plain(paddle.nn.Linear):
    def __init__(self):
        super().__init__(WIDTH, WIDTH, None, None, None, "extra")


def helper(x):
    return paddle.reshape(x, [3, -7])
'''


@pytest.fixture()
def suite(tmp_path):
    path = tmp_path / "planted_build_suite.py"
    path.write_text(SUITE)
    spec = importlib.util.spec_from_file_location("planted_build_suite", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["planted_build_suite"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("planted_build_suite", None)


def _raised(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test reads what was raised
        return exc
    raise AssertionError("it did not raise")


def test_a_constructor_s_call_into_paddle_is_its_class_with_the_values_passed(suite):
    call = paddle_call(_raised(lambda: suite.Conv(1, 8)), paddle)
    assert call is not None and call.target is paddle.nn.Conv2D, call
    assert call.args == [1, 8, 3, 1, 0, 1, 1, "zeros", None, None, "NCHW", "one too many"] and call.kwargs == {}
    assert call.where.endswith("planted_build_suite.py:11"), call.where
    # ``super()`` with no arguments: its class and instance read from the frame.
    plain = paddle_call(_raised(suite.Plain), paddle)
    assert plain is not None and plain.target is paddle.nn.Linear and plain.args == [4, 4, None, None, None, "extra"]


def test_a_paddle_function_raising_inside_paddle_is_named_by_its_public_call(suite):
    x = paddle.ones([2, 5])
    call = paddle_call(_raised(lambda: suite.helper(x)), paddle)
    assert call is not None and call.target is paddle.reshape and call.args[1] == [3, -7], call
    # An error raised by the model's own code, on a line calling nothing of Paddle's: no call.
    assert paddle_call(_raised(lambda: int("x")), paddle) is None
