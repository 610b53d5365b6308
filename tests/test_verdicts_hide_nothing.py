"""Verdicts and reports that hide nothing, on one run made as the README makes it (default relative
``results/``, ``--run xv``): a Paddle failure without words is Paddle's and gets the whole root
cause; a session whose own stage could not run reads ``skip`` and does not qualify; the report of a
verified finding opens from anywhere, after the run folder moved, in a real browser. Real Paddle,
real processes, real Chromium."""

from __future__ import annotations

import json
import re
import shutil
import urllib.parse
from pathlib import Path

import pytest

from .conftest import chromium, load_record, matrix_text, needs_chromium, run_harness, stages_by_name

INT8 = '\n[sessions.cpu_onednn_int8]\ndevice = "cpu"\nbackend = "onednn"\nprecision = "int8"\n' \
       '[tolerances.int8]\natol = 0.05\nrtol = 0.05\n'
# A GPU session run in a venv on this GPU-less machine: its cells train and export, its stages skip.
GPU = '\n[sessions.gpu_fp32]\ndevice = "gpu"\nbackend = "native"\nprecision = "fp32"\n'
RUN = "xv"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The run, from a folder of its own as a user starts it; its matrix; that folder."""
    from harness.shared.spec import release
    from .conftest import installed_paddle

    version = installed_paddle()
    if release(version) < (3, 3, 0):
        pytest.skip(f"the planted oneDNN failure is Paddle 3.3's (this environment has {version})")
    here = tmp_path_factory.mktemp("user")
    matrix = here / "matrix.toml"
    matrix.write_text(matrix_text(version, {"gru": "tests.factories:conv_then_gru", "clean": "tests.factories:clean"},
                                  inputs={"gru": "series = { shape = [2, 12, 4] }"}, extra=INT8 + GPU))
    runs = {}
    for session, model in (("cpu_onednn_fp32", "gru"), ("cpu_onednn_bf16", "clean"), ("cpu_onednn_int8", "clean"),
                           ("gpu_fp32", "clean")):
        runs[session] = run_harness("run", "--matrix", str(matrix), "--session", session, "--model", model,
                                    "--run", RUN, "--runner", "venv", cwd=here)
    return here, matrix, runs, version


def test_a_wordless_onednn_failure_is_paddle_s_and_gets_the_whole_root_cause(made):
    here, _, runs, version = made
    record = load_record(here / "results" / RUN, f"cpu_onednn_fp32/{version}/normal/gru")
    stage = stages_by_name(record)["onednn_fp32"]
    assert stage["status"] == "error", stage
    assert stage["message"] == "predictor.run() raised RuntimeError: std::exception under onednn_fp32"
    assert stages_by_name(record)["baseline"]["status"] == "pass"  # native kernels run it and match
    analysis = record["analysis"]
    assert analysis["bisect"]["candidates"] > 0 and analysis["bisect"]["predicate"] == "raises the same cause"
    reduce = analysis["reduce"]
    assert reduce["status"] == "pass" and reduce["sub_exports"] > 0 and reduce["cause"] == "std::exception"
    assert not [t for t in reduce.get("trials", []) if t.get("untestable")]
    assert not [t for t in reduce.get("isolation", {}).get("tried", []) if t.get("untestable")], reduce["isolation"]
    repro = analysis["reproducer"]
    assert repro["verified"] and repro["exit"] != 0 and "std::exception" in repro["last_line"]
    assert not [s for s in record["stages"] if s["status"] == "untestable"]
    assert "[C1] predictor.run() raised RuntimeError: std::exception under onednn_fp32" in runs["cpu_onednn_fp32"].stdout
    assert "could not test" not in runs["cpu_onednn_fp32"].stdout


def test_a_session_whose_own_stage_did_not_run_reads_skip_and_does_not_qualify(made):
    here, matrix, runs, version = made
    int8 = load_record(here / "results" / RUN, f"cpu_onednn_int8/{version}/normal/clean")
    # Nothing trained or exported for a session that cannot run the cell's program: a skip at setup, said.
    assert int8["verdict"]["status"] == "skip" and int8["verdict"]["first_failing_stage"] == "setup", int8["verdict"]
    assert "quantization-aware" in int8["verdict"]["message"] and "mode is normal" in int8["verdict"]["message"]
    assert all(s["status"] == "skip" for s in int8["stages"]) and "1 cells: 1 skip" in runs["cpu_onednn_int8"].stdout
    # No GPU here: the GPU session's own stages skip, said by Paddle's build.
    gpu = load_record(here / "results" / RUN, f"gpu_fp32/{version}/normal/clean")
    assert gpu["verdict"]["status"] == "skip" and stages_by_name(gpu)["gpu_fp32"]["status"] == "skip", gpu["verdict"]
    assert "CUDA" in stages_by_name(gpu)["gpu_fp32"]["message"]
    required = '\n[qualify]\nsessions = ["gpu_fp32", "cpu_onednn_int8"]\nmodels = ["clean"]\n'
    strict_matrix = here / "qualify.toml"
    strict_matrix.write_text(matrix.read_text() + required)
    known = here / "known.toml"  # the run's other cell, the oneDNN finding, is expected here
    known.write_text('[[known]]\ncell = "cpu_onednn_fp32/*/normal/gru"\nreason = "std::exception under oneDNN"\n')
    refused = run_harness("qualify", "--matrix", str(strict_matrix), "--run", RUN, "--known", str(known), cwd=here)
    assert refused.returncode == 1 and refused.stdout.startswith("NOT QUALIFIED"), refused.stdout
    sections = re.split(r"\n(?=\S)", refused.stdout)
    unrun = next(part for part in sections if part.startswith("Required cells that did not run"))
    assert f"gpu_fp32/{version}/normal/clean" in unrun, refused.stdout
    # The int8 cell in normal mode is one the matrix never runs (spec.declared_skip): reported, never required.
    assert f"cpu_onednn_int8/{version}/normal/clean" not in unrun, refused.stdout
    assert f"cpu_onednn_int8/{version}/normal/clean" in next(p for p in sections if p.startswith("Skipped cells"))
    accepting = here / "optional.toml"
    accepting.write_text(matrix.read_text() + required + 'optional = ["gpu_fp32"]\n')
    accepted = run_harness("qualify", "--matrix", str(accepting), "--run", RUN, "--known", str(known), cwd=here)
    assert accepted.returncode == 0 and accepted.stdout.startswith("QUALIFIED"), accepted.stdout
    # The GPU and int8 cells, and the bf16 one on a CPU without bf16 (a skip of a session not required here).
    bf16 = load_record(here / "results" / RUN, f"cpu_onednn_bf16/{version}/normal/clean")
    skipped = 2 + (bf16["verdict"]["status"] == "skip")
    assert f"Skipped cells ({skipped}, reported)" in accepted.stdout, accepted.stdout

    # bf16 on this machine: either branch, each checked for what it says.
    stage = stages_by_name(bf16)["onednn_bf16"]
    if "avx512_bf16" in bf16["machine"]["flags"] or "amx_bf16" in bf16["machine"]["flags"]:
        assert stage["status"] != "skip" and bf16["verdict"]["status"] != "skip", stage
        from harness.cell.stages.ladder import LOW_PRECISION_DTYPES

        ran = set(stage["evidence"]["output_dtypes"])
        assert ran & set(LOW_PRECISION_DTYPES["bf16"]) or stage["status"] == "noop", stage["evidence"]
    else:
        assert stage["status"] == "skip" and "bfloat16" in stage["message"]
        assert bf16["verdict"]["status"] == "skip" and bf16["verdict"]["skipped_stage"] == "onednn_bf16"
        bf16_matrix = here / "bf16.toml"
        bf16_matrix.write_text(matrix.read_text() + '\n[qualify]\nsessions = ["cpu_onednn_bf16"]\nmodels = ["clean"]\n')
        assert run_harness("qualify", "--matrix", str(bf16_matrix), "--run", RUN, "--known", str(known),
                           cwd=here).returncode == 1




@needs_chromium
def test_the_report_of_a_verified_finding_opens_from_the_default_folder_and_after_the_run_moved(made, tmp_path):
    here, matrix, _, version = made
    report = run_harness("report", "--run", RUN, cwd=here)  # the README's command, default results/
    assert report.returncode == 0, report.stderr[-2000:]
    assert (here / "results" / RUN / "report.html").is_file()
    record = json.loads(next((here / "results" / RUN / "cpu_onednn_fp32").rglob("gru.json")).read_text())
    assert not record["analysis"]["reproducer"]["script"].startswith(("/", "results")), record["analysis"]["reproducer"]

    moved = tmp_path / "artefacts"
    moved.mkdir()
    shutil.copytree(here / "results" / RUN, moved / RUN)
    shutil.rmtree(here / "results" / RUN / "cpu_onednn_fp32")  # nothing of the old place can be read
    elsewhere = tmp_path / "another"
    elsewhere.mkdir()
    again = run_harness("report", "--results", str(moved), "--run", RUN, cwd=elsewhere)
    assert again.returncode == 0, again.stderr[-2000:]
    assert str(moved / RUN) in again.stdout and "(verified)" in again.stdout
    for verb in (("qualify", "--matrix", str(matrix)), ("regress",)):
        proc = run_harness(*verb, "--results", str(moved), "--run", RUN, cwd=elsewhere)
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    draft = moved / RUN / "cpu_onednn_fp32" / record["cell"]["paddle"] / "normal" / "gru" / "reproducer" / "issue.md"
    text = draft.read_text()
    assert draft.is_file() and str(tmp_path) not in text and str(here) not in text
    assert text.splitlines()[0].endswith(f"fails: predictor.run() raised RuntimeError: std::exception under onednn_fp32 "
                                         f"(Paddle {version})"), text.splitlines()[0]

    page = moved / RUN / "report.html"
    dom = chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    links = re.findall(r'href="([^"]*issue\.md)"', dom.stdout)
    assert links, "the report links no draft"
    target = urllib.parse.urljoin(page.as_uri(), links[0])
    assert Path(urllib.parse.unquote(urllib.parse.urlparse(target).path)) == draft
    opened = chromium("--dump-dom", target)  # the link, followed as the browser follows it
    assert opened.returncode == 0 and "std::exception" in opened.stdout, opened.stdout[-1000:]
