"""Every finding a standalone script: a failure inside an installed suite's layer gets, beside its
source reproducer that imports the suite, one with the suite's source written in (Paddle, numpy and
the standard library only), which ``releases`` runs at the cause's release in an environment
without the suite, minimizes (pysource-minimize) and asks every release with."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from harness.cell.handover.inline import foreign_imports

from .conftest import ROOT, load_record, run_harness

PLANTED = ROOT / "tests" / "suites" / "harness_planted_suite"


@pytest.fixture
def installed_suite():
    """The planted suite in this interpreter's site-packages, as a suite is installed; removed after."""
    target = Path(sysconfig.get_paths()["purelib"]) / PLANTED.name
    shutil.copytree(PLANTED, target, dirs_exist_ok=True)
    yield target
    shutil.rmtree(target, ignore_errors=True)


def test_a_failure_in_an_installed_suite_gets_a_standalone_minimized_script(
        installed_suite, write_matrix, tmp_path, paddle_version, shared_envs):
    matrix = write_matrix({"counting": "tests.factories:planted_suite_counting"})
    results = tmp_path / "r"
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(results))
    run = results / "default"
    record = load_record(run, f"cpu_fp32/{paddle_version}/normal/counting")
    source = record["analysis"]["reproducer"]["source"]
    # The suite's script imports the suite by name (it is installed) and reproduces.
    assert source["program"] == "model" and source["verified"] is True, source
    assert "import harness_planted_suite" in Path(source["script"]).read_text()
    # Beside it, the same model with the suite's source written in: no import of the suite.
    standalone = source["standalone"]
    assert standalone["program"] == "inlined" and standalone["verified"] is None, standalone
    text = Path(standalone["script"]).read_text()
    assert foreign_imports(text) == [], foreign_imports(text)
    assert "class CountingNet" in text and "class ConvBNAct" in text and "F = types.SimpleNamespace(scaled=scaled)" in text
    assert "SCALE = 3.0" in text and "logger = logging.getLogger(__name__)" in text
    assert "decorator(s) register" in text and "@register" not in text  # the suite's registry: left out, said
    # releases: run without the suite at the cell's release, minimized, asked with.
    proc = run_harness("releases", "--results", str(results), "--releases", paddle_version, "--envs", str(shared_envs),
                       "--confirm", "1", "--minimize-budget", "60", timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    span = load_record(run, f"cpu_fp32/{paddle_version}/normal/counting")["analysis"]["releases"]
    assert "reproduces at " + paddle_version + " without the suite" in span["standalone"], span
    assert "minimized" in span["standalone"] and span["reproducer"].endswith("minimized/source_repro.py"), span
    smaller = run / span["reproducer"]
    assert len(smaller.read_text().splitlines()) < len(text.splitlines())
    # It runs with the suite gone: Paddle alone.
    shutil.rmtree(installed_suite)
    alone = subprocess.run([sys.executable, smaller.name], cwd=smaller.parent, capture_output=True, text=True, timeout=600)
    assert alone.returncode != 0 and "MISMATCH: reproduced" in alone.stdout, alone.stdout[-2000:] + alone.stderr[-2000:]
