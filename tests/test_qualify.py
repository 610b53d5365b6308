"""Release qualification, JUnit and the short summary, over real records of a small real run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import one_line_error, run_harness

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def run(tmp_path_factory, paddle_version_module):
    """cpu_fp32 at the tests' Paddle: a clean model (pass), a truncated export (error) and tiny
    outputs (vacuous); the matrix also names cpu_onednn_fp32, which this run leaves missing."""
    from .conftest import matrix_text

    root = tmp_path_factory.mktemp("qualify")
    matrix = root / "matrix.toml"
    matrix.write_text(matrix_text(paddle_version_module, {"clean": "tests.factories:clean",
                                                          "broken": "tests.factories:truncated_params",
                                                          "tiny": "tests.factories:tiny_outputs"}))
    results = root / "results"
    # Verdicts only: no test here reads an analysis (root cause has its own tests).
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(results),
                       "--no-root-cause")
    assert proc.returncode == 1, proc.stderr[-2000:]
    return {"matrix": matrix, "results": results, "version": paddle_version_module, "root": root}


@pytest.fixture(scope="module")
def paddle_version_module():
    from .conftest import installed_paddle

    return installed_paddle()


def _qualify(run, *extra):
    return run_harness("qualify", "--matrix", str(run["matrix"]), "--results", str(run["results"]), *extra)


def _known(run, text, name="known.toml"):
    path = run["root"] / name
    path.write_text(text)
    return path


def test_unexpected_failures_block(run):
    proc = _qualify(run)
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert first == "NOT QUALIFIED"
    assert "Unexpected failures (2, blocking)" in proc.stdout
    assert f"cpu_fp32/{run['version']}/normal/broken: error at baseline" in proc.stdout
    assert f"cpu_fp32/{run['version']}/normal/tiny: vacuous at baseline" in proc.stdout


def test_known_issues_expected_failure_unexpected_pass_and_stale_entry(run):
    known = _known(run, """
[[known]]
cell = "cpu_fp32/*/normal/broken"
stage = "baseline"
reason = "params file cut short on purpose"
link = "https://example.invalid/issue/1"

[[known]]
cell = "cpu_fp32/*/normal/tiny"
reason = "outputs around 1e-7"

[[known]]
cell = "cpu_fp32/*/normal/clean"
reason = "was broken once"

[[known]]
cell = "gpu_trt_fp16/*/*/*"
reason = "no such cell in this run"
""")
    proc = _qualify(run, "--known", str(known), "--partial")  # the matrix's oneDNN cells are not in this run
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[0] == "QUALIFIED (partial: 3 of 9 required cells)"
    assert "Expected failures (known issues) (2, reported)" in proc.stdout
    assert "known: params file cut short on purpose (https://example.invalid/issue/1)" in proc.stdout
    assert "normal/clean passed; known entry 'cpu_fp32/*/normal/clean'" in proc.stdout
    assert "Stale known entries (match no cell) (1, reported)" in proc.stdout and "gpu_trt_fp16/*/*/*" in proc.stdout
    # An entry for another stage does not excuse the failure.
    other = _known(run, '[[known]]\ncell = "cpu_fp32/*/normal/*"\nstage = "ir"\nreason = "x"\n', "other.toml")
    assert _qualify(run, "--known", str(other), "--partial").returncode == 1


def test_missing_cells_block_partial_says_so_and_strict_also_blocks_on_hazards(run):
    known = _known(run, '[[known]]\ncell = "cpu_fp32/*/normal/[bt]*"\nreason = "expected"\n', "all.toml")
    proc = _qualify(run, "--known", str(known))
    # Required by the matrix, never run: no verdict over what did not run.
    assert proc.returncode == 1 and proc.stdout.splitlines()[0] == "NOT QUALIFIED"
    assert f"cpu_onednn_fp32/{run['version']}/normal/clean" in proc.stdout
    assert "Missing cells (required, no record) (6, blocking)" in proc.stdout
    partial = _qualify(run, "--known", str(known), "--partial")
    assert partial.returncode == 0
    assert partial.stdout.splitlines()[0] == "QUALIFIED (partial: 3 of 9 required cells)"
    assert "Missing cells (required, no record) (6, reported)" in partial.stdout
    proc = _qualify(run, "--known", str(known), "--strict")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("NOT QUALIFIED (strict")
    if run["version"].startswith("3."):
        assert "memory_optim_without_new_executor" in proc.stdout


def test_bad_input_is_one_line(run, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[known]]\ncell = 3\n")
    assert "known[0].cell" in one_line_error(_qualify(run, "--known", str(bad)))
    bad.write_text("[[known]\n")
    assert "not valid TOML" in one_line_error(_qualify(run, "--known", str(bad)))
    bad.write_text('[[known]]\ncell = "x"\nreason = "y"\nexpires = 1\n')
    assert "unknown key 'expires'" in one_line_error(_qualify(run, "--known", str(bad)))
    empty = tmp_path / "empty"
    (empty / "default").mkdir(parents=True)
    assert "no result records" in one_line_error(run_harness("qualify", "--matrix", str(run["matrix"]),
                                                             "--results", str(empty)))


def test_junit_validates_and_carries_every_stage(run):
    xmlschema = pytest.importorskip("xmlschema")
    proc = run_harness("report", "--results", str(run["results"]))
    assert proc.returncode == 0, proc.stderr
    path = run["results"] / "default" / "report.xml"
    xmlschema.XMLSchema(str(DATA / "junit.xsd")).validate(str(path))
    root = ET.parse(path).getroot()
    cases = {(c.get("classname").split("/")[-1], c.get("name")): c for c in root.iter("testcase")}
    records = [json.loads(p.read_text()) for p in (run["results"] / "default").rglob("*.json") if p.parent.name == "normal"]
    assert len(cases) == sum(len(r["stages"]) for r in records)
    assert cases[("broken", "baseline")].find("error").get("message").startswith("error: RuntimeError")
    tiny = cases[("tiny", "baseline")].find("failure")
    assert tiny.get("type") == "vacuous" and "max abs" in tiny.text
    assert cases[("clean", "memory")].find("skipped") is not None or not records[0]["cell"]["paddle"].startswith("3.")
    assert int(root.get("errors")) == sum(1 for c in cases.values() if c.find("error") is not None)
    summary = (run["results"] / "default" / "summary.md").read_text()
    assert len(summary.splitlines()) < 40 and "| model · mode" in summary
