"""OpenVINO (``cpu_openvino_fp32``): at Paddle 2.6.2 its Paddle frontend reads the cell's
``.pdmodel``; at 3.x (PIR ``.json``, which that frontend cannot read) it reads the ONNX paddle2onnx
makes, as PaddleX's high-performance inference does. The cells run through nox, in that session's
env with the shipped pins. What precision the plugin's nodes ran in is read back from its runtime model:
OpenVINO's default on a CPU with bf16 is bf16, and an fp32 stage that ran bf16 is ``noop`` with the
reason, never a pass — on every CPU the status follows what was read back.
"""

from __future__ import annotations

import os

from pathlib import Path

import pytest

from .conftest import (assert_exit_agrees, NOX, OPENVINO_SESSION, exact_cells_at_2_6, installed_paddle, load_record, matrix_text, nox_run,
                       run_harness, stages_by_name)

LOWER = ("bf16", "f16")


@pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")
@pytest.mark.parametrize("version", ["2.6.2", "installed"])
def test_openvino_reads_the_precision_it_ran_and_an_fp32_stage_that_ran_bf16_is_not_a_pass(tmp_path, nox_envdir, version):
    """At 2.6.2 the frontend reads the cell's .pdmodel; at 3.x paddle2onnx's ONNX of the PIR
    program, said in the evidence."""
    installed = installed_paddle()
    version = installed if version == "installed" else version
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(installed, {"resnet": "harness.models:resnet18"}, other_versions=["2.6.2"],
                                  extra="inputs.image = { shape = [1, 3, 32, 32] }\n" + OPENVINO_SESSION))
    results = tmp_path / "r"
    session = "cpu_openvino_fp32" if version == installed else f"cpu_openvino_fp32@{version}"
    proc = nox_run("-s", session, "--envdir", str(nox_envdir), "--", "--results", str(results), matrix=matrix)
    assert_exit_agrees(proc, results)
    record = load_record(results / "default", f"cpu_openvino_fp32/{version}/normal/resnet")
    read = stages_by_name(record)["openvino_convert"]["evidence"]
    if version.startswith("3."):
        assert record["setup"]["export"]["program"].endswith(".json")
        assert read["program_read"].startswith("model.onnx (paddle2onnx's conversion of model.json")
        assert read["conversion"]["converter"].startswith("paddle2onnx 2.")
    else:
        assert read["program_read"] == "model.pdmodel (OpenVINO's Paddle frontend)"
    stages = stages_by_name(record)
    assert list(stages) == ["baseline", "openvino_convert", "openvino_fp32"]
    convert, deployed = stages["openvino_convert"], stages["openvino_fp32"]
    # The conversion, at an explicit f32 hint, read back as f32 and run in f32: the frontend is right.
    assert convert["evidence"]["config_read_back"]["INFERENCE_PRECISION_HINT"] == "f32"
    assert not set(convert["evidence"]["runtime_precisions"]) & set(LOWER)
    assert convert["status"] == "pass", convert
    # OpenVINO's defaults: whatever this CPU makes of them, the status follows the precision read back.
    ran = deployed["evidence"]["runtime_precisions"]
    lower = sorted(set(ran) & set(LOWER))
    if lower:
        assert deployed["status"] == "noop" and "this stage says nothing about fp32" in deployed["message"]
        assert deployed["evidence"]["config_read_back"]["INFERENCE_PRECISION_HINT"] in LOWER
    else:
        assert deployed["status"] == "pass" and "not_as_claimed" not in deployed["evidence"]
    # On a CPU with bf16, OpenVINO's default is bf16: detected, never passed as fp32.
    flags = set(record["machine"].get("flags") or [])
    if flags & {"avx512_bf16", "amx_bf16"}:
        assert lower == ["bf16"] and deployed["status"] == "noop"
    # A noop is no failure: nothing to reproduce. The first failing stage, if any, gets a plain OpenVINO script.
    repro = (record.get("analysis") or {}).get("reproducer")
    if repro:
        text = Path(repro["script"]).read_text()
        assert "core.read_model(" in text and "import paddle\n" not in text


@pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")
def test_the_per_tensor_diff_pairs_openvinos_tensors_with_paddles_by_name(tmp_path, nox_envdir):
    """At zero tolerance the conversion fails (OpenVINO's conv and Paddle's sum in other orders);
    the frontend names each tensor after the Paddle variable it computes, and the diff pairs every
    one of them with the tensor of that name in Paddle's predictor."""
    import json

    results = exact_cells_at_2_6(tmp_path, nox_envdir, "cpu_openvino_fp32", {"clean": "tests.factories:clean"},
                                 OPENVINO_SESSION)
    record = load_record(results, "cpu_openvino_fp32/2.6.2/normal/clean")
    assert stages_by_name(record)["openvino_convert"]["status"] == "fail"
    diff = record["analysis"]["diff"]
    assert diff["stage"] == "openvino_convert" and diff["outcome"] == "diverges"
    table = json.loads(Path(diff["result"]).read_text())
    assert table["test_tensors"] >= 5 and table["pairs"] == table["test_tensors"]
    assert {(r["op"], r["test_op"]) for r in table["rows"]} >= {("conv2d", "Convolution"), ("relu", "Relu")}
    assert all(r["matched_by"] == "name" for r in table["rows"])
    first = next(r for r in table["rows"] if r["status"] != "pass" and not r.get("suspect"))
    assert diff["first_divergence"]["index"] == first["index"]
    assert isinstance(table["hooks_changed_output"]["test"], bool)  # said either way


def test_at_paddle_3_openvino_reads_paddle2onnxs_onnx_and_the_converters_failure_is_its_finding(tmp_path, paddle_version):
    """The built-in detector and encoder (whose legacy-IR export raises at 3.3.1) are read and
    compared; the upsample decoder's conversion fails in paddle2onnx (3.3's interpolate scale):
    that is the converter's finding, in its words, with a verified reproducer — never untestable."""
    pytest.importorskip("openvino")
    pytest.importorskip("paddle2onnx")
    if not paddle_version.startswith("3."):
        pytest.skip("Paddle 3's PIR programs")
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(paddle_version, {}) + OPENVINO_SESSION + """
[models.detector]
factory = "harness.models:detector"
inputs.image = { shape = [1, 3, 32, 32] }
inputs.im_shape = { shape = [1, 2], low = 24, high = 32 }
inputs.scale_factor = { shape = [1, 2], low = 0.5, high = 1.5 }
[models.encoder]
factory = "harness.models:encoder"
inputs.tokens = { shape = [1, 8], low = 0, high = 100 }
[models.upsample]
factory = "harness.models:upsample_decoder"
inputs.image = { shape = [1, 3, 16, 16] }
""")
    results = tmp_path / "r"
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_openvino_fp32", "--results", str(results))
    for name in ("detector", "encoder"):
        record = load_record(results / "default", f"cpu_openvino_fp32/{paddle_version}/normal/{name}")
        convert = stages_by_name(record)["openvino_convert"]
        assert convert["status"] == "pass", convert
        assert convert["evidence"]["program_read"].startswith("model.onnx (paddle2onnx's conversion")
    record = load_record(results / "default", f"cpu_openvino_fp32/{paddle_version}/normal/upsample")
    convert = stages_by_name(record)["openvino_convert"]
    if not paddle_version.startswith("3.3"):
        assert convert["status"] == "pass", convert  # the float64 scale is 3.3's
        return
    assert convert["status"] == "error"
    assert "paddle2onnx 2.1.0 said:" in convert["message"]
    assert "MUST be ir::FloatAttribute" in convert["message"]
    repro = record["analysis"]["reproducer"]
    assert repro["verified"] is True
    assert "paddle2onnx.export(" in Path(repro["script"]).read_text()
    assert record["analysis"]["reduce"]["path"] == "decoder"


