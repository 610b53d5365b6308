"""Cross-version: real runs at two Paddle versions through nox, and the reports built on them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from harness.report import regress
from harness.shared.record_model import StageRecord
from harness.shared.vocab import Transition
from harness.shared.errors import UserError
from harness.shared.releases import RunOutcome

from .conftest import NOX, as_record, load_record, nox_run, one_line_error, run_harness
from .conftest import CHROMIUM, chromium

OLD = "2.6.2"


def _stage(name, status, max_abs=None):
    stage = {"name": name, "status": status}
    if max_abs is not None:
        stage["worst"] = {"max_abs": max_abs, "status": status}
    return StageRecord.from_dict(stage)


@pytest.mark.parametrize("base, head, expected", [
    ("pass", "pass", "still pass"), ("fail", "pass", "fixed"), ("pass", "error", "regressed"),
    ("crash", "fail", "still failing"), (None, "pass", "new"), ("pass", None, "gone"),
    ("skip", "pass", "new"), ("pass", "skip", "gone"), ("timeout", "pass", "fixed"),
])
def test_transitions(base, head, expected):
    b = _stage("ir", base) if base else None
    h = _stage("ir", head) if head else None
    assert regress.transition(b, h) == expected


def test_drift_is_flagged_at_ten_times_and_from_exact():
    assert regress.drift(_stage("ir", "pass", 1e-6), _stage("ir", "pass", 9e-6))[1] is False
    assert regress.drift(_stage("ir", "pass", 1e-6), _stage("ir", "pass", 1e-5))[1] is True
    text, flagged = regress.drift(_stage("ir", "pass", 0.0), _stage("ir", "pass", 3e-5))
    assert flagged and "was exact" in text
    assert regress.drift(_stage("ir", "pass", 0.0), _stage("ir", "pass", 0.0))[1] is False


def _record(version, *stages):
    return as_record({"id": f"cpu_onednn_bf16/{version}/normal/net",
                      "cell": {"session": {"name": "cpu_onednn_bf16"}, "mode": "normal", "model": {"name": "net"},
                               "paddle": version, "tolerances": {"fp32": {"atol": 1e-4, "rtol": 1e-4}}},
                      "verdict": {"first_failing_stage": None}, "stages": [s.to_dict() for s in stages]})


def test_vacuous_and_noop_count_as_not_failing_and_regressions_open_the_report():
    assert regress.transition(_stage("ir", "pass"), _stage("ir", "noop")) is Transition.STILL_PASS
    assert regress.transition(_stage("ir", "vacuous"), _stage("ir", "fail")) is Transition.REGRESSED
    from harness.report.model import RunModel

    base = _record("2.6.2", _stage("baseline", "pass", 0.0), _stage("onednn_bf16", "pass", 2.3))
    head = _record("3.3.1", _stage("baseline", "pass", 0.0), _stage("onednn_bf16", "fail", 8.8))
    report = regress.compute(RunModel([base, head]), [("2.6.2", "3.3.1")], [])
    assert [r.stage for r in report.pairs[0].numeric()] == ["onednn_bf16"]
    text = regress.render(report, "simple")
    assert text.index("Numeric regressions (1)") < text.index("transition")
    assert "2.3 -> 8.8" in text


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory, nox_envdir, shared_envs):
    """cpu_fp32 at 2.6.2 and at the newest version, same run, through nox; then portability both ways."""
    if NOX is None:
        pytest.skip("nox is not installed in this environment")
    from .conftest import installed_paddle, matrix_text

    head = installed_paddle()
    root = tmp_path_factory.mktemp("xv")
    matrix = root / "matrix.toml"
    # ``extra`` goes to the last model (resnet: the zoo's factory takes no default inputs).
    matrix.write_text(matrix_text(head, {"interp": "tests.factories:conv_interpolate",
                                         "ifparam": "tests.factories:if_on_parameter",
                                         "resnet": "harness.models:resnet18"},
                                  other_versions=[OLD], extra="inputs.image = { shape = [1, 3, 32, 32] }"))
    results = root / "results"
    # One job pool through nox (what `nox -t` would run, one environment per version instead of one
    # per session: six venvs made one after another were this suite's longest setup). interp under
    # oneDNN: Paddle 3.3 raises on its interpolate, 2.6.2 does not (a cause at some versions only).
    sessions = [arg for session in ("cpu_fp32", "portability", "cpu_onednn_fp32")
                for name in (session, f"{session}@{OLD}") for arg in ("--session", name)]
    proc = nox_run("-s", "matrix", "--envdir", str(nox_envdir), "--", *sessions, "--results", str(results),
                   "--envs", str(shared_envs), "--jobs", "2", matrix=matrix)
    # 0 all passed, 1 some cell or load did not: both are results; anything else is not.
    assert proc.returncode in (0, 1), (proc.stdout[-3000:], proc.stderr[-3000:])
    return {"head": head, "results": results, "proc": proc, "matrix": matrix}


def test_both_versions_run_with_the_same_weights(two_versions):
    results = two_versions["results"] / "default"
    old = load_record(results, f"cpu_fp32/{OLD}/normal/resnet")
    new = load_record(results, f"cpu_fp32/{two_versions['head']}/normal/resnet")
    assert old["paddle"]["version"] == OLD and new["paddle"]["version"] == two_versions["head"]
    assert old["setup"]["export"]["format"] == "legacy" and new["setup"]["export"]["format"] == "pir"
    assert old["setup"]["weights"]["sha256"] == new["setup"]["weights"]["sha256"]
    assert {old["setup"]["weights"]["source"], new["setup"]["weights"]["source"]} == {"trained", "checkpoint"}


def test_regression_report_from_real_records(two_versions):
    proc = run_harness("regress", "--results", str(two_versions["results"]), "--base", OLD,
                       "--head", two_versions["head"])
    assert proc.returncode in (0, 1), proc.stderr  # 1: a stage regressed between the versions; the rows say which
    rows = regress.regression_rows(
        __import__("harness.shared.records", fromlist=["x"]).load_records(two_versions["results"] / "default"),
        OLD, two_versions["head"])
    by = {(r.cell.split("/")[-1], r.stage): r for r in rows}
    assert by[("resnet", "baseline")].transition == "still pass"
    # memory is a stage of legacy programs only: under PIR it is skipped, so it is "gone".
    assert by[("resnet", "memory")].transition == "gone"
    # Every regressed row carries the head's own message and makes the exit code 1.
    regressed = [r for r in rows if r.transition == "regressed"]
    assert (proc.returncode == 1) == bool(regressed)
    for row in regressed:
        assert row.message, row
        assert row.cell.split("/")[-1] in proc.stdout
    report = (two_versions["results"] / "default" / "regression.md").read_text()
    assert f"Paddle {OLD} -> {two_versions['head']}" in report
    assert "Same weights, same inputs" in report


def test_versions_agree_on_the_same_weights_or_say_by_how_much(two_versions):
    from harness.shared.records import load_records

    rows = regress.agreement_rows(load_records(two_versions["results"] / "default"), two_versions["head"])
    resnet = [r for r in rows if r.cell.endswith("/resnet") and r.version == OLD]
    assert {r.what for r in resnet} == {"dygraph", "inference"}
    for row in resnet:
        # Two Paddle versions may compute the same weights differently: either is a result, and
        # the status must agree with the numbers (checked next).
        assert row.status in ("pass", "fail")
        assert row.max_abs is not None
        if row.status == "pass":
            assert row.max_abs <= 1e-3


def test_artifact_portability_both_ways(two_versions):
    found = regress.load_portability(two_versions["results"] / "default")
    pairs = {(p.exported_by, p.loaded_by, p.model): p for p in found}
    head = two_versions["head"]
    forward = pairs[(OLD, head, "resnet")]   # a 2.6 .pdmodel run by the newer Paddle
    backward = pairs[(head, OLD, "resnet")]  # a PIR .json run by 2.6.2
    assert forward.format == "legacy" and backward.format == "pir"
    # Measured: 2.6 exports run in every 3.x; a 3.x .json kills Paddle 2.6.2 with SIGSEGV.
    assert forward.status == "pass", forward
    assert backward.status == "crash" and backward.signal == "SIGSEGV", backward
    report = (two_versions["results"] / "default" / "regression.md")
    run_harness("regress", "--results", str(two_versions["results"]), "--head", head)
    assert "Artifact portability" in report.read_text()


def test_a_cause_at_some_versions_names_where_it_appears_and_gets_an_issue_draft(two_versions):
    head = two_versions["head"]
    if not head.startswith("3.3"):
        pytest.skip("the interpolate error under oneDNN is measured on Paddle 3.3.x")
    results = two_versions["results"] / "default"
    words = "ConvertPirAttribute2RuntimeAttribute not support"
    old = load_record(results, f"cpu_onednn_fp32/{OLD}/normal/interp")
    new = load_record(results, f"cpu_onednn_fp32/{head}/normal/interp")
    assert old["setup"]["weights"]["sha256"] == new["setup"]["weights"]["sha256"]
    assert not any(words in s.get("message", "") for s in old["stages"])
    said = f"{OLD} passes the same cell" if old["verdict"]["status"] == "pass" else f"{OLD} runs the same cell without it"
    report = run_harness("report", "--results", str(two_versions["results"]))
    line = next(ln for ln in report.stdout.splitlines() if words in ln and ln.lstrip().startswith("[C"))
    assert f"appears from {head}; {said}" in line, line
    # The issue draft: beside the reproducer, naming the op and the session, with the environment.
    draft = Path(new["analysis"]["reproducer"]["folder"]) / "issue.md"
    text = draft.read_text()
    # The title: the session, the stage, the op in its layer, Paddle's words.
    assert text.startswith("# [cpu_onednn_fp32] onednn_fp32: pd_op.bilinear_interp in decoder (Upsample) raises "), text[:200]
    assert f"Paddle {head} (commit {new['paddle']['commit']})" in text and "oneDNN isa" in text
    assert f"Python {new['machine']['python']}" in text and new["machine"]["os"] in text
    assert f"appears from {head}; {said}" in text and "```python" in text
    # The op as the model's forward called it, and as a line Paddle's API checker replays.
    assert "`paddle.nn.functional.interpolate(float32[" in text
    assert 'paddle.nn.functional.interpolate(Tensor([' in text and '"float32"), scale_factor=2, mode="bilinear", )' in text
    assert f"issue draft: {draft}" in line
    regression = run_harness("regress", "--results", str(two_versions["results"]), "--base", OLD, "--head", head)
    assert f"appears from {head}; {said}" in regression.stdout
    if CHROMIUM:  # the HTML report links the draft, as a person sees it
        dom = chromium("--dump-dom", (results / "report.html").as_uri())
        assert dom.returncode == 0, dom.stderr[-2000:]
        # linked relative to the report's folder: the link still opens after the run folder moved
        href = draft.relative_to(results).as_posix()
        assert f'<a class="draft" href="{href}">{draft}</a>' in dom.stdout
        assert f"appears from {head}; {said}" in dom.stdout


def test_bad_input_unknown_version_and_nothing_in_common(two_versions, tmp_path):
    assert "--head 9.9.9" in one_line_error(run_harness("regress", "--results", str(two_versions["results"]),
                                                        "--head", "9.9.9"))
    assert "does not exist" in one_line_error(run_harness("regress", "--results", str(tmp_path / "none")))
    records = [as_record({"id": f"cpu_fp32/{OLD}/normal/a", "cell": {"paddle": OLD, "model": {"name": "a"}}}),
               as_record({"id": "cpu_fp32/3.3.1/normal/b", "cell": {"paddle": "3.3.1", "model": {"name": "b"}}})]
    with pytest.raises(UserError, match="no cell in common"):
        regress.pick_pairs(records, OLD, "3.3.1")


def test_memory_is_real_on_legacy_and_its_hazard_exists_only_under_pir(two_versions):
    results = two_versions["results"] / "default"
    old = load_record(results, f"cpu_fp32/{OLD}/normal/resnet")
    stages = {s["name"]: s for s in old["stages"]}
    assert stages["memory"]["status"] == "pass"
    assert "memory_optimize_pass" in stages["memory"]["evidence"]["analysis_passes"]
    assert "memory_optimize_pass" not in stages["baseline"]["evidence"]["analysis_passes"]
    hazards = {v: {h["id"]: h["status"] for h in json.loads((results / f"versions/{v}/hazards-cpu.json").read_text())["hazards"]}
               for v in (OLD, two_versions["head"])}
    assert "memory_optim_without_new_executor" not in hazards[OLD]
    assert hazards[two_versions["head"]]["memory_optim_without_new_executor"] == "hazard"


def test_the_smallest_verified_workaround_ships_as_config_lines_hpi_config_and_known_issues(two_versions, tmp_path):
    """An ``if`` on a Parameter under cpu_fp32: deleting constant_folding_pass alone, verified at every
    shape, with its speed; pasted into the program reproducer, it passes. The interpolate under
    oneDNN: a verified change and the ops it takes off oneDNN, counted from the evidence. The
    known-issues file passes the run's failures in qualify, and still blocks a new one."""
    head = two_versions["head"]
    if not head.startswith("3.3"):
        pytest.skip("the two failures are measured on Paddle 3.3.x")
    default = two_versions["results"] / "default"
    ifparam = load_record(default, f"cpu_fp32/{head}/normal/ifparam")
    found = ifparam["analysis"]["workaround"]
    assert found["verified"] and found["change_lines"] == ["config.delete_pass('constant_folding_pass')"], found
    assert found["config"]["deleted_passes"] == ["constant_folding_pass"]
    assert set(found["tried"][-1]["verdicts"].values()) == {"pass"} and found["shapes"] >= 2
    assert found["speed"]["ratio"] > 0 and found["speed"]["runs"] >= 5
    assert found["paddlex_hpi"]["hpi_config"]["backend_config"]["delete_pass"] == ["constant_folding_pass"]
    # The Config lines, pasted into the reproducer before the predictor is made (as `workarounds` tries
    # a change verified on one cell of a cause on its other cells: running/across.py), make it pass;
    # a change that does nothing to the failure leaves it failing.
    from harness.running.across import run_variant, variant
    from harness.shared.record_model import CellRecord

    folder = Path(ifparam["analysis"]["reproducer"]["folder"])
    folder = folder if folder.is_absolute() else default / folder
    assert subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True).returncode != 0
    stage = CellRecord.from_dict(ifparam).stage(ifparam["analysis"]["reproducer"]["stage"])
    for lines, said in ((found["change_lines"], "fixes its reproducer"),
                        (["config.switch_ir_debug(False)"], "does not fix its reproducer")):
        patched = variant(folder / "repro.py", lines, tmp_path / said.replace(" ", "_"))
        # With an environment's interpreter, as `workarounds` gets it (`envs.ensure`: the venv's Python).
        answer = run_variant(Path(sys.executable), patched, stage)
        assert answer.startswith(said), (lines, answer, (patched.parent / "repro.log").read_text()[-2000:]
                                         if (patched.parent / "repro.log").is_file() else "")
    interp = load_record(default, f"cpu_onednn_fp32/{head}/normal/interp")["analysis"]["workaround"]
    assert interp["verified"] and interp["changes"]["off_backend"], interp
    assert interp["changes"]["ops"] >= interp["changes"]["backend_ops"] + sum(interp["changes"]["off_backend"].values())
    # The forms users deploy with, for the run; qualify reads the known issues it wrote.
    proc = run_harness("workarounds", "--results", str(two_versions["results"]))
    assert proc.returncode == 0, proc.stderr
    table = (default / "workarounds.md").read_text()
    assert "config.delete_pass('constant_folding_pass')" in table and "hpi_config:" in table
    known = default / "known-issues.toml"
    args = ("qualify", "--matrix", str(two_versions["matrix"]), "--results", str(two_versions["results"]), "--partial")
    assert run_harness(*args).returncode == 1  # the run's failures block without the file
    assert run_harness(*args, "--known", str(known)).returncode == 0
    # A failure the file does not know still blocks.
    text = known.read_text()
    first = text.index("[[known]]")
    second = text.index("[[known]]", first + 1)
    (tmp_path / "fewer.toml").write_text(text[:first] + text[second:])
    assert run_harness(*args, "--known", str(tmp_path / "fewer.toml")).returncode == 1


