"""The zoo on real Paddle: a real architecture from a suite's own package meets a real Paddle
finding, and a family that needs a newer Paddle is a skip with the reason, not an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import assert_exit_agrees, NOX, ROOT, load_record, nox_run, run_harness, stages_by_name

MATRIX = ROOT / "matrix" / "default.toml"


def test_ppocrv5_mobile_det_meets_the_onednn_interpolate_error_as_one_cause(tmp_path, paddle_version):
    """PP-OCRv5 mobile det from PaddleX's own model code: native CPU kernels agree with dygraph;
    oneDNN (Paddle's default CPU path) raises on the neck's F.interpolate(scale_factor=2) under
    PIR (measured on 3.3.1; Paddle issue #79749)."""
    pytest.importorskip("paddlex", reason="families.paddlex.packages are installed by `nox -s tests`")
    if not paddle_version.startswith("3."):
        pytest.skip("PaddleX needs Paddle 3.x")
    results = tmp_path / "r"
    for session in ("cpu_fp32", "cpu_onednn_fp32"):
        # The finding and its one line are what this test holds; the root cause of this cause is
        # held by tests/test_reduction.py on a planted model (no second 50 s reduction here).
        proc = run_harness("run", "--matrix", str(MATRIX), "--session", session, "--model", "pp_ocrv5_mobile_det",
                           "--results", str(results), "--paddle", paddle_version, "--no-root-cause")
        assert_exit_agrees(proc, results, session)
    native = load_record(results / "default", f"cpu_fp32/{paddle_version}/normal/pp_ocrv5_mobile_det")
    assert stages_by_name(native)["baseline"]["status"] == "pass"
    assert native["setup"]["weights"]["source"] in ("trained", "checkpoint")
    # The exported map is the head's output before its sigmoid: real magnitudes, not 0/1.
    assert stages_by_name(native)["baseline"]["worst"]["ref_absmax"] > 1.0
    onednn = load_record(results / "default", f"cpu_onednn_fp32/{paddle_version}/normal/pp_ocrv5_mobile_det")
    stage = stages_by_name(onednn)["onednn_fp32"]
    assert stage["status"] == "error"
    assert "ConvertPirAttribute2RuntimeAttribute not support [pir::ArrayAttribute<pir::DoubleAttribute>]" in stage["message"]
    report = run_harness("report", "--results", str(results))
    assert report.returncode == 0, report.stderr
    causes = [line for line in report.stdout.splitlines() if "cell(s):" in line and "ConvertPirAttribute2Runtime" in line]
    assert len(causes) == 1 and "error x1 in 1 cell(s)" in causes[0], causes  # one cause, the cell it hit
    assert "cpu_onednn_fp32/" in causes[0]


@pytest.mark.skipif(NOX is None, reason="nox is not installed in this environment")
def test_a_family_that_needs_a_newer_paddle_is_a_skip_with_the_reason(tmp_path, nox_envdir):
    text = MATRIX.read_text()
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(text)
    results = tmp_path / "r"
    proc = nox_run("-s", "cpu_fp32@2.6.2", "--envdir", str(nox_envdir), "--", "--model", "pp_lcnet",
                   "--results", str(results), matrix=matrix)
    assert proc.returncode == 0, proc.stdout[-3000:]
    record = json.loads((results / "default" / "cpu_fp32" / "2.6.2" / "normal" / "pp_lcnet.json").read_text())
    assert record["verdict"]["status"] == "skip" and record["setup"]["status"] == "skip"
    assert record["setup"]["message"].startswith("model family paddlex (paddlex==3.7.2) needs Paddle >= 3.0.0")
    assert "this environment has 2.6.2" in record["setup"]["message"]


def test_a_family_apart_is_a_skip_with_the_reason_where_it_is_not_installed(tmp_path, paddle_version):
    """PaddleNLP installs apart (its pins fight PaddleFormers'): in an environment of the other
    families (this one, as `nox -s tests` makes it) its model's cell is a skip that says where it runs."""
    from importlib import util

    if util.find_spec("paddlenlp") is not None:
        pytest.skip("PaddleNLP is installed here")
    results = tmp_path / "r"
    proc = run_harness("run", "--matrix", str(MATRIX), "--session", "cpu_fp32", "--model", "nlp_bert",
                       "--results", str(results), "--paddle", paddle_version, "--no-root-cause")
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = load_record(results / "default", f"cpu_fp32/{paddle_version}/normal/nlp_bert")
    assert record["verdict"]["status"] == "skip", record["verdict"]
    assert record["setup"]["message"].startswith("model family paddlenlp installs apart from the other families")
    assert "python -m harness pool --session cpu_fp32 --model nlp_bert" in record["setup"]["message"]


def test_the_reading_order_encoder_s_onednn_error_is_placed_at_a_chain_of_ops(tmp_path, paddle_version):
    """PP-DocLayoutV2's LayoutLMv3-style encoder (PaddleX's code, never built for this): under
    oneDNN at 3.3.1 its embeddings raise ("OP(embedding) expected >= 0 and < 1024, but got -354").
    No op reproduces alone; the chain the box-size embedding runs — subtract, clip, embedding —
    does, on the tensors the model gave it, and its reproducer is verified."""
    pytest.importorskip("paddlex", reason="families.paddlex.packages are installed by `nox -s tests`")
    if not paddle_version.startswith("3."):
        pytest.skip("PaddleX needs Paddle 3.x")
    results = tmp_path / "r"
    proc = run_harness("run", "--matrix", str(MATRIX), "--session", "cpu_onednn_fp32", "--model",
                       "reading_order_encoder", "--results", str(results), "--paddle", paddle_version)
    record = load_record(results / "default", f"cpu_onednn_fp32/{paddle_version}/normal/reading_order_encoder")
    stage = stages_by_name(record)["onednn_fp32"]
    if stage["status"] == "pass":
        pytest.skip(f"oneDNN computes the box sizes right on this CPU or Paddle ({paddle_version})")
    assert "OP(embedding) expected >= 0" in stage["message"], proc.stdout[-3000:]
    reduce = record["analysis"]["reduce"]
    assert reduce["path"] == "embeddings" and reduce["outcome"] == "isolated", reduce.get("isolation")
    assert len(reduce["ops"]) > 1 and reduce["ops"][-1] == "pd_op.embedding" and "pd_op.clip" in reduce["ops"]
    assert not any(t["reproduces"] for t in reduce["isolation"]["tried"] if " -> " not in t["op"])
    # The candidates the failure's words do not point at are asked side by side, a pool that runs clean
    # clearing all of its candidates in one run: fewer runs than candidates, the same chain found.
    isolation = reduce["isolation"]
    assert any(t.get("pooled") for t in isolation["tried"]) and isolation["runs"] < isolation["candidates"], isolation
    assert record["analysis"]["reproducer"]["verified"]
    # The chain in source, Paddle's public API alone (no PaddleX): it runs at any release without the suite.
    source = record["analysis"]["reproducer"]["source"]
    assert source["verified"] is True and source["program"] == "ops", source
    assert source["what"] == "pd_op.subtract -> pd_op.clip -> pd_op.embedding, as the model called it", source
    code = Path(source["script"]).read_text()
    assert "paddlex" not in code and "paddle.nn.functional.embedding(" in code, code
    # Beside it, the piece in source, built with PaddleX's config class from its own dict: what `releases`
    # asks at a release the chain cannot be asked at.
    larger = source["larger"]
    assert larger["verified"] is None and larger["what"] == "the piece embeddings of reading_order_encoder", larger
    assert "_config_pp_doclayout_v2" in Path(larger["script"]).read_text()
    # The smallest verified change, with what it leaves on oneDNN.
    workaround = record["analysis"]["workaround"]
    assert workaround["verified"] and workaround["changes"]["off_backend"], workaround


def test_a_suite_decoder_exported_as_it_ships_records_paddle_s_error_and_where(tmp_path, paddle_version):
    """PaddleFormers' Gemma 3 through its own forward: its sliding-window mask is a Python loop
    over the sequence length, which to_static refuses (3.3.1). The zoo leaves Gemma 3 out of its
    decoders for that; this cell keeps the finding: Paddle's error (never the harness's), and the
    suite's frame it was traced at, with no machine path. (``llama_as_shipped``, the LMHead
    recursion, records the same way but takes 90 s to recurse: it runs in the zoo's sessions.) The
    export's cause gets a source reproducer and a draft like any other."""
    pytest.importorskip("paddleformers", reason="families.paddleformers.packages are installed by `nox -s tests`")
    if not paddle_version.startswith("3."):
        pytest.skip("PaddleFormers needs Paddle 3.x")
    results = tmp_path / "r"
    run_harness("run", "--matrix", str(MATRIX), "--session", "cpu_fp32", "--model", "gemma3_as_shipped",
                "--results", str(results), "--paddle", paddle_version)
    record = load_record(results / "default", f"cpu_fp32/{paddle_version}/normal/gemma3_as_shipped")
    setup = record["setup"]
    if setup["status"] == "pass":
        pytest.skip(f"Paddle {paddle_version} exports PaddleFormers' Gemma 3 as it ships")
    assert setup["status"] == "error" and setup["phase"] == "export", setup
    assert "bool(Tensor) is not supported in static graph mode" in setup["message"]
    assert any(frame.startswith("paddleformers/generation/utils.py:") for frame in setup["traced_at"]), setup
    assert not any(frame.startswith("/") for frame in setup["traced_at"])
    # Its reproducer: the model rebuilt from PaddleFormers' classes, run in dygraph, then exported by
    # whichever Paddle runs the script — what `releases` bisects — verified here; the draft says export.
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "setup" and repro["verified"] is True, repro
    source = repro["source"]
    assert source["outcome"] == "reproduced" and "bool(Tensor) is not supported" in source["cause_words"]
    assert "paddle.jit.save(layer" in Path(source["script"]).read_text()
    run_harness("report", "--results", str(results))
    draft = (Path(source["script"]).parent / "issue.md").read_text()
    assert draft.startswith("# [cpu_fp32] the model's export (paddle.jit.save) raises TypeError: bool(Tensor)"), draft[:300]
    assert f"(Paddle {paddle_version})" in draft.splitlines()[0] and "Exporting the model" in draft


def test_one_model_of_each_suite_beyond_paddlex_builds_exports_and_agrees_on_native_cpu(tmp_path, paddle_version):
    """PaddleSeg's BiSeNetV2, PaddleDetection's PP-YOLOE-s (backbone and neck), PaddleScience's
    Navier-Stokes PINN and PaddleOCR-VL's vision tower (PaddleX's vision-language part), built from
    their packages' own classes (families installed without their pins), trained lite, exported and
    run by Paddle Inference's native CPU kernels: every stage is judged and agrees, and each output
    has the magnitude lite training gives (not a constant)."""
    for package in ("paddleseg", "ppdet", "ppsci", "einops"):
        pytest.importorskip(package, reason="the zoo's families are installed by `nox -s tests`")
    if not paddle_version.startswith("3."):
        pytest.skip("the zoo runs at Paddle 3 here")
    results = tmp_path / "r"
    models = ("seg_bisenetv2", "det_ppyoloe_s", "sci_ns_pinn", "paddleocr_vl_vision")
    proc = run_harness("run", "--matrix", str(MATRIX), "--session", "cpu_fp32", "--paddle", paddle_version,
                       *[a for m in models for a in ("--model", m)], "--results", str(results), "--no-root-cause")
    assert_exit_agrees(proc, results, "cpu_fp32")
    for name, dist in zip(models, ("paddleseg", "paddledet", "paddlesci", "paddlex")):
        record = load_record(results / "default", f"cpu_fp32/{paddle_version}/normal/{name}")
        assert record["verdict"]["status"] == "pass", (name, record["verdict"])
        # The layers came from the suite's package (what `releases` installs beside a piece reproducer).
        assert any(p.startswith(dist) for p in record["setup"]["model_packages"]), record["setup"]["model_packages"]
        baseline = stages_by_name(record)["baseline"]
        assert baseline["status"] == "pass" and baseline["worst"]["ref_absmax"] > 1e-3, (name, baseline["worst"])
    # A mode the model's suite does not train it in (the PINN: normal only): a declared skip, in its own column.
    run_harness("run", "--matrix", str(MATRIX), "--session", "cpu_fp32", "--paddle", paddle_version, "--model",
                "sci_ns_pinn", "--mode", "amp_o1", "--results", str(results), "--no-root-cause")
    skipped = load_record(results / "default", f"cpu_fp32/{paddle_version}/amp_o1/sci_ns_pinn")
    assert skipped["verdict"]["status"] == "skip" and "its suite does not train" in skipped["setup"]["message"]
    # The zoo at a glance names every zoo model: these three with their verdicts, the others "not run".
    glance = tmp_path / "zoo.md"
    assert run_harness("report", "--results", str(results), "--zoo", str(glance)).returncode == 0
    text = glance.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    import tomllib

    zoo = tomllib.loads(MATRIX.read_text())["zoo"]["models"]
    assert len(rows) == len(zoo) >= 30 and text.startswith(f"{len(zoo)} models from ")
    # The amp_o1 column holds one skip and nothing else: said once under the table, with its reason.
    assert f"| cpu_fp32 · {paddle_version} |\n" in text and f"· {paddle_version} · amp_o1 |" not in text
    assert f"- cpu_fp32 · {paddle_version} · amp_o1: 1× its suite does not train <model> in amp_o1" in text
    for name in models:
        row = next(r for r in rows if r.startswith(f"| `{name}` |"))
        assert row.endswith("| pass |") and "paddle" in row, row
    assert all(r.endswith("| not run |") for r in rows if not any(r.startswith(f"| `{n}` |") for n in models))
    # The modes each suite trains its model in, as the matrix declares them (with the suite's config).
    assert "| qat |" in next(r for r in rows if r.startswith("| `seg_bisenetv2` |"))
    assert "| none |" in next(r for r in rows if r.startswith("| `sci_ns_pinn` |"))
