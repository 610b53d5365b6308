"""Command line: ``python -m harness <command> ...``, the host side (``--help`` lists the commands). The
cell side has its own entry (``python -m harness.cell``), started by a launcher, never by this one.

User errors print one line and exit 2; ``run`` exits 1 when any cell did not pass (or skip).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, List, Optional

from .running.pathargs import (at_least_one, file_to_read, folder_to_read, folder_to_write, python_interpreter,
                       relative_file, run_name, Once)
from .running.runlock import owned
from .shared.errors import UserError
from .shared.runfolder import RunFolder

DEFAULT_MATRIX = Path(__file__).resolve().parent.parent / "matrix" / "default.toml"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}; see --help\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in (_add_run, _add_tipc, _add_tools, _add_reports, _add_diff):
        add(sub)
    from .report import workarounds
    from .running import families, pool, qualification, releases

    pool.add_parser(sub, DEFAULT_MATRIX), releases.add_parser(sub), workarounds.add_parser(sub)
    qualification.add_parser(sub, DEFAULT_MATRIX), families.add_parser(sub, DEFAULT_MATRIX)
    return parser


def _add_run(sub: Any) -> None:
    """``run``: one session at one Paddle version."""
    run = sub.add_parser("run", help="run the cells of one session at one Paddle version (host side)")
    run.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix TOML (default: %(default)s)")
    run.add_argument("--session", required=True, action=Once, help="session name, e.g. cpu_fp32 (one: `pool` runs several)")
    run.add_argument("--paddle", help="Paddle version (default: the session's first)")
    run.add_argument("--model", action="append", help="only this model (repeatable)")
    run.add_argument("--mode", action="append", help="only this train mode (repeatable)")
    run.add_argument("--results", type=folder_to_write, default=Path("results"), help="results root (default: %(default)s)")
    run.add_argument("--run", dest="run_name", type=run_name, default="default", help="run name under the results root")
    run.add_argument("--force", action="store_true", help="redo cells that already have a record")
    run.add_argument("--jobs", type=at_least_one, default=None,
                     help="cells at once (default: the cores at the cells' pinned thread count)")
    run.add_argument("--no-root-cause", dest="root_cause", action="store_false",
                     help="record failing stages without the per-tensor diff and culprit search (faster CI)")
    run.add_argument("--python", type=python_interpreter, help="Python of the Paddle environment (default: this one)")
    run.add_argument("--checkpoints", type=folder_to_read,
                     help="take the run's shared weights from this folder (<mode>/<model>.npz, e.g. a first CI "
                          "job's results/<run>/checkpoints): every shard then computes with the same weights")
    run.add_argument("--runner", choices=("venv", "docker"),
                     help="where the cells run (default: the session's runner: venv for CPU, docker for GPU)")
    run.add_argument("--image", help="image for --runner docker (default: the matrix's image of the session's "
                                     "Paddle version and device, built by `nox -s images`)")


def _add_tipc(sub: Any) -> None:
    """``tipc``: a repository's TIPC config run as TIPC does."""
    from .tipc.config import Layout  # plain Python: the choices come from the vocabulary
    from .tipc.plan import Driver

    tipc = sub.add_parser("tipc", help="run a repository's TIPC config as TIPC does; verify every jit.save")
    tipc.add_argument("--repo", type=folder_to_read, required=True, help="the repository the TIPC config belongs to")
    tipc.add_argument("--config", type=relative_file, required=True,
                      help="TIPC config, e.g. test_tipc/configs/X/train_infer_python.txt (relative: to --repo)")
    tipc.add_argument("--mode", required=True, help="lite_train_lite_infer, lite_train_whole_infer, whole_infer "
                                                     "or whole_train_whole_infer")
    tipc.add_argument("--dry-run", action="store_true", help="print the plan (argv lists, in order); run nothing")
    tipc.add_argument("--prepare", action="store_true", help="first run the repository's own test_tipc/prepare.sh "
                      "CONFIG MODE with bash (the user's script: it downloads data and weights, needs network)")
    tipc.add_argument("--device", choices=("cpu",), help="run on CPU what the config runs on GPU: gpu_list, use_gpu, "
                      "Global.device and --device rewritten in memory (the dry run lists each rewrite)")
    tipc.add_argument("--driver", choices=[d.value for d in Driver],
                      help="whose test_train_inference_python.sh to mirror (default: step6 for 32-line "
                           "configs, clas for 51-line ones)")
    tipc.add_argument("--layout", choices=[layout.value for layout in Layout], help="the config's layout (default: detected)")
    tipc.add_argument("--python", type=python_interpreter, help="the Paddle environment's Python that runs the commands and the cells "
                                       "(default: this one)")
    tipc.add_argument("--session", action="append",
                      help="matrix session each intercepted export runs (repeatable; default: the matrix's "
                           "CPU sessions)")
    tipc.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                      help="shape of an input whose InputSpec has free dims (default: batch 2, others 32)")
    tipc.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX)
    tipc.add_argument("--results", type=folder_to_write, default=Path("results"))
    tipc.add_argument("--run", dest="run_name", type=run_name, default="default", help="run name under the results root")
    tipc.add_argument("--jobs", type=at_least_one, default=None, help="export cells at once")
    tipc.add_argument("--no-root-cause", dest="root_cause", action="store_false")


