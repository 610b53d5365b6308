"""Verdicts that mean the same on every machine: the machine in every record (and the ISA oneDNN
really chose, read from Paddle's own oneDNN), reports that show it once, ``regress`` that says
when a comparison crosses machines or weights, and no verdict over records that are missing or
cannot be read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from harness.report.model import RunModel
from harness.report.qualify import qualify
from harness.report.regress import compute, render
from harness.report.tables import machine_lines
from harness.shared.machine import describe, has, label, numeric_key
from harness.shared.records import scan_records

from .conftest import as_record, ROOT, matrix_text, one_line_error, run_harness


# -- pure logic ----------------------------------------------------------------------

def test_the_machine_block_names_cpu_flags_cores_os_and_a_key_of_what_changes_numbers():
    machine = describe({"isa": "avx2", "version": "3.6.2"})
    assert machine["cpu"] and machine["arch"] and machine["cores"] >= machine["usable_cores"] >= 1
    assert set(machine["flags"]) <= {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
                                     "amx_bf16", "amx_int8", "amx_tile", "amx_fp16"}
    assert machine["libc"] and machine["python"] and machine["seen_from"] == "cell"
    # The key follows the CPU, the numeric flags and oneDNN's ISA, nothing else.
    assert machine["key"] == numeric_key(machine["cpu"], machine["flags"], "avx2")
    assert describe({"isa": "avx512_core_vnni"})["key"] != machine["key"]
    assert numeric_key("X", ["avx2", "avx512f"], None) == numeric_key("X", ["avx512f", "avx2"], None)
    assert "isa avx2" in label(machine) and "cores" in label(machine)
    assert has({"flags": ["avx2", "avx512_bf16"]}, "avx512_bf16") and not has({"flags": ["avx2"]}, "avx512_bf16")
    assert label(None).startswith("unknown machine")


def _record(cell_id, status="pass", machine_key="m1", sha="w1", stages=None):
    session, version, mode, model = cell_id.split("/")
    return as_record({
        "id": cell_id, "_path": f"/nonexistent/{cell_id}.json",
        "cell": {"session": {"name": session}, "paddle": version, "mode": mode, "model": {"name": model},
                 "tolerances": {"fp32": {"atol": 1e-4, "rtol": 1e-4}}},
        "machine": {"cpu": f"CPU {machine_key}", "flags": ["avx2"], "onednn": {"isa": machine_key},
                    "cores": 2, "usable_cores": 2, "key": machine_key},
        "setup": {"status": "pass", "weights": {"sha256": sha}},
        "stages": stages or [{"name": "baseline", "status": status}],
        "verdict": {"status": status, "first_failing_stage": None if status == "pass" else "baseline"},
    })


def test_reports_show_each_machine_once_and_every_machine_of_a_merged_run():
    one = RunModel([_record("cpu_fp32/3.3.1/normal/a"), _record("cpu_fp32/3.3.1/normal/b")])
    lines = machine_lines(one)
    assert len(lines) == 1 and lines[0].startswith("Machine: CPU m1")
    two = RunModel([_record("cpu_fp32/3.3.1/normal/a"), _record("cpu_onednn_fp32/3.3.1/normal/a", machine_key="m2")])
    lines = machine_lines(two, "markdown")
    assert lines[0].startswith("Machines (2;") and len(lines) == 3
    assert "cpu_onednn_fp32@3.3.1" in lines[2] and "CPU m2" in lines[2]


def test_regress_says_when_a_comparison_crosses_machines_or_weights():
    records = [_record("cpu_fp32/2.6.2/normal/a", machine_key="m1", sha="w1"),
               _record("cpu_fp32/3.3.1/normal/a", status="fail", machine_key="m2", sha="w2"),
               _record("cpu_fp32/2.6.2/normal/b", sha="w3"), _record("cpu_fp32/3.3.1/normal/b", sha="w3")]
    report = compute(RunModel(records), [("2.6.2", "3.3.1")], [])
    rows = {r.cell: r for r in report.pairs[0].rows}
    assert rows["cpu_fp32/{v}/normal/a"].apart == "other weights, other machine"
    assert rows["cpu_fp32/{v}/normal/b"].apart == ""  # same weights, same machine
    text = render(report, "github")
    assert "Records of this pair come from different machines" in text
    assert "Different weights across versions" in text and "normal · a: 2.6.2 w1; 3.3.1 w2" in text
    weights = {(w.mode, w.model): w.identical for w in report.weights}
    assert weights == {("normal", "a"): False, ("normal", "b"): True}


def test_same_machine_and_weights_say_nothing_extra():
    records = [_record("cpu_fp32/2.6.2/normal/b", sha="w3"), _record("cpu_fp32/3.3.1/normal/b", sha="w3")]
    report = compute(RunModel(records), [("2.6.2", "3.3.1")], [])
    assert report.pairs[0].machines == [] and report.pairs[0].rows[0].apart == ""
    assert "Different weights" not in render(report, "simple")


def test_qualify_blocks_on_missing_cells_unless_partial_and_names_itself():
    model = RunModel([_record("cpu_fp32/3.3.1/normal/a")])
    required = [f"cpu_fp32/3.3.1/normal/{m}" for m in "abc"]
    assert not qualify(model, [], required, strict=False).qualified
    partial = qualify(model, [], required, strict=False, partial=True)
    assert partial.qualified and partial.verdict_line == "QUALIFIED (partial: 1 of 3 required cells)"
    whole = qualify(RunModel([_record(c) for c in required]), [], required, strict=False)
    assert whole.qualified and whole.verdict_line == "QUALIFIED"


def test_files_in_a_records_place_that_are_not_records_are_listed_with_the_reason(tmp_path):
    run = tmp_path / "run"
    good = _record("cpu_fp32/3.3.1/normal/a").to_dict()
    places = {"cpu_fp32/3.3.1/normal/a.json": json.dumps(good),
              "cpu_fp32/3.3.1/normal/cut.json": json.dumps(good)[:300],
              "cpu_fp32/3.3.1/normal/old.json": json.dumps(dict(good, schema=1)),
              "cpu_fp32/3.3.1/normal/list.json": "[1, 2]",
              # not a record's place: work dirs, hazard probes, portability, TIPC summaries
              "cpu_fp32/3.3.1/hazards.json": "{",
              "cpu_fp32/3.3.1/normal/a/spec.json": "{",
              "portability/2.6.2/3.3.1/a.json": "{",
              "tipc/m/lite_train_lite_infer/tipc.json": "{"}
    for rel, text in places.items():
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text(text)
    records, unreadable = scan_records(run)
    assert [r.id for r in records] == ["cpu_fp32/3.3.1/normal/a"]
    reasons = {os.path.basename(u.path): u.reason for u in unreadable}
    assert set(reasons) == {"cut.json", "old.json", "list.json"}
    assert reasons["cut.json"].startswith("not valid JSON") and "300 bytes" in reasons["cut.json"]
    assert "schema 1" in reasons["old.json"] and "not a cell record" in reasons["list.json"]


# -- real runs ------------------------------------------------------------------------

def test_onednn_isa_is_the_one_oneDNN_chose_and_follows_its_cap(paddle_version):
    """Read from Paddle's own oneDNN library: capped with ONEDNN_MAX_CPU_ISA=AVX2 (every CPU of
    this kind has AVX2) it must say avx2 whatever the CPU; uncapped, an ISA at least as high."""
    code = "import json; from harness.cell import paddle_api as api; print(json.dumps(api.onednn_info()))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    answers = {}
    for cap in (None, "AVX2"):
        run_env = dict(env, ONEDNN_MAX_CPU_ISA=cap) if cap else {k: v for k, v in env.items() if k != "ONEDNN_MAX_CPU_ISA"}
        proc = subprocess.run([sys.executable, "-c", code], env=run_env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        answers[cap] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answers["AVX2"]["isa"] == "avx2", answers
    assert answers[None]["isa"].startswith(("avx2", "avx512", "avx10")) and answers[None]["version"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    from .conftest import installed_paddle

    version = installed_paddle()
    root = tmp_path_factory.mktemp("machines")
    matrix = root / "matrix.toml"
    matrix.write_text(matrix_text(version, {"clean": "tests.factories:clean", "other": "tests.factories:clean"}))
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(root / "results"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {"root": root, "matrix": matrix, "results": root / "results", "version": version}


def _copy_with_a_cut_record(small_run, name):
    results = small_run["root"] / name
    shutil.copytree(small_run["results"], results)
    record = results / "default" / "cpu_fp32" / small_run["version"] / "normal" / "other.json"
    record.write_text(record.read_text()[:300])
    return results, record


def test_a_cut_record_is_named_by_report_qualify_regress_and_merge_which_exit_non_zero(small_run):
    results, cut = _copy_with_a_cut_record(small_run, "cut")
    report = run_harness("report", "--results", str(results))
    assert report.returncode == 1
    assert str(cut) in report.stdout and "not valid JSON" in report.stdout and "1 cells: 1 pass" in report.stdout
    for name in ("report.md", "summary.md", "report.html"):
        assert str(cut) in (results / "default" / name).read_text()
    junit = (results / "default" / "report.xml").read_text()
    assert 'name="unreadable records"' in junit and str(cut) in junit
    qualified = run_harness("qualify", "--matrix", str(small_run["matrix"]), "--results", str(results))
    assert qualified.returncode == 1 and qualified.stdout.startswith("NOT QUALIFIED")
    assert "Unreadable records" in qualified.stdout and str(cut) in qualified.stdout
    partial = run_harness("qualify", "--matrix", str(small_run["matrix"]), "--results", str(results), "--partial")
    assert partial.returncode == 1 and str(cut) in partial.stdout  # a corrupt record blocks even a partial verdict
    regress = run_harness("regress", "--results", str(results))
    assert regress.returncode != 0 and str(cut) in regress.stdout
    merged = run_harness("merge", "--into", str(small_run["root"] / "merged"), str(results / "default"))
    assert merged.returncode == 1 and str(cut) in merged.stdout
    assert (small_run["root"] / "merged" / cut.relative_to(results / "default")).exists()  # copied, not dropped


def test_qualify_without_flags_over_a_run_missing_required_cells_is_not_qualified(small_run):
    base = ["qualify", "--matrix", str(small_run["matrix"]), "--results", str(small_run["results"])]
    proc = run_harness(*base)
    # The matrix names cpu_onednn_fp32 and cpu_onednn_bf16 too: 2 of 6 required cells ran.
    assert proc.returncode == 1 and proc.stdout.splitlines()[0] == "NOT QUALIFIED"
    assert "Missing cells (required, no record) (4, blocking)" in proc.stdout
    partial = run_harness(*base, "--partial")
    assert partial.returncode == 0
    assert partial.stdout.splitlines()[0] == "QUALIFIED (partial: 2 of 6 required cells)"
    assert "--partial" in one_line_error(run_harness(*base, "--partial", "--strict"))


def test_paths_of_the_wrong_kind_are_one_line_naming_the_argument(small_run, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    matrix = str(small_run["matrix"])
    cases = [
        (["run", "--matrix", matrix, "--session", "cpu_fp32", "--results", str(a_file)], "--results"),
        (["run", "--matrix", matrix, "--session", "cpu_fp32", "--results", str(a_file / "sub")], "--results"),
        (["run", "--matrix", matrix, "--session", "cpu_fp32", "--python", str(tmp_path)], "--python"),
        (["run", "--matrix", matrix, "--session", "cpu_fp32", "--checkpoints", str(a_file)], "--checkpoints"),
        (["report", "--results", str(a_file)], "--results"),
        (["regress", "--results", str(a_file)], "--results"),
        (["qualify", "--matrix", matrix, "--results", str(small_run["results"]), "--known", str(tmp_path)], "--known"),
        (["tipc", "--repo", str(a_file), "--config", "c.txt", "--mode", "lite_train_lite_infer"], "--repo"),
        (["tipc", "--repo", str(tmp_path), "--config", str(tmp_path), "--mode", "lite_train_lite_infer"], "--config"),
        (["merge", "--into", str(a_file), str(small_run["results"] / "default")], "--into"),
        (["shards", "--nox-json", str(tmp_path)], "--nox-json"),
        # a second --session would silently replace the first: run takes one (pool takes several)
        (["run", "--matrix", matrix, "--session", "cpu_fp32", "--session", "cpu_onednn_fp32"], "--session"),
    ]
    if os.geteuid() != 0:  # root writes anywhere: the permission case needs another user
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((["run", "--matrix", matrix, "--session", "cpu_fp32", "--results", str(locked / "r")], "--results"))
    for args, argument in cases:
        line = one_line_error(run_harness(*args))
        assert argument in line, (args, line)
    assert not (a_file.parent / "a_file" / "sub").exists()


def test_a_run_takes_its_weights_from_a_checkpoints_folder(small_run, tmp_path):
    """A shard given the first job's checkpoints computes with exactly those weights."""
    source = small_run["results"] / "default" / "checkpoints"
    proc = run_harness("run", "--matrix", str(small_run["matrix"]), "--session", "cpu_onednn_fp32", "--model", "clean",
                       "--results", str(tmp_path / "shard"), "--checkpoints", str(source))
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "checkpoints: 2 taken from" in proc.stdout
    made = json.loads((small_run["results"] / "default" / "cpu_fp32" / small_run["version"] / "normal" / "clean.json")
                      .read_text())
    shard = json.loads((tmp_path / "shard" / "default" / "cpu_onednn_fp32" / small_run["version"] / "normal" /
                        "clean.json").read_text())
    assert shard["setup"]["weights"]["source"] == "checkpoint"
    assert shard["setup"]["weights"]["sha256"] == made["setup"]["weights"]["sha256"]
