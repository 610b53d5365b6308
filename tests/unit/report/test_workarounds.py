"""The workarounds report (``report/workarounds.py``): per cause, the change, the cells it fixed and
its speed; the known-issues file ``qualify --known`` reads; a cell with none says what was tried."""

import tomllib

import yaml

from harness.report import workarounds
from harness.report.qualify import load_known
from tests.conftest import as_record

ERROR = "RuntimeError: (PreconditionNotMet) The size 0 of regions must be equal to 2."


def _failing(cell_id: str, workaround: dict):
    return as_record({"id": cell_id,
                      "stages": [{"name": "baseline", "status": "pass"}, {"name": "ir", "status": "error", "message": ERROR}],
                      "verdict": {"status": "error", "first_failing_stage": "ir", "message": ERROR},
                      "analysis": {"workaround": {"status": "pass", "stage": "ir", **workaround}}})


FIXED = {"outcome": "verified", "verified": True, "change": "passes: switch off constant_folding_pass",
         "change_lines": ["config.delete_pass('constant_folding_pass')"], "shapes": 3,
         "config_lines": ["config.switch_ir_optim(True)", "config.delete_pass('constant_folding_pass')"],
         "speed": {"with_ms": 1.0, "against_ms": 2.0, "against": "baseline", "ratio": 0.5, "runs": 7},
         "changes": {"passes_no_longer_run": ["constant_folding_pass"], "ops": 8, "backend_ops": 0},
         "paddlex_hpi": {"hpi_config": {"backend": "paddle", "backend_config": {"delete_pass": ["constant_folding_pass"]}}}}
NONE = {"outcome": "none verified", "verified": False, "shapes": 3,
        "tried": [{"change": "set_optimization_level(2)", "verdicts": {"0": "fail"}}],
        "not_tried": ["keeping op types off oneDNN: ignored"]}


def test_one_line_per_cause_counts_the_cells_its_change_fixed_and_their_speed(tmp_path):
    records = [_failing("cpu_fp32/3.3.1/normal/a", FIXED),
               _failing("cpu_fp32/3.3.1/normal/b", dict(FIXED, speed=dict(FIXED["speed"], ratio=0.7))),
               _failing("cpu_fp32/3.3.1/normal/c", NONE)]
    cells = workarounds.collect(records)
    text = workarounds.table(cells)
    row = next(line for line in text.splitlines() if "regions" in line)
    assert "config.delete_pass('constant_folding_pass')" in row and "| 2 of 3 |" in row and "0.60 (0.50–0.70)" in row
    section = workarounds.cell_section(cells[2])
    assert "no verified workaround" in section and "set_optimization_level(2) (shape 0: fail)" in section
    assert "Not tried: keeping op types off oneDNN" in section
    fixed = workarounds.cell_section(cells[0])
    assert "passes that no longer run: constant_folding_pass" in fixed
    block = fixed.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == FIXED["paddlex_hpi"]  # the YAML reads back as the record's config


def test_the_known_issues_file_is_what_qualify_reads(tmp_path):
    records = [_failing("cpu_fp32/3.3.1/normal/a", FIXED), _failing("cpu_fp32/3.3.1/normal/c", NONE),
               as_record({"id": "cpu_fp32/3.3.1/normal/ok"})]
    path = tmp_path / "known.toml"
    path.write_text(workarounds.known_issues(workarounds.collect(records), records, tmp_path))
    data = tomllib.loads(path.read_text())
    assert [k["cell"] for k in data["known"]] == ["cpu_fp32/3.3.1/normal/a", "cpu_fp32/3.3.1/normal/c"]
    assert data["known"][0]["workaround"] == "config.delete_pass('constant_folding_pass')"
    assert "workaround" not in data["known"][1]  # none verified: the failure is known, nothing ships with it
    known = load_known(path)
    assert known[0].expects(records[0]) and not known[0].expects(records[2])


TYPE_ERROR = ("ValueError: InvalidArgumentError: The type of data we are trying to retrieve (float32) does not match "
              "the type of data (int64) currently contained in the container. (at /paddle/paddle/phi/core/dense_tensor.cc:153)")
CONVERTER = "paddle2onnx could not convert the program; it said: Cannot convert op {} with opset 11 (at converter.cc:{})"


def test_people_read_paddles_words_never_a_grouping_key_and_each_cause_apart(tmp_path):
    """The cause's own first words (never "(float3<n>)"), shortened at a word, and six converter
    causes sharing a long prefix told apart in the table."""
    def failing(cell_id, message):
        return as_record({"id": cell_id,
                          "stages": [{"name": "ort_fp32", "status": "error", "message": message}],
                          "verdict": {"status": "error", "first_failing_stage": "ort_fp32", "message": message},
                          "analysis": {"workaround": {"status": "pass", "stage": "ort_fp32", **NONE}}})
    ops = ["roi_align", "roi_pool", "grid_sample", "deformable_conv", "yolo_box", "multiclass_nms3"]
    records = [failing(f"cpu_ort_fp32/3.3.1/normal/m{k}", CONVERTER.format(op, 100 + k)) for k, op in enumerate(ops)]
    records.append(failing("cpu_ort_fp32/3.3.1/normal/t", TYPE_ERROR))
    cells = workarounds.collect(records)
    rows = [line for line in workarounds.table(cells).splitlines()[2:]]
    assert len(rows) == 7
    shown = [row.split(" | ")[0].lstrip("| ") for row in rows]
    assert len(set(shown)) == 7, shown  # distinguishable
    assert all(op in " ".join(shown) for op in ops)
    assert any("The type of data we are trying to retrieve (float32)" in s for s in shown), shown
    text = workarounds.known_issues(cells, records, tmp_path)
    for said in [text, "\n".join(rows)]:
        assert "<n>" not in said and "<path>" not in said
    assert all(not s.endswith(("…", " …")) or " " in s for s in shown)
    assert all(len(word) > 0 for s in shown for word in s.split())


def test_one_cause_met_at_two_shapes_and_two_ways_is_one_row():
    """Grouped by the cause's key internally: the same words with other numbers and another exception
    prefix are one cause; the row shows the first cell's words."""
    def failing(cell_id, message):
        return as_record({"id": cell_id,
                          "stages": [{"name": "ir", "status": "error", "message": message}],
                          "verdict": {"status": "error", "first_failing_stage": "ir", "message": message},
                          "analysis": {"workaround": {"status": "pass", "stage": "ir", **FIXED}}})
    cells = workarounds.collect([failing("cpu_fp32/3.3.1/normal/a", TYPE_ERROR),
                                 failing("cpu_fp32/3.3.0/normal/a", "at shape 1: " + TYPE_ERROR.replace("153", "160"))])
    assert len(workarounds.by_cause(cells)) == 1
