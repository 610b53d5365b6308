"""Which inputs a traced program computes no output from: found before saving, so a piece makes
them inside instead of Paddle refusing the save. Real Paddle, in process."""

from __future__ import annotations

import paddle

from harness.cell.paddle_api.export import export_reading_all


class ReadsSome(paddle.nn.Layer):
    """``x`` feeds the output; ``c`` only a control-flow condition; ``pos`` only an op no output
    needs; ``table`` only for its dtype; ``mask`` not at all."""

    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(4, 4)

    def forward(self, x, pos, c, table, mask):
        dead = pos * 2  # noqa: F841 - read by an op whose result nothing needs
        if c.sum() > 0:
            y = self.fc(x)
        else:
            y = self.fc(x) * 2
        return [y + paddle.zeros([1], dtype=table.dtype)]


SPECS = [paddle.static.InputSpec([2, 4], "float32", "in0"), paddle.static.InputSpec([2], "int64", "in1"),
         paddle.static.InputSpec([2], "float32", "in2"), paddle.static.InputSpec([2, 4], "float32", "in3"),
         paddle.static.InputSpec([2, 2], "bool", "in4")]


def test_inputs_no_output_is_computed_from_are_named_and_nothing_is_saved(tmp_path):
    layer = ReadsSome()
    layer.eval()
    assert export_reading_all(layer, SPECS, tmp_path / "model") == {1, 3, 4}
    assert not list(tmp_path.iterdir())


def test_a_program_involving_every_input_is_saved(tmp_path):
    layer = ReadsSome()
    layer.eval()

    class Reads(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.inner = layer

        def forward(self, x, c):
            return self.inner(x, x[:, 0].astype("int64"), c, x, x > 0)

    reads = Reads()
    reads.eval()
    files = export_reading_all(reads, [SPECS[0], SPECS[2]], tmp_path / "model")
    assert isinstance(files, dict) and files["program"].startswith(str(tmp_path))
