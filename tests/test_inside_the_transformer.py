"""Inside the transformer: a planted causal LM shaped as the decoder suites build one (rotary tables
computed once and passed with the mask and the positions to every layer, layers reading only what
their kind needs, tuple returns, a structured output) with a nearest interpolate in one layer's MLP,
reduced through ``cpu_onednn_fp32`` into that MLP and to the op. Real Paddle, real processes."""

from __future__ import annotations

import pytest

from .conftest import load_record, matrix_text, run_harness, stages_by_name


def test_a_causal_lm_is_reduced_into_the_failing_layer_s_mlp_and_the_op(tmp_path):
    from harness.shared.spec import release
    from .conftest import installed_paddle

    version = installed_paddle()
    if release(version) < (3, 3, 0):
        pytest.skip(f"oneDNN raises on interpolate from Paddle 3.3.0 (this environment has {version})")
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(version, {"lm": "tests.factories:causal_lm"},
                                  inputs={"lm": "input_ids = { shape = [2, 16], low = 0, high = 64 }"}))
    results = tmp_path / "r"
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_onednn_fp32", "--results", str(results))
    record = load_record(results / "default", f"cpu_onednn_fp32/{version}/normal/lm")
    assert stages_by_name(record)["onednn_fp32"]["status"] == "error", proc.stdout[-3000:]
    reduce = record["analysis"]["reduce"]
    assert reduce["path"] == "model.layers.2.mlp" and reduce["outcome"] == "isolated", reduce
    assert reduce["op"] == "pd_op.nearest_interp"
    # No piece of a decoder layer was refused: each one's unread inputs were made inside it.
    refused = [t for t in reduce["trials"] if t.get("untestable")]
    assert not refused, refused
    fed_less = [t for t in reduce["trials"] if "never reads made inside" in t["note"]]
    assert any(t["members"] == ["model.layers.2"] for t in fed_less), reduce["trials"]
    assert record["analysis"]["reproducer"]["verified"]


def test_a_projection_scaled_only_in_the_export_is_placed_there_and_its_tokens_disagree(tmp_path):
    """A silent numeric failure in one projection (layer 1's ``self_attn.o_proj``, its weight scaled
    in the traced program only): placed at that projection; the task verdict says the greedy tokens
    changed, in the record, the terminal table and the HTML report (read in Chromium)."""
    from .conftest import chromium, installed_paddle, CHROMIUM

    version = installed_paddle()
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(version, {"lm": "tests.factories:causal_lm_perturbed"},
                                  inputs={"lm": "input_ids = { shape = [2, 12], low = 0, high = 64 }"},
                                  tasks={"lm": '"causal_lm"'}))
    results = tmp_path / "r"
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(results))
    record = load_record(results / "default", f"cpu_fp32/{version}/normal/lm")
    baseline = stages_by_name(record)["baseline"]
    assert baseline["status"] == "fail", proc.stdout[-3000:]
    assert record["analysis"]["reduce"]["path"] == "model.layers.1.self_attn.o_proj", record["analysis"]["reduce"]
    task = record["verdict"]["task"]
    assert task["kind"] == "causal_lm" and task["changed"] and task["agree"] < task["of"] == 24, task
    assert baseline["task"] == task
    # The stages that ran the same weights unscaled keep every token.
    assert stages_by_name(record)["cpu_fp32"]["task"]["agree"] == 24
    assert f"tokens agree {task['agree']}/24" in proc.stdout
    if CHROMIUM is None:
        pytest.skip("needs chromium (`apt-get install chromium`; .ci/run does) for the HTML half")
    report = run_harness("report", "--results", str(results))
    assert report.returncode == 0, report.stderr[-2000:]
    dom = chromium("--dump-dom", (results / "default" / "report.html").as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f'<td class="task fail">tokens agree {task["agree"]}/24' in dom.stdout
    assert '<td class="task">tokens agree 24/24' in dom.stdout