def test_releases_place_each_cause_at_its_first_bad_release_and_the_drafts_say_it(two_versions, shared_envs):
    """The source reproducers of the oneDNN interpolate error and of an ``if`` on a Parameter, run at
    four releases (bisected, both ends first, 3 runs each side of the boundary): first bad 3.3.0 /
    last good 3.0.0 (3.2.2, not asked here, is its last good: docs/reference.md), and first bad
    3.0.0 / last good 2.6.2, as measured with plain Paddle. Runs last
    in this module: it adds ``analysis.releases`` to the records the tests above read."""
    head = two_versions["head"]
    if not head.startswith("3.3"):
        pytest.skip("the interpolate error under oneDNN is measured on Paddle 3.3.x")
    results = two_versions["results"]
    def releases(*versions: str, confirm: int = 3, again: bool = False) -> subprocess.CompletedProcess:
        return run_harness("releases", "--results", str(results), "--releases", ",".join(dict.fromkeys(versions)),
                           "--envs", str(shared_envs), "--python", "3.11", "--confirm", str(confirm),
                           *(["--again"] if again else []), timeout=1800)

    def asked(proc: subprocess.CompletedProcess) -> List[str]:
        """The releases a run of ``releases`` ran a script at."""
        return re.findall(r"\] (\d+\.\d+\.\d+): (?:reproduced|not_reproduced|not_built|other|no_environment)", proc.stdout)

    # Four of the index's releases (the full nine are in docs/reference.md): those of 2.6.2 and the
    # head hold what the pool's venvs above hold, which are used (envs.ensure: the same resolution).
    proc = releases(OLD, "3.0.0", "3.3.0", head)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    default = results / "default"
    interp = load_record(default, f"cpu_onednn_fp32/{head}/normal/interp")
    ifparam = load_record(default, f"cpu_fp32/{head}/normal/ifparam")
    spans = {"interp": interp["analysis"]["releases"], "ifparam": ifparam["analysis"]["releases"]}
    assert (spans["interp"]["first_bad"], spans["interp"]["last_good"], spans["interp"]["fixed_in"]) == ("3.3.0", "3.0.0", None)
    assert (spans["ifparam"]["first_bad"], spans["ifparam"]["last_good"], spans["ifparam"]["fixed_in"]) == ("3.0.0", OLD, None)
    for span in spans.values():
        said = {t["version"]: (t["outcome"], t["runs"]) for t in span["tried"]}
        # The one script ran at 2.6.2 (a .pdmodel) and at the head (a .json): it said something at both.
        assert said[OLD][0] == "not_reproduced" and said[head][0] == "reproduced", said
        assert said[span["first_bad"]] == ("reproduced", 3) and said[span["last_good"]] == ("not_reproduced", 3), said
        assert span["outcome"] == "found" and span["produced_by"] == "python -m harness releases"
    # The drafts say it (rewritten by releases itself, no report in between), and hold no path of this machine.
    assert "2 of 2 cause(s) placed" in proc.stdout and "<n>" not in proc.stdout, proc.stdout[-3000:]
    for record, words in ((interp, f"first bad 3.3.0, last good 3.0.0, still at {head}"),
                          (ifparam, f"first bad 3.0.0, last good {OLD}, still at {head}")):
        folder = Path(record["analysis"]["reproducer"]["folder"])
        folder = folder if folder.is_absolute() else default / folder
        text = (folder / "issue.md").read_text()
        assert words in text and "python source/source_repro.py" in text, text[:3000]
        assert str(results) not in text and not re.search(r"(?<![\w.])/(tmp|work|home|root)/", text), text
    assert "(since Paddle 3.3.0)" in (Path(default / interp["analysis"]["reproducer"]["folder"]) / "issue.md").read_text()
    # The same releases asked again: each cause is its record's span, no script runs, nothing changes.
    resumed = releases(OLD, "3.0.0", "3.3.0", head)
    assert resumed.returncode == 0 and resumed.stdout.count("placed earlier: first bad") == 2, resumed.stdout[-2000:]
    assert not asked(resumed), resumed.stdout[-2000:]
    assert load_record(default, f"cpu_onednn_fp32/{head}/normal/interp")["analysis"]["releases"] == spans["interp"]
    # --again asks a cause placed over the same releases, and a second run makes no environment: each
    # release's was made once (the head alone, one run: the point is the environments, not the bisection
    # again). Which spans are taken over which releases: tests/unit/running/test_release_bisection.py.
    forced = releases(head, confirm=1, again=True)
    assert forced.returncode == 0 and "making the environment" not in forced.stdout, forced.stdout[-2000:]
    assert "placed earlier" not in forced.stdout and asked(forced).count(head) >= 2, forced.stdout[-2000:]
    # A release the index does not serve: one line, exit 2.
    assert "--releases 2.5.0" in one_line_error(run_harness("releases", "--results", str(results), "--releases", "2.5.0",
                                                            "--python", "3.11"))


