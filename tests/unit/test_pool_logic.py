"""The pool's pure logic: which sessions a tag selects (nox's own listing is the oracle), the
order jobs start in, and the environments sessions share."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import matrix as matrix_mod
from harness.running.scheduler import Job, JobKind, Scheduler, estimate
from harness.matrix.sessions import cell_environment, nox_sessions, select

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shipped():
    return matrix_mod.load(ROOT / "matrix" / "default.toml")


@pytest.mark.parametrize("tags", [["cpu"], ["zoo"], ["default"], ["paddle-3.0.0", "ort"], ["portability"]])
def test_a_tag_selects_what_nox_selects(shipped, tags):
    nox = shutil.which("nox") or pytest.skip("nox is not installed here")
    listing = subprocess.run([nox, "-f", str(ROOT / "noxfile.py"), "-l", "--json", "-t", *tags],
                             capture_output=True, text=True, cwd=ROOT, check=True)
    by_nox = [s["name"] for s in json.loads(listing.stdout)]  # with -t: only what nox would run
    assert [s.name for s in select(nox_sessions(shipped), tags)] == by_nox


def test_sessions_with_equal_packages_share_an_environment(shipped):
    cpu = {s.name: s for s in select(nox_sessions(shipped), ["cpu"])}
    env = {name: cell_environment(shipped, s).key for name, s in cpu.items()}
    assert env["cpu_fp32"] == env["cpu_onednn_fp32"] == env["cpu_onednn_bf16"] == env["portability"]
    assert env["cpu_ort_fp32"] != env["cpu_fp32"] != env["cpu_fp32@3.2.2"]
    assert env["cpu_openvino_fp32"] == env["cpu_openvino_bf16"] != env["cpu_ort_fp32"]
    assert len(set(env.values())) == 15  # 5 versions x (Paddle, +ONNX Runtime, +OpenVINO)


def _job(key, estimate=1.0, order=0, checkpoint=None, after=None, program=None, shared_step=None):
    from harness.shared.spec import CellSpec, SessionSpec
    from harness.shared.vocab import Device, Precision

    spec = None
    if checkpoint or program:
        spec = CellSpec(id=key, session=SessionSpec(key.split("/")[0], Device.CPU, "native", Precision.FP32), stages=[], paddle="3.3.1", mode="normal",
                        model={"name": key.split("/")[-1]}, tolerances={}, output_tolerances={}, seed=0, train_steps=1,
                        reference_threads=1, deploy_threads=1, checkpoint=str(checkpoint) if checkpoint else None,
                        program=str(program) if program else None)
    return Job(key, JobKind.LOAD if after else JobKind.CELL, "env", order, estimate, spec=spec, after=after,
               shared_step=shared_step)


def test_longest_first_weights_trained_by_nox_first_cell_and_loads_after_their_cell(tmp_path):
    weights = tmp_path / "normal" / "m.npz"
    first = _job("cpu_fp32/3.3.1/normal/m", estimate=1, order=0, checkpoint=weights)
    longer = _job("cpu_onednn_fp32/3.3.1/normal/m", estimate=9, order=1, checkpoint=weights)
    other = _job("cpu_fp32/3.3.1/normal/x", estimate=5, order=2)
    load = _job("portability/3.2.2/cpu_fp32/3.3.1/normal/m", estimate=50, order=3, after=first.key)
    scheduler = Scheduler([first, longer, other, load])
    # The load is the longest but waits for its cell; the longer cell of m waits for the weights.
    assert scheduler.take() is other
    assert scheduler.take() is first
    scheduler.done(other)
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"trained")
    scheduler.done(first)
    assert scheduler.take() is load
    assert scheduler.take() is longer
    assert scheduler.take() is None


def test_a_first_cell_that_trained_nothing_hands_the_training_to_the_next(tmp_path):
    weights = tmp_path / "w.npz"
    a = _job("cpu_fp32/3.3.1/normal/m", order=0, checkpoint=weights)
    b = _job("cpu_fp32/3.2.2/normal/m", order=1, checkpoint=weights)
    scheduler = Scheduler([b, a])
    assert scheduler.take() is a
    scheduler.done(a)  # its setup failed: no weights written
    assert scheduler.take() is b


def test_estimates_come_from_the_cell_then_its_model_then_its_kind():
    jobs = [_job("cpu_fp32/3.3.1/normal/m"), _job("cpu_ort_fp32/3.3.1/normal/m"), _job("cpu_fp32/3.3.1/normal/new"),
            Job("hazards/3.3.1/cpu", JobKind.HAZARDS, "env", -1)]
    estimate(jobs, {"cpu_fp32/3.3.1/normal/m": 8.0, "cpu_fp32/3.2.2/normal/m": 4.0,
                               "cpu_fp32/3.3.1/normal/z": 2.0})
    assert [j.estimate for j in jobs] == [8.0, 6.0, (8.0 + 4.0 + 2.0) / 3, 5.0]


def test_the_noxfile_registers_the_table(shipped):
    listing = subprocess.run([shutil.which("nox") or pytest.skip("no nox"), "-f", str(ROOT / "noxfile.py"), "-l",
                              "--json"], capture_output=True, text=True, cwd=ROOT, check=True)
    registered = [(s["name"], s["tags"]) for s in json.loads(listing.stdout) if s["name"] in {
        t.name for t in nox_sessions(shipped)}]
    assert registered == [(s.name, list(s.tags)) for s in nox_sessions(shipped)]


def test_on_a_terminal_progress_is_one_line_and_only_what_did_not_pass_stays():
    import io

    from harness.running.pool import OneLine

    stream = io.StringIO()
    with OneLine(3, 0, stream) as board:
        board.started("cpu_fp32/3.3.1/normal/a")
        board.ended("cpu_fp32/3.3.1/normal/a", "pass in 1.0 s", remarkable=False)
        board.started("cpu_fp32/3.3.1/normal/b")
        board.ended("cpu_fp32/3.3.1/normal/b", "fail in 2.0 s", remarkable=True)
        board.note("[harness] said by a job")
    kept = [line.rsplit("\r\x1b[K", 1)[-1] for line in stream.getvalue().split("\n") if line]
    assert kept[:2] == ["[harness] cpu_fp32/3.3.1/normal/b: fail in 2.0 s", "[harness] said by a job"]
    assert kept[-1].startswith("[harness] [2/3, ") and len(kept) == 3  # the one line, left at the end


def test_the_sessions_of_one_program_wait_for_the_cell_that_makes_it(tmp_path):
    """One export per program: the first cell (nox's order) of a (version, mode, model) makes its
    setup and the stages all sessions run alike; the other sessions' cells of it start once it wrote
    what it made, or once it ended without writing it (then each makes its own)."""
    from harness.shared.runfolder import PROGRAM_WORK

    program = tmp_path / "programs" / "3.3.1" / "normal" / "m"
    maker = _job("cpu_fp32/3.3.1/normal/m", estimate=1, order=0, program=program)
    reader = _job("cpu_ort_fp32/3.3.1/normal/m", estimate=9, order=1, program=program)
    third = _job("cpu_openvino_fp32/3.3.1/normal/m", estimate=8, order=2, program=program)
    other = _job("cpu_fp32/3.3.1/normal/x", estimate=5, order=3)
    scheduler = Scheduler([reader, third, other, maker])
    assert scheduler.take() is other  # the longest that may start: the readers wait for the maker
    assert scheduler.take() is maker
    scheduler.done(other)
    assert [j for j in scheduler.pending if scheduler._may_start(j)] == []
    program.mkdir(parents=True)
    (program / PROGRAM_WORK).write_text("{}")
    scheduler.done(maker)
    assert scheduler.take() is reader and scheduler.take() is third  # longest first, both at once
    assert scheduler.take() is None


def test_the_sessions_that_convert_one_program_alike_run_one_after_the_first(tmp_path):
    """ONNX Runtime and OpenVINO read one conversion of the program: the first of their cells (nox's
    order) runs before the other, which then takes its analyses of a failure there; a session that
    does not convert does not wait for it."""
    from harness.shared.backends import shared_step
    from harness.shared.runfolder import PROGRAM_WORK

    converter = shared_step("cpu", "ort", "fp32")
    assert converter == shared_step("cpu", "openvino", "fp32") and converter is not None
    assert shared_step("cpu", "native", "fp32") is None and shared_step("cpu", "onednn", "fp32") is None
    program = tmp_path / "programs" / "3.3.1" / "normal" / "m"
    maker = _job("cpu_fp32/3.3.1/normal/m", estimate=1, order=0, program=program)
    onednn = _job("cpu_onednn_fp32/3.3.1/normal/m", estimate=2, order=1, program=program)
    ort = _job("cpu_ort_fp32/3.3.1/normal/m", estimate=3, order=2, program=program, shared_step=converter)
    openvino = _job("cpu_openvino_fp32/3.3.1/normal/m", estimate=9, order=3, program=program, shared_step=converter)
    scheduler = Scheduler([openvino, ort, onednn, maker])
    assert scheduler.take() is maker
    program.mkdir(parents=True)
    (program / PROGRAM_WORK).write_text("{}")
    scheduler.done(maker)
    # The longest (OpenVINO) waits for the first converting cell; the others start.
    assert scheduler.take() is ort and scheduler.take() is onednn
    assert not scheduler._may_start(openvino)
    scheduler.done(onednn)
    assert not scheduler._may_start(openvino)
    scheduler.done(ort)
    assert scheduler.take() is openvino and scheduler.take() is None


def test_readers_of_a_maker_that_wrote_nothing_start_together(tmp_path):
    program = tmp_path / "p"
    maker = _job("cpu_fp32/3.3.1/normal/m", order=0, program=program)
    a = _job("cpu_ort_fp32/3.3.1/normal/m", order=1, program=program)
    b = _job("cpu_openvino_fp32/3.3.1/normal/m", order=2, program=program)
    scheduler = Scheduler([a, b, maker])
    assert scheduler.take() is maker and [j for j in scheduler.pending if scheduler._may_start(j)] == []
    scheduler.done(maker)  # died in its setup: no work.json
    assert {scheduler.take().key, scheduler.take().key} == {a.key, b.key}


def test_a_forced_rerun_makes_its_programs_anew(tmp_path):
    """``--force`` redoes cells: their program's setup and stages are made again, not read from the last run."""
    from harness.running.runner import recorded_or_todo
    from harness.shared.runfolder import PROGRAM_WORK

    program = tmp_path / "programs" / "3.3.1" / "normal" / "m"
    program.mkdir(parents=True)
    (program / PROGRAM_WORK).write_text("{}")
    job = _job("cpu_fp32/3.3.1/normal/m", program=program)
    _, todo = recorded_or_todo([job.spec], tmp_path, force=False, progress=lambda line: None)
    assert todo and program.is_dir()
    _, todo = recorded_or_todo([job.spec], tmp_path, force=True, progress=lambda line: None)
    assert todo and not program.exists()


def test_a_family_apart_gets_its_cells_an_environment_of_their_own(shipped, tmp_path):
    """PaddleNLP's pins fight PaddleFormers' (datasets, huggingface_hub): the zoo session's environment
    leaves it out, its cells get one with that family alone, and a release asked about one of its
    models installs it (one model: the one family)."""
    from harness.running.pool import PoolOptions, plan

    zoo = [s for s in select(nox_sessions(shipped), ["zoo"]) if s.session == "cpu_fp32" and s.version == "3.3.1"]
    made = plan(shipped, zoo, tmp_path / "r", PoolOptions(models=["nlp_t5_encoder", "llama_decoder"]), say=lambda _: None)
    by_cell = {job.spec.model_name: made.environments[job.env] for job in made.jobs if job.spec is not None}
    nlp, formers = by_cell["nlp_t5_encoder"], by_cell["llama_decoder"]
    assert "paddlenlp==2.8.1" in nlp.no_deps and not any(p.startswith("paddleformers") for p in nlp.families)
    assert "paddlenlp==2.8.1" not in formers.no_deps and any(p.startswith("paddleformers") for p in formers.families)
    assert shipped.family_packages(["nlp_t5_encoder"], "2.6.2")["no_deps"] == ["paddlenlp==2.8.1"]
    assert "paddlenlp==2.8.1" not in shipped.family_packages(["zoo"], "3.3.1")["no_deps"]


def test_the_zoo_runs_in_its_train_modes_and_only_a_mode_that_needs_packages_gets_them(shipped, tmp_path):
    """[zoo] modes is what a zoo session runs when no mode is asked; the int8 session is one of the zoo's;
    a PACT cell's environment has PaddleSlim (and its numpy<2), a normal cell's is the session's, without it."""
    from harness.running.pool import PoolOptions, plan

    zoo = [s for s in select(nox_sessions(shipped), ["zoo"]) if s.version == "3.3.1"
           and s.session in ("cpu_fp32", "cpu_onednn_int8")]
    assert {s.session for s in zoo} == {"cpu_fp32", "cpu_onednn_int8"}
    made = plan(shipped, zoo, tmp_path / "r", PoolOptions(models=["pp_lcnet"]), say=lambda _: None)
    cells = {job.spec.id: made.environments[job.env] for job in made.jobs if job.spec is not None}
    assert {i.split("/")[2] for i in cells} == set(shipped.zoo["modes"]), sorted(cells)
    slim = [p for p in shipped.mode_packages(["pact"]) if p.startswith("paddleslim")]
    assert slim and all(set(slim) <= set(env.packages) for i, env in cells.items() if "/pact/" in i)
    assert not any(set(slim) & set(env.packages) for i, env in cells.items() if "/pact/" not in i)
    # A mode deploys in the sessions its programs are for (modes.X.zoo_sessions): the int8 session takes
    # the quantized modes and not AMP's fp32 program, and says so.
    assert {i.split("/")[2] for i in cells if i.startswith("cpu_onednn_int8/")} == {"normal", "qat", "pact"}
    assert sorted(line.split(":")[0] for line in made.left_out) == ["cpu_onednn_int8-zoo × amp_o1",
                                                                    "cpu_onednn_int8-zoo × amp_o2"]
    normal = cells["cpu_fp32/3.3.1/normal/pp_lcnet"]
    assert normal.key == cell_environment(shipped, next(s for s in zoo if s.session == "cpu_fp32")).key


def test_a_zoo_session_asked_for_a_model_runs_that_model(shipped, tmp_path):
    from harness.running.pool import PoolOptions, plan

    zoo = [s for s in select(nox_sessions(shipped), ["zoo"]) if s.session == "cpu_fp32" and s.version == "3.3.1"]
    made = plan(shipped, zoo, tmp_path / "r", PoolOptions(models=["pp_lcnet"], modes=["normal"]), say=lambda _: None)
    assert [job.spec.id for job in made.jobs if job.spec is not None] == ["cpu_fp32/3.3.1/normal/pp_lcnet"]


def test_the_publication_says_each_left_out_mode_once_with_the_sessions_that_left_it_out(shipped):
    import argparse

    from harness.running.qualification import _modes_left_out

    said = _modes_left_out(argparse.Namespace(tag=[], session=[], mode=[]), shipped, {"cpu_fp32", "cpu_onednn_int8"})
    assert said == [f"{m}: not run in cpu_onednn_int8-zoo, cpu_onednn_int8-zoo@3.2.2; its programs deploy in "
                    f"cpu_fp32, gpu_fp32, gpu_fp16, gpu_trt_fp16 (modes.{m}.zoo_sessions)" for m in ("amp_o1", "amp_o2")]
    assert _modes_left_out(argparse.Namespace(tag=[], session=[], mode=["qat"]), shipped, {"cpu_ort_fp32"}) == []
