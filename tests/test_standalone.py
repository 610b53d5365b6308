"""Every finding a standalone script: a failure inside an installed suite's layer gets, beside its
source reproducer that imports the suite, one with the suite's source written in (Paddle, numpy and
the standard library only), which ``releases`` runs at the cause's release in an environment
without the suite, minimizes (pysource-minimize) and asks every release with — a stage's numeric
failure and an export that raises alike."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from harness.cell.handover.inline import foreign_imports
from harness.cell.handover.source_repro import MODEL_SOURCE, MODEL_SOURCE_END

from .conftest import ROOT, matrix_text, run_harness

PLANTED = ROOT / "tests" / "suites" / "harness_planted_suite"


@pytest.fixture(scope="module")
def standalone_run(tmp_path_factory, shared_envs):
    """The planted suite installed into this interpreter's site-packages (as a suite is installed), two
    of its models run in cpu_fp32, then ``releases`` at the cell's own release; the suite removed."""
    from .conftest import installed_paddle, load_record

    version = installed_paddle()
    if not version.startswith("3."):
        pytest.skip("the planted failures are Paddle 3's (to_static's bool(Tensor), PIR programs)")
    target = Path(sysconfig.get_paths()["purelib"]) / PLANTED.name
    shutil.copytree(PLANTED, target, dirs_exist_ok=True)
    tmp = tmp_path_factory.mktemp("standalone")
    try:
        matrix = tmp / "matrix.toml"
        matrix.write_text(matrix_text(version, {"counting": "tests.factories:planted_suite_counting",
                                                "gated": "tests.factories:planted_suite_gated",
                                                "upsampled": "tests.factories:planted_suite_upsampled"},
                                      inputs={"gated": "x = { shape = [4, 8] }"}))
        results = tmp / "r"
        run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--model", "counting", "--model", "gated",
                    "--results", str(results))
        run_harness("run", "--matrix", str(matrix), "--session", "cpu_onednn_fp32", "--model", "upsampled",
                    "--results", str(results))
        run = results / "default"
        before = {m: load_record(run, f"cpu_fp32/{version}/normal/{m}") for m in ("counting", "gated")}
        before["upsampled"] = load_record(run, f"cpu_onednn_fp32/{version}/normal/upsampled")
        proc = run_harness("releases", "--results", str(results), "--releases", version, "--envs", str(shared_envs),
                           "--confirm", "1", "--minimize-budget", "60", "--jobs", "2", timeout=1500)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        after = {m: load_record(run, f"cpu_fp32/{version}/normal/{m}") for m in ("counting", "gated")}
    finally:
        shutil.rmtree(target, ignore_errors=True)
    return {"run": run, "before": before, "after": after, "version": version}


def _model_source(script: Path) -> str:
    text = script.read_text(encoding="utf-8")
    return text[text.index(MODEL_SOURCE) + len(MODEL_SOURCE):text.index(MODEL_SOURCE_END)]


def test_a_numeric_failure_in_an_installed_suite_gets_a_standalone_minimized_script(standalone_run):
    source = standalone_run["before"]["counting"]["analysis"]["reproducer"]["source"]
    # The suite's script imports the suite by name (it is installed) and reproduces.
    assert source["program"] == "model" and source["verified"] is True, source
    assert "import harness_planted_suite" in Path(source["script"]).read_text()
    # Beside it, the same model with the suite's source written in: no import of the suite.
    standalone = source["standalone"]
    assert standalone["program"] == "inlined" and standalone["verified"] is None, standalone
    text = Path(standalone["script"]).read_text()
    assert foreign_imports(text) == [], foreign_imports(text)
    assert "class CountingNet" in text and "class ConvBNAct" in text and "F = types.SimpleNamespace(" in text
    assert "SCALE = 3.0" in text and "logger = logging.getLogger(__name__)" in text
    assert "decorator(s) register" in text and "@register" not in text  # the suite's registry: left out, said
    # What the failing run never reaches is left out, said, and raises if used: a helper no statement binds
    # and the method's import of a package installed nowhere; one made by a call where it was imported from
    # is that statement.
    assert "download = _LeftOut('harness_planted_suite.ops.download'" in text and "class _LeftOut" in text
    assert "fetch = functools.partial(_fetch, timeout=5)" in text
    assert "raise ImportError('import harness_planted_download_client is left out" in text
    # A method nothing reads is not written at all (``unused.py``), said.
    assert "def save_card" not in text and "CountingNet.save_card" in text
    # Objects made by a call where they were imported from: their statement there, after what it names (a
    # table of classes whose lookup builds the layer stays that table, not a dict of classes).
    assert "ACTS = ClassInstantier({'double': (Scaled, {'k': 2.0})})" in text, text
    assert text.index("class Scaled") < text.index("ACTS = ClassInstantier(") and "class ClassInstantier(dict)" in text
    assert "init_normal = paddle.nn.initializer.Normal(std=0.02)" in text
    assert text.count("F = types.SimpleNamespace(") == 1  # two suite modules read ``ops`` as ``F``: one namespace
    # releases ran it without the suite at the cell's release, minimized it, and asked with the smaller.
    span = standalone_run["after"]["counting"]["analysis"]["releases"]
    assert f"reproduces at {standalone_run['version']} without the suite" in span["standalone"], span
    assert "minimized" in span["standalone"] and span["reproducer"].endswith("minimized/source_repro.py"), span
    smaller = Path(span["reproducer"])
    assert len(_model_source(smaller).splitlines()) < len(_model_source(Path(standalone["script"])).splitlines())
    # The cell made no eager call before its export: the minimized script does not carry the branch for one.
    assert not (smaller.parent / "eager.npz").exists() and "eager.npz" not in smaller.read_text()
    # It runs with the suite gone (the fixture removed it): Paddle alone, the mismatch reproduced.
    alone = subprocess.run([sys.executable, smaller.name], cwd=smaller.parent, capture_output=True, text=True, timeout=600)
    assert alone.returncode != 0 and "MISMATCH: reproduced" in alone.stdout, alone.stdout[-2000:] + alone.stderr[-2000:]
    # Its short form beside it: the same model source, Paddle's own calls, assert_allclose; verified by releases.
    _short_form_reproduces(span, smaller, "MISMATCH: reproduced", "np.testing.assert_allclose(")


