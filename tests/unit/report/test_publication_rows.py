"""What the publication says of a cause no release placed: why, in its own case."""

from harness.report.publication import Row


def _row(reproducer: str, analysed: bool) -> Row:
    return Row("C1", "error", "words", ["cpu_fp32/3.3.1/normal/m"], "not analysed", reproducer, None, "none", analysed)


def test_a_cause_no_release_placed_says_why_in_its_own_case():
    # A setup error no analysis ran for (before training errors had reproducers: DeBERTa-v2's PyLayer).
    assert _row("none", analysed=False).released == "not placed: no reproducer (its cells' failure was not analysed)"
    # A second failure in a cell whose first failing stage was reduced (a converter after a failing baseline).
    assert "its cells' first failing stage is another cause's" in _row("none", analysed=True).released
    assert "no verified source form" in _row("`x/repro.py` (verified)", analysed=True).released


def test_a_workaround_search_said_not_run_is_said_with_why_not_as_none_tried():
    from harness.report.publication import _workaround
    from tests.conftest import as_record

    why = "the stage killed its worker: not run"
    skipped = as_record({"id": "cpu_onednn_fp32/3.3.1/normal/m", "analysis": {
        "workaround": {"status": "skip", "stage": "onednn_fp32", "message": why}}})
    assert _workaround([skipped], ["onednn_fp32"]) == f"not searched: {why}"
    tried = as_record({"id": "cpu_ort_fp32/3.3.1/normal/m", "analysis": {
        "workaround": {"status": "pass", "stage": "ort_convert", "verified": False, "tried": [{}, {}]}}})
    assert _workaround([skipped, tried], ["onednn_fp32"]) == "none verified (2 change(s) tried)"
    assert _workaround([as_record({"id": "cpu_fp32/3.3.1/normal/m"})], ["baseline"]) == "none searched"
