"""The reproducer's own comparison (a standalone script, numpy only) judges as the harness does:
a NaN where the reference has a number is a mismatch (``diff > allowed`` alone passes it)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from harness.cell.handover.reproducer import _script


@pytest.mark.parametrize("got, verdict", [([1.0, float("nan")], 1), ([1.0, 2.0], 0), ([1.0, 2.5], 1)])
def test_the_script_calls_a_nan_a_mismatch(tmp_path, got, verdict):
    np.savez(tmp_path / "inputs.npz", x=np.zeros(1, np.float32))
    np.savez(tmp_path / "expected.npz", o0=np.array([1.0, 2.0], np.float32))
    run = f"names = ['out']\noutputs = [np.array({got!r}, dtype=np.float32)]\n".replace("nan", "np.nan")
    script = tmp_path / "repro.py"
    script.write_text(_script("", run, {"reference": "baseline", "tolerances": [{"atol": 1e-3, "rtol": 1e-3}]}))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == verdict, done.stdout + done.stderr
    assert ("MISMATCH: reproduced" in done.stdout) == bool(verdict)
