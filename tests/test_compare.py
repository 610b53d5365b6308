import math

import numpy as np
import pytest

from harness.shared.compare import Comparison, compare_arrays, worst
from harness.shared.vocab import Status


def test_within_isclose_band_passes_and_reports_statistics():
    ref = np.array([1.0, -2.0, 4.0])
    got = ref + np.array([5e-5, -1e-4, 2e-4])
    stats = compare_arrays(ref, got, atol=1e-4, rtol=1e-4)
    assert stats.status == "pass"
    assert stats.mismatched == 0 and stats.total == 3
    assert stats.max_abs == pytest.approx(2e-4, rel=1e-3)
    assert stats.max_rel == pytest.approx(5e-5, rel=1e-2)
    assert stats.cosine == pytest.approx(1.0)
    assert stats.vacuous is False


def test_one_element_outside_the_band_fails_and_is_counted():
    ref = np.ones(1000, dtype=np.float32)
    got = ref.copy()
    got[17] += 1e-3  # band at |ref|=1 is 2e-4
    stats = compare_arrays(ref, got, atol=1e-4, rtol=1e-4)
    assert stats.status == "fail"
    assert stats.mismatched == 1


def test_nan_on_one_side_is_a_mismatch_and_on_both_sides_is_not():
    ref = np.array([1.0, np.nan, 3.0])
    assert compare_arrays(ref, np.array([1.0, np.nan, 3.0]), 1e-4, 1e-4).status == "pass"
    one_side = compare_arrays(ref, np.array([1.0, 2.0, np.nan]), 1e-4, 1e-4)
    assert one_side.status == "fail"
    assert one_side.mismatched == 2
    assert one_side.nan_ref == 1 and one_side.nan_got == 1


def test_infinities_match_only_the_same_infinity():
    ref = np.array([np.inf, -np.inf, 1.0])
    assert compare_arrays(ref, ref.copy(), 0, 0).status == "pass"
    flipped = compare_arrays(ref, np.array([-np.inf, -np.inf, 1.0]), 1e3, 1e3)
    assert flipped.status == "fail" and flipped.mismatched == 1


def test_tolerance_wider_than_the_reference_is_vacuous_not_a_pass():
    # A random-init network's logits are ~1e-7: an all-zero output would pass atol 1e-4.
    ref = np.full(10, 1.3e-7, dtype=np.float32)
    stats = compare_arrays(ref, np.zeros_like(ref), atol=1e-4, rtol=1e-4)
    assert stats.mismatched == 0
    assert stats.vacuous is True
    assert stats.status == "vacuous"  # never a pass, not a fail
    assert "vacuous" in stats.note


def test_scaled_atol_measures_error_against_the_output_scale():
    # Logits of very different size with a bf16-like error of ~0.5% of the largest one: the
    # small logit fails an element-wise rtol, the scale-relative band accepts it.
    ref = np.array([100.0, -40.0, 1.0])
    got = ref + np.array([0.4, -0.3, 0.5])
    assert compare_arrays(ref, got, atol=0.0, rtol=1e-2).status == "fail"
    stats = compare_arrays(ref, got, atol=0.0, rtol=1e-2, scaled_atol=1e-2)
    assert stats.status == "pass" and stats.atol_effective == pytest.approx(1.0)
    # It still fails an error of the output's own size...
    assert compare_arrays(ref, ref + np.array([0, 0, 5.0]), 0.0, 1e-2, scaled_atol=1e-2).status == "fail"
    # ...and a band as wide as the output is vacuous, not a pass.
    wide = compare_arrays(ref, np.zeros_like(ref), 0.0, 0.0, scaled_atol=1.0)
    assert wide.vacuous is True and wide.status == "vacuous"


def test_shape_mismatch_fails_without_comparing_by_position():
    stats = compare_arrays(np.zeros((2, 3)), np.zeros((3, 2)), 1.0, 1.0)
    assert stats.status == "fail"
    assert "shape mismatch" in stats.note


def test_integer_outputs_compare_exactly():
    ref = np.array([3, 1, 2], dtype=np.int64)
    assert compare_arrays(ref, ref.copy(), 10, 10).status == "pass"
    assert compare_arrays(ref, np.array([3, 1, 3], dtype=np.int64), 10, 10).status == "fail"


def test_relative_error_ignores_zero_reference_elements():
    stats = compare_arrays(np.array([0.0, 2.0]), np.array([1e-6, 2.002]), 1e-4, 1e-4)
    assert stats.max_rel == pytest.approx(1e-3)
    assert math.isfinite(stats.max_rel)


def test_worst_prefers_failing_outputs_then_the_one_furthest_past_its_tolerance():
    def compared(status, tol_ratio, max_abs):
        return Comparison((3,), "float32", 1e-4, 1e-4, Status(status), tol_ratio=tol_ratio, max_abs=max_abs)

    outputs = {"a": compared("pass", 0.9, 1e-5), "b": compared("fail", 1.5, 1e-6), "c": compared("pass", 0.1, 1.0)}
    assert worst(outputs).output == "b"
    outputs["b"] = compared("pass", 1.5, 1e-6)
    assert worst(outputs).output == "b"  # 1.5x its band beats a larger but well-inside error
    del outputs["b"]
    assert worst(outputs).output == "a"
    assert worst([outputs["c"], outputs["a"]]).output == "1"  # lists, as the portability check passes them
    assert worst({}) is None


def test_a_comparison_reads_back_from_its_json_as_it_was():
    import json

    for got in (np.array([1.0, np.nan, 3.5]), np.zeros((3, 2)), np.array([1.0, 2.0, 3.0])):
        stats = compare_arrays(np.array([1.0, 2.0, 3.0]), got, 1e-4, 1e-4, scaled_atol=1e-3).named(output="logits")
        assert Comparison.from_dict(json.loads(json.dumps(stats.to_dict()))) == stats
    exact = compare_arrays(np.array([3, 1]), np.array([3, 2]), 0, 0)
    assert Comparison.from_dict(json.loads(json.dumps(exact.to_dict()))) == exact


def test_cosine_says_nothing_for_zero_vectors():
    from harness.shared.compare import cosine

    assert cosine(np.zeros(3), np.zeros(3)) is None and cosine(np.ones(3), np.zeros(3)) is None
    assert cosine(np.array([1.0, 0.0]), np.array([0.0, 2.0])) == pytest.approx(0.0)