def test_a_script_naming_what_an_older_release_lacks_is_asked_there_without_it(two_versions, shared_envs):
    """The ``if`` on a Parameter's script (first bad 3.0.0, last good 2.6.2, above), written as a
    suite of 3.3 writes: an attribute 2.6.2 lacks bound at import and a keyword it lacks in a call. At
    2.6.2 it stops on the names ("not built": nothing said of the cause); written without each in turn
    — verified at the head, where it still reproduces — 2.6.2 is asked and answers again as the plain
    script does. Real Paddle at both releases, the environments ``releases`` made above."""
    import ast
    import dataclasses

    from harness.running.release_envs import Environments
    from harness.running.releases import Bisection, causes_of
    from harness.shared.records import scan_records

    head = two_versions["head"]
    if not head.startswith("3.3"):
        pytest.skip("flashmask_attention and pad_from_left_axis are measured present at Paddle 3.3.x")
    records, _ = scan_records(two_versions["results"] / "default")
    cause = next(c for c in causes_of(records)[0] if c.home.cell.model["name"] == "ifparam")
    said: list = []
    environments = Environments(shared_envs, cause.home, "3.11", said.append)
    # Its script says "not reproduced" at 2.6.2 by itself (the releases' answers above were rewritten by
    # the head's run alone): asked once here, as written.
    plain = cause.script
    assert Bisection(cause, environments, said.append).ask(OLD, plain, False, port=False)[0] is RunOutcome.NOT_REPRODUCED
    text = plain.read_text()
    tree = ast.parse(text)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert any(isinstance(n, ast.Import) and any(a.name == "paddle" and not a.asname for a in n.names) for n in imports)
    lines = text.splitlines(keepends=True)
    at = max(n.end_lineno for n in imports)
    lines[at:at] = ["fused_attention = paddle.nn.functional.flashmask_attention  # bound, never called\n",
                    "padded = paddle.nn.functional.pad(paddle.zeros([1, 1, 2, 2]), [1, 1, 1, 1], pad_from_left_axis=False)\n"]
    newer = plain.with_name("as_3_3_writes.py")
    newer.write_text("".join(lines))
    try:
        bisect = Bisection(dataclasses.replace(cause, standalone=newer), environments, said.append)
        assert bisect.run(OLD) is RunOutcome.NOT_REPRODUCED, said
        line = bisect.answers[OLD][0][1]
        assert line.endswith("[written without `paddle.nn.functional.flashmask_attention`, `pad_from_left_axis=` in "
                             f"calls of `pad`: absent at {OLD}, reproducing at {head} without]"), line
        assert "not reproduced" in line.split(" [written without", 1)[0], line  # the release's own words first
        written = sorted(plain.parent.glob("as_3_3_writes.without-*.py"))
        assert len(written) == 2, said  # one per round, each verified at the head
        both = next(p.read_text() for p in written if "pad_from_left_axis" in p.read_text().splitlines()[0])
        assert "fused_attention = None" in both
        assert "pad_from_left_axis" not in "".join(ln for ln in both.splitlines(True) if not ln.startswith("#"))
        assert sum(f"at {head}: reproduced" in s for s in said) == 2, said
    finally:
        for path in plain.parent.glob("as_3_3_writes*.py"):
            path.unlink()


