"""Where a cause appears across versions, from records (pure logic: the records are data)."""

from harness.report.model import RunModel

from tests.conftest import as_record


def _record(version, status, weights="w1", model="net", analysis=None):
    return as_record({"id": f"cpu_onednn_fp32/{version}/normal/{model}",
                      "cell": {"session": {"name": "cpu_onednn_fp32"}, "mode": "normal", "model": {"name": model},
                               "paddle": version},
                      "setup": {"status": "pass", "weights": {"sha256": weights}}, "verdict": {"status": status},
                      "stages": [], "analysis": analysis or {}})


def _span(records, hit):
    return RunModel(records).version_span(r.id for r in records if r.version in hit)


def test_a_cause_from_a_version_on_names_the_first_bad_and_the_last_good():
    records = [_record("2.6.2", "pass"), _record("3.0.0", "pass"), _record("3.1.1", "error"), _record("3.3.1", "error")]
    span = _span(records, {"3.1.1", "3.3.1"})
    assert span.first_bad == "3.1.1"
    assert span.words() == "appears from 3.1.1; 3.0.0 passes the same cell"


def test_a_cause_that_went_away_and_one_at_every_version():
    records = [_record("2.6.2", "error"), _record("3.0.0", "error"), _record("3.3.1", "fail")]
    assert _span(records, {"2.6.2", "3.0.0"}).words() == "appears at 2.6.2; gone from 3.3.1 (3.3.1 runs the same cell without it)"
    everywhere = _span(records, {"2.6.2", "3.0.0", "3.3.1"})
    assert everywhere.words() == "at every version run (2.6.2, 3.0.0, 3.3.1)" and everywhere.first_bad is None


def test_other_weights_are_not_compared_and_one_version_says_nothing():
    records = [_record("2.6.2", "pass", weights="w0"), _record("3.3.1", "error")]
    span = _span(records, {"3.3.1"})
    assert span.first_bad is None
    assert span.words() == "appears at 3.3.1; 2.6.2 trained other weights (not compared)"
    assert _span([_record("3.3.1", "error")], {"3.3.1"}) is None


def test_one_op_programs_the_harness_could_not_build_are_its_gaps_and_vacuous_pieces_are_not():
    record = _record("3.3.1", "error", analysis={"reduce": {"status": "pass", "stage": "onednn_fp32", "trials": [
        {"members": ["drop"], "untestable": True, "vacuous": True, "note": "no op of its own"}],
        "isolation": {"tried": [{"members": ["pd_op.linear"], "untestable": True, "note": "could not be exported alone"},
                                {"members": ["pd_op.relu"], "untestable": False, "note": "runs without raising"}]}}})
    gaps = RunModel([record]).harness_gaps()
    assert [g.message for g in gaps] == ["1 of 2 one-op programs could not be built or run alone; first: "
                                         "pd_op.linear: could not be exported alone"]
