"""One command qualifies a release over the zoo (host side):

    python -m harness qualification [--tag zoo-3.3.1 | --session cpu_fp32-zoo ...] [--run NAME] [--out DIR]

runs, in order, each as its own ``python -m harness`` command (so each validates its input and says
its own words): ``pool`` (the selected sessions in one job pool: by default every CPU session at the
versions ``[zoo]`` names, i.e. ``--tag zoo``), ``releases`` (the release each cause appeared in),
``workarounds`` (the smallest verified change per cause, and the known-issues file), ``report``
(the run's reports), ``qualify --known`` (the verdict), then publishes
``qualification-<version>.md`` (``report/publication.py``) beside ``zoo.md`` and
``known-issues-<version>.toml`` in ``--out`` (default: the run's folder) — over the cells the command
asked for (its sessions at their versions), not every record of the run folder. A pool that resumes finds
its recorded cells and redoes only the rest; the steps after it always run again, over every record.
Each step's time is said and published. A step that fails for the harness's or the user's reasons
(exit 2, an interrupt) stops the chain with its code; a pool or verdict of failing cells does not.

When the zoo outgrows one machine, ``--shard K/N`` runs the pool alone over every N-th model of the
selection, from the K-th (by model: a cause's cells in every session stay on one machine); the
shards' run folders are joined with ``python -m harness merge --into DIR SHARD...`` and the command
run again on DIR (``--results`` its parent, ``--run`` its name) finds every cell recorded and runs
the rest of the chain once, over all of them."""

from __future__ import annotations

import collections
import dataclasses
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, List, Tuple

from ..shared.errors import UserError

HARNESS_ROOT = Path(__file__).resolve().parent.parent.parent
# The exit codes after which the chain goes on, per step: the pool's 1 is a cell that did not pass,
# qualify's a verdict of "not qualified", report's a record it could not read (said in the reports);
# releases and workarounds end 0 whatever they found (a 1 there is Python's own: a traceback).
ENDED_WELL = {"pool": (0, 1), "releases": (0,), "workarounds": (0,), "report": (0, 1), "qualify": (0, 1)}
STEPS = ("pool", "releases", "workarounds", "report")  # in their order; qualify and the publication always end it


def add_parser(sub: Any, default_matrix: Path) -> None:
    from .pathargs import Once, at_least_one, folder_to_write, python_interpreter, run_name, shard_of

    parser = sub.add_parser("qualification", help="qualify a release over the zoo in one command: pool, releases, "
                                                  "workarounds, report, qualify, published")
    parser.add_argument("--matrix", type=Path, default=default_matrix)
    parser.add_argument("--tag", action="append", default=[], help="sessions with this nox tag (default: zoo)")
    parser.add_argument("--session", action="append", default=[], help="this nox session too (repeatable)")
    parser.add_argument("--model", action="append", default=[], help="only this model (repeatable; default: the zoo)")
    parser.add_argument("--mode", action="append", default=[],
                        help="this train mode (repeatable; default: the matrix's run.modes); a zoo model whose suite "
                             "does not train it so is a declared skip (models.X.modes)")
    parser.add_argument("--results", type=folder_to_write, default=Path("results"))
    parser.add_argument("--run", dest="run_name", type=run_name, default="qualification")
    parser.add_argument("--out", type=folder_to_write, default=None,
                        help="where the publication is written (default: the run's folder), e.g. docs")
    parser.add_argument("--jobs", type=at_least_one, default=None, help="the pool's jobs at once")
    parser.add_argument("--python", type=python_interpreter, action=Once,
                        help="run every cell with this Paddle environment's Python (one Paddle version only)")
    parser.add_argument("--envs", type=Path, default=None, help="where environments are kept (default: .nox/)")
    parser.add_argument("--releases", default=None, help="comma-separated releases `releases` bisects over "
                                                         "(default: every release the index serves)")
    parser.add_argument("--from", dest="start", choices=STEPS, default=STEPS[0],
                        help="begin the chain at this step, over the run as it stands (e.g. report: publish again "
                             "after the harness's reports changed, without asking every release again)")
    parser.add_argument("--shard", type=shard_of, default=None, metavar="K/N",
                        help="run only the pool, over every N-th model from the K-th; merge the shards, then "
                             "run this command on the merged run")


