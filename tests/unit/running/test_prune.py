"""What a finished cell keeps: every file its record names; the byproducts judged inside it go."""

import json
from pathlib import Path

from harness.running.prune import prune


def _cell(results: Path, named: list) -> Path:
    work = results / "cpu_ort_fp32/3.3.1/normal/m"
    for relative in ("export/model.json", "export/model.onnx", "export/model.perturbed.onnx",
                     "ort_fp32.optimized.onnx", "tensors/tensors.csv", "tensors/dump/base/0.npy",
                     "reduction/piece1/model.perturbed.onnx", "reproducer/model.perturbed.onnx"):
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_bytes(b"x" * 100)
    record = {"files": [f"cpu_ort_fp32/3.3.1/normal/m/{n}" for n in named]}
    (results / "cpu_ort_fp32/3.3.1/normal/m.json").write_text(json.dumps(record))
    return work


def test_the_byproducts_of_a_judged_stage_go_and_what_the_record_names_stays(tmp_path):
    work = _cell(tmp_path, ["export/model.json", "tensors/tensors.csv", "reduction/piece1/model.perturbed.onnx"])
    freed = prune(tmp_path, "cpu_ort_fp32/3.3.1/normal/m", work)
    gone = ["export/model.perturbed.onnx", "ort_fp32.optimized.onnx", "tensors/dump"]
    kept = ["export/model.json", "export/model.onnx", "tensors/tensors.csv", "reduction/piece1/model.perturbed.onnx",
            "reproducer/model.perturbed.onnx"]
    assert [n for n in gone if (work / n).exists()] == [] and freed == 300
    assert [n for n in kept if not (work / n).exists()] == []


def test_a_byproduct_the_record_names_is_evidence_and_stays(tmp_path):
    work = _cell(tmp_path, ["export/model.perturbed.onnx", "tensors/dump/base/0.npy"])
    prune(tmp_path, "cpu_ort_fp32/3.3.1/normal/m", work)
    assert (work / "export/model.perturbed.onnx").exists() and (work / "tensors/dump/base/0.npy").exists()
    assert not (work / "ort_fp32.optimized.onnx").exists()
