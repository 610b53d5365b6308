"""``harness.shared.inputs``: seeded synthetic inputs from InputSpecs."""

from __future__ import annotations

import numpy as np

from harness.shared.inputs import InputSpec, synthesize


def test_inputs_are_seeded_shaped_and_token_ids_stay_in_their_range():
    specs = [InputSpec("image", [2, 3, 8, 8], "float32"), InputSpec("tokens", [2, 16], "int64", low=0, high=50)]
    a, b, c = synthesize(specs, 0), synthesize(specs, 0), synthesize(specs, 1)
    assert a["image"].shape == (2, 3, 8, 8) and a["image"].dtype == np.float32
    assert np.array_equal(a["image"], b["image"]) and not np.array_equal(a["image"], c["image"])
    assert a["tokens"].dtype == np.int64 and a["tokens"].min() >= 0 and a["tokens"].max() < 50