def _models(args: Any) -> List[str]:
    """The models the pool is asked for: ``--model`` (the zoo by default), a shard's every N-th."""
    if args.shard is None:
        return args.model or ["zoo"]
    from ..matrix import load

    k, n = args.shard
    return load(args.matrix).select_models(args.model or ["zoo"])[k - 1::n]


def _steps(args: Any, out: Path) -> List[Tuple[str, List[str]]]:
    common = ["--results", str(args.results), "--run", args.run_name]
    envs = ["--envs", str(args.envs)] if args.envs else []
    models = _models(args)
    if not models:
        raise UserError(f"--shard {args.shard[0]}/{args.shard[1]}: no model of the selection falls in this shard; "
                        f"give fewer shards.")
    pool = ["pool", "--matrix", str(args.matrix), *common, *envs,
            *[a for t in (args.tag or ([] if args.session else ["zoo"])) for a in ("--tag", t)],
            *[a for s in args.session for a in ("--session", s)], *[a for m in models for a in ("--model", m)],
            *[a for m in args.mode for a in ("--mode", m)],
            *(["--jobs", str(args.jobs)] if args.jobs else []), *(["--python", args.python] if args.python else [])]
    if args.shard is not None:
        return [("pool", pool)]
    releases = ["releases", *common, *envs, *(["--releases", args.releases] if args.releases else [])]
    return [("pool", pool), ("releases", releases), ("workarounds", ["workarounds", *common, *envs]),
            ("report", ["report", *common, "--matrix", str(args.matrix)])]


def _harness(argv: List[str], capture: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=Path.cwd(), text=True,
                          capture_output=capture, env=None)