def _add_tools(sub: Any) -> None:
    """``images``, ``shards``, ``merge``, ``probe``: the machinery around runs."""
    images = sub.add_parser("images", help="build the Docker images the matrix names (host side)")
    images.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX)
    images.add_argument("--paddle", action="append", help="only this Paddle version (repeatable; default: all)")
    images.add_argument("--device", action="append", choices=("cpu", "gpu"), help="only this device (default: cpu)")
    images.add_argument("--wheels", type=folder_to_read, help="folder of wheels to install from (default: pip download "
                                                    "into a cache)")
    images.add_argument("--make-base", action="store_true", help="first build [docker].cpu_base with debootstrap")

    shards = sub.add_parser("shards", help="nox sessions (`nox -l --json` on stdin) as a CI job matrix")
    shards.add_argument("--nox-json", type=file_to_read, help="file with `nox -l --json` output (default: stdin)")
    shards.add_argument("--format", choices=("github", "gitlab"), default="github")
    shards.add_argument("--cpu-runner", default="ubuntu-latest")
    shards.add_argument("--gpu-runner", default="gpu")

    merge = sub.add_parser("merge", help="merge shards' run folders into one run")
    merge.add_argument("--into", type=folder_to_write, required=True, help="the merged run folder (results/<run>)")
    merge.add_argument("shards", type=folder_to_read, nargs="+", help="the shards' run folders")

    probe = sub.add_parser("probe", help="why a runner cannot run here (prints nothing when it can)")
    probe.add_argument("--image", required=True)
    probe.add_argument("--gpu", action="store_true", help="the container needs a GPU")


