"""Root cause: the culprit search, the inspector-file parser, and per-tensor diffs on real Paddle."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest

from harness.shared.engine_info import engine_output_names
from harness.shared.errors import UserError
from harness.shared.search import build_budget, find_alternatives, find_culprits

from .conftest import assert_exit_agrees, NOX, ROOT, installed_paddle, load_record, matrix_text, nox_run, one_line_error, run_harness

DATA = Path(__file__).parent / "data"


def _predicate(culprits, invalid=lambda d: False):
    def probe(disabled):
        if invalid(disabled):
            return "invalid"
        return "pass" if set(culprits) <= set(disabled) else "fail"
    return probe


@pytest.mark.parametrize("n", [2, 7, 53, 100])
def test_one_culprit_within_log2_plus_two_builds(n):
    items = [f"pass_{i}" for i in range(n)]
    budget = math.ceil(math.log2(n)) + 2
    for culprit in items:
        result = find_culprits(items, _predicate([culprit]))
        assert result.culprits == [culprit] and result.status == "found"
        assert result.builds <= budget, (culprit, result.builds, budget)


def test_several_culprits_are_all_found_within_k_log2_plus_two_builds():
    items = [f"pass_{i}" for i in range(53)]
    for pair in itertools.combinations(items, 2):
        result = find_culprits(items, _predicate(pair))
        assert sorted(result.culprits) == sorted(pair) and result.status == "found"
        assert result.builds <= build_budget(53, 2) == 2 * 6 + 2, (pair, result.builds)
    rng = random.Random(7)
    for k in (3, 5):
        placements = [rng.sample(items, k) for _ in range(300)] + [items[-k:], items[:k]]
        for culprits in placements:
            result = find_culprits(items, _predicate(culprits))
            assert sorted(result.culprits) == sorted(culprits)
            assert result.builds <= k * 6 + 2 < len(items), (culprits, result.builds)


def test_invalid_pass_sets_are_neither_pass_nor_fail():
    items = [f"pass_{i}" for i in range(32)]
    # Deleting pass_3 without pass_4 is an invalid config (as oneDNN activation fuses are).
    invalid = lambda d: "pass_3" in d and "pass_4" not in d  # noqa: E731
    result = find_culprits(items, _predicate(["pass_20"], invalid))
    assert result.culprits == ["pass_20"]
    assert result.status == "found"


def test_a_failure_no_item_causes_is_not_pinned_on_an_item():
    result = find_culprits([f"p{i}" for i in range(16)], lambda d: "fail")
    assert result.status == "not-a-culprit-set" and result.culprits == []
    assert result.builds <= math.ceil(math.log2(16)) + 2


def test_a_failure_that_needs_two_items_together_names_both():
    """Disabling either A or B fixes it (B rewrites a pattern A makes): the search names one, the
    follow-up names the other, and a third round confirms no further set, within its budget."""
    items = [f"p{i}" for i in range(40)]
    for a, b in [("p3", "p30"), ("p0", "p39"), ("p17", "p18")]:
        probe = lambda disabled: "pass" if a in disabled or b in disabled else "fail"  # noqa: E731
        found = find_culprits(items, probe)
        also = find_alternatives(items, found.culprits, probe)
        assert len(found.culprits) == 1 and sorted(found.culprits + sum(also.sets, [])) == sorted([a, b])
        assert also.builds <= also.budget
    one = lambda disabled: "pass" if "p5" in disabled else "fail"  # noqa: E731
    assert find_alternatives(items, ["p5"], one).sets == []  # one build says none is left


def test_engine_info_parser_reads_layer_outputs():
    assert engine_output_names(DATA / "engine_info_sample.json") == [
        "relu_0.tmp_0", "pool2d_0.tmp_0", "pool2d_0.tmp_0 copy"]


def test_engine_info_parser_rejects_names_only_and_foreign_files(tmp_path):
    names_only = tmp_path / "engine_info_names.json"
    names_only.write_text(json.dumps({"Layers": ["conv1", "pool1"], "Bindings": ["image"]}))
    with pytest.raises(UserError, match="names-only"):
        engine_output_names(names_only)
    other = tmp_path / "other.json"
    other.write_text("[1, 2]")
    with pytest.raises(UserError, match="no \"Layers\""):
        engine_output_names(other)


# -- real Paddle -------------------------------------------------------------------

def _export(tmp_path, write_matrix):
    """A real exported resnet18 and its inputs, from a harness cell."""
    matrix = write_matrix({"resnet": "harness.models:resnet18"}, extra="inputs.image = { shape = [1, 3, 32, 32] }")
    results = tmp_path / "r"
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_onednn_fp32", "--results", str(results))
    work = next((results / "default").rglob("resnet")) if False else next(
        p for p in (results / "default").rglob("resnet") if p.is_dir())
    return work


def test_diff_cli_matches_tensors_across_fusion_and_writes_every_format(tmp_path, write_matrix):
    work = _export(tmp_path, write_matrix)
    out = tmp_path / "diff"
    proc = run_harness("diff", "--model-dir", str(work / "export"), "--base", "cpu_fp32", "--test", "cpu_onednn_fp32",
                       "--inputs", str(work / "inputs.npz"), "--out", str(out))
    # 1 when a tensor differs beyond the tolerance (oneDNN's kernels may, by a rounding): what is
    # checked is the table below, whichever it is.
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    result = json.loads((out / "result.json").read_text())
    assert result["hooks_changed_output"] == {"base": False, "test": False}
    assert "did not change the final outputs" in proc.stdout
    assert len(result["rows"]) >= 10
    # Every test-side tensor of the fused oneDNN program found its base counterpart...
    test_only = [u for u in result["unmatched"] if u["side"] == "test"]
    assert len(test_only) <= 2, test_only
    # ...and fused ops were paired with the op that ends their pattern, not compared blindly.
    fused = [r for r in result["rows"] if "fused_conv2d" in r["test_op"]]
    assert fused and all(r["matched_by"] == "value" for r in fused)
    assert {r["op"].split(":")[0].split(".")[-1] for r in fused} <= {"relu", "batch_norm_", "add", "relu_"}
    for name in ("tensors.csv", "tensors.xlsx", "tensors.md", "tensors.png"):
        assert (out / name).stat().st_size > 0
    header = (out / "tensors.csv").read_text().splitlines()[0]
    assert header.startswith("#,Operator Type,Tensor Name,Shape,Mismatched Elements,Max Atol,Max Rtol,Min Val (base),Max Val (base)")
    from openpyxl import load_workbook

    sheet = load_workbook(out / "tensors.xlsx")["tensors"]
    assert sheet.max_row == len(result["rows"]) + 1


def test_selection_by_regex_and_segment_keeps_only_those_tensors(tmp_path, write_matrix):
    work = _export(tmp_path, write_matrix)
    common = ["diff", "--model-dir", str(work / "export"), "--base", "cpu_fp32", "--test", "cpu_ir",
              "--inputs", str(work / "inputs.npz"), "--formats", "csv"]
    proc = run_harness(*common, "--regex", "pool2d", "--out", str(tmp_path / "rx"))
    assert proc.returncode in (0, 1), proc.stderr  # 1: a selected tensor differs; the selection is what is checked
    rows = json.loads((tmp_path / "rx" / "result.json").read_text())["rows"]
    assert rows and all("pool2d" in r["op"] or "pool2d" in r["name"] for r in rows)
    everything = json.loads((tmp_path / "rx" / "result.json").read_text())
    names = [r["name"] for r in everything["rows"]]
    full = run_harness(*common, "--out", str(tmp_path / "all"))
    all_rows = json.loads((tmp_path / "all" / "result.json").read_text())["rows"]
    assert len(all_rows) > len(rows)
    first, last = all_rows[1]["name"], all_rows[4]["name"]
    run_harness(*common, "--segment", first, last, "--out", str(tmp_path / "seg"))
    seg = json.loads((tmp_path / "seg" / "result.json").read_text())["rows"]
    assert seg and {r["name"] for r in seg} <= {r["name"] for r in all_rows[1:5]}
    assert names and full.returncode in (0, 1)


def test_bf16_diff_names_its_first_divergence_or_says_bf16_cannot_run(tmp_path, write_matrix):
    work = _export(tmp_path, write_matrix)
    out = tmp_path / "bf16"
    proc = run_harness("diff", "--model-dir", str(work / "export"), "--base", "cpu_onednn_fp32",
                       "--test", "cpu_onednn_bf16", "--inputs", str(work / "inputs.npz"), "--out", str(out))
    result = json.loads((out / "result.json").read_text())
    if result["unmet"].get("test"):
        # This CPU runs fp32 under the bf16 switch: the diff says so, and finds nothing to blame.
        assert "does not support bfloat16" in result["unmet"]["test"]
        assert "cannot run as named here" in proc.stdout
        assert result["first_divergence"] is None and proc.returncode == 0
        pytest.skip("no bfloat16 on this CPU: Paddle ran fp32, and the diff says so")
    assert result["unmet"] == {}
    first = result["first_divergence"]
    assert first is not None and proc.returncode == 1
    assert first["name"] and first["op"]
    assert first["matched_by"] in ("name", "occurrence")  # fp32 oneDNN base: same program, same names
    # bf16 tensors arrive as raw uint16 bits: they must be widened to their values, not compared
    # as integers (which gives "errors" ~1e4 times the tensor's own scale).
    test_index = json.loads((out / "dump" / "test" / "index.json").read_text())
    assert "bfloat16" in {r.get("dtype") for r in test_index}
    for row in result["rows"]:
        scale = max(abs(row["min_base"]), abs(row["max_base"]), 1e-6)
        assert row["max_abs"] <= 0.5 * scale, row


def test_diff_bad_input_is_one_line(tmp_path, write_matrix):
    work = _export(tmp_path, write_matrix)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no model file" in one_line_error(run_harness("diff", "--model-dir", str(empty), "--test", "cpu_ir"))
    no_params = tmp_path / "no_params"
    no_params.mkdir()
    program = next((work / "export").glob("model.*[nl]"))  # model.json or model.pdmodel
    (no_params / program.name).write_bytes(program.read_bytes())
    assert "has no model.pdiparams" in one_line_error(run_harness("diff", "--model-dir", str(no_params), "--test", "cpu_ir"))
    assert "not a directory" in one_line_error(run_harness("diff", "--model-dir", str(tmp_path / "nope"), "--test", "cpu_ir"))
    common = ["diff", "--model-dir", str(work / "export"), "--inputs", str(work / "inputs.npz"), "--test", "cpu_ir",
              "--out", str(tmp_path / "o")]
    assert "unknown config" in one_line_error(run_harness(*common[:-2], "--base", "tpu_fp8"))
    assert "--names: empty" in one_line_error(run_harness(*common, "--names", ","))
    assert "chose no tensor" in one_line_error(run_harness(*common, "--names", "no_such_tensor"))
    assert "--segment" in one_line_error(run_harness(*common, "--segment", "a", "b"))
    assert "names-only" in one_line_error(run_harness(*common, "--engine-info", str(_names_only(tmp_path))))


def _names_only(tmp_path):
    path = tmp_path / "engine_info_x.json"
    path.write_text(json.dumps({"Layers": ["a"], "Bindings": []}))
    return path


@pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")
def test_conv_bn_fuse_pass_is_found_as_the_culprit_on_legacy_ir(tmp_path, nox_envdir):
    """Paddle 2.6.2, resnet18, no oneDNN: conv_bn_fuse_pass folds BN into the conv weights and
    changes the rounding (~1e-5). With a tolerance tight enough to see that, the ir stage fails
    and the search must name conv_bn_fuse_pass within ceil(log2 N)+2 predictor builds."""
    head = installed_paddle()
    matrix = tmp_path / "tight.toml"
    text = matrix_text(head, {"resnet": "harness.models:resnet18"}, other_versions=["2.6.2"],
                       extra="inputs.image = { shape = [1, 3, 32, 32] }")
    matrix.write_text(text.replace("[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4", "[tolerances.fp32]\natol = 0\nrtol = 1e-7"))
    results = tmp_path / "r"
    proc = nox_run("-s", "cpu_fp32@2.6.2", "--envdir", str(nox_envdir), "--", "--results", str(results), matrix=matrix)
    assert_exit_agrees(proc, results)
    record = load_record(results / "default", "cpu_fp32/2.6.2/normal/resnet")
    stages = {s["name"]: s for s in record["stages"]}
    assert stages["memory"]["status"] == "pass"
    assert stages["ir"]["status"] == "fail"
    bisect = record["analysis"]["bisect"]
    # The candidates are the passes the failing stage's build printed, not the builder's list.
    assert bisect["kind"] == "passes" and bisect["items"] == list(dict.fromkeys(stages["ir"]["evidence"]["passes"]))
    assert bisect["culprits"] == ["conv_bn_fuse_pass"], bisect
    assert bisect["builds"] <= math.ceil(math.log2(bisect["candidates"])) + 2
    assert bisect["also_fixed_by"] == [] and bisect["follow_up_builds"] == 1  # one build: no other set fixes it
    diff = record["analysis"]["diff"]
    assert diff["first_divergence"] is not None
    assert diff["hooks_changed_output"] == {"base": False, "test": False}
    assert Path(diff["files"]["xlsx"]).exists() and Path(diff["files"]["png"]).exists()
    assert "conv_bn_fuse_pass" in proc.stdout  # the terminal table names the culprit
    # The place: the first conv and the BN it feeds (the piece wires them as the model does, so the
    # fusion fires in it); neither alone reproduces, and the fusion (not an op) is named. The
    # reproducer replays that pair alone.
    reduce = record["analysis"]["reduce"]
    assert reduce["stage"] == "ir" and reduce["members"] == ["conv1", "bn1"], reduce
    assert reduce["fusion"] == ["conv_bn_fuse_pass"] and "op" not in reduce
    assert reduce["halving_exports"] <= reduce["budget"]
    pair = next(t for t in reduce["trials"] if t["members"] == ["conv1", "bn1"])
    assert pair["reproduces"] is True and pair["culprit_fired"] is True
    repro = record["analysis"]["reproducer"]
    assert repro["program"] == "piece" and repro["path"] == reduce["path"] and repro["verified"] is True


@pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")
def test_two_conv_bn_pairs_are_localized_to_a_pair_with_the_fusion_shown_firing_in_it(tmp_path, nox_envdir):
    """The known answer at 2.6.2 (atol = rtol = 1e-9): conv_bn_fuse_pass is the culprit, and the
    reduction ends at a conv and its BN — the piece in which the conv feeds its BN, as in the model,
    and in which the pass is seen firing (the ops executed with it on and off differ); neither alone
    reproduces, because the pass does not fire in either alone."""
    head = installed_paddle()
    matrix = tmp_path / "tight.toml"
    text = matrix_text(head, {"pairs": "tests.factories:two_conv_bn"}, other_versions=["2.6.2"])
    matrix.write_text(text.replace("[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4", "[tolerances.fp32]\natol = 1e-9\nrtol = 1e-9"))
    results = tmp_path / "r"
    proc = nox_run("-s", "cpu_fp32@2.6.2", "--envdir", str(nox_envdir), "--", "--results", str(results), matrix=matrix)
    assert_exit_agrees(proc, results)
    record = load_record(results / "default", "cpu_fp32/2.6.2/normal/pairs")
    assert record["analysis"]["bisect"]["culprits"] == ["conv_bn_fuse_pass"], record["analysis"]["bisect"]
    reduce = record["analysis"]["reduce"]
    assert reduce["stage"] == "ir" and reduce["fusion"] == ["conv_bn_fuse_pass"], reduce
    assert reduce["members"] in (["a", "bn_a"], ["b", "bn_b"]), reduce
    trials = {tuple(t["members"]): t for t in reduce["trials"]}
    pair = trials[tuple(reduce["members"])]
    assert pair["reproduces"] is True and pair["culprit_fired"] is True, pair
    for member in reduce["members"]:
        assert trials[(member,)]["reproduces"] is False, trials[(member,)]
    assert trials[(reduce["members"][0],)]["culprit_fired"] is False  # a conv alone: nothing to fold
    assert reduce["halving_exports"] <= reduce["budget"] and reduce["finer_exports"] <= reduce["finer_budget"]
    repro = record["analysis"]["reproducer"]
    assert repro["program"] == "piece" and repro["verified"] is True, repro


def test_paddles_own_executor_runs_a_legacy_program_under_paddle_3(tmp_path):
    """The triage's middle leg (Paddle's executor on the saved program) for a .pdmodel under Paddle 3
    (PaddleSlim's PACT export writes one): jit.load reads only PIR .json there, so the legacy static
    executor runs it — and gives dygraph's numbers."""
    import subprocess
    import sys

    import numpy as np

    from harness.cell import paddle_api as api

    import harness.cell.paddle_api.config, harness.cell.paddle_api.export, harness.cell.paddle_api.predictor  # noqa: F401  (rooms of api)

    if not api.at_least("3.0.0"):
        pytest.skip("Paddle 2.6 writes .pdmodel and jit.load reads it")
    script = (
        "import paddle, numpy as np, sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from tests.factories import clean\n"
        "paddle.seed(1); model, spec = clean(); model.eval()\n"
        "paddle.jit.save(model, sys.argv[1] + '/model', input_spec=spec)\n"
        "x = np.random.RandomState(0).rand(2, 3, 16, 16).astype('float32')\n"
        "np.save(sys.argv[1] + '/x.npy', x); np.save(sys.argv[1] + '/y.npy', model(paddle.to_tensor(x)).numpy())\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path), str(ROOT)], check=True, capture_output=True,
                   env={**__import__("os").environ, "FLAGS_enable_pir_api": "0"})
    assert (tmp_path / "model.pdmodel").exists() and not (tmp_path / "model.json").exists()
    x, y = np.load(tmp_path / "x.npy"), np.load(tmp_path / "y.npy")
    got = api.export.run_saved_program({"program": str(tmp_path / "model.pdmodel")}, {"image": x}, ["image"])
    assert len(got) == 1 and np.allclose(got[0], y, atol=1e-5)
    import paddle

    assert paddle.in_dynamic_mode()  # left as it was found


def test_a_probe_program_gives_the_pass_search_its_space_when_the_stage_built_nothing(tmp_path):
    """A build that raises before printing its passes leaves the culprit search nothing to switch
    off; the same config built on a probe program prints the passes it runs (whether they match
    or not), which is the search space the record then says it took."""
    from harness.cell import paddle_api as api
    from harness.cell.paddle_api import predictor
    from harness.shared.backends import plan_stages
    from harness.shared.runtime import DeployOptions

    fmt = "pir" if api.pir_default() else "legacy"
    plan = {p.name: p for p in plan_stages("cpu", "onednn", "fp32", fmt, DeployOptions())}["onednn_fp32"]
    probe = predictor.probe_passes(plan.config, tmp_path)
    assert probe["raised"] == "" and len(probe["passes"]) > 5, probe
    if fmt == "pir":
        assert "onednn_placement_pass" in probe["passes"]
    # Another config prints another list: the probe reads the config it is given, not a fixed list.
    reference = {p.name: p for p in plan_stages("cpu", "native", "fp32", fmt, DeployOptions())}["ir"]
    assert set(predictor.probe_passes(reference.config, tmp_path / "ir")["passes"]) != set(probe["passes"])
