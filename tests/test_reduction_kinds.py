"""The reduction on the kinds of model the suites ship beyond image classifiers (real Paddle):
a model fed token ids whose failing sublayer returns a mapping that keeps items only for
``paddle.Tensor`` values; a factory that builds once per process, and one that builds something
else the second time; two causes in one model; a piece whose program is empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.cell.rootcause.trials import empty_program
from harness.shared.compare import NothingCompared, Tolerance, compare_all
from harness.shared.vocab import Analysis

from .conftest import ORT_SESSION, ROOT, load_record, run_harness, stages_by_name

REDUCE = Analysis.REDUCE.journal_key


def _run(write_matrix, tmp_path, models, session, env=None, **kwargs):
    matrix = write_matrix(models, **kwargs)
    proc = run_harness("run", "--matrix", str(matrix), "--session", session, "--results", str(tmp_path / "r"),
                       env_extra=env)
    return tmp_path / "r" / "default", proc


def _reduced(write_matrix, tmp_path, version, name, factory, session, stage, inputs):
    """One model through ``session``: its record (the stage asserted failed or raised) and its reduction."""
    results, _ = _run(write_matrix, tmp_path, {name: factory}, session, inputs={name: inputs})
    record = load_record(results, f"{session}/{version}/normal/{name}")
    assert stages_by_name(record)[stage]["status"] in ("fail", "error"), stages_by_name(record)[stage]
    return results, record, record["analysis"]["reduce"]


def _resume_from_reduce(work: Path, env=None) -> dict:
    """What a worker restarted after dying in the reduce step does (the host passes it the same
    arguments): a fresh process, the journal read back up to the step, the rest redone."""
    journal = work / "journal.jsonl"
    lines = journal.read_text().splitlines()
    cut = next(i for i, ln in enumerate(lines) if json.loads(ln).get("stage") == REDUCE)
    journal.write_text("\n".join(lines[:cut + 1]) + "\n")  # the reduce step started, never ended
    environ = dict(os.environ, **(env or {}), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "harness.cell", "cell", "--spec", str(work / "spec.json"),
                           "--work", str(work)], env=environ, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    finished = {}
    for line in journal.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("event") == "end":
            finished[entry["stage"]] = entry["result"]
    return finished[REDUCE]


def test_token_ids_stay_inputs_and_a_mapping_output_is_reached_by_attribute(write_matrix, tmp_path, paddle_version):
    """Fed token ids [1, 16] int64; ``decoder`` takes the ids and returns ``Fields`` (items only for
    ``paddle.Tensor`` values: none under to_static). Its piece is fed the ids (not written in), reads
    ``o0.hidden``, and oneDNN's interpolate error is reduced into it, down to the op."""
    if not paddle_version.startswith("3.3"):
        pytest.skip("measured on Paddle 3.3.x: oneDNN raises on interpolate by a scale factor")
    results, record, reduce = _reduced(write_matrix, tmp_path, paddle_version, "tokens", "tests.factories:token_model",
                                       "cpu_onednn_fp32", "onednn_fp32", "ids = { shape = [1, 16], high = 100 }")
    assert stages_by_name(record)["onednn_fp32"]["status"] == "error"
    assert reduce["path"] == "decoder" and reduce["layer"] == "TokenUpsampler", reduce
    assert reduce["outcome"] == "isolated" and reduce["op"] == "pd_op.bilinear_interp", reduce
    assert "instance" in reduce["model"]
    decoder = next(t for t in reduce["trials"] if t["members"] == ["decoder"])
    assert decoder["reproduces"] and "written_in" not in decoder, decoder  # the ids stayed an input
    work = results / f"cpu_onednn_fp32/{paddle_version}/normal/tokens"
    piece = next(p for p in sorted((work / "reduction").glob("piece*/piece.py"))
                 if "self.members[0](in0)" in p.read_text() and "o0.hidden" in p.read_text())
    with np.load(piece.parent / "inputs.npz") as fed:  # the answer's inputs, kept for its reproducer
        assert [(a.dtype, a.shape) for a in fed.values()] == [(np.int64, (1, 16))]
    assert record["analysis"]["reproducer"]["verified"] is True