def _short_form_reproduces(span, script: Path, words: str, check: str) -> None:
    from harness.running.compact import COMPACT

    compact = script.parent / COMPACT
    assert span["compact"].split(":")[0].endswith(f"{script.parent.name}/{COMPACT}"), span["compact"]
    assert f"lines, reproduces at {span['releases'][0]}" in span["compact"] and compact.is_file(), span["compact"]
    text = compact.read_text()
    assert len(text.splitlines()) < len(script.read_text().splitlines()) and check in text, text
    assert foreign_imports(text) == [] and "state.files" not in text  # no names check, no params-file fallback
    ran = subprocess.run([sys.executable, COMPACT], cwd=compact.parent, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 1 and words in ran.stdout + ran.stderr, ran.stdout[-2000:] + ran.stderr[-2000:]


def test_an_export_that_raises_in_a_suite_helper_gets_a_standalone_minimized_script(standalone_run):
    setup = standalone_run["before"]["gated"]["setup"]
    assert setup["status"] == "error" and setup["phase"] == "export" and "bool" in setup["message"], setup
    source = standalone_run["before"]["gated"]["analysis"]["reproducer"]["source"]
    assert source["verified"] is True and source["standalone"]["program"] == "inlined", source
    # Down to the statement: the suite's helper the error was raised in, called with the traced value.
    assert "in positive, traced alone" in source["standalone"]["what"], source["standalone"]
    assert "def positive(t):" in Path(source["standalone"]["script"]).read_text()
    span = standalone_run["after"]["gated"]["analysis"]["releases"]
    assert "minimized" in span["standalone"], span
    smaller = Path(span["reproducer"])
    kept = _model_source(smaller)
    # Down to what raises: the gate on the kept output, asked through the helper's ``any``.
    assert "any(" in kept and len(kept.splitlines()) <= 20, kept
    alone = subprocess.run([sys.executable, smaller.name], cwd=smaller.parent, capture_output=True, text=True, timeout=600)
    assert alone.returncode != 0 and "bool" in alone.stderr, alone.stderr[-2000:]
    _short_form_reproduces(span, smaller, "bool", "paddle.jit.to_static(layer, ")


def test_an_op_in_a_suite_layer_gets_beside_its_op_program_the_piece_with_the_suite_written_in(standalone_run):
    """The failure is one op inside the suite's layer (an interpolate under oneDNN at Paddle 3.3): its
    source reproducer is the op alone (Paddle's public API), and beside it the piece for the releases
    that cannot run the op program — once with the suite imported, once with the suite's source
    written in, which runs with the suite gone and reproduces the same words."""
    record = standalone_run["before"]["upsampled"]
    stage = next(s for s in record["stages"] if s["name"] == "onednn_fp32")
    if stage["status"] != "error":
        pytest.skip(f"Paddle {standalone_run['version']}'s oneDNN runs the interpolate ({stage['status']})")
    source = record["analysis"]["reproducer"]["source"]
    assert source["program"] == "ops" and source["verified"] is True, source
    larger = source["larger"]
    assert "import harness_planted_suite" in Path(larger["script"]).read_text()
    alone = larger["standalone"]
    assert alone["program"] == "inlined", alone
    text = Path(alone["script"]).read_text()
    assert foreign_imports(text) == [] and "class Upsample(" in text, text[:3000]
    ran = subprocess.run([sys.executable, Path(alone["script"]).name], cwd=Path(alone["script"]).parent,
                         capture_output=True, text=True, timeout=600)  # the suite is gone (the fixture removed it)
    from harness.shared.releases import RunOutcome, outcome

    said, line = outcome(ran.returncode, ran.stdout + ran.stderr, source["cause_words"], False)
    assert said is RunOutcome.REPRODUCED, (line, (ran.stdout + ran.stderr)[-3000:])
