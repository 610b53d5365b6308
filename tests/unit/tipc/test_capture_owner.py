"""Whose failure a TIPC capture met: the saved layer's forward (the user's model, Paddle) or the
capture's own code (the harness's). Real Paddle, in process."""

from __future__ import annotations

import json

import paddle

from harness.tipc.hook import capture


class Raising(paddle.nn.Layer):
    def forward(self, x):
        raise RuntimeError("")  # a forward that raises without a word


def _meta(tmp_path, layer, monkeypatch, shapes="{}"):
    monkeypatch.setenv("HARNESS_TIPC_SHAPES", shapes)
    prefix = tmp_path / "saved" / "model"
    paddle.jit.save(paddle.jit.to_static(paddle.nn.Linear(4, 2), full_graph=True,
                                         input_spec=[paddle.static.InputSpec([1, 4], "float32", "x")]), str(prefix))
    capture.capture(layer, str(prefix), [paddle.static.InputSpec([1, 4], "float32", "x")], str(tmp_path / "out"))
    return json.loads(next((tmp_path / "out").rglob("meta.json")).read_text())


def test_the_layer_s_forward_raising_is_the_model_s(tmp_path, monkeypatch):
    meta = _meta(tmp_path, Raising(), monkeypatch)
    assert meta["error"].startswith("RuntimeError") and meta["raised_by"] == "the saved layer's forward"


def test_the_capture_s_own_code_raising_is_the_harness_s(tmp_path, monkeypatch):
    meta = _meta(tmp_path, paddle.nn.Linear(4, 2), monkeypatch, shapes="{not json")
    assert meta["error"].startswith("JSONDecodeError") and meta["raised_by"] is None
