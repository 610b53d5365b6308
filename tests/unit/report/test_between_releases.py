"""Two releases side by side: each cause by the cells of both (new, gone, in both), and what the same
cells did at the other release; every all-skip column of the zoo said once, with its reasons."""

from pathlib import Path

from harness.report.between import side_by_side, tallies
from harness.report.model import RunModel
from harness.report.publication import rows
from tests.conftest import as_record


def _cell(version, model, status="pass", stage=None, message=""):
    stages = [{"name": "baseline", "status": "pass"}]
    if stage:
        stages.append({"name": stage, "status": status, "message": message})
    return as_record({"id": f"cpu_onednn_fp32/{version}/normal/{model}", "cell": {"paddle": version, "model": {"name": model}, "session": {"name": "cpu_onednn_fp32"}},
                      "paddle": {"version": version}, "stages": stages,
                      "verdict": {"status": status, "first_failing_stage": stage, "message": message}})


def test_each_cause_is_new_gone_or_in_both_by_the_cells_of_both_releases(tmp_path):
    new = "NotImplementedError: (Unimplemented) ConvertPirAttribute2RuntimeAttribute not support"
    gone = "RuntimeError: (PreconditionNotMet) oneDNN activation fuses require use_mkldnn=True"
    both = "ValueError: Input dimension size should be equal to 5"
    unasked = "TypeError: bool(Tensor) is not supported in static graph mode"
    records = [_cell("3.3.1", "a", "error", "onednn_fp32", new), _cell("3.2.2", "a"),
               _cell("3.3.1", "b"), _cell("3.2.2", "b", "error", "onednn_fp32", gone),
               _cell("3.3.1", "c", "error", "onednn_fp32", both), _cell("3.2.2", "c", "error", "onednn_fp32", both),
               _cell("3.3.1", "d", "error", "onednn_fp32", both),  # d at 3.2.2: never run
               _cell("3.3.1", "e", "error", "onednn_fp32", unasked)]  # e: nothing at 3.2.2 to compare with
    model = RunModel(records, [], [])
    found = rows(model, tmp_path)
    said = "\n".join(side_by_side(model, found, "3.3.1", "3.2.2"))
    assert said.startswith("Per cause, from the cells of both releases") and "1 new in 3.3.1, 1 gone from it (met at 3.2.2 only), 1 in both, 1 met at one release" in said
    line = {w: next(ln for ln in said.splitlines() if w[:30] in ln) for w in (new, gone, both, unasked)}
    assert "| 1 | 0 | its cells did not run at the other release | 1 not run |" in line[unasked], line[unasked]
    assert "| 1 | 0 | **new in 3.3.1** | 1 pass |" in line[new], line[new]
    assert "| 0 | 1 | **gone in 3.3.1** | 1 pass |" in line[gone], line[gone]
    assert "| 2 | 1 | in both | 1 not run |" in line[both], line[both]
    assert tallies(model, ["3.3.1", "3.2.2"]) == ["- Paddle 3.3.1: 5 cells: 4 error, 1 pass",
                                                  "- Paddle 3.2.2: 3 cells: 2 error, 1 pass"]


def test_a_zoo_column_of_skips_only_is_said_once_with_its_reasons(tmp_path):
    from harness.matrix import load
    from harness.report import zoo

    shipped = load(Path(__file__).resolve().parents[3] / "matrix" / "default.toml")
    a, b = shipped.zoo["models"][:2]
    skip = {"status": "skip", "first_failing_stage": "setup", "message": f"its suite does not train {a} in amp_o1 (models.{a}.modes)"}
    records = [_cell("3.3.1", a), _cell("3.3.1", b),
               as_record({"id": f"cpu_onednn_fp32/3.3.1/amp_o1/{a}", "cell": {"mode": "amp_o1", "model": {"name": a},
                                                                     "session": {"name": "cpu_onednn_fp32"}},
                          "verdict": skip})]
    text = zoo.table(RunModel(records, [], []), shipped, tmp_path)
    head = text.splitlines()[2]
    assert "cpu_onednn_fp32 · 3.3.1 |" in head and "amp_o1" not in head, head
    assert "- cpu_onednn_fp32 · 3.3.1 · amp_o1: 1× its suite does not train <model> in amp_o1" in text, text


def test_a_release_is_judged_by_its_own_cells_not_by_the_release_beside_it(tmp_path, capsys):
    """``qualify --scope`` (what ``qualification`` asks per release): the older release's failing cell in
    the same run neither blocks the newer release nor makes the known entry written for it stale."""
    import json

    from harness.matrix import load
    from harness.report import qualify

    shipped = load(Path(__file__).resolve().parents[3] / "matrix" / "default.toml")
    model = shipped.zoo["models"][0]
    run = tmp_path / "run"
    for version, status in (("3.3.1", "pass"), ("3.2.2", "error")):
        record = _cell(version, model, status, "onednn_fp32" if status == "error" else None, "RuntimeError: x")
        path = run / f"{record.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record.to_dict()))
    known = tmp_path / "known.toml"
    known.write_text(f'[[known]]\ncell = "cpu_onednn_fp32/3.2.2/normal/{model}"\nreason = "x"\n')
    newer = qualify.run(run, shipped, known, False, scope=["cpu_onednn_fp32@3.3.1"], models=[model])
    said = capsys.readouterr().out
    assert newer == 0 and said.startswith("QUALIFIED") and "Stale" not in said, said
    assert qualify.run(run, shipped, None, False, scope=["cpu_onednn_fp32@3.2.2"], models=[model]) == 1
    assert capsys.readouterr().out.startswith("NOT QUALIFIED")


def test_a_release_requires_no_cell_the_matrix_itself_never_runs_and_int8_in_its_quantized_modes():
    """Over the shipped zoo: oneDNN int8's required cells are its qat/pact cells (a normal-mode cell
    skips by the matrix's own design: required, it blocked the release on 73 planned skips), and no
    required cell is one the matrix declares skipped (a mode its suite does not train the model in,
    a family newer than the release)."""
    from harness.matrix import load
    from harness.report.qualify import required_cells
    from harness.shared.vocab import QUANTIZED_MODES

    shipped = load(Path(__file__).resolve().parents[3] / "matrix" / "default.toml")
    scope = ["cpu_onednn_int8@3.3.1", "cpu_fp32@3.3.1", "cpu_fp32@3.2.2"]
    required = required_cells(shipped, scope, ["zoo"])
    int8 = [cell for cell in required if cell.startswith("cpu_onednn_int8/")]
    assert int8 and {cell.split("/")[2] for cell in int8} <= set(QUANTIZED_MODES), int8
    every = {spec.id: spec for pair in scope for spec in shipped.expand(*pair.split("@"), modes=list(shipped.data["modes"]),
                                                                         models=["zoo"])}
    assert not [cell for cell in required if every[cell].declared_skip], required
    planned = [cell for cell, spec in every.items() if spec.declared_skip]
    assert any("/3.2.2/normal/" in cell and "needs Paddle >= 3.3.0" in every[cell].declared_skip for cell in planned)
    assert any(cell.startswith("cpu_onednn_int8/3.3.1/normal/") for cell in planned)
    # A zoo model its suite quantizes is required in int8 (qat or pact), as its suite trains it.
    quantized = [m for m in shipped.zoo["models"] if set(shipped.data["models"][m].get("modes") or {}) & set(QUANTIZED_MODES)]
    assert quantized and all(any(c.startswith("cpu_onednn_int8/") and c.endswith(f"/{m}") for c in int8) for m in quantized)
