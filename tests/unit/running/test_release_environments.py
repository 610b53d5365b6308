"""Which packages a release's environment gets for a cause (``running/release_envs.Environments``): Paddle
and the session's runtime pins for an op-level script; the model's packages too for a script that
builds the model's own classes — its family's, or what the cell's environment held for a model of
no family. The environments themselves are real venvs in ``tests/test_crossversion.py``; here the
list each asks ``envs.ensure`` for is the subject."""

from pathlib import Path

from harness.running import release_envs

from tests.conftest import ROOT, as_record


def _asked(monkeypatch):
    asked = []

    def ensure(root, env, label, say=print):
        asked.append(env)
        return Path(f"/venvs/{label}-{len(asked)}/bin/python")

    monkeypatch.setattr(release_envs.envs, "ensure", ensure)
    return asked


def test_a_model_of_no_family_brings_what_its_cell_environment_held_only_to_scripts_that_build_it(monkeypatch):
    asked = _asked(monkeypatch)
    record = as_record({"id": "cpu_fp32/3.3.1/normal/nhits", "cell": {"model": {"name": "nhits"}},
                        "setup": {"status": "pass", "model_packages": ["paddlets==1.1.0"]}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)
    plain, with_model = environments("3.0.0"), environments("3.0.0", True)
    assert plain != with_model and environments("3.0.0", True) == with_model  # each made once
    assert len(asked) == 2
    assert asked[0].packages[0] == "paddlepaddle==3.0.0" and "paddlets==1.1.0" not in asked[0].no_deps
    # as the cell's environment held it, not resolved again (PaddleTS 1.1.0's own pins do not build)
    assert asked[1].no_deps == ("paddlets==1.1.0",) and asked[1].packages == asked[0].packages
    assert environments.model_words() == "paddlets==1.1.0"


def test_a_model_of_a_family_brings_the_familys_packages_where_the_family_installs(monkeypatch):
    asked = _asked(monkeypatch)
    record = as_record({"id": "cpu_fp32/3.3.1/normal/pp_lcnet",
                        "cell": {"model": {"name": "pp_lcnet"}, "matrix": str(ROOT / "matrix" / "default.toml")},
                        "setup": {"status": "pass", "model_packages": ["paddlex==3.7.2"]}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)
    environments("3.3.1", True)
    environments("2.6.2", True)  # PaddleX's family requires Paddle 3.0.0: nothing of it at 2.6.2
    assert "paddlex==3.7.2" in asked[0].families and "paddlex==3.7.2" not in asked[1].families + asked[1].no_deps
    assert environments.model_words() == "the paddlex family's packages"


def test_a_built_in_model_asks_one_environment_per_release(monkeypatch):
    asked = _asked(monkeypatch)
    record = as_record({"id": "cpu_fp32/3.3.1/normal/net", "setup": {"status": "pass", "model_packages": []}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)
    assert environments("3.3.1") == environments("3.3.1", True) and len(asked) == 1


def test_a_release_below_the_familys_floor_is_said_so_and_never_run_without_it(monkeypatch):
    _asked(monkeypatch)
    record = as_record({"id": "cpu_fp32/3.3.1/normal/pp_lcnet",
                        "cell": {"model": {"name": "pp_lcnet"}, "matrix": str(ROOT / "matrix" / "default.toml")},
                        "setup": {"status": "pass", "model_packages": ["paddlex==3.7.2"]}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)
    assert environments.suite_missing("3.3.1") == ""
    said = environments.suite_missing("2.6.2")
    assert said == "the paddlex family (paddlex==3.7.2) installs from Paddle 3.0.0 on (its requires_paddle)", said


def test_openvino_at_2_6_holds_that_lines_converter_so_a_converter_cause_is_asked_there(monkeypatch):
    asked = _asked(monkeypatch)
    record = as_record({"id": "cpu_openvino_fp32/3.3.1/normal/net", "session": "cpu_openvino_fp32",
                        "cell": {"session": {"name": "cpu_openvino_fp32", "device": "cpu", "backend": "openvino",
                                             "precision": "fp32"},
                                 "matrix": str(ROOT / "matrix" / "default.toml")},
                        "setup": {"status": "pass", "model_packages": []}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)
    environments("2.6.2")
    environments("3.3.1")
    assert {"openvino==2026.4.1", "paddle2onnx==1.3.1", "numpy<2"} <= set(asked[0].packages), asked[0].packages
    assert "paddle2onnx==2.1.0" in asked[1].packages, asked[1].packages


def test_the_environment_without_the_suite_holds_the_numpy_the_cell_ran_with(monkeypatch):
    """A standalone script of Qwen2.5-VL's vision tower did not reproduce at its own release beside
    numpy 2.4.6 where its cell had 1.26.4 (Paddle 3.3.1's ``F.pad`` with Tensor paddings reads -1
    under numpy 2): the environment without the suite pins the cell's numpy, unless the session's
    runtime pins one of its own (paddle2onnx 1.x's ``numpy<2``)."""
    asked = _asked(monkeypatch)
    record = as_record({"id": "cpu_openvino_fp32/3.3.1/normal/net", "session": "cpu_openvino_fp32",
                        "paddle": {"version": "3.3.1", "numpy": "1.26.4"},
                        "cell": {"model": {"name": "pp_lcnet"}, "matrix": str(ROOT / "matrix" / "default.toml"),
                                 "session": {"name": "cpu_openvino_fp32", "device": "cpu", "backend": "openvino",
                                             "precision": "fp32"}},
                        "setup": {"status": "pass", "model_packages": ["paddlex==3.7.2"]}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)
    environments("3.3.1")
    environments("3.3.1", True)
    environments("2.6.2")
    assert "numpy==1.26.4" in asked[0].packages, asked[0].packages
    assert not any(p.startswith("numpy") for p in asked[1].packages), asked[1].packages  # the family's own pins
    assert "numpy<2" in asked[2].packages and "numpy==1.26.4" not in asked[2].packages, asked[2].packages


def test_a_release_brings_what_the_matrix_lists_beside_it_whatever_numpy_the_cell_ran_with(monkeypatch):
    """2.6.2 beside numpy 2 (the cell's, 2.3.5 or 2.4.6) died with SIGSEGV in ``jit.save`` (measured):
    the release's own packages (``[paddle."2.6.2"]``: numpy<2) win over the cell's numpy; a release
    that lists none keeps the cell's numpy beside it."""
    asked = _asked(monkeypatch)
    record = as_record({"id": "cpu_fp32/3.3.1/normal/net", "paddle": {"numpy": "2.4.6"},
                        "cell": {"matrix": str(ROOT / "matrix" / "default.toml")},
                        "setup": {"status": "pass", "model_packages": []}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)
    environments("2.6.2")
    environments("3.3.1")
    environments("3.1.0")  # not in the matrix's [paddle]: the wheel alone, the cell's numpy beside it
    assert asked[0].packages[:2] == ("paddlepaddle==2.6.2", "numpy<2") and "numpy==2.4.6" not in asked[0].packages
    assert asked[1].packages[0] == "paddlepaddle==3.3.1" and "numpy==2.4.6" in asked[1].packages
    assert asked[2].packages[0] == "paddlepaddle==3.1.0" and "numpy==2.4.6" in asked[2].packages


def test_a_run_whose_matrix_is_gone_reads_the_models_family_from_the_shipped_matrix(monkeypatch):
    """A record names the matrix its run read; a clone removed since took it away, and PaddleX models'
    scripts were asked without their suite ("No module named 'paddlex'": three causes unplaced)."""
    asked = _asked(monkeypatch)
    said = []
    record = as_record({"id": "cpu_fp32/3.3.1/normal/pp_lcnet",
                        "cell": {"model": {"name": "pp_lcnet"}, "matrix": "/gone/matrix/default.toml"},
                        "setup": {"status": "pass", "model_packages": ["paddlex==3.7.2"]}})
    environments = release_envs.Environments(Path("/envs"), record, "3.11", said.append)
    environments("3.3.1", True)
    assert "paddlex==3.7.2" in asked[0].families, asked[0]
    assert any("/gone/matrix/default.toml is gone" in line for line in said), said


def test_a_cause_met_in_a_train_mode_brings_the_modes_packages(monkeypatch):
    """A PACT cell's script prepares and saves with PaddleSlim: every release's environment for it holds
    the mode's packages (``modes.pact.packages``), or each release would answer "No module named
    'paddleslim'" — at the cause's own release too (measured on the zoo)."""
    asked = _asked(monkeypatch)
    pact = ["paddleslim==2.6.0", "numpy<2"]
    record = as_record({"id": "cpu_fp32/3.3.1/pact/net", "cell": {"mode": "pact", "mode_packages": pact},
                        "setup": {"status": "pass", "model_packages": []}})
    release_envs.Environments(Path("/envs"), record, "3.11", lambda line: None)("3.0.0")
    assert set(pact) <= set(asked[0].packages) and not any(p.startswith("numpy==") for p in asked[0].packages)