def _add_reports(sub: Any) -> None:
    """``report``, ``qualify``, ``regress``, ``port``: what a run says."""
    report = sub.add_parser("report", help="merge every record of a run into markdown and a table")
    report.add_argument("--results", type=folder_to_read, default=Path("results"))
    report.add_argument("--run", dest="run_name", type=run_name, default="default")
    report.add_argument("--out", type=Path, help="markdown file (default: <results>/<run>/report.md)")
    report.add_argument("--junit", type=Path, help="JUnit XML (default: <results>/<run>/report.xml)")
    report.add_argument("--html", type=Path, help="self-contained HTML (default: <results>/<run>/report.html)")
    report.add_argument("--summary", type=Path,
                        help="short markdown for a PR comment (default: <results>/<run>/summary.md; "
                             "also appended to $GITHUB_STEP_SUMMARY when set)")
    report.add_argument("--zoo", type=Path, help="also write the zoo at a glance here (every zoo model of --matrix)")
    report.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="whose zoo --zoo lists")

    qualify = sub.add_parser("qualify", help="release verdict over a run: qualified or not (exit 0/1)")
    qualify.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX)
    qualify.add_argument("--results", type=folder_to_read, default=Path("results"))
    qualify.add_argument("--run", dest="run_name", type=run_name, default="default")
    qualify.add_argument("--known", type=file_to_read, help="known-issues TOML ([[known]] cell, stage, reason, link)")
    qualify.add_argument("--scope", action="append", help="require this SESSION@VERSION's cells, not [qualify]'s")
    qualify.add_argument("--model", action="append", help="with --scope: only these models (zoo: the zoo's)")
    scope = qualify.add_mutually_exclusive_group()
    scope.add_argument("--strict", action="store_true", help="also block on skipped cells and hazards (a release)")
    scope.add_argument("--partial", action="store_true",
                       help="qualify the cells that have records; missing required cells are reported, not "
                            "blocking, and the verdict line says 'partial: N of M'")

    regress = sub.add_parser("regress", help="cross-version report: transitions, drift, agreement, portability")
    regress.add_argument("--results", type=folder_to_read, default=Path("results"))
    regress.add_argument("--run", dest="run_name", type=run_name, default="default")
    regress.add_argument("--base", help="base Paddle version (default: every older version)")
    regress.add_argument("--head", help="head Paddle version (default: the newest with records)")
    regress.add_argument("--out", type=Path, help="markdown file (default: <results>/<run>/regression.md)")

    port = sub.add_parser("port", help="run other versions' exports with this environment's Paddle")
    port.add_argument("--results", type=folder_to_read, default=Path("results"))
    port.add_argument("--run", dest="run_name", type=run_name, default="default")
    port.add_argument("--session", default="cpu_fp32", help="whose exports to load (default: %(default)s)")
    port.add_argument("--model", action="append")
    port.add_argument("--force", action="store_true", help="redo pairs that already have a record")
    port.add_argument("--jobs", type=at_least_one, default=None, help="loads at once (default: the cores)")


def _add_diff(sub: Any) -> None:
    """``diff``: a per-tensor diff of any exported model."""
    diff = sub.add_parser("diff", help="per-tensor diff of an exported model between two predictor configs")
    diff.add_argument("--model-dir", type=Path, required=True, help="folder with <prefix>.json|.pdmodel + .pdiparams")
    diff.add_argument("--base", default="cpu_fp32", help="reference config (default: %(default)s)")
    diff.add_argument("--test", required=True, help="config to check, e.g. cpu_onednn_bf16")
    diff.add_argument("--inputs", type=Path, help=".npz of inputs by name (e.g. a cell's inputs.npz)")
    diff.add_argument("--shape", action="append", help="NAME=D1,D2,... for inputs with free dims (repeatable)")
    diff.add_argument("--seed", type=int, default=0)
    diff.add_argument("--atol", type=float, default=1e-4)
    diff.add_argument("--rtol", type=float, default=1e-4)
    diff.add_argument("--scaled-atol", type=float, default=0.0,
                      help="add this fraction of each tensor's max |base| to atol (bf16/fp16 runs)")
    diff.add_argument("--names", help="only these tensors (comma-separated)")
    diff.add_argument("--regex", help="only tensors whose name or op type matches")
    diff.add_argument("--segment", nargs=2, metavar=("FIRST", "LAST"), help="tensors between two names, inclusive")
    diff.add_argument("--engine-info", help="TensorRT inspector engine_info_*.json: its layer outputs")
    diff.add_argument("--formats", default="csv,xlsx,md,png")
    diff.add_argument("--out", type=Path, help="output folder (default: results/diff/<model>-<base>-vs-<test>)")


