"""ONNX Runtime writes its optimized model in another node order on every run: the op digest
follows the graph, not the file's order."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from harness.runtimes.paddle2onnx.convert import graph_evidence  # noqa: E402


def _graph(order, second="Relu"):
    nodes = {"a": helper.make_node("Conv", ["x", "w"], ["c"]), "b": helper.make_node(second, ["c"], ["r"]),
             "c": helper.make_node("Sigmoid", ["c"], ["s"]), "d": helper.make_node("Add", ["r", "s"], ["y"])}
    graph = helper.make_graph([nodes[k] for k in order], "g", [], [])
    return helper.make_model(graph)


def test_the_digest_follows_the_graph_not_the_file_order():
    digests = {graph_evidence(_graph(order))["op_sequence_sha1"] for order in ("abcd", "acbd", "dcba", "cadb")}
    assert len(digests) == 1
    assert graph_evidence(_graph("abcd", second="Tanh"))["op_sequence_sha1"] not in digests
