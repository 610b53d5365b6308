"""TIPC configs run as they are: TIPC's plan, no shell, results_python.log, every jit.save verified.

The expected plans in ``tests/data/tipc_expected`` were recorded from the real drivers (the
models repo's Step6 ``test_train_inference_python.sh`` and PaddleClas's), run by bash against
``tests/data/tipc_repo``'s configs with a ``python3.7`` on PATH that records its argv, cwd and
CUDA_VISIBLE_DEVICES (the scripts are not part of this repository; how is in each file's
``how``). The planner must reproduce them word for word. Runs use real Paddle (3.3.1 here).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, installed_paddle, nox_run, one_line_error
from harness.running.hostenv import gpu_absence_reason
from harness.tipc import config as tipc_config
from harness.tipc import plan as tipc_plan
from harness.tipc import run as tipc_run

TINY = ROOT / "tests" / "data" / "tipc_repo"
EXPECTED = ROOT / "tests" / "data" / "tipc_expected"
CONFIGS = "test_tipc/configs/tiny"
STATUS = re.compile(r"^\x1b\[33m Run (successfully|failed) with command - (\S+) - (.*)\x1b\[0m$")


def _plan(config: str, mode: str, driver=None, repo: Path = TINY, log_root: Path = Path("/LOG"),
          gpu_missing=None) -> tipc_plan.Plan:
    return tipc_plan.plan(tipc_config.read(repo / config), mode, repo=repo, python="{PYTHON}",
                          log_root=log_root, driver=driver, gpu_missing=gpu_missing)


@pytest.mark.parametrize("expected", sorted(EXPECTED.glob("*.json")), ids=lambda p: p.stem)
def test_the_plan_is_the_bash_drivers_plan_word_for_word(expected):
    data = json.loads(expected.read_text())
    plan = _plan(data["config"], data["mode"], data["driver"])

    def norm(text: str) -> str:
        return text.replace("/LOG", "{LOG}").replace(str(TINY), "{REPO}")

    got = [{"argv": [norm(w) for w in c.argv[1:]], "cwd": norm(str(c.cwd)),
            "cuda_visible_devices": c.env.get("CUDA_VISIBLE_DEVICES")} for c in plan.commands]
    assert got == data["commands"]
    # results_python.log in TIPC's own format, with TIPC's command strings (its blanks included)
    assert [norm(plan.status_line(True, c)) for c in plan.commands] == data["status_lines"]
    assert plan.commands or data["mode"] == "whole_infer"


def test_modes_and_layouts_plan_what_their_drivers_read(tmp_path):
    # 51-line configs carry benchmark sections after line 51: not read, no command from them
    clas = tipc_config.read(TINY / CONFIGS / "train_infer_python_clas.txt")
    assert clas.layout is tipc_config.Layout.FIFTY_ONE and len(clas.lines) > 51
    bare = tmp_path / "repo"
    shutil.copytree(TINY, bare)
    config = bare / CONFIGS / "train_infer_python_clas.txt"
    config.write_text("\n".join(config.read_text().splitlines()[:52]) + "\n")
    with_sections = _plan(f"{CONFIGS}/train_infer_python_clas.txt", "lite_train_lite_infer")
    without = _plan(f"{CONFIGS}/train_infer_python_clas.txt", "lite_train_lite_infer", repo=bare)
    assert [c.text.replace(str(bare), str(TINY)) for c in without.commands] == [c.text for c in with_sections.commands]
    step6 = tipc_config.read(TINY / CONFIGS / "train_infer_python.txt")
    assert step6.layout is tipc_config.Layout.STEP6
    # Step6 runs line 14 whatever the trainer is called; the epochs follow the mode
    lite = _plan(f"{CONFIGS}/train_infer_python.txt", "lite_train_lite_infer")
    whole = _plan(f"{CONFIGS}/train_infer_python.txt", "whole_train_whole_infer")
    assert "--epochs=1" in lite.commands[0].argv and "--epochs=3" in whole.commands[0].argv
    # PaddleClas asks func_parser_params without the mode: its epoch is always the default 2
    clas_whole = _plan(f"{CONFIGS}/train_infer_python_clas.txt", "whole_train_whole_infer")
    assert "Global.epochs=2" in clas_whole.commands[0].argv
    # PaddleClas: inference in deploy/, the pact trainer with its own export and the quant flag
    kinds = [(c.kind.value, c.trainer, c.cwd.name) for c in clas_whole.commands[:3]]
    assert kinds == [("train", "norm_train", "tipc_repo"), ("eval", "norm_train", "tipc_repo"),
                     ("export", "norm_train", "tipc_repo")]
    assert {c.cwd.name for c in clas_whole.commands if c.kind.value == "infer"} == {"deploy"}
    assert {c.train_mode for c in clas_whole.commands if c.kind.value == "export"} == {"normal", "pact"}


def test_the_ocr_driver_plans_paddleocrs_differences(tmp_path):
    # PaddleOCR's driver (read from its script, not recorded here): the trainer's use_gpu word by
    # index, autocast passed as key=value, Global.use_amp config words for "amp", no
    # print_mem_info, save folder without _nodes_1, inference in the repository root with
    # line 12's image dir, fp16 on CPU skipped without mkldnn.
    text = (TINY / CONFIGS / "train_infer_python_clas.txt").read_text().splitlines()
    text[5] = "-o Global.auto_cast:amp"
    text[35] = "inference_dir:null"
    text[45] = "-o Global.use_fp16:False|fp16"
    config = tmp_path / "ocr_train_infer_python.txt"
    config.write_text("\n".join(text) + "\n")
    plan = tipc_plan.plan(tipc_config.read(config), "lite_train_lite_infer", repo=TINY, python="py",
                          log_root=Path("/LOG"), driver="ocr", gpu_missing=None)
    train = plan.commands[0]
    assert train.argv[:3] == ["py", "train.py", "-c"]
    assert "Global.device=cpu" in train.argv and "Global.auto_cast=amp" in train.argv
    assert train.argv[-3:] == ["Global.use_amp=True", "Global.scale_loss=1024.0", "Global.use_dynamic_loss_scaling=True"]
    assert "Global.output_dir=/LOG/tiny_clas/lite_train_lite_infer/norm_train_gpus_-1_autocast_amp" in train.argv
    infer = [c for c in plan.commands if c.kind.value == "infer"]
    assert {c.cwd for c in infer} == {TINY}
    assert all("-o Global.use_fp16=fp16" not in " ".join(c.argv) for c in infer if "Global.enable_mkldnn=False" in c.argv)
    assert plan.status_line(True, train).endswith(" -  \x1b[0m")  # OCR's driver passes no log path


def test_gpu_commands_are_skipped_with_the_reason_and_named_in_the_dry_run():
    plan = _plan(f"{CONFIGS}/train_infer_python.txt", "lite_train_lite_infer",
                 gpu_missing="no NVIDIA driver on this machine (nvidia-smi not found); more")
    skipped = [c for c in plan.commands if c.skip]
    assert {c.stem for c in skipped if c.kind.value == "train"} == {"norm_train_gpus_0_autocast_False_nodes_1"}
    assert all("--use-gpu=True" in c.argv or "gpus_0" in c.stem for c in skipped)
    assert not any(c.skip for c in plan.commands if "--use-gpu=False" in c.argv and "gpus_-1" in c.stem)
    out = subprocess.run([sys.executable, "-m", "harness", "tipc", "--repo", str(TINY), "--config",
                          f"{CONFIGS}/train_infer_python.txt", "--mode", "lite_train_lite_infer", "--dry-run",
                          "--results", "/nonexistent-results"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "no shell" in out.stdout and "argv: [" in out.stdout and "mirrors models repo" in out.stdout
    assert not Path("/nonexistent-results").exists()  # a dry run writes nothing


def _cut(tmp_path: Path, lines: int, edit=None) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(TINY, repo)
    config = repo / CONFIGS / "train_infer_python.txt"
    text = config.read_text().splitlines()[:lines]
    if edit:
        edit(text)
    config.write_text("\n".join(text) + "\n")
    return repo


@pytest.mark.parametrize("case, where, words", [
    ("cut", ":21", "ends after line 20"),
    ("unknown_trainer", ":13", "unknown trainer 'norm_trian'"),
    ("colon", ":11", "contains ':'"),
    ("no_config", "missing.txt", "cannot read"),
    ("bad_mode", "--mode", "not a TIPC mode"),
])
def test_bad_input_is_one_line_naming_file_and_line_exit_2(tmp_path, case, where, words):
    config = f"{CONFIGS}/train_infer_python.txt"
    mode = "lite_train_lite_infer"
    if case == "cut":
        repo = _cut(tmp_path, 20)
    elif case == "unknown_trainer":
        repo = _cut(tmp_path, 32, lambda t: t.__setitem__(12, "trainer:norm_trian"))
    elif case == "colon":
        repo = _cut(tmp_path, 32, lambda t: t.__setitem__(10, "--data-path:C:/lite_data"))
    elif case == "no_config":
        repo, config = TINY, "missing.txt"
    else:
        repo, mode = TINY, "lite_train"
    out = subprocess.run([sys.executable, "-m", "harness", "tipc", "--repo", str(repo), "--config", config,
                          "--mode", mode, "--dry-run"], cwd=ROOT, capture_output=True, text=True)
    line = one_line_error(out)
    assert where in line and words in line


def _tree(repo: Path):
    return {p.relative_to(repo): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(repo.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _run(repo: Path, config: str, results: Path, *extra: str) -> subprocess.CompletedProcess:
    installed_paddle()
    sessions = [] if "--all-cpu" in extra else ["--session", "cpu_fp32"]
    extra = tuple(e for e in extra if e != "--all-cpu")
    return subprocess.run([sys.executable, "-m", "harness", "tipc", "--repo", str(repo), "--config", config,
                           "--mode", "lite_train_lite_infer", "--results", str(results), "--run", "r",
                           *sessions, *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def _status_lines(log_path: Path):
    lines = (log_path / "results_python.log").read_text().splitlines()
    parsed = [STATUS.match(line) for line in lines]
    assert all(parsed), lines
    return [(m.group(1), m.group(3)) for m in parsed]


def test_lite_train_lite_infer_runs_the_chain_and_verifies_the_export(tmp_path):
    """With ``--prepare``: the repository's own script for the mode runs first (TIPC's order). The
    config's inference batch sizes are quoted (`--batch-size:"1"|"2"`, as real configs quote
    values): bash's eval removes the quotes and the script's int() works; passed literally,
    int('"1"') would fail the inference commands."""
    repo = tmp_path / "repo"
    shutil.copytree(TINY, repo)
    (repo / "test_tipc" / "prepare.sh").write_text('echo "prepared $2 from $1" > prepared.txt\n')
    before = _tree(repo)
    config = f"{CONFIGS}/train_infer_python_quoted.txt"
    out = _run(repo, config, tmp_path / "results", "--all-cpu", "--prepare")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "running the repository's own script: bash test_tipc/prepare.sh" in out.stdout
    assert (repo / "prepared.txt").read_text() == f"prepared lite_train_lite_infer from {config}\n"
    log_path = tmp_path / "results" / "r" / "tipc" / "tiny" / "lite_train_lite_infer"
    lines = _status_lines(log_path)
    # train, eval, export, two CPU inferences; the GPU half of the chain skipped (no line)
    assert [w for w, _ in lines] == ["successfully"] * 5
    assert [t.split()[1] for _, t in lines] == ["train.py", "train.py", "tools/export_model.py",
                                                "deploy/infer.py", "deploy/infer.py"]
    summary = json.loads((log_path / "tipc.json").read_text())
    exports = [c for c in summary["commands"] if c["kind"] == "export" and c["status"] == "pass"]
    assert len(exports) == 1 and len(exports[0]["captures"]) == 1
    infers = [c for c in summary["commands"] if c["kind"] == "infer" and c["status"] == "pass"]
    assert sorted(w for c in infers for w in c["argv"] if w.startswith("--batch-size")) == ["--batch-size=1", "--batch-size=2"]
    assert not any('"' in w for c in summary["commands"] for w in c["argv"])
    # by default every CPU session of the matrix runs the export, as it would a built-in model
    sessions = {c["id"].split("/")[0]: c["verdict"]["status"] for c in summary["cells"]}
    assert set(sessions) == {"cpu_fp32", "cpu_onednn_fp32", "cpu_onednn_bf16", "cpu_onednn_int8", "cpu_ort_fp32",
                             "cpu_openvino_fp32", "cpu_openvino_bf16"}
    assert sessions["cpu_fp32"] == sessions["cpu_onednn_fp32"] == "pass"
    if importlib.util.find_spec("paddle2onnx") and installed_paddle().startswith("3."):
        assert sessions["cpu_ort_fp32"] == "pass"  # the captured export, converted and run by ONNX Runtime
    cell = next(c for c in summary["cells"] if c["id"].startswith("cpu_fp32/"))
    record = json.loads((tmp_path / "results" / "r" / (cell["id"] + ".json")).read_text())
    baseline = next(s for s in record["stages"] if s["name"] == "baseline")
    assert baseline["status"] == "pass" and baseline["evidence"]["ops"] > 0
    assert record["setup"]["weights"]["source"] == "tipc"
    assert record["setup"]["weights"]["layer"] == "tiny.model.TinyNet"
    assert record["cell"]["mode"] == "normal"
    # nothing patched, nothing written into the repository (Python's own __pycache__ and what the
    # repository's own prepare script wrote aside)
    after = _tree(repo)
    after.pop(Path("prepared.txt"))
    assert after == before


def test_a_failing_command_is_recorded_as_tipc_does_and_a_baked_export_is_caught(tmp_path):
    out = _run(TINY, f"{CONFIGS}/train_infer_python_temperature.txt", tmp_path)
    assert out.returncode == 1, out.stdout[-3000:]
    log_path = tmp_path / "r" / "tipc" / "tiny" / "lite_train_lite_infer"
    lines = _status_lines(log_path)
    assert [w for w, _ in lines] == ["successfully", "failed", "successfully", "successfully", "successfully"]
    assert "tools/eval_missing.py" in lines[1][1]  # ... and the chain went on past it
    summary = json.loads((log_path / "tipc.json").read_text())
    (cell,) = summary["cells"]
    # the program traced one call's temperature; the layer has moved on: the check fails
    assert cell["verdict"]["status"] == "fail" and cell["verdict"]["first_failing_stage"] == "baseline"


def test_an_export_that_never_calls_jit_save_is_not_verified_and_not_a_pass(tmp_path):
    # the export goes through paddle.static.save_inference_model: TIPC's chain is all green,
    # but there was no jit.save to check the program against its layer
    out = _run(TINY, f"{CONFIGS}/train_infer_python_nosave.txt", tmp_path)
    assert out.returncode == 1, out.stdout[-3000:]
    log_path = tmp_path / "r" / "tipc" / "tiny" / "lite_train_lite_infer"
    assert [w for w, _ in _status_lines(log_path)] == ["successfully"] * 5
    summary = json.loads((log_path / "tipc.json").read_text())
    assert summary["cells"] == []
    assert "export command 3 succeeded but saved nothing through paddle.jit.save: not verified" in out.stdout


def test_clas_layout_with_pact_trainer_makes_a_cell_per_trainer(tmp_path):
    out = _run(TINY, f"{CONFIGS}/train_infer_python_clas.txt", tmp_path)
    assert out.returncode == 0, out.stdout[-3000:]
    log_path = tmp_path / "r" / "tipc" / "tiny_clas" / "lite_train_lite_infer"
    assert [w for w, _ in _status_lines(log_path)] == ["successfully"] * 10
    summary = json.loads((log_path / "tipc.json").read_text())
    modes = sorted(c["id"].split("/")[2] for c in summary["cells"])
    assert modes == ["normal", "pact"]
    assert all(c["verdict"]["status"] == "pass" for c in summary["cells"])
    record = json.loads((tmp_path / "r" / (next(c["id"] for c in summary["cells"] if "/pact/" in c["id"]) + ".json"))
                        .read_text())
    assert "int8" in record["cell"]["tolerances"]  # a quantized trainer's export: int8 tolerances
    # ... because the saved layer quantizes, not because of the trainer's name
    assert record["setup"]["weights"]["quant_layers"] == ["PactQuant"]
    assert record["runner"]["start"].startswith("fork server")  # not trained here: nothing to import first
    normal = json.loads((tmp_path / "r" / (next(c["id"] for c in summary["cells"] if "/normal/" in c["id"]) + ".json"))
                        .read_text())
    assert normal["setup"]["weights"]["quant_layers"] == []


def test_a_quantized_trainer_name_without_quantizing_layers_is_checked_as_normal():
    plan = _plan(f"{CONFIGS}/train_pact_infer_python.txt", "lite_train_lite_infer")
    export = next(c for c in plan.commands if c.kind is tipc_plan.CommandKind.EXPORT and c.train_mode == "pact")
    assert tipc_run.capture_mode(export, {"quant_layers": ["PactQuant"]})[0] == "pact"
    mode, note = tipc_run.capture_mode(export, {"quant_layers": []})
    assert mode == "normal" and "no quantizing sublayer" in note and "fp32 tolerances" in note


# Command strings as TIPC builds them, with what config values carry in real repositories (PaddleOCR's
# --rec_image_shape="3,48,320", PaddleClas's -o values, escapes) and what bash would still expand.
EVAL_CASES = [
    'python3.7 tools/infer/predict_rec.py --rec_image_shape="3,48,320" --use_gpu=False',
    "python3.7 tools/train.py -o Global.epochs=2 -o 'Arch.name=ResNet50_vd' -o DataLoader.bs=8",
    'python3.7 a.py --x="a b" --y=\'c  d\' --z=e\\ f',
    'python3.7|tools/export.py|-o|Global.save="./out put"|--flag',
    'python3.7 a.py --k="a\\"b" --j=\'x\\y\' --m=back\\\\slash',
    'python3.7 a.py  --list=[1,2,3]  --glob=*.jpg --home=~/x --var=$HOME --sub="$(date)"',
    "python3.7 a.py --empty='' --emptier=\"\" --tail=last",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash as the oracle")
@pytest.mark.parametrize("command", EVAL_CASES)
def test_command_words_are_the_words_bash_eval_makes(command):
    """The oracle: bash itself, `IFS='|'; eval printf_words $cmd` printing each word it made. Words bash
    would expand further ($, globs, ~) are listed as literal instead of compared."""
    words, literal = tipc_plan.eval_words(command)
    prelude = "printf_words() { for w in \"$@\"; do printf '%s\\0' \"$w\"; done; }; set -f; HOME=/h; "
    out = subprocess.run(["bash", "-c", prelude + 'IFS="|"; cmd=$1; eval printf_words $cmd', "bash",
                          command], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    bash_words = out.stdout.split("\0")[:-1]
    assert bash_words[0] == "python3.7" or bash_words[0].startswith("python3.7")
    assert len(bash_words) == len(words)
    for ours, theirs in zip(words, bash_words):
        if ours in literal:
            continue  # bash expands it (a variable, a glob, ~); we pass it as written and say so
        assert ours == theirs, (ours, theirs)
    assert "--rec_image_shape=3,48,320" in words or "rec_image_shape" not in command
    assert any("$" in w for w in literal) == ("$" in command)


def test_an_unbalanced_quote_is_one_line_naming_the_config(tmp_path):
    with pytest.raises(ValueError, match="unbalanced"):
        tipc_plan.eval_words('python3.7 a.py --x="oops')


def test_a_gpu_only_config_verifies_nothing_here_unless_asked_to_run_on_cpu(tmp_path):
    if gpu_absence_reason() is None:
        pytest.skip("a GPU is visible: the config's GPU commands would run")
    config = f"{CONFIGS}/train_infer_python_gpu.txt"
    skipped = _run(TINY, config, tmp_path / "gpu")
    assert skipped.returncode == 1, skipped.stdout[-3000:]
    assert "every command was skipped" in skipped.stdout and "nothing ran" in skipped.stdout
    dry = _run(TINY, config, tmp_path / "dry", "--device", "cpu", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "gpu_list:0 -> gpu_list:-1" in dry.stdout and "--use-gpu:True -> --use-gpu:False" in dry.stdout
    before = (TINY / config).read_text()
    on_cpu = _run(TINY, config, tmp_path / "cpu", "--device", "cpu")
    assert on_cpu.returncode == 0, on_cpu.stdout[-3000:] + on_cpu.stderr[-3000:]
    summary = json.loads((tmp_path / "cpu" / "r" / "tipc" / "tiny" / "lite_train_lite_infer" / "tipc.json").read_text())
    assert [c["verdict"]["status"] for c in summary["cells"]] == ["pass"]  # the export, verified
    assert (TINY / config).read_text() == before  # rewritten in memory only


def test_a_prepare_script_that_fails_is_one_line_before_any_command(tmp_path):
    """(That a passing one runs first is in the lite_train_lite_infer test above.)"""
    repo = tmp_path / "repo"
    shutil.copytree(TINY, repo)
    (repo / "test_tipc" / "prepare.sh").write_text("exit 3\n")
    failed = _run(repo, f"{CONFIGS}/train_infer_python.txt", tmp_path / "again", "--prepare")
    assert "prepare.sh exited 3" in one_line_error(failed)
    assert not list((tmp_path / "again").rglob("results_python.log"))  # no command of the chain ran


@pytest.mark.skipif(shutil.which("nox") is None, reason="nox is not installed in this environment")
def test_a_dry_run_installs_none_of_the_repositorys_requirements(tmp_path, nox_envdir):
    """A requirement that cannot be installed: a dry run that tried would fail."""
    repo = tmp_path / "repo"
    shutil.copytree(TINY, repo)
    (repo / "requirements.txt").write_text("harness-test-no-such-package==0.0.1\n")
    proc = nox_run("-s", "tipc", "--envdir", str(nox_envdir), "--", "--repo", str(repo), "--config",
                   f"{CONFIGS}/train_infer_python.txt", "--mode", "lite_train_lite_infer", "--dry-run")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "harness-test-no-such-package" not in proc.stdout + proc.stderr
    assert "tools/export_model.py" in proc.stdout + proc.stderr  # the plan was printed, nothing ran


def _driver_repo(tmp_path: Path, lines) -> Path:
    """A copy of the tiny repository whose driver script holds ``lines`` (the fragments the
    variants differ by, written here; the real drivers are not part of this repository)."""
    repo = tmp_path / "repo"
    shutil.copytree(TINY, repo)
    (repo / "test_tipc" / "test_train_inference_python.sh").write_text("#!/bin/bash\n" + "\n".join(lines) + "\n")
    return repo


@pytest.mark.parametrize("variant", [d for d in tipc_plan.Driver])
def test_the_repositorys_own_driver_decides_the_plan(tmp_path, variant):
    repo = _driver_repo(tmp_path, tipc_plan.DRIVER_MARKERS[variant])
    found, closest, missing = tipc_plan.recognise_driver(repo / tipc_plan.DRIVER_SCRIPT)
    assert found is variant and closest is variant and not missing
    config = {tipc_plan.Driver.STEP6: "train_infer_python.txt",
              tipc_plan.Driver.CLAS: "train_infer_python_clas.txt"}.get(variant, "train_infer_python_ocr.txt")
    out = _run(repo, f"{CONFIGS}/{config}", tmp_path / "r", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert f"[tipc] driver: {variant.value} — " in out.stdout


def test_a_driver_the_harness_does_not_know_is_one_line_naming_the_closest(tmp_path):
    markers = tipc_plan.DRIVER_MARKERS[tipc_plan.Driver.OCR_CURRENT]
    repo = _driver_repo(tmp_path, markers[:2])  # two of its three lines: some other variant
    out = _run(repo, f"{CONFIGS}/train_infer_python_clas.txt", tmp_path / "r", "--dry-run")
    line = one_line_error(out)
    assert "a TIPC driver this harness does not know; closest: ocr-current" in line and "--driver ocr-current" in line
    forced = _run(repo, f"{CONFIGS}/train_infer_python_clas.txt", tmp_path / "r2", "--dry-run", "--driver", "clas")
    assert forced.returncode == 0, forced.stderr


def test_the_current_paddleocr_driver_differs_from_the_older_one_where_it_does(tmp_path):
    """PaddleOCR's driver at 40c45e2c: no set_autocast in training, status lines carry the log,
    inference logs gained gpus_<gpu>_, whole_infer's export log lost its slash."""
    repo = tmp_path / "repo"
    shutil.copytree(TINY, repo)
    path = repo / CONFIGS / "train_infer_python_clas.txt"  # line 36 is inference_dir to PaddleOCR
    text = path.read_text().replace("https://example.invalid/tiny_pretrained.pdparams", "null")
    path.write_text(text.replace("-o Global.auto_cast:null", "-o Global.auto_cast:fp32"))
    old = _plan(f"{CONFIGS}/train_infer_python_clas.txt", "lite_train_lite_infer", "ocr", repo=repo)
    new = _plan(f"{CONFIGS}/train_infer_python_clas.txt", "lite_train_lite_infer", "ocr-current", repo=repo)
    assert [c.kind for c in old.commands] == [c.kind for c in new.commands]
    train_old = next(c for c in old.commands if c.kind == "train")
    train_new = next(c for c in new.commands if c.kind == "train")
    assert "Global.auto_cast=fp32" in train_old.argv and "Global.auto_cast=fp32" not in train_new.argv
    for command in new.commands:
        assert command.status_log_arg, command.text  # every status line carries its log
        assert new.status_line(True, command).endswith(f" - {command.status_log_arg} \x1b[0m")
    for command in (c for c in new.commands if c.kind == "infer"):
        assert "_gpus_" in command.log.name
    whole = _plan(f"{CONFIGS}/train_infer_python_clas.txt", "whole_infer", "ocr-current", repo=repo)
    exports = [c for c in whole.commands if c.kind == "export"]
    assert all(c.log.name.startswith("whole_infer_export_") for c in exports)