def _cmd_run(args: argparse.Namespace) -> int:
    from . import matrix as matrix_mod
    from .report.model import RunModel, load_hazard_probes
    from .report.tables import terminal_table, write_markdown
    from .running.runner import CellRuns, default_jobs, probe_hazards, run_session
    from .shared.vocab import Status

    matrix = matrix_mod.load(args.matrix)
    session = matrix.session(args.session)
    version = args.paddle or session.versions[0]
    results = args.results / args.run_name
    matrix.expand(session.name, version, modes=args.mode, models=args.model)  # bad input before any work
    launcher = _launcher(args, matrix, session, version, results)
    with owned(results, launcher):
        # Hazards belong to the Paddle build and the machine, not to cells or sessions: --force
        # redoes cells only; delete <results>/<run>/versions/<version>/ to probe again.
        probe_hazards(matrix, session.device, version, results, launcher)
        runs = CellRuns(launcher=launcher, jobs=args.jobs or default_jobs(matrix.run["reference_threads"]),
                        force=args.force, root_cause=args.root_cause, checkpoints=args.checkpoints)
        records = run_session(matrix, session.name, version, results=results, runs=runs, modes=args.mode,
                              models=args.model)
    probes = [p for p in load_hazard_probes(results) if p.paddle == version and p.device == session.device]
    model = RunModel(records, probes)
    from .report import drafts

    drafts.write_all(model)
    print()
    print(terminal_table(model))
    summary = write_markdown(RunFolder(results).summary(session.name, version), model, f"{session.name} · Paddle {version}")
    print(f"\nrecords: {results}/{session.name}/{version}/   summary: {summary}")
    # vacuous is not a pass: the run says so with its exit code too.
    return 0 if all(r.verdict.status in (Status.PASS, Status.SKIP) for r in records) else 1


def _launcher(args: argparse.Namespace, matrix, session, version: str, results: Path):
    from .launch import LocalLauncher

    if (args.runner or session.runner) == "venv":
        launcher = LocalLauncher(args.python)
    else:
        from .launch.containers import DockerLauncher

        docker = matrix.docker
        launcher = DockerLauncher(args.image or matrix.image(version, session.device), results,
                                  gpu=session.device == "gpu", memory=docker["memory"], pids=docker["pids"])
    reason = launcher.probe()  # every launcher says why it cannot run here, before any work
    if reason:
        raise UserError(reason)
    return launcher


def _tipc_driver(repo: Path, forced: Optional[str]) -> Optional[str]:
    """Which driver the plan mirrors: the repository's own test_tipc/test_train_inference_python.sh,
    recognised by the lines that matter; ``--driver`` forces one (a warning when the repository's
    says otherwise). No script in the repository: the config's layout decides, as before."""
    from .tipc import plan as tipc_plan

    script = repo / tipc_plan.DRIVER_SCRIPT
    if not script.is_file():
        if not forced:
            print(f"[tipc] driver: none in the repository ({tipc_plan.DRIVER_SCRIPT}); planned by the config's layout")
        return forced
    found, closest, missing = tipc_plan.recognise_driver(script)
    if forced:
        if found is not None and found.value != forced:
            print(f"[tipc] warning: --driver {forced} forced; {script} reads as the {found.value} driver")
        return forced
    if found is None:
        raise UserError(f"{script}: a TIPC driver this harness does not know; closest: {closest.value} (lacks "
                        f"{'; '.join(missing)[:200]}); pass --driver {closest.value} to plan it as that one.")
    print(f"[tipc] driver: {found.value} — {found.script} (recognised from {script})")
    return found.value


def _run_prepare(repo: Path, config_path: Path, mode: str) -> None:
    """The repository's own ``test_tipc/prepare.sh CONFIG MODE``, run with bash in the repository
    as TIPC's docs say (it is the user's script, not the harness's: it downloads data and weights,
    may install packages, and writes into the repository). A failure ends the run."""
    script = repo / "test_tipc" / "prepare.sh"
    if not script.is_file():
        raise UserError(f"--prepare: {script} does not exist; drop --prepare or give the repository that has it.")
    rel = config_path.relative_to(repo) if config_path.is_relative_to(repo) else config_path
    print(f"[tipc] running the repository's own script: bash test_tipc/prepare.sh {rel} {mode} (in {repo})")
    code = subprocess.run(["bash", "test_tipc/prepare.sh", str(rel), mode], cwd=repo).returncode
    if code != 0:
        raise UserError(f"--prepare: the repository's test_tipc/prepare.sh exited {code} (its output above); fix it "
                        f"or prepare by hand and run without --prepare.")


