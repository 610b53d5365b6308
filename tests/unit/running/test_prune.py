"""What a finished cell keeps: every file its record names; the byproducts judged inside it go."""

import json
import shutil
from pathlib import Path

from harness.running.prune import STORED_FROM, prune


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


def _kept(results: Path, cell: str, files: dict) -> Path:
    work = results / cell
    for relative, data in files.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_bytes(data)
    (results / f"{cell}.json").write_text(json.dumps({"files": [f"{cell}/{n}" for n in files]}))
    return work


def test_what_two_cells_kept_alike_is_stored_once_and_each_reads_its_own_bytes(tmp_path):
    weights, other = b"w" * STORED_FROM, b"o" * STORED_FROM
    first = _kept(tmp_path, "cpu_fp32/3.3.1/normal/m", {"reproducer/weights.npz": weights,
                                                        "reproducer/standalone/weights.npz": weights,
                                                        "log.txt": b"small"})
    second = _kept(tmp_path, "cpu_ort_fp32/3.3.1/normal/m", {"reproducer/weights.npz": weights,
                                                            "reproducer/inputs.npz": other})
    # The standalone folder repeats its source folder's weights within the first cell.
    assert prune(tmp_path, "cpu_fp32/3.3.1/normal/m", first) == STORED_FROM
    assert prune(tmp_path, "cpu_ort_fp32/3.3.1/normal/m", second) == STORED_FROM
    same = [first / "reproducer/weights.npz", first / "reproducer/standalone/weights.npz", second / "reproducer/weights.npz"]
    assert len({p.stat().st_ino for p in same}) == 1 and all(p.read_bytes() == weights for p in same)
    assert (second / "reproducer/inputs.npz").read_bytes() == other and (first / "log.txt").stat().st_nlink == 1
    assert sorted(p.stat().st_size for p in (tmp_path / ".stored").iterdir()) == [STORED_FROM, STORED_FROM]
    assert not list(tmp_path.rglob("*.linking"))
    # A cell run again removes its folder: the other cell's bytes stay, and the store hands them on.
    shutil.rmtree(first)
    assert (second / "reproducer/weights.npz").read_bytes() == weights
    again = _kept(tmp_path, "cpu_fp32/3.3.1/normal/m", {"reproducer/weights.npz": weights})
    assert prune(tmp_path, "cpu_fp32/3.3.1/normal/m", again) == STORED_FROM
    # Pruned twice: nothing more to free, nothing changes.
    assert prune(tmp_path, "cpu_ort_fp32/3.3.1/normal/m", second) == 0
    assert (second / "reproducer/weights.npz").read_bytes() == weights