def test_a_conversion_both_onnx_runtimes_read_fails_alike_and_is_analysed_once(tmp_path, paddle_version):
    """ONNX Runtime and OpenVINO read one paddle2onnx conversion of the program. paddle2onnx 2.1.0
    aborts on cumprod: both sessions' stages raise its words from the same step (the converter, its
    options, the program's bytes), and the reduction and reproducer of that failure are made once —
    the second session's say whose they are — and are those it makes alone, without sharing. Its
    workaround, verified on its own runtime, stays its own."""
    pytest.importorskip("openvino")
    pytest.importorskip("paddle2onnx")
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    import sys

    from .conftest import ORT_SESSION

    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(paddle_version, {"unconv": "tests.factories:unconvertible",
                                                   "centred": "tests.factories:centred_by_its_mean",
                                                   "upsample": "tests.factories:conv_interpolate"},
                                  one_shape=["upsample"])
                      + ORT_SESSION + OPENVINO_SESSION)

    def pool(results, *sessions, models=(), **env):
        proc = run_harness("pool", "--matrix", str(matrix), *[a for s in sessions for a in ("--session", s)],
                           *[a for m in models for a in ("--model", m)],
                           "--results", str(results), "--jobs", "2", "--python", sys.executable, env_extra=env)
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
        return results / "default"

    shared = pool(tmp_path / "shared", "cpu_ort_fp32", "cpu_openvino_fp32")
    alone = pool(tmp_path / "alone", "cpu_openvino_fp32", models=("unconv",), HARNESS_SHARED_SETUP="0")
    records = {s: load_record(shared, f"{s}/{paddle_version}/normal/unconv") for s in ("cpu_ort_fp32", "cpu_openvino_fp32")}
    stage_of = {"cpu_ort_fp32": "ort_convert", "cpu_openvino_fp32": "openvino_convert"}
    entries = {s: stages_by_name(r)[stage_of[s]] for s, r in records.items()}
    assert {e["status"] for e in entries.values()} == {"error"}
    assert entries["cpu_ort_fp32"]["message"] == entries["cpu_openvino_fp32"]["message"]
    assert "cumprod" in entries["cpu_ort_fp32"]["message"]
    step = entries["cpu_ort_fp32"]["shared_step"]
    assert step.startswith("paddle2onnx ") and entries["cpu_openvino_fp32"]["shared_step"] == step
    takers = [s for s, r in records.items() if r["analysis"]["reduce"].get("reused_from")]
    assert len(takers) == 1, {s: r["analysis"]["reduce"] for s, r in records.items()}
    taker, = takers
    maker, = set(records) - {taker}
    for kind in ("reduce", "reproducer"):
        taken, made = records[taker]["analysis"][kind], records[maker]["analysis"][kind]
        assert taken["reused_from"] == records[maker]["id"] and made.get("reused_from") is None
        assert taken["stage"] == stage_of[taker] and taken["reused_stage"] == stage_of[maker]
    assert records[taker]["analysis"]["reproducer"]["verified"] is True
    # The workaround is taken only when none of its changes got past the conversion (the runtime never
    # ran); else it is verified on the cell's own runtime.
    from harness.runtimes.paddle2onnx.convert import cause_words

    made = records[maker]["analysis"]["workaround"]
    cause = cause_words(entries[maker]["message"])
    in_the_step = made.get("outcome") == "none verified" and all(
        t.get("cause") == cause for t in made.get("tried") or [None]) if made.get("tried") else False
    assert bool(records[taker]["analysis"]["workaround"].get("reused_from")) == in_the_step, made
    # Where a change got past the conversion (opset 18 converts ``mean()`` with no axis), the workaround
    # is the cell's own: the changes that ended in the conversion are taken, the others checked here.
    centred = {s: load_record(shared, f"{s}/{paddle_version}/normal/centred") for s in stage_of}
    reader = next(s for s, r in centred.items() if r["analysis"]["reduce"].get("reused_from"))
    writer = next(s for s in centred if s != reader)
    found = centred[reader]["analysis"]["workaround"]
    assert found.get("reused_from") is None and found["verified"] is True, found
    assert found["change"] == "paddle2onnx: opset_version=18", found
    taken = [t["change"] for t in found["tried"] if t.get("reused_from") == centred[writer]["id"]]
    assert taken == [t["change"] for t in found["tried"][:-1]] and len(taken) >= 3, found["tried"]
    assert "reused_from" not in found["tried"][-1], found["tried"]
    # A change in the model's code (3.3's interpolate scale, respelled as the output size) got past the
    # conversion: each runtime checks it, the second reading the first's export and ONNX (one program).
    if paddle_version.startswith("3.3"):
        upsample = {s: load_record(shared, f"{s}/{paddle_version}/normal/upsample") for s in stage_of}
        reader = next(s for s, r in upsample.items() if r["analysis"]["reduce"].get("reused_from"))
        writer = next(s for s in upsample if s != reader)
        respelled = {s: next(t for t in r["analysis"]["workaround"]["tried"] if t.get("model_side"))
                     for s, r in upsample.items()}
        assert respelled[writer]["exported"].get("reused_from") is None, respelled
        assert respelled[reader]["exported"]["reused_from"] == upsample[writer]["id"], respelled
        program = Path(respelled[reader]["exported"]["files"]["program"])
        assert program.is_file()
        # Paddle's files only: the reader converts them itself, with its own memory comparison beside it.
        assert program.with_suffix(".perturbed.onnx").is_file() and not os.path.samefile(
            program.with_suffix(".onnx"), Path(respelled[writer]["exported"]["files"]["program"]).with_suffix(".onnx"))
        assert respelled[reader]["verdicts"] == respelled[writer]["verdicts"] == {"0": "pass"}, respelled
    # What the OpenVINO cell finds by itself is what it took.
    own = load_record(alone, f"cpu_openvino_fp32/{paddle_version}/normal/unconv")
    assert stages_by_name(own)["openvino_convert"]["message"] == entries["cpu_ort_fp32"]["message"]
    assert own["analysis"]["reduce"].get("reused_from") is None
    assert own["analysis"]["reduce"]["path"] == records[taker]["analysis"]["reduce"]["path"]
    mine, taken = own["analysis"]["reproducer"], records[taker]["analysis"]["reproducer"]
    assert mine["verified"] is True and (mine["program"], mine["path"]) == (taken["program"], taken["path"])
