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