def _cmd_tipc(args: argparse.Namespace) -> int:
    from . import matrix as matrix_mod
    from .running.hostenv import gpu_absence_reason
    from .launch import LocalLauncher
    from .running.runner import CellRuns, default_jobs
    from .tipc import config as tipc_config
    from .tipc import plan as tipc_plan
    from .tipc import run as tipc_run

    repo = args.repo.resolve()
    if not repo.is_dir():
        raise UserError(f"--repo {args.repo}: not a folder; give the repository the TIPC config belongs to.")
    config_path = args.config if args.config.is_absolute() else repo / args.config
    if config_path.is_dir():
        raise UserError(f"--config {args.config}: {config_path} is a folder; give the TIPC config file.")
    layout = tipc_config.Layout(args.layout) if args.layout else None
    config = tipc_config.read(config_path, layout)
    rewrites: List[str] = []
    if args.device == "cpu":
        config, rewrites = tipc_config.for_cpu(config)
    python = args.python or sys.executable
    launcher = LocalLauncher(python)  # the export cells' launcher (one fork server for all of them)
    reason = launcher.probe()
    if reason:
        raise UserError(reason)
    shapes = {}
    for item in args.shape:
        name, _, dims = item.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise UserError(f"--shape {item}: give NAME=D0,D1,... with integer dims.") from None
    matrix = matrix_mod.load(args.matrix)
    # Every CPU session of the matrix by default: the export gets the ladder a built-in model gets
    # (GPU sessions, which skip here, only on request).
    sessions = args.session or [name for name, session in matrix.sessions.items() if session.device == "cpu"]
    for name in sessions:
        matrix.session(name)  # an unknown session: one line before any work
    results = (args.results / args.run_name).resolve()
    driver = _tipc_driver(repo, args.driver)
    plan = tipc_plan.plan(config, args.mode, repo=repo, python=python, log_root=RunFolder(results).tipc,
                          driver=driver, gpu_missing=gpu_absence_reason())
    if args.prepare and not args.dry_run:
        _run_prepare(repo, config_path, args.mode)
    if rewrites:
        print(f"--device cpu: {len(rewrites)} config line(s) rewritten in memory (the file is unchanged):")
        print("\n".join(f"  {r}" for r in rewrites))
    print(tipc_run.describe(plan))
    if args.dry_run:
        return 0
    print()
    with owned(results, launcher):
        runs = CellRuns(launcher=launcher, jobs=args.jobs or default_jobs(matrix.run["reference_threads"]),
                        force=True, root_cause=args.root_cause)
        summary = tipc_run.run_tipc(plan, matrix=matrix, sessions=sessions, results=results, python=python,
                                    shapes=shapes, runs=runs)
    print()
    print(tipc_run.table(summary))
    print(f"\nresults_python.log: {plan.log_path / 'results_python.log'}   summary: {plan.log_path / 'tipc.json'}")
    return 0 if tipc_run.ok(summary) else 1


def _cmd_images(args: argparse.Namespace) -> int:
    from .artefacts import images
    from . import matrix as matrix_mod

    matrix = matrix_mod.load(args.matrix)
    versions = args.paddle or matrix.versions
    for version in versions:
        matrix.version(version)
    if args.wheels is not None and not args.wheels.is_dir():
        raise UserError(f"--wheels {args.wheels}: not a folder; give the folder that holds the .whl files.")
    built = images.build_matrix_images(matrix, versions, args.device or ["cpu"], wheels=args.wheels,
                                       base=args.make_base)
    for item in built:
        print(f"{item['tag']}: {item.get('id', '')[:19]} ({item['seconds']} s)")
    return 0


def _cmd_shards(args: argparse.Namespace) -> int:
    import json

    from .artefacts import shards

    where = str(args.nox_json) if args.nox_json else "stdin"
    try:
        text = args.nox_json.read_text(encoding="utf-8") if args.nox_json else sys.stdin.read()
    except OSError as exc:
        raise UserError(f"--nox-json {args.nox_json}: cannot read it ({exc.strerror}).") from None
    sessions = shards.read_nox_json(text, where)
    print(json.dumps(shards.ci_matrix(sessions, args.format, args.cpu_runner, args.gpu_runner)))
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from .artefacts import shards

    done = shards.merge(args.into, args.shards)
    print(f"merged {done['cells']} cells from {done['shards']} shards into {args.into}")
    for item in done["unreadable"]:
        print(f"unreadable record (copied, not merged into any count): {item}")
    return 1 if done["unreadable"] else 0