def test_layers_called_with_a_graph_object_are_pieces_like_any_other(write_matrix, tmp_path, paddle_version):
    """Layers called with an object holding tensors (a graph, as the graph-learning suites pass
    one): each piece is fed the object's tensors and rebuilds the object from the one the model
    passed. A projection scaled only in the export, inside the second graph layer, is placed there
    (before: those layers could not be replayed, and the answer was the whole model)."""
    if not paddle_version.startswith("3."):
        pytest.skip("measured on Paddle 3.x")
    results, record, reduce = _reduced(write_matrix, tmp_path, paddle_version, "gnn", "tests.factories:graph_gnn",
                                       "cpu_fp32", "baseline",
                                       "node_feat = { shape = [6, 8] }\ninputs.edges = { shape = [10, 2], low = 0, high = 6 }")
    assert stages_by_name(record)["baseline"]["status"] == "fail"
    assert reduce["path"] == "conv2.proj", reduce
    conv2 = next(t for t in reduce["trials"] if t["members"] == ["conv2"])
    assert conv2["reproduces"] and not conv2.get("untestable"), conv2
    work = results / f"cpu_fp32/{paddle_version}/normal/gnn"
    assert any("_with(self.objects[0], {'node_feat': in0, 'edges': in1})" in p.read_text()
               for p in (work / "reduction").glob("piece*/**/piece.py"))
    assert record["analysis"]["reproducer"]["verified"] is True


def test_a_factory_that_builds_once_per_process_is_reduced_from_the_exported_instance(write_matrix, tmp_path,
                                                                                      paddle_version):
    """``BuiltOnce`` asserts on its second build in a process: the reduction takes apart the instance
    that was exported; a worker restarted in the reduce step (a fresh process) rebuilds it once there."""
    results, _ = _run(write_matrix, tmp_path, {"once": "tests.factories:built_once"}, "cpu_fp32")
    record = load_record(results, f"cpu_fp32/{paddle_version}/normal/once")
    reduce = record["analysis"]["reduce"]
    assert reduce["status"] == "pass" and reduce["path"] == "blocks.1" and reduce["layer"] == "CountingBlock", reduce
    assert reduce["model"] == "the instance this process trained and exported"
    again = _resume_from_reduce(results / f"cpu_fp32/{paddle_version}/normal/once")
    assert again["status"] == "pass" and again["path"] == "blocks.1", again
    assert again["model"].startswith("rebuilt from its source in a process where its factory had not run")


def test_a_factory_that_builds_otherwise_the_second_time_is_said_in_one_line(write_matrix, tmp_path, paddle_version):
    env = {"HARNESS_TEST_BUILDS": str(tmp_path / "builds")}
    results, _ = _run(write_matrix, tmp_path, {"shifty": "tests.factories:builds_otherwise_the_second_time"},
                      "cpu_fp32", env=env)
    work = results / f"cpu_fp32/{paddle_version}/normal/shifty"
    assert load_record(results, f"cpu_fp32/{paddle_version}/normal/shifty")["analysis"]["reduce"]["path"] == "blocks.1"
    again = _resume_from_reduce(work, env)
    assert again["status"] == "untestable", again  # the harness could not take apart what was exported
    message = again["message"]
    assert "\n" not in message and "tests.factories:builds_otherwise_the_second_time" in message
    assert "built something else than the exported model" in message
    assert "head.weight [3, 6] vs exported [3, 4]" in message and "head.bias [6] vs exported [4]" in message


@pytest.mark.skipif(not all(__import__("importlib").util.find_spec(p) for p in ("onnxruntime", "paddle2onnx")),
                    reason="needs the cpu_ort_fp32 session's packages (nox -s tests installs them)")
