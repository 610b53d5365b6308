"""Work that is the same is done once, on real Paddle: a family's suite is imported once per
environment (the fork server preloads what the family's first build imported, measured), and the
sessions reading one program share its setup (one export); the records say both, and their numbers
are those of cells that did everything themselves."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.bench.matrix import compare, fingerprint
from harness.shared.records import load_records

from .conftest import matrix_text, run_harness

SESSIONS = ("cpu_fp32", "cpu_onednn_fp32")
SLOW = {"slow_narrow": "tests.factories:slow_suite_narrow", "slow_wide": "tests.factories:slow_suite_wide",
        "slow_widest": "tests.factories:slow_suite_widest"}


def _matrix(version: str) -> str:
    # A model of no family wrong only in its program: its baseline fails in every session alike,
    # with the whole root cause.
    models = ('\n[models.scaled]\nfactory = "tests.factories:scaled_in_the_program"\n'
              'inputs.x = { shape = [2, 8] }\nderive_shapes = false\n')
    # One whose export raises (Paddle 3's to_static): the same failure in every session.
    models += ('\n[models.raising]\nfactory = "tests.factories:doubled_after_its_first_call"\n'
               'inputs.x = { shape = [4, 8] }\nderive_shapes = false\n')
    for name, factory in {**SLOW, "threaded": "tests.factories:threaded_suite_net"}.items():
        family = "threaded" if name == "threaded" else "slow"
        models += (f'\n[models.{name}]\nfactory = "{factory}"\nfamily = "{family}"\n'
                   f'inputs.image = {{ shape = [2, 3, 16, 16] }}\nderive_shapes = false\n')
    families = ('\n[families.slow]\ndescription = "a planted suite slow to import"\npackages = ["numpy"]\n'
                '\n[families.threaded]\ndescription = "a planted suite that starts a thread at import"\n'
                'packages = ["numpy"]\n')
    return matrix_text(version, {}, extra=families + models)


def _pool(matrix: Path, results: Path, imports: Path, **env: str):
    return run_harness("pool", "--matrix", str(matrix), *[a for s in SESSIONS for a in ("--session", s)],
                       "--results", str(results), "--jobs", "1", "--python", sys.executable,
                       env_extra={"SLOW_SUITE_IMPORTS": str(imports), **env})


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory):
    from .conftest import installed_paddle

    tmp = tmp_path_factory.mktemp("once")
    matrix = tmp / "matrix.toml"
    matrix.write_text(_matrix(installed_paddle()))
    once = _pool(matrix, tmp / "once", tmp / "once-imports.log")
    every = _pool(matrix, tmp / "every", tmp / "every-imports.log", HARNESS_PRELOAD="0", HARNESS_SHARED_SETUP="0")
    return {"tmp": tmp, "once": once, "every": every}


def _imports(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def test_a_suite_is_imported_once_per_environment_and_a_program_exported_once(both_ways):
    tmp = both_ways["tmp"]
    for proc in (both_ways["once"], both_ways["every"]):
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    # Every cell imported the slow suite itself: six cells of its three models. Once: the first
    # build (which measured what to preload), then the family's fork server; nothing else.
    assert _imports(tmp / "every-imports.log") == 6
    assert _imports(tmp / "once-imports.log") == 2
    run = tmp / "once" / "default"
    once = {r.id: r for r in load_records(run)}
    assert len(once) == 12
    for record in once.values():
        if record.model == "raising":
            continue  # below
        made_by = record.setup.get("program")["made_by"]
        maker = made_by.replace(record.session, "cpu_fp32", 1)
        assert made_by == maker, (record.id, made_by)  # nox's first session makes the program
        if record.session == "cpu_fp32":
            assert "made here" in record.setup.get("program")["words"]
        else:
            # One export: the reader's files are the maker's, linked (the same inode), not made again.
            ours = run / record.setup.get("export")["program"]  # records name files from the run folder
            theirs = run / record.setup.get("program")["folder"] / "export" / ours.name
            assert ours.stat().st_ino == theirs.stat().st_ino
            assert "reused" in record.setup.get("program")["words"] and "export" not in record.setup.get("timings")
    # The family's first build (whichever model the pool started first) imported the suite; every
    # later cell of the family forked with it.
    preloaded = {r.id for r in once.values() if "module(s) an earlier build imported" in r.runner.get("preload", "")}
    first = {r.id for r in once.values() if r.model in SLOW} - preloaded
    assert len(first) == 1 and next(iter(first)).startswith("cpu_fp32/"), (first, preloaded)
    assert "not preloaded (its family's first build here imported it)" in once[next(iter(first))].runner["preload"]
    # The stages every session runs alike on the program, and their analyses, are the maker's: the
    # failing baseline of `state` is analysed once (its triage, reduction and reproducer reused).
    for record in once.values():
        if record.session == "cpu_onednn_fp32" and record.model != "raising":
            maker = record.setup.get("program")["made_by"]
            assert [s.name for s in record.stages if s.extra.get("reused_from") == maker] == ["baseline", "memory", "ir"]
            assert record.stages[-1].extra.get("reused_from") is None  # its own backend stage ran here
    state = once[next(k for k in once if k.startswith("cpu_onednn_fp32/") and k.endswith("/scaled"))]
    assert state.to_dict()["verdict"]["first_failing_stage"] == "baseline"
    reused = state.to_dict()["analysis"]
    assert {k for k, v in reused.items() if v.get("reused_from")} >= {"triage", "reduce", "reproducer"}, reused.keys()
    assert reused["reproducer"]["script"].startswith(state.id.replace("cpu_onednn_fp32", "cpu_fp32", 1) + "/")
    # An export that raised is the same failure for every session: taken with its reproducer.
    maker, reader = (once[f"{s}/{state.version}/normal/raising"].to_dict() for s in SESSIONS)
    assert maker["setup"].get("phase") == "export" or not state.version.startswith("3."), maker["setup"]
    if maker["setup"].get("phase") == "export":
        assert maker["setup"]["status"] == "error" and "program" not in maker["setup"]
        assert reader["setup"]["status"] == "error" and reader["setup"]["message"] == maker["setup"]["message"]
        assert reader["setup"]["program"]["made_by"] == maker["id"] and "export raised" in reader["setup"]["program"]["words"]
        taken = reader["analysis"]["reproducer"]
        assert taken["reused_from"] == maker["id"] and taken["script"] == maker["analysis"]["reproducer"]["script"]
    # The numbers, statuses and evidence are those of cells that made everything themselves.
    assert compare(fingerprint(tmp / "once" / "default"), fingerprint(tmp / "every" / "default")) == []


def test_a_suite_that_starts_a_thread_at_import_is_not_preloaded_and_the_record_says_so(both_ways):
    records = {r.model: r for r in load_records(both_ways["tmp"] / "once" / "default") if r.session == "cpu_onednn_fp32"}
    said = records["threaded"].runner.get("preload", "")
    assert said.startswith("family:threaded: not preloaded: importing its suite started 1 thread(s)"), said
    assert records["threaded"].verdict.status.value in ("pass", "fail")  # it ran, forked from the plain server


def test_a_published_program_is_reused_only_when_it_describes_what_the_cell_would_make(both_ways, tmp_path):
    """A program made from other weights is not reused: the cell exports its own (and republishes)."""
    from harness.shared.runfolder import RunFolder

    once = both_ways["tmp"] / "once" / "default"
    record = next(r for r in load_records(once) if r.session == "cpu_fp32" and r.model == "slow_narrow")
    entry = RunFolder(once).program(record.version, "normal", "slow_narrow") / "setup.json"
    published = json.loads(entry.read_text())
    assert published["made_by"] == record.id and published["setup"]["status"] == "pass"
    published["setup"]["weights"]["sha256"] = "0" * 64  # as if the run's weights were trained again since
    entry.write_text(json.dumps(published))
    (once / "cpu_onednn_fp32" / record.version / "normal" / "slow_narrow.json").unlink()  # redone, not forced
    again = run_harness("run", "--matrix", str(both_ways["tmp"] / "matrix.toml"), "--session", "cpu_onednn_fp32",
                        "--model", "slow_narrow", "--results", str(once.parent))
    assert again.returncode in (0, 1), again.stderr[-2000:]
    redone = next(r for r in load_records(once) if r.session == "cpu_onednn_fp32" and r.model == "slow_narrow")
    assert redone.setup.get("program")["made_by"] == redone.id and "export" in redone.setup.get("timings")


def test_a_family_whose_packages_lack_what_its_suite_imports_is_the_harness_s_never_a_cause(tmp_path, paddle_version):
    """A family complete on its own or not: the module it lacks, and the family to fix, said as the
    harness's (untestable), not as a finding about Paddle, and counted apart in the report."""
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(paddle_version, {}, extra=(
        '\n[families.incomplete]\ndescription = "a suite missing a package"\npackages = ["numpy"]\n'
        '\n[models.incomplete]\nfactory = "tests.factories:incomplete_suite_net"\nfamily = "incomplete"\n'
        'inputs.image = { shape = [2, 3, 16, 16] }\nderive_shapes = false\n')))
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stderr[-2000:]
    record = next(iter(load_records(tmp_path / "r" / "default")))
    assert record.setup.status.value == "untestable" and record.verdict.status.value == "untestable"
    assert record.setup.message.startswith(
        "model family incomplete cannot build incomplete in this environment: its code imports "
        "'harness_planted_absent_package', which is not installed"), record.setup.message
    assert "families.incomplete.packages" in record.setup.message
    from harness.report.model import RunModel

    assert RunModel.load(tmp_path / "r" / "default").causes() == []  # no cause of Paddle's
    # A factory asking its package for a name the package lacks: the factory's to fix, untestable too.
    matrix.write_text(matrix.read_text().replace("tests.factories:incomplete_suite_net", "tests.factories:misnamed_suite_class"))
    proc = run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(tmp_path / "m"))
    record = next(iter(load_records(tmp_path / "m" / "default")))
    assert record.setup.status.value == "untestable", (record.setup.status, record.setup.message)
    assert "asks for what is not there" in record.setup.message and "RenamedNet" in record.setup.message
