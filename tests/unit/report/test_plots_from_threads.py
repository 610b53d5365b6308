"""The pool's threads end cells together: their per-tensor plots are drawn at once on the host."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("matplotlib")

from harness.report.tensors import write_plot  # noqa: E402
from harness.shared.tensor_diff import TensorDiff, TensorRow  # noqa: E402
from harness.shared.vocab import Status  # noqa: E402


def test_plots_drawn_from_many_threads_at_once_are_all_written(tmp_path):
    rows = [TensorRow(i, "pd_op.relu", "pd_op.relu", f"t{i}", "name", (1,), (1,), Status.PASS,
                      tol_ratio=10.0 ** (i % 5 - 2), first_divergence=i == 7) for i in range(40)]
    result = TensorDiff(rows, [], 40, 40, 40, atol=1e-5, rtol=1e-5)
    errors = []

    def draw(k: int) -> None:
        try:
            write_plot(tmp_path / f"p{k}.png", result, f"cell {k}: |diff| / tol $x_{k}$")
        except Exception as exc:  # noqa: BLE001 - what a thread raised is the finding
            errors.append(exc)

    threads = [threading.Thread(target=draw, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all((tmp_path / f"p{k}.png").stat().st_size > 1000 for k in range(8))