def test_one_command_qualifies_the_run_and_publishes_each_cause_with_its_place_release_and_workaround(
        two_versions, shared_envs, tmp_path):
    """``qualification`` over the run above (its cells recorded: the pool redoes none), then releases,
    workarounds, report and qualify: the publication names each cause with its place, its verified
    reproducer, the release span asked (two releases here) and its workaround, says what is new since
    the release before, and the known-issues file it names is the one ``qualify`` read."""
    head = two_versions["head"]
    if not head.startswith("3.3"):
        pytest.skip("the interpolate error under oneDNN is measured on Paddle 3.3.x")
    sessions = [arg for session in ("cpu_fp32", "cpu_onednn_fp32")
                for name in (session, f"{session}@{OLD}") for arg in ("--session", name)]
    out = tmp_path / "docs"
    proc = run_harness("qualification", "--matrix", str(two_versions["matrix"]), *sessions, "--model", "interp",
                       "--model", "ifparam", "--results", str(two_versions["results"]), "--run", "default",
                       "--envs", str(shared_envs), "--releases", f"{OLD},{head}", "--out", str(out), timeout=1800)
    assert proc.returncode in (0, 1), (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "recorded earlier" in proc.stdout and "redone" not in proc.stdout, proc.stdout[-3000:]
    text = (out / f"qualification-{head}.md").read_text()
    assert text.startswith(f"# Paddle {head}, qualified over the zoo"), text[:300]
    assert "python -m harness qualification --session cpu_fp32" in text and "steps: pool " in text
    assert str(tmp_path) not in text and "--out DIR" in text  # no path of this machine in what is published
    causes = text.split("\n## Causes", 1)[1].split("\n## ", 1)[0]  # the causes' table (the side-by-side one is its own)
    rows = [ln for ln in causes.splitlines() if ln.startswith("| C") or ln.startswith("| F")]
    interp = next(ln for ln in rows if "ConvertPirAttribute2RuntimeAttribute" in ln)
    assert "op pd_op.bilinear_interp" in interp and "(verified)" in interp, interp
    assert f"first bad {head}, last good {OLD}" in interp, interp
    assert "(verified at 3 shape(s)" in interp, interp  # its verified workaround, with its speed
    ifparam = next(ln for ln in rows if f"cpu_fp32/{head}/normal/ifparam" in ln)
    assert f"first bad {head}, last good {OLD}" in ifparam, ifparam
    assert f"**new since {OLD}**" in text, text[-2000:]
    # The older release qualified over its own cells beside it, and each cause side by side by the cells of both.
    assert text.splitlines()[0].endswith(f"beside {OLD}") and f"Paddle {OLD}, over its own cells:" in text
    beside = text.split(f"## {OLD} and {head}, side by side", 1)[1].split("## What changed", 1)[0]
    side = next(ln for ln in beside.splitlines() if "ConvertPirAttribute2RuntimeAttribute" in ln)
    assert f"**new in {head}**" in side and "pass" in side.rsplit("|", 2)[-2], side
    # The count the issue asks for, read from the spans: each exactly placed row counted, no other.
    exact = sum(1 for ln in rows if ", last good " in ln or "in every release asked" in ln)
    assert exact >= 2 and f"asked): **{exact} of {len(rows)}**." in text, text[:3000]
    known = out / f"known-issues-{head}.toml"
    assert known.is_file() and f"--known {known.name}" in text and (out / "zoo.md").is_file()
    # qualify's own line, over the cells the command asked for (not the matrix's [qualify] table): every
    # one recorded, the head's failures expected by the known-issues file the command wrote.
    verdict = text.split("## Verdict", 1)[1].split("## At a glance", 1)[0]
    assert "without the known issues: NOT QUALIFIED" in verdict, verdict[:1500]
    assert f"with them (known-issues-{head}.toml): QUALIFIED\n" in verdict, verdict[:1500]
    assert "partial" not in verdict and "Missing cells" not in verdict, verdict[:1500]
    # The matrix's other sessions are said, each with why it is not in the publication: bf16 by the CPU's
    # own flags (the run's machine facts), the others as not asked for.
    missing = text.split("## Sessions not in it", 1)[1]
    bf16 = next(ln for ln in missing.splitlines() if ln.startswith("- cpu_onednn_bf16: "))
    cpu = Path("/proc/cpuinfo").read_text()
    assert ("needs a CPU with bf16 instructions" in bf16) == ("avx512_bf16" not in cpu and "amx_bf16" not in cpu), bf16
    assert "- cpu_fp32:" not in missing and "- cpu_onednn_fp32:" not in missing, missing[:1500]
    # Published again from the report on, over the run as it stands: no release asked again, said.
    again = run_harness("qualification", "--matrix", str(two_versions["matrix"]), *sessions, "--model", "interp",
                        "--model", "ifparam", "--results", str(two_versions["results"]), "--run", "default",
                        "--envs", str(shared_envs), "--out", str(out), "--from", "report", timeout=600)
    assert again.returncode in (0, 1) and "[qualification] releases:" not in again.stdout, again.stdout[-2000:]
    republished = (out / f"qualification-{head}.md").read_text()
    assert "releases not run (--from report)" in republished and "--from report" in republished.splitlines()[2]
    # The pool it did not run still has a cost: the recorded cells' own seconds over the slots.
    floor = re.search(r"pool not run \(--from report\); its (\d+) recorded cells took (\d+) cell-seconds, a work floor "
                      r"of (\d+) s over (\d+) slots", republished)
    assert floor and int(floor[1]) >= 4 and int(floor[2]) > 0, republished.splitlines()[2]
    assert [ln for ln in republished.splitlines() if ln.startswith("| C")] == \
        [ln for ln in text.splitlines() if ln.startswith("| C")]  # the spans the first asked, as recorded
    assert "Not complete" not in republished  # every cell asked is recorded
    # Asked for the head's sessions alone, it publishes the head alone: the older cells in the run folder are
    # not its. One of its cells without a record (a pool cut short) is said at the top, by its column.
    alone = tmp_path / "alone"
    record = two_versions["results"] / "default" / f"cpu_fp32/{head}/normal/ifparam.json"
    record.rename(record.with_suffix(".aside"))
    try:
        head_only = run_harness("qualification", "--matrix", str(two_versions["matrix"]), "--session", "cpu_fp32",
                                "--session", "cpu_onednn_fp32", "--model", "interp", "--model", "ifparam", "--results",
                                str(two_versions["results"]), "--run", "default", "--envs", str(shared_envs), "--out",
                                str(alone), "--from", "report", timeout=600)
    finally:
        record.with_suffix(".aside").rename(record)
    assert head_only.returncode in (0, 1), head_only.stdout[-2000:]
    assert (f"**Not complete:** 1 of the 4 cells asked have no record (the pool did not run); they are \"not run\" "
            f"in the zoo's table, and every tally and verdict here covers the recorded cells only: 1 in cpu_fp32 · "
            f"{head} · normal.") in (alone / f"qualification-{head}.md").read_text()
    assert (alone / f"qualification-{head}.md").read_text().splitlines()[0] == f"# Paddle {head}, qualified over the zoo"
    assert f"· {OLD}" not in (alone / "zoo.md").read_text() and f"cpu_fp32 · {head}" in (alone / "zoo.md").read_text()


def test_a_shard_runs_the_pool_over_its_share_of_the_models_and_stops(two_versions, shared_envs, tmp_path):
    """``qualification --shard K/N`` on a copy of the run above: the pool alone, over every N-th model
    (its cells recorded: none redone), nothing published; the merged shards are one run again."""
    import shutil

    head = two_versions["head"]
    shards = []
    for k, model in ((1, "interp"), (2, "ifparam")):
        results = tmp_path / f"shard{k}"
        # a shard's folder holds its own models' cells alone, as a shard machine's would
        shutil.copytree(two_versions["results"] / "default", results / "default",
                        ignore=lambda folder, names, model=model: [
                            n for n in names if Path(folder).parent.parent.parent.name == "default"
                            and n not in (model, f"{model}.json")])
        proc = run_harness("qualification", "--matrix", str(two_versions["matrix"]), "--session", "cpu_fp32",
                           "--model", "interp", "--model", "ifparam", "--shard", f"{k}/2", "--results", str(results),
                           "--run", "default", "--envs", str(shared_envs), "--out", str(tmp_path / f"out{k}"),
                           timeout=600)
        assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
        pool = next(ln for ln in proc.stdout.splitlines() if ln.startswith("[qualification] pool:"))
        assert f"--model {model}" in pool and pool.count("--model") == 1, pool
        assert "[qualification] releases:" not in proc.stdout and "merge --into" in proc.stdout, proc.stdout[-2000:]
        assert not (tmp_path / f"out{k}" / f"qualification-{head}.md").exists()
        shards.append(results / "default")
    merged = tmp_path / "merged"
    proc = run_harness("merge", "--into", str(merged / "default"), *map(str, shards), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (merged / "default" / "cpu_fp32" / head / "normal" / "interp.json").is_file()
    assert (merged / "default" / "cpu_fp32" / head / "normal" / "ifparam.json").is_file()
    bad = run_harness("qualification", "--shard", "3/2")
    assert bad.returncode == 2 and "--shard: '3/2' is not K/N" in bad.stderr and "Traceback" not in bad.stderr
