"""The floor's arithmetic (``cell/precision_floor.py``): bf16 rounding as the format rounds, and a
stage's error judged against the floor (the floor itself runs real Paddle in ``tests/test_cells.py``)."""

import numpy as np

from harness.cell.precision.precision_floor import judge, passes_by_floor, rounded
from harness.shared.compare import Tolerance, compare_tol


def test_bf16_rounds_to_the_nearest_representable_value_ties_to_even():
    values = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -7, -2.5, np.inf, -np.inf, np.nan], np.float32)
    got = rounded(values, "bf16")
    # bf16 keeps 7 fraction bits: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 (even: 1), 1 + 3*2^-8
    # halfway between 1 + 2^-7 and 1 + 2^-6 (even: 1 + 2^-6).
    assert got[:5].tolist() == [1.0, 1.0, 1.0 + 2 ** -6, 1.0 + 2 ** -7, -2.5]
    assert np.isposinf(got[5]) and np.isneginf(got[6]) and np.isnan(got[7])
    assert (rounded(got, "bf16")[:5] == got[:5]).all()  # what bf16 holds stays
    assert rounded(np.array([1.0 + 2 ** -12], np.float32), "fp16")[0] == 1.0
    assert rounded(np.array([3, 4], np.int64), "bf16").tolist() == [3, 4]  # integers are not rounded


def test_a_stage_within_k_times_the_floor_passes_and_beyond_fails_with_the_ratio():
    measured = {"format": "bf16", "k": 3.0, "floor": {"0": {"logits": 8.82, "index": 0.0}}}
    within = judge(measured, 0, {"logits": 8.76, "index": 0.0}, {"logits": 1e-4, "index": 1e-4})
    assert within["verdict"] == "within" and within["outputs"]["logits"]["ratio"] == 0.993
    assert within["words"].startswith("within what bf16 explains (logits: max abs 8.76, floor 8.82")
    beyond = judge(measured, 0, {"logits": 30.0, "index": 0.0}, {"logits": 1e-4, "index": 1e-4})
    assert beyond["verdict"] == "beyond" and beyond["words"].startswith("3.4× beyond what bf16 explains (logits")
    # an output the rounding leaves unmoved is held to the fp32 tolerance, not to a floor of zero
    moved = judge(measured, 0, {"logits": 1.0, "index": 1.0}, {"logits": 1e-4, "index": 1e-4})
    assert moved["verdict"] == "beyond" and "index" in moved["words"]
    assert judge(measured, 0, {"logits": 1.0, "index": 5e-5}, {"logits": 1e-4, "index": 1e-4})["verdict"] == "within"
    assert judge(measured, 1, {"logits": 1.0}, {"logits": 1e-4}) is None  # no floor at that shape


def test_nan_or_another_shape_is_beyond_any_floor_and_probes_are_judged_as_the_stage_was():
    """A floor explains rounding, never a NaN the reference has not or another shape: those are
    beyond it whatever the finite part's distance (a verdict by max abs alone passed them). The
    probes and candidate configs of a stage the floor judged are judged by the same floor."""
    extra = {"floor": {"format": "bf16", "k": 3.0, "floor": {"0": {"a": 1.0, "b": 1.0}}},
             "floor_verdict": {"verdict": "beyond"}}
    tol = Tolerance(atol=1e-3, rtol=1e-2)
    reference = [np.ones((2, 4), np.float32), np.ones((2, 4), np.float32)]
    near = [reference[0] + 0.5, reference[1] - 0.5]  # 0.5× the floor, far past the tolerance
    stats = [compare_tol(r, g, tol) for r, g in zip(reference, near)]
    assert all(not s.passed for s in stats)
    assert passes_by_floor(extra, 0, ["a", "b"], stats, 1e-4) is True
    with_nan = near[0].copy()
    with_nan[0, 0] = np.nan
    stats = [compare_tol(reference[0], with_nan, tol), compare_tol(reference[1], near[1], tol)]
    assert passes_by_floor(extra, 0, ["a", "b"], stats, 1e-4) is False
    stats = [compare_tol(reference[0], near[0][:1], tol), compare_tol(reference[1], near[1], tol)]
    assert passes_by_floor(extra, 0, ["a", "b"], stats, 1e-4) is False
    verdict = judge(extra["floor"], 0, {"a": float("inf"), "b": 0.1}, {"a": 1e-4, "b": 1e-4})
    assert verdict["verdict"] == "beyond" and "NaN, Inf or a shape" in verdict["words"]
    # no floor at that shape, or a stage the floor did not judge: the tolerance decides (None)
    assert passes_by_floor(extra, 1, ["a", "b"], stats, 1e-4) is None
    assert passes_by_floor({"floor": extra["floor"]}, 0, ["a", "b"], stats, 1e-4) is None
