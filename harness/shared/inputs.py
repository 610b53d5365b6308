"""Seeded synthetic inputs, one rule for every caller (cells and the diff CLI). numpy only.

Integers: uniform in ``[low, high)`` (default ``[0, 2)``); booleans: fair coins; floats: uniform
in ``[low, high)`` when a bound is given, else standard normal. Inputs are drawn in the order
given, from one generator seeded once, so the same names, shapes and seed give the same arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, Optional, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class InputSpec:
    name: str
    shape: Sequence[int]
    dtype: str
    low: Optional[float] = None
    high: Optional[float] = None


def synthesize(specs: Iterable[InputSpec], seed: int) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays: Dict[str, np.ndarray] = {}
    for spec in specs:
        dtype = np.dtype(spec.dtype)
        shape = list(spec.shape)
        if np.issubdtype(dtype, np.integer):
            low = int(spec.low if spec.low is not None else 0)
            high = int(spec.high if spec.high is not None else 2)
            arrays[spec.name] = rng.integers(low, high, size=shape).astype(dtype)
        elif dtype == np.bool_:
            arrays[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif spec.low is not None or spec.high is not None:
            low = float(spec.low if spec.low is not None else 0.0)
            high = float(spec.high if spec.high is not None else low + 1.0)
            arrays[spec.name] = rng.uniform(low, high, size=shape).astype(dtype)
        else:
            arrays[spec.name] = rng.standard_normal(size=shape).astype(dtype)
    return arrays