def test_two_causes_in_one_model_are_each_localized_to_their_own_sublayer(write_matrix, tmp_path, paddle_version):
    """paddle2onnx has no converter for cumprod (in ``first``) nor lgamma (in ``second``): one
    conversion, two causes; each is reduced on its own, the other's sublayer masked for it."""
    if not paddle_version.startswith("3."):
        pytest.skip("paddle2onnx 2.x needs Paddle 3")
    results, _ = _run(write_matrix, tmp_path, {"two": "tests.factories:two_unconvertible"}, "cpu_ort_fp32",
                      extra=ORT_SESSION)
    record = load_record(results, f"cpu_ort_fp32/{paddle_version}/normal/two")
    message = stages_by_name(record)["ort_convert"]["message"]
    assert message.endswith("missing from paddle2onnx's supported list: cumprod, lgamma"), message
    reduce = record["analysis"]["reduce"]
    causes = {c["cause"].rsplit("(", 1)[1].rstrip(")"): c for c in reduce["causes"]}
    assert set(causes) == {"cumprod", "lgamma"}, reduce["causes"]
    assert causes["cumprod"]["path"] == "first" and causes["lgamma"]["path"] == "second", reduce["causes"]
    assert causes["cumprod"].get("op") == "pd_op.cumprod" and causes["lgamma"].get("op") == "pd_op.lgamma"
    # Sought second, lgamma meets ``first`` raising cumprod's cause: masked, never taken as clean.
    assert causes["lgamma"]["masked"] == [["first"]], causes["lgamma"]
    assert reduce["path"] == causes[reduce["cause"].rsplit("(", 1)[1].rstrip(")")]["path"]


def test_a_piece_whose_program_is_empty_says_nothing(tmp_path):
    """A piece fed nothing whose member returns ``Fields`` (no item under to_static) exports an
    empty program (the harness's own export, real Paddle): it is untestable, with the reason."""
    import paddle

    from harness.cell.paddle_api import export
    from harness.cell.base.registry import runtime
    from harness.runtimes.paddle_inference import baseline_plan
    from harness.shared.backends import DeployOptions

    from .factories import EmptyOutput

    class ValuesOf(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.member = EmptyOutput()

        def forward(self):
            return list(self.member(paddle.ones([1, 3, 4, 4])).values())

    piece = ValuesOf()
    piece.eval()
    traced = [t.numpy() for t in piece()]
    assert len(traced) == 1  # dygraph: the mapping holds its tensor
    files = export.export(piece, [], tmp_path / "model")
    baseline = baseline_plan("cpu", files["format"], DeployOptions())
    _, outputs, evidence = runtime(baseline.runtime).session(files, baseline.config, {}, tmp_path / "s").run_with_evidence({})
    why = empty_program(evidence.get("op_types") or {}, traced, outputs)
    assert outputs == [] and why, (outputs, evidence.get("op_types"))
    with pytest.raises(NothingCompared, match="nothing to compare"):
        compare_all(traced, outputs, Tolerance(1e-4, 1e-4))


def test_no_comparison_of_zero_tensors_passes():
    tol = Tolerance(1e-4, 1e-4)
    with pytest.raises(NothingCompared):
        compare_all([], [], tol)
    with pytest.raises(NothingCompared, match="cannot be paired"):
        compare_all([np.zeros(2)], [np.zeros(2), np.zeros(2)], tol)
    assert empty_program({"pd_op.feed": 1, "pd_op.fetch": 1}, [np.zeros(1)], [np.zeros(1)]).startswith("its program runs no op")
    assert empty_program({"pd_op.conv2d": 1}, [np.zeros(1), np.zeros(1)], [np.zeros(1)]).endswith("the trace dropped some")
    assert empty_program({"pd_op.conv2d": 1}, [np.zeros(1)], [np.zeros(1)]) == ""
