"""A runtime's failure on a converted file whose conversion depends on memory is that conversion's
cause: the conversion's own check runs before the runtime's error is said (PaddleTS SCINet under
OpenVINO: "Conversion is failed for: Conv-10, Pad-10" on a Pad value paddle2onnx read from memory it
never wrote, said apart and NOT verified, where the next stage said the memory)."""

import pytest

from harness.cell.base.runtime import Session


class _Refusing(Session):
    """A session whose runtime refuses what it was given."""

    def input_names(self):
        return ["x"]

    def run(self, feeds):
        raise RuntimeError("Conversion is failed for: Conv-10, Pad-10")

    def run_with_evidence(self, feeds):
        return (*self.run_settled(feeds), {})


class _OfMemory(Exception):
    pass


def _check(differs: bool):
    def settle():
        if differs:
            raise _OfMemory("paddle2onnx's output depends on memory it never wrote")
    return settle


def test_the_conversion_s_check_is_said_before_the_runtime_s_error():
    with pytest.raises(_OfMemory):
        _Refusing({}, settle=_check(True)).run_settled({})
    with pytest.raises(RuntimeError, match="Conversion is failed"):  # a conversion that holds: the runtime's words
        _Refusing({}, settle=_check(False)).run_settled({})
    with pytest.raises(RuntimeError, match="Conversion is failed"):  # nothing converted: nothing to check
        _Refusing({}).run_settled({})
