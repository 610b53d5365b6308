"""``harness.shared.compare``: the one tolerance type and the bound a reproducer judges with."""

from __future__ import annotations

import numpy as np

from harness.shared.compare import Tolerance, compare_tol


def test_the_reproducers_bound_is_the_comparisons_bound():
    rng = np.random.default_rng(0)
    want = rng.standard_normal(500) * 10
    want[3] = np.inf  # a non-finite reference element leaves the scaled part alone
    tol = Tolerance(atol=1e-3, rtol=1e-2, scaled_atol=1e-2)
    allowed = eval(Tolerance.ALLOWED_CODE, {"np": np, "tol": tol.to_dict(), "want": want})
    got = want + np.where(rng.random(500) < 0.5, allowed * 0.99, allowed * 1.01)
    got[3] = np.inf
    finite = np.isfinite(want)
    outside = int((np.abs(got[finite] - want[finite]) > allowed[finite]).sum())
    stats = compare_tol(want, got, tol)
    assert outside > 0 and stats.mismatched == outside


def test_an_override_changes_only_its_keys_and_round_trips():
    tol = Tolerance.of({"atol": 1e-4, "rtol": 1e-4})
    assert tol.overridden({"atol": 1e-2}) == Tolerance(1e-2, 1e-4)
    assert tol.overridden(None) is tol
    assert Tolerance.of(Tolerance(1, 2, 3).to_dict()) == Tolerance(1, 2, 3)
    assert "scaled_atol" not in tol.to_dict()  # written only when set, as the matrix writes it
