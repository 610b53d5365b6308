"""Each family alone (``python -m harness families``): which of its models were built, from the
records of its run; a model whose suite could not be imported is the family's gap, what Paddle did
with a built model (an export that raised, a training that died) is the model's finding."""

from __future__ import annotations

from harness import matrix as matrix_mod
from harness.running.families import family_models, judge

from ...conftest import ROOT, as_record


def _record(model, setup):
    return as_record({"id": f"cpu_fp32/3.3.1/normal/{model}", "cell": {"model": {"name": model}}, "setup": setup})


def test_a_family_that_cannot_import_its_suite_is_not_complete_and_says_the_module():
    missing = "model family paddlesci cannot build sci_ns_pinn in this environment: ModuleNotFoundError: No module named 'pandas'"
    records = [_record("sci_ns_pinn", {"status": "untestable", "message": missing}),
               _record("sci_other", {"status": "error", "phase": "export", "message": "bool(Tensor)"}),  # built: Paddle's
               _record("sci_dies", {"status": "crash", "phase": "train", "message": "worker died with SIGSEGV"})]
    said = judge("paddlesci", ["sci_ns_pinn", "sci_other", "sci_dies", "sci_never"], records)
    assert not said.complete
    assert said.not_built == {"sci_ns_pinn": missing}
    assert said.missing == ["sci_never"]  # no record: the pool did not run it, never a pass
    complete = judge("paddlesci", ["sci_other", "sci_dies"], records)
    assert complete.complete and complete.not_built == {}


def test_a_family_that_needs_another_paddle_is_a_declared_skip():
    records = [_record("x_net", {"status": "skip", "message": "model family paddlex needs Paddle >= 3.0.0"})]
    said = judge("paddlex", ["x_net"], records)
    assert said.complete and said.skipped == {"x_net": "model family paddlex needs Paddle >= 3.0.0"}


def test_every_zoo_family_of_the_shipped_matrix_has_its_models():
    families = family_models(matrix_mod.load(ROOT / "matrix" / "default.toml"))
    assert len(families) >= 7 and all(families.values()), families
    assert "sci_ns_pinn" in families["paddlesci"]
