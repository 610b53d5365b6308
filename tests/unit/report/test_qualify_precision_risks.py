"""Release qualification and the precision's own risk (``report/qualify.py``): a reduced-precision
stage whose precision itself changes the model's answers is reported, and blocks only in the
sessions the matrix lists under ``[qualify] precision_risks``."""

from harness.report.model import RunModel
from harness.report.qualify import qualify

from tests.conftest import as_record

WORDS = "bf16 itself changes what the model answers (top-1 agree 0/4): a risk of deploying it in bf16, not a bug of the runtime"


def _records():
    risky = as_record({"id": "cpu_onednn_bf16/3.3.1/normal/tied", "cell": {"session": {"name": "cpu_onednn_bf16"}},
                       "stages": [{"name": "onednn_bf16", "status": "pass",
                                   "floor": {"format": "bf16", "answers_changed": {"words": WORDS}}}],
                       "verdict": {"status": "pass"}})
    plain = as_record({"id": "cpu_onednn_bf16/3.3.1/normal/net", "cell": {"session": {"name": "cpu_onednn_bf16"}},
                       "stages": [{"name": "onednn_bf16", "status": "pass", "floor": {"format": "bf16"}}],
                       "verdict": {"status": "pass"}})
    return RunModel([risky, plain])


def test_a_precision_risk_is_reported_and_qualifies():
    result = qualify(_records(), [], [], strict=False)
    assert result.qualified and result.blocking == []
    assert result.risks == [f"cpu_onednn_bf16/3.3.1/normal/tied onednn_bf16: {WORDS}"]


def test_a_precision_risk_blocks_where_the_matrix_asks():
    result = qualify(_records(), [], [], strict=False, risks_block=["cpu_onednn_bf16"])
    assert not result.qualified and result.blocking == [f"cpu_onednn_bf16/3.3.1/normal/tied onednn_bf16: {WORDS}"]
    assert result.risks == []