def _made_by() -> str:
    """The harness that made it: its commit where it is a git checkout (with "modified" when its tree
    differs), else its version."""
    from .. import __version__

    try:
        commit = subprocess.run(["git", "-C", str(HARNESS_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(HARNESS_ROOT), "status", "--porcelain", "--", "harness", "matrix"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", ""
    return f"harness {__version__}" + (f" at commit {commit}" + (" (modified)" if dirty else "") if commit else "")


def command(args: Any) -> int:
    from ..report import zoo
    from ..report.model import RunModel
    from ..report.publication import Made, document
    from ..report.workarounds import KNOWN_FILE

    run = args.results / args.run_name
    out = args.out or run
    out.mkdir(parents=True, exist_ok=True)
    timings: List[str] = []
    began_all = time.monotonic()
    for name, argv in _steps(args, out):
        if STEPS.index(name) < STEPS.index(args.start):
            timings.append(f"{name} not run (--from {args.start})" + (_recorded_floor(args, run) if name == "pool" else ""))
            continue
        started, began = time.monotonic(), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(f"[qualification] {name}: python -m harness {' '.join(argv)}", flush=True)
        code = _harness(argv).returncode
        timings.append(f"{name} {time.monotonic() - started:.0f} s" + (_pool_floor(run, began, args.jobs) if name == "pool" else ""))
        if code not in ENDED_WELL[name]:
            print(f"[qualification] stopped: `{name}` exited {code}", file=sys.stderr)
            return code
    if args.shard is not None:
        print(f"[qualification] shard {args.shard[0]}/{args.shard[1]}: its cells are in {run}; join the shards with "
              f"`python -m harness merge --into DIR SHARD...`, then run qualification on DIR", flush=True)
        return 0
    # What the command asked for, not every record of the run folder: another command's cells there (a
    # release asked apart, a run half made) are neither published nor qualified here.
    every = RunModel.load(run)
    asked = set(_asked(args))
    model = dataclasses.replace(every, records=[r for r in every.records if f"{r.session}@{r.version}" in asked],
                                _causes=None)
    if not model.records:
        raise UserError(f"{run}: the pool recorded no cell; nothing to qualify.")
    zoo.write(out / "zoo.md", model, args.matrix, run)
    unrecorded = _unrecorded(args, run)
    # The newest release of the run is the one qualified; each older one (the zoo's [zoo] versions: the
    # newest of the line before) is qualified over its own cells and published beside it.
    versions = sorted({r.version for r in model.records}, key=_order, reverse=True)
    version = versions[0]
    known = out / f"known-issues-{version}.toml"
    shutil.copyfile(run / KNOWN_FILE, known)
    verdicts = {}
    for release in versions:
        said = _verdict(args, release, known)
        if isinstance(said, int):
            return said
        verdicts[release] = said
    first, words, code = verdicts[version]
    timings.append(f"in all {time.monotonic() - began_all:.0f} s")
    text = document(model, run.resolve(), Made(version, _said(args), words, "zoo.md", known.name,
                                               f"{_made_by()}; steps: {', '.join(timings)}", _not_run(args, model),
                                               [(v, verdicts[v][1]) for v in versions[1:]], unrecorded))
    target = out / f"qualification-{version}.md"
    target.write_text(text, encoding="utf-8")
    print(f"[qualification] {target}: {first}; {(words.splitlines() + [''])[1]}")
    return code


def _verdict(args: Any, version: str, known: Path) -> Any:
    """``qualify``'s verdict on one release's cells, bare and with the run's known issues: (its first
    line bare, both said, the exit code with them), or the exit code of a ``qualify`` that failed."""
    asked = ["qualify", "--matrix", str(args.matrix), "--results", str(args.results), "--run", args.run_name,
             *_scope(args, version)]
    # The release as it stands, then with this run's known issues accepted (what the next run reads).
    bare, verdict = _harness(asked, capture=True), _harness([*asked, "--known", str(known)], capture=True)
    for answer in (bare, verdict):
        if answer.returncode not in ENDED_WELL["qualify"]:
            print(answer.stderr, file=sys.stderr, end="")
            return answer.returncode
    first = (bare.stdout.strip().splitlines() or ["(qualify printed nothing)"])[0]
    return first, f"without the known issues: {first}\nwith them ({known.name}): {verdict.stdout}", verdict.returncode


def _not_run(args: Any, model: Any) -> List[str]:
    """The matrix's sessions with no cell in the run, each with why: what this machine lacks (a GPU,
    bf16 instructions — read from the run's own machine facts), or that the command did not ask."""
    from ..matrix import load

    matrix = load(args.matrix)
    ran = {r.session for r in model.records}
    flags = {f for m in model.machines() for f in ((m.facts or {}).get("flags") or [])}
    gpu = Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") is not None
    said: List[str] = []
    for name in matrix.data["sessions"]:
        if name in ran:
            continue
        session = matrix.session(name)
        if session.device == "gpu" and not gpu:
            why = "needs a GPU: this machine has none (no /dev/nvidia0, no nvidia-smi)"
        elif session.precision.value == "bf16" and not flags & {"avx512_bf16", "amx_bf16"}:
            why = f"needs a CPU with bf16 instructions (avx512_bf16 or amx_bf16); this one has {' '.join(sorted(flags))}"
        elif session.precision.value == "int8" and not set(args.mode) & {"qat", "pact"}:
            why = "runs on quantized programs only: this command asked no qat or pact mode (--mode)"
        else:
            why = "this machine can run it; the command did not ask for it (--session)"
        said.append(f"{name}: {why}")
    return said + _modes_left_out(args, matrix, ran)


def _modes_left_out(args: Any, matrix: Any, ran: Any) -> List[str]:
    """The [zoo] modes the run's sessions leave out (``modes.X.zoo_sessions``): one line per mode, with
    where its programs deploy and the sessions that left it out."""
    from ..matrix.sessions import zoo_modes
    from .pool import selection

    chosen = [s for s in selection(matrix, args.tag or ([] if args.session else ["zoo"]), args.session) if s.session in ran]
    said = []
    for mode in ([] if args.mode else matrix.zoo.get("modes") or []):
        out = [s.name for s in chosen if mode not in (zoo_modes(matrix, s, None) or [mode])]
        if out:
            said.append(f"{mode}: not run in {', '.join(out)}; its programs deploy in "
                        f"{', '.join(matrix.zoo_sessions_of(mode) or [])} (modes.{mode}.zoo_sessions)")
    return said


def _unrecorded(args: Any, run: Path) -> str:
    """The cells the command asked that have no record still describing them (the pool was cut short,
    or not run: ``--from``), counted per session, release and mode; "" when every one has."""
    from ..matrix import load
    from .pool import PoolOptions, plan, selection

    matrix = load(args.matrix)
    chosen = selection(matrix, args.tag or ([] if args.session else ["zoo"]), args.session)
    asked = plan(matrix, chosen, run, PoolOptions(modes=args.mode or None, models=_models(args)), lambda _line: None)
    missing = collections.Counter(f"{c.session.name} · {c.paddle} · {c.mode}" for c in asked.cells if c.id not in asked.recorded)
    if not missing:
        return ""
    return (f"{sum(missing.values())} of the {len(asked.cells)} cells asked have no record (the pool "
            f"{'did not run' if args.start != STEPS[0] else 'was cut short'}); they are \"not run\" in the zoo's table, "
            f"and every tally and verdict here covers the recorded cells only: "
            + ", ".join(f"{n} in {column}" for column, n in sorted(missing.items())) + ".")


def _pool_floor(run: Path, began: str, jobs: Any) -> str:
    """The pool's work floor: the seconds of the cells it ran (their records finished after it began)
    over its slots, what a perfect scheduler with nothing waiting would take."""
    from ..shared.records import load_records
    from .runner import default_jobs

    slots = jobs or default_jobs(1)
    ran = [r.seconds for r in load_records(run) if r.finished_at >= began] if run.is_dir() else []
    if not ran:
        return ""
    return f" for {len(ran)} cells (their work floor {sum(ran) / slots:.0f} s: {sum(ran):.0f} cell-seconds over {slots} slots)"


def _recorded_floor(args: Any, run: Path) -> str:
    """For a pool not run by this command: the work floor of the cells it asks that are recorded (by
    earlier commands over the run), so the publication still says what the whole costs on these slots."""
    from ..shared.records import load_records
    from .runner import default_jobs

    asked = set(_asked(args))
    seconds = [r.seconds for r in load_records(run) if f"{r.session}@{r.version}" in asked] if run.is_dir() else []
    if not seconds:
        return ""
    slots = args.jobs or default_jobs(1)
    return (f"; its {len(seconds)} recorded cells took {sum(seconds):.0f} cell-seconds, a work floor of "
            f"{sum(seconds) / slots:.0f} s over {slots} slots")


def _asked(args: Any) -> List[str]:
    """The (session, version) pairs the command asked for, as ``session@version``."""
    from ..matrix import load
    from ..matrix.sessions import SessionKind
    from .pool import selection

    chosen = selection(load(args.matrix), args.tag or ([] if args.session else ["zoo"]), args.session)
    return list(dict.fromkeys(f"{s.session}@{s.version}" for s in chosen if s.kind in (SessionKind.CELLS, SessionKind.ZOO)))


def _scope(args: Any, version: str) -> List[str]:
    """What the pool was asked for, as qualify's required cells: each selected session at the version qualified,
    the models asked (the zoo by default). Not the matrix's [qualify] table: that is the built-in matrix's."""
    # The release qualified is judged by its own cells: an older version's (a family that does not
    # install there is a skip) tell what changed, in the publication, and are not required of it.
    pairs = [pair for pair in _asked(args) if pair.endswith(f"@{version}")]
    return [a for p in pairs for a in ("--scope", p)] + [a for m in (args.model or ["zoo"]) for a in ("--model", m)]


def _shown(folder: Path) -> str:
    """A folder as the published command says it: relative to where it ran, never a path of this machine."""
    resolved = Path(folder).resolve()
    return resolved.relative_to(Path.cwd().resolve()).as_posix() if resolved.is_relative_to(Path.cwd().resolve()) \
        else "DIR"


def _order(version: str) -> Any:
    from ..shared.spec import version_order

    return version_order(version)


def _said(args: Any) -> str:
    """The command as a person would type it again."""
    parts = ["python -m harness qualification"]
    parts += [f"--tag {t}" for t in args.tag] + [f"--session {s}" for s in args.session]
    parts += [f"--model {m}" for m in args.model] + [f"--mode {m}" for m in args.mode]
    parts += [f"--run {args.run_name}"] + ([f"--out {_shown(args.out)}"] if args.out else [])
    parts += [f"--releases {args.releases}"] if args.releases else []
    parts += [f"--from {args.start}"] if args.start != STEPS[0] else []
    return " ".join(parts)


__all__ = ["add_parser", "command"]
