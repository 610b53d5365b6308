"""Which tests of a tensor's type the reading names (``cell/type_tests.py``): the ones ``to_static``
answers otherwise, on lines the forward executed (the trace itself runs real Paddle in
``tests/test_export_loss.py``)."""

from harness.cell.explain.type_tests import tensor_type_tests


def test_isinstance_and_type_comparisons_on_executed_lines_are_named_and_nothing_else(tmp_path):
    source = tmp_path / "model.py"
    source.write_text("\n".join([
        "import paddle",
        "def forward(x, mask):",
        "    a = mask.shape[-1] if isinstance(mask, paddle.Tensor) else 0",   # 3: named
        "    b = 1 if type(x) is paddle.Tensor else 2",                       # 4: named
        "    c = 1 if paddle.is_tensor(x) else 2",                            # 5: stays True traced
        "    d = 1 if isinstance(x, (int, Tensor)) else 2",                   # 6: not executed
        "    e = 1 if isinstance(x, float) else 2",                           # 7: not a tensor type
        "    return a, b, c, d, e",
    ]) + "\n", encoding="utf-8")
    found = tensor_type_tests({str(source): {3, 4, 5, 7}})
    assert [f["test"] for f in found] == ["isinstance(mask, paddle.Tensor)", "type(x) is paddle.Tensor"], found
    assert found[0]["at"] == f"{source}:3" and found[1]["line"].startswith("b = 1 if type(x)")
    assert [f["test"] for f in tensor_type_tests({str(source): {6}})] == ["isinstance(x, (int, Tensor))"]
