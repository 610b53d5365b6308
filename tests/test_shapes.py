"""Every stage at the shapes a deployment feeds: variants from the matrix or from the InputSpec's
free dims, one predictor per stage run at each, the failing shape named; TensorRT's ranges from
them (tests/test_gpu_configs.py reads the collected range back)."""

from __future__ import annotations

import pytest

from harness import matrix
from harness.shared.errors import UserError
from harness.shared.shapes import declared, derive, label, shape_range

from .conftest import load_record, matrix_text, run_harness, stages_by_name


def test_variants_are_derived_from_free_dims_only():
    primary = {"image": [2, 3, 224, 224], "im_shape": [2, 2]}
    free = {"image": [None, 3, None, None], "im_shape": [None, 2]}
    assert derive(free, primary) == [{"image": [1, 3, 224, 224], "im_shape": [1, 2]},
                                     {"image": [3, 3, 337, 337], "im_shape": [3, 2]}]
    # fixed spatial dims stay; batch 1 primary gets no batch-1 variant
    assert derive({"image": [None, 3, 16, 16]}, {"image": [1, 3, 16, 16]}) == [{"image": [2, 3, 16, 16]}]
    assert derive({"image": [1, 3, 16, 16]}, {"image": [1, 3, 16, 16]}) == []
    tokens = derive({"tokens": [None, None]}, {"tokens": [2, 16]})
    assert tokens == [{"tokens": [1, 16]}, {"tokens": [3, 25]}] and 25 % 8
    assert label({"image": [1, 3, 32, 24], "mask": [1, 24]}) == "image=1x3x32x24, mask=1x24"


def test_declared_variants_zip_across_inputs_and_give_tensorrt_a_real_range():
    primary = {"image": [2, 3, 16, 16], "scale": [2, 1]}
    variants = declared({"image": {"shape": [2, 3, 16, 16], "shapes": [[1, 3, 16, 16], [4, 3, 40, 24]]}}, primary)
    assert variants == [{"image": [1, 3, 16, 16], "scale": [2, 1]}, {"image": [4, 3, 40, 24], "scale": [2, 1]}]
    ranges = shape_range([primary, *variants])
    assert ranges["image"] == {"min": [1, 3, 16, 16], "opt": [2, 3, 16, 16], "max": [4, 3, 40, 24]}
    assert ranges["scale"]["min"] == ranges["scale"]["max"] == [2, 1]


def test_the_matrix_checks_declared_shapes(tmp_path):
    base = matrix_text("3.3.1", {"m": "tests.factories:clean"}).replace(
        "inputs.image = { shape = [2, 3, 16, 16] }", "inputs.image = { shape = [2, 3, 16, 16], shapes = SHAPES }")
    for shapes, key in (("[[1, 3, 16]]", "models.m.inputs.image.shapes"), ("[]", "models.m.inputs.image.shapes"),
                        ("[[1, 3, 16, 0]]", "models.m.inputs.image.shapes")):
        path = tmp_path / "m.toml"
        path.write_text(base.replace("SHAPES", shapes))
        with pytest.raises(UserError, match=key.replace(".", r"\.")):
            matrix.load(path)
    path = tmp_path / "d.toml"
    path.write_text(base.replace("SHAPES", "[[1, 3, 16, 16]]").replace("[run]\n", "[run]\nderive_shapes = 1\n"))
    with pytest.raises(UserError, match="run.derive_shapes"):
        matrix.load(path)


def test_a_program_right_only_at_its_traced_size_fails_at_the_other_and_names_it(tmp_path, paddle_version):
    """avg_pool2d(kernel_size=y.shape[2:]) exported with fixed H/W: dygraph pools globally at every
    size, the program keeps the 16x16 kernel. At 16x16 (batch 2 and batch 1) it is right; at 32x24
    its output has another shape."""
    path = tmp_path / "matrix.toml"
    path.write_text(matrix_text(paddle_version, {"pool": "tests.factories:fixed_size_pool"}).replace(
        "inputs.image = { shape = [2, 3, 16, 16] }",
        "inputs.image = { shape = [2, 3, 16, 16], shapes = [[1, 3, 16, 16], [1, 3, 32, 24]] }"))
    proc = run_harness("run", "--matrix", str(path), "--session", "cpu_fp32", "--results", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stdout[-2000:]
    record = load_record(tmp_path / "r" / "default", f"cpu_fp32/{paddle_version}/normal/pool")
    variants = record["setup"]["shape_variants"]
    assert [v["label"] for v in variants] == ["image=1x3x16x16", "image=1x3x32x24"]
    assert "fixed dims" in variants[1]["note"] and "note" not in variants[0]
    baseline = stages_by_name(record)["baseline"]
    assert baseline["status"] == "fail" and baseline["failing_shape"] == 2
    assert baseline["message"].startswith("at image=1x3x32x24:")
    assert [s["status"] for s in baseline["shapes"]] == ["pass", "fail"]
    assert baseline["outputs"]["output"]["status"] == "pass"  # the primary shape is right
    assert record["verdict"]["status"] == "fail" and "image=1x3x32x24" in record["verdict"]["message"]
    assert "image=1x3x32x24" in proc.stdout  # the terminal table says where


def test_a_clean_model_passes_every_stage_at_every_derived_shape_with_one_predictor_each(tmp_path, paddle_version):
    path = tmp_path / "matrix.toml"
    path.write_text(matrix_text(paddle_version, {"clean": "tests.factories:clean"}))
    proc = run_harness("run", "--matrix", str(path), "--session", "cpu_fp32", "--results", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stdout[-2000:]
    record = load_record(tmp_path / "r" / "default", f"cpu_fp32/{paddle_version}/normal/clean")
    assert [v["label"] for v in record["setup"]["shape_variants"]] == ["image=1x3x16x16", "image=3x3x25x25"]
    for stage in record["stages"]:
        if stage["status"] == "skip":
            continue
        assert [s["label"] for s in stage["shapes"]] == ["image=1x3x16x16", "image=3x3x25x25"], stage["name"]
        assert all(s["status"] == "pass" for s in stage["shapes"]), stage["shapes"]
        assert stage["timings"]["shapes"] >= 0
        shapes_seen = {tuple(o["shape"]) for s in stage["shapes"] for o in s["outputs"].values()}
        assert shapes_seen == {(1, 4), (3, 4)}  # the outputs really came at those shapes