def _cmd_probe(args: argparse.Namespace) -> int:
    from .launch.containers import DockerLauncher

    reason = DockerLauncher(args.image, Path("."), gpu=args.gpu).probe()
    if reason:
        print(reason)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .report.model import RunModel
    from .report.tables import terminal_table, write_markdown

    results = args.results / args.run_name
    if not results.is_dir():
        raise UserError(f"--results/--run: {results} does not exist; run a session first or point at a results dir.")
    model = RunModel.load(results)
    if not model.records and not model.unreadable:
        raise UserError(f"--results/--run: no result records under {results}; run a session first.")
    from .report import drafts, junit
    from .report.tables import short_summary

    drafts.write_all(model)  # before the renderers: they link each draft
    print(terminal_table(model))
    folder = RunFolder(results)
    out = write_markdown(args.out or folder.report("md"), model, f"Qualification report · run {args.run_name}")
    xml = junit.write(args.junit or folder.report("xml"), model)
    from .report import html

    page = html.write(args.html or folder.report("html"), model, f"Qualification report · run {args.run_name}")
    summary_text = short_summary(model, f"Paddle qualification · run {args.run_name}")
    summary = args.summary or folder.summary()
    summary.write_text(summary_text, encoding="utf-8")
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(summary_text + "\n")
    print(f"\nreport: {out}   html: {page}   junit: {xml}   summary: {summary}")
    if args.zoo is not None:
        from .report import zoo
        print(f"zoo: {zoo.write(args.zoo, model, args.matrix, results)}")
    if model.unreadable:
        print(f"{len(model.unreadable)} unreadable record(s) listed above: the report covers the other "
              f"{len(model.records)} cells only", file=sys.stderr)
        return 1
    return 0


def _cmd_qualify(args: argparse.Namespace) -> int:
    from . import matrix as matrix_mod
    from .report import qualify
    return qualify.run(args.results / args.run_name, matrix_mod.load(args.matrix), args.known, args.strict,
                       args.partial, args.scope, args.model)


def _cmd_regress(args: argparse.Namespace) -> int:
    from .report import regress

    return regress.run(args.results / args.run_name, args.base, args.head, args.out)


def _cmd_port(args: argparse.Namespace) -> int:
    from .artefacts import portability
    from .running.pathargs import existing_run

    existing_run(args.results, args.run_name)  # before the lock: a typo writes nothing
    with owned(args.results / args.run_name):
        results = portability.run(args.results / args.run_name, args.session, args.model, force=args.force,
                                  jobs=args.jobs or os.cpu_count() or 1)
    return 1 if any(r.status.blocks for r in results) else 0


def _cmd_diff(args: argparse.Namespace) -> int:
    from .artefacts import diff

    return diff.run(args)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (a CI job cancelled, `kill`) ends the run as Ctrl-C does


def main(argv: Optional[List[str]] = None) -> int:
    import signal

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
        # Even when started with SIGINT ignored (a background job of a non-interactive shell
        # inherits SIG_IGN, and Python then keeps it): Ctrl-C and `kill -INT` end the run cleanly.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    args = _parser().parse_args(argv)
    from .report import workarounds
    from .running import families, pool, qualification, releases

    handler = {"run": _cmd_run, "report": _cmd_report, "regress": _cmd_regress, "port": _cmd_port, "diff": _cmd_diff,
               "images": _cmd_images, "probe": _cmd_probe, "qualify": _cmd_qualify, "shards": _cmd_shards,
               "tipc": _cmd_tipc, "merge": _cmd_merge,  # and each command module's own, by its name:
               **{m.__name__.rsplit(".", 1)[-1]: m.command for m in (pool, releases, workarounds, qualification, families)}
               }[args.command]
    try:
        return handler(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        from .matrix.sessions import missing_host_package

        print(f"error: {missing_host_package(exc, args.command)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: rerun to resume (finished cells keep their records; the running ones were stopped "
              "and are redone)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
