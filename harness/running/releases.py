"""Host side: the exact release a cause appeared in, and whether a newer one fixed it.

``python -m harness releases --run RUN`` takes every cause of the run whose source reproducer was
verified (``cell/source_repro.py``: a script that rebuilds the failing piece and exports it with
whatever Paddle runs it) and runs that script at the Paddle releases the package index serves for
the cells' Python — listed from the index (``pip index versions``), final releases, pre-releases
with ``--pre`` — each in an environment made once and kept (``envs.ensure``: the pool's venvs,
keyed by their package list; a second run makes none).

Bisection over the release order, as a bisect tool does it: the ends first (the cell's own release
must reproduce, the oldest must not — else the cause is in every release that runs it), then halves;
a release that cannot run the script (an API or a package missing there, no wheel) is skipped and its
neighbour tried. The boundary is confirmed by running each side ``--confirm`` times (3). A
reproduction is the cause seen — its own words or its numbers — so a release that reproduced once is
bad, whatever its other runs said (a converter reading memory it never wrote shows the defect only when
that memory held other bytes). A release is good when it never reproduced in as many runs as make a
miss unlikely at the rate the first bad reproduced at (under 5%: 8 runs at a rate of 1 in 3); one that
reproduces on those runs moves the boundary older. A rate too low to tell that in ``MOST_RUNS`` runs is a
*flaky boundary*, said. Newer releases than the cell's: the newest first; if it no longer reproduces,
the first that does not is ``fixed_in``.

The answer (``shared/releases.ReleaseSpan``) is written into every record of the cause as
``analysis.releases`` as soon as the cause is placed, under the run's lock; the regress report, the HTML
report and the drafts show it. A cause is placed once: a later ``releases`` over the same releases takes
the span its record holds (a cell run again writes a record without one, so its cause is asked again),
and an interrupted run keeps every cause it placed (at ~70 causes of the zoo, an hour of bisection lost
with a full disk, measured). ``--again`` asks every cause again."""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..report.model import RunModel
from ..shared.causes import shareable_words, shown_apart
from ..shared.errors import UserError
from ..shared.record_model import AnalysisEntry, Analyses, CellRecord
from ..shared.records import scan_records, write_record
from ..shared.releases import (ONEDNN_CHECK, ReleaseRun, ReleaseSpan, RunOutcome, SpanOutcome, onednn_refusals,
                               outcome as run_outcome)
from ..shared.spec import version_order
from . import boundary, standalone
from .ported import Porting
from .release_envs import PACKAGE, Environments
from .runlock import owned

CONFIRMATIONS = boundary.CONFIRMATIONS
TIMEOUT = 600.0

Say = Callable[[str], object]


def index_releases(python: str, pre: bool = False) -> List[str]:
    """The releases of Paddle's CPU package the index serves for ``python`` (wheels only), oldest
    first, as pip lists them (the configured index, not a list kept here)."""
    command = [sys.executable, "-m", "pip", "index", "versions", PACKAGE, "--python-version", python,
               "--only-binary=:all:", "--disable-pip-version-check", *(["--pre"] if pre else [])]
    proc = subprocess.run(command, capture_output=True, text=True)
    listed = next((ln.split(":", 1)[1] for ln in proc.stdout.splitlines() if ln.startswith("Available versions:")), "")
    versions = [v.strip() for v in listed.split(",") if v.strip()]
    if not versions:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"the package index lists no {PACKAGE} release for Python {python} ({tail[0][:160]}); "
                        f"check the index (pip config) or give --releases.")
    return sorted(versions, key=version_order)


@dataclasses.dataclass
class ReleaseCause:
    """One cause of the run and the records it was met in; ``home`` is the record whose source
    reproducer stands for it (the newest Paddle among them)."""

    key: str
    numeric: bool
    records: List[CellRecord]
    standalone: Optional[Path] = None  # its standalone script, verified here (``standalone.py``): asked first
    whole: Optional[Path] = None  # that script before minimization: asked where the minimized one says nothing

    @property
    def home(self) -> CellRecord:
        """The newest Paddle's record whose reproducer is its own (not taken from another session's cell
        of a shared step): its session is the one the script's environment is made for."""
        newest = max(version_order(r.version) for r in self.records)
        at = [r for r in self.records if version_order(r.version) == newest]
        own = [r for r in at if r.analysis.reproducer is None or not r.analysis.reproducer.entry.get("reused_from")]
        return (own or at)[0]

    @property
    def script(self) -> Path:
        return self.standalone or self.home.located(self.home.analysis.reproducer.source.script)

    @property
    def cause_words(self) -> str:
        return self.home.analysis.reproducer.source.cause_words

    @property
    def needs_suite(self) -> bool:
        """Whether its script builds the model's own classes (a piece or the model): it runs where the
        model's packages are installed; an op-level or standalone script needs Paddle alone."""
        return self.standalone is None and not self.home.analysis.reproducer.source.needs_no_suite

    @property
    def larger_scripts(self) -> List[Tuple[Path, bool]]:
        """The piece- or model-level scripts written beside an op-level one (not run yet, or verified),
        each with whether it needs the suite: its standalone form (the suite's source written in) first,
        then the suite's."""
        larger = self.home.analysis.reproducer.source.larger
        if larger is None or not larger.script or larger.verified is False:
            return []
        alone = larger.standalone
        found = [(self.home.located(alone.script), False)] if alone is not None and alone.script else []
        return found + [(self.home.located(larger.script), True)]

    @property
    def words(self) -> str:
        """The cause as a person reads it: the failing stage's own message (Paddle's words), or
        what failed on numbers; ``key`` stays internal."""
        repro = self.home.analysis.reproducer
        stage_name = repro.stage
        stage = self.home.stage(stage_name) if stage_name else None  # the setup too: an export's cause
        if repro.converter_cause:
            return " ".join(str(repro.conversion.get("words") or repro.converter_cause).split())
        if self.numeric or stage is None or not stage.message:
            return f"{self.home.id} {stage_name}: outputs beyond the tolerance"
        return " ".join(stage.message.split())


def causes_of(records: Sequence[CellRecord]) -> Tuple[List[ReleaseCause], List[str]]:
    """The run's causes with a verified source reproducer, and why each other reproducer has none."""
    found: Dict[Tuple[str, Optional[int]], ReleaseCause] = {}
    without: List[str] = []
    reported = _reported(records)
    for record in records:
        repro = record.analysis.reproducer
        if repro is None:
            continue
        source = repro.source
        if not source.verified:
            why = source.why or (
                f"the harness's source reproducer did not build at the cell's own release ({source.last_line[:120]}): "
                f"the harness's failure, not a finding" if source.outcome is RunOutcome.NOT_BUILT else
                f"its source reproducer did not reproduce at the cell's own release ({source.last_line[:120]})")
            without.append(f"{record.id}: {why}")
            continue
        # A converter's proven bug is one cause in every runtime's session that read its file.
        key = repro.converter_cause or (f"{record.id}:{repro.stage}" if source.numeric else source.cause_words)
        if not repro.converter_cause and not source.numeric and _bare(source.cause_words):
            # Words of no cause of their own ("RuntimeError: std::exception"): two failures that say only
            # that are not one cause (PP-ResNet50-vd's oneDNN pooling refusal and LSTNet's reorder refusal
            # were placed by one script): kept apart by what their scripts build.
            key = f"{key} ({source.what})"
        # One cause as the report counts it (``RunModel.causes``): words every cell of a kind says alike
        # ("paddle2onnx's output depends on memory it never wrote") are several causes there, each placed
        # by a script of its own cells, never by another cause's.
        counted = reported.get((record.id, repro.stage or "setup"))
        found.setdefault((key, counted), ReleaseCause(key, source.numeric, [])).records.append(record)
    return list(found.values()), without


def _reported(records: Sequence[CellRecord]) -> Dict[Tuple[str, str], int]:
    """(cell, stage) -> the number of the cause the run's report counts that stage's failure in."""
    causes = RunModel(list(records)).causes()
    return {(place, stage): number for number, cause in enumerate(causes)
            for place, stages in cause.stages.items() for stage in stages}


def _bare(words: str) -> bool:
    """Whether a cause's words say only that something raised (a C++ exception with no message)."""
    said = words.split(": ", 1)[-1].strip()
    return said in ("std::exception", "") or said.endswith("with no message")


class Bisection:
    """Runs one cause's script at releases, remembering every answer."""

    def __init__(self, cause: ReleaseCause, environment: "Environments", say: Say,
                 timeout: float = TIMEOUT):
        self.cause, self.environment, self.say, self.timeout = cause, environment, say, timeout
        self.answers: Dict[str, List[Tuple[RunOutcome, str]]] = {}
        self.larger_ok: Optional[bool] = None  # a larger script reproduced at the cell's own release (asked when needed)
        self.larger_chosen: Optional[Tuple[Path, bool]] = None  # that script, and whether it needs the suite
        self.refusal: Optional[str] = None  # what oneDNN refused, and why, where it reproduced at its own release
        # A script an older release cannot build for a name it lacks: asked there without it (``ported.py``).
        self.porting = Porting(cause.home.version, lambda version, script: self.ask(version, script, False, False), say)

    def run(self, version: str) -> RunOutcome:
        answer = self.ask(version, self.cause.script, self.cause.needs_suite)
        whole = self.cause.whole
        if (answer[0] is not RunOutcome.REPRODUCED and whole is not None and whole != self.cause.script
                and version != self.cause.home.version):
            # The minimizer kept what the cause's own release needed: another release may read what
            # it cut (an import only an older branch reads — measured). The whole script answers there.
            said = self.ask(version, whole, False)
            minimized = answer[0].value.replace("_", " ")
            answer = (said[0], f"the minimized script {minimized} ({answer[1][:90]}); the whole: {said[1][:110]}")
        larger = self._larger() if not answer[0].says else None
        if larger is not None:
            # The smallest cannot be asked here (a form this release does not build or load): the
            # piece or model the cell also verified is — the suite's source written in, else where
            # the model's packages install — and says so.
            said = self.ask(version, *larger)
            smallest = answer[0].value.replace("_", " ")
            answer = (said[0], f"the smallest reproducer {smallest} ({answer[1][:90]}); the larger: {said[1][:110]}")
        self.answers.setdefault(version, []).append(answer)
        self.say(f"[releases] {version}: {answer[0].value} ({answer[1][:120]})")
        return answer[0]

    def ask(self, version: str, script: Path, suite: bool, port: bool = True) -> Tuple[RunOutcome, str]:
        """One run of ``script`` at ``version``, or why it could not run there: the model's packages
        not made for that release (its family starts at a later Paddle), or not installing. A script of
        Paddle alone that an older release cannot build for a name it lacks is asked there without it,
        where it reproduces without it at the cause's own release (``port``, ``ported.py``)."""
        missing = self.environment.suite_missing(version) if suite else ""
        if missing:
            return RunOutcome.NO_ENVIRONMENT, missing
        python = self.environment(version, suite)
        if python is None:
            return RunOutcome.NO_ENVIRONMENT, self._not_installed(version, suite)
        said = self._ran(python, script, version)
        if port and not suite and said[0] is RunOutcome.NOT_BUILT and version != self.cause.home.version:
            said = self.porting.answer(version, script, said)
        return said

    def _larger(self) -> Optional[Tuple[Path, bool]]:
        """The first larger script that reproduces at the cell's own release, with whether it needs the
        suite (each run once, the first time it is needed: the cell wrote them without running them)."""
        if self.larger_ok is None:
            own = self.cause.home.version
            self.larger_ok = False
            for script, suite in self.cause.larger_scripts:
                said = self.ask(own, script, suite)
                self.say(f"[releases] the larger reproducer{'' if suite else ' (its suite written in)'} at {own}: "
                         f"{said[0].value} ({said[1][:120]})")
                if said[0] is RunOutcome.REPRODUCED:
                    self.larger_ok, self.larger_chosen = True, (script, suite)
                    break
        return self.larger_chosen if self.larger_ok else None

    def _not_installed(self, version: str, suite: bool) -> str:
        model = self.environment.model_words() if suite else ""
        return f"{PACKAGE}=={version}{' with ' + model if model else ''} could not be installed"

    def _ran(self, python: Path, script: Path, version: str = "") -> Tuple[RunOutcome, str]:
        try:
            proc = subprocess.run([str(python), script.name], cwd=script.parent, capture_output=True, text=True,
                                  timeout=self.timeout, stdin=subprocess.DEVNULL, env={**os.environ, **ONEDNN_CHECK})
        except subprocess.TimeoutExpired:
            return RunOutcome.OTHER, f"ran over {self.timeout:g} s"
        output = proc.stdout + proc.stderr
        said, line = run_outcome(proc.returncode, output, self.cause.cause_words, self.cause.numeric)
        refusals = onednn_refusals(output) if not self.cause.numeric else []
        if version == self.cause.home.version and said is RunOutcome.REPRODUCED and refusals:
            self.refusal = self.refusal or refusals[0]  # the cause's own words, as oneDNN says them
            line = f"{line}; {self.refusal}"
        elif said is RunOutcome.OTHER and self.refusal in refusals and proc.returncode != 0:
            # Another release's words for the same refusal (2.6 printed oneDNN's message, 3.x's
            # predictor "std::exception"): oneDNN's own reason is the same, so is the cause.
            said, line = RunOutcome.REPRODUCED, f"{self.refusal}, as at {self.cause.home.version} ({line[:120]})"
        # Python's words name files by their path in the release's environment or the script's
        # scratch folder: said as a record says a path.
        return said, shareable_words(line)

    def first(self, version: str) -> RunOutcome:
        return self.answers[version][0][0] if version in self.answers else self.run(version)

    def judged(self, version: str) -> RunOutcome:
        """What ``version`` is taken to say: reproduced if any of its runs did (the cause was seen
        there), else its first answer (asked once when it has none)."""
        self.first(version)
        answers = [a for a, _ in self.answers[version]]
        return RunOutcome.REPRODUCED if RunOutcome.REPRODUCED in answers else answers[0]

    def confirmed(self, version: str, times: int) -> List[RunOutcome]:
        while len(self.answers.get(version, [])) < times:
            self.run(version)
        return [a for a, _ in self.answers[version]]

    def tried(self) -> Tuple[ReleaseRun, ...]:
        rows = []
        for version in sorted(self.answers, key=version_order):
            kinds = [a for a, _ in self.answers[version]]
            same = len(set(kinds)) == 1
            line = self.answers[version][-1][1] if same else f"answered {', '.join(k.value for k in kinds)}"
            rows.append(ReleaseRun(version, kinds[0] if same else RunOutcome.OTHER, line[:300], len(kinds)))
        return tuple(rows)


def place(cause: ReleaseCause, releases: Sequence[str], environment: "Environments", say: Say,
          confirm: int = CONFIRMATIONS, bisect: Optional[Bisection] = None) -> ReleaseSpan:
    """The release span of one cause (see the module's docstring); ``bisect``: what runs the
    script at a release (its runs and answers), by default a ``Bisection`` of ``environment``."""
    return boundary.place(cause, releases, bisect or Bisection(cause, environment, say), confirm)


@dataclasses.dataclass(frozen=True)
class Options:
    """How ``releases`` runs: over which releases (None: every one the index serves), pre-releases
    too, where the environments live, at which Python, runs per side of the boundary, causes at once."""

    envs_root: Path
    python: str
    releases: Optional[Tuple[str, ...]] = None
    pre: bool = False
    confirm: int = CONFIRMATIONS
    jobs: int = 2
    minimize_budget: float = 90.0  # seconds of minimization per cause's standalone script (0: none)
    again: bool = False  # ask causes placed earlier again


def run(results: Path, options: Options, say: Say = print) -> int:
    """Place every cause of run folder ``results``; 0 when each was tried (the spans say the rest).
    The run's lock is held from reading its records to writing them back: a run of cells cannot
    replace a record in between and have its new verdict overwritten by the old one."""
    with owned(results):
        return _run_locked(results, options, say)


def _run_locked(results: Path, options: Options, say: Say) -> int:
    records, unreadable = scan_records(results)
    for item in unreadable:  # as every reader of a run says them: named, never dropped in silence
        say(f"[releases] unreadable record {item.path}: {item.reason}")
    causes, without = causes_of(records)
    if not causes:
        failing = sum(1 for r in records if not r.verdict.passed)
        detail = (f"no failing cell among {len(records)} records"
                  + (f" ({len(unreadable)} unreadable, named above)" if unreadable else "") if not failing else
                  f"{failing} failing cell(s), none with a verified source reproducer ({'; '.join(without)[:300]})")
        say(f"[releases] {results}: nothing to place: {detail}")
        return 0
    served = index_releases(options.python, options.pre)
    if options.releases:
        missing = [v for v in options.releases if v not in served]
        if missing:
            raise UserError(f"--releases {missing[0]}: the package index serves no {PACKAGE} {missing[0]} for "
                            f"Python {options.python} (it serves {', '.join(served)}).")
        served = sorted(options.releases, key=version_order)
    started = time.perf_counter()
    shown = shown_apart([c.words for c in causes], 100)

    def placed(numbered: Tuple[int, ReleaseCause]) -> ReleaseSpan:
        k, cause = numbered
        said: Say = lambda line: say(line.replace("[releases]", f"[releases {k}]", 1))  # noqa: E731
        earlier = None if options.again else placed_earlier(cause, served, options.confirm)
        if earlier is not None:
            said(f"[releases] {shown[k - 1]}: placed earlier: {earlier.words()} (--again asks again)")
            _write_span(results, cause, earlier)
            return earlier
        said(f"[releases] {shown[k - 1]}: {len(cause.records)} cell(s), the source reproducer of {cause.home.id}")
        environments = Environments(options.envs_root, cause.home, options.python, said)
        made = standalone.prepare(cause, environments, said, options.minimize_budget)
        if made.script is not None:
            cause = dataclasses.replace(cause, standalone=made.script, whole=made.whole)
        span = dataclasses.replace(place(cause, served, environments, said, options.confirm), standalone=made.words,
                                   compact=made.compact)
        said(f"[releases] {shown[k - 1]}: {span.words()}")
        _write_span(results, cause, span)  # now: a run cut off later keeps it
        return span

    # Causes are independent: each bisects in its own thread (its runs are processes); a release
    # environment two of them need is made once (``envs.ensure`` locks it).
    with ThreadPoolExecutor(max_workers=max(1, min(options.jobs, len(causes)))) as pool:
        spans = list(pool.map(placed, enumerate(causes, 1)))
    unplaced = sum(1 for span in spans if span.outcome is SpanOutcome.NOT_AT_ITS_RELEASE)
    say(f"[releases] {len(causes) - unplaced} of {len(causes)} cause(s) placed in {time.perf_counter() - started:.0f} s"
        + (f"; {unplaced} not placed (said above)" if unplaced else ""))
    for line in without:
        say(f"[releases] not placed: {line}")
    from ..report.refresh import refresh

    refresh(results, say)  # the drafts and reports that showed these causes say their releases now
    return 0


def placed_earlier(cause: ReleaseCause, served: Sequence[str], confirm: int) -> Optional[ReleaseSpan]:
    """The span a cause's own record holds from an earlier ``releases`` over the same releases and
    confirmations, else None. Its home record stands for the cause (its script was the one asked); a
    record the cause gained since (another release's cell of it) takes the same span."""
    span = cause.home.analysis.releases
    if span is None or span.cause != cause.key or tuple(span.releases) != tuple(served) or span.confirmations != confirm:
        return None
    return span


def _write_span(results: Path, cause: ReleaseCause, span: ReleaseSpan) -> None:
    """``span`` into every record of ``cause`` (each record is one cause's: the threads write apart)."""
    for record in cause.records:
        entry = AnalysisEntry.from_dict("releases", {**span.to_dict(), "stage": record.analysis.reproducer.stage})
        write_record(results, dataclasses.replace(record, analysis=Analyses({**record.analysis.entries,
                                                                             "releases": entry})))


def add_parser(sub: "argparse._SubParsersAction") -> None:
    from .pathargs import folder_to_read, run_name

    parser = sub.add_parser("releases", help="the Paddle release each cause of a run first appeared in "
                                              "(bisection of its source reproducer over the index's releases)")
    parser.add_argument("--results", type=folder_to_read, default=Path("results"))
    parser.add_argument("--run", dest="run_name", type=run_name, default="default")
    parser.add_argument("--releases", type=_versions, default=None,
                        help="comma-separated releases to bisect over (default: every release the index serves)")
    parser.add_argument("--pre", action="store_true", help="pre-releases of the index too")
    parser.add_argument("--python", default=f"{sys.version_info.major}.{sys.version_info.minor}",
                        help="the Python of the release environments (default: %(default)s)")
    parser.add_argument("--envs", type=Path, default=None,
                        help="where release environments are kept (default: the pool's, .nox/)")
    parser.add_argument("--confirm", type=_positive, default=CONFIRMATIONS,
                        help="runs on each side of the boundary (default: %(default)s)")
    parser.add_argument("--jobs", type=_positive, default=None,
                        help="causes bisected at once (default: the CPU count)")
    parser.add_argument("--minimize-budget", type=float, default=90.0,
                        help="seconds of minimization of each cause's standalone script (default: %(default)s; 0: none)")
    parser.add_argument("--again", action="store_true",
                        help="ask every cause again, also those placed earlier over the same releases")


def _versions(text: str) -> List[str]:
    versions = [v.strip() for v in text.split(",") if v.strip()]
    if not versions:
        raise argparse.ArgumentTypeError("give one or more releases, comma-separated (e.g. 3.2.2,3.3.0,3.3.1)")
    return versions


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of runs, 1 or more")
    return int(text)


def command(args: "argparse.Namespace") -> int:
    from .pathargs import existing_run
    from .pool import default_envs_root

    existing_run(args.results, args.run_name)  # before the lock: a typo writes nothing
    options = Options(args.envs or default_envs_root(), args.python, tuple(args.releases) if args.releases else None,
                      args.pre, args.confirm, args.jobs or os.cpu_count() or 1, args.minimize_budget, args.again)
    return run(args.results / args.run_name, options)


__all__ = ["Options", "index_releases", "causes_of", "place", "placed_earlier", "run", "command", "add_parser", "ReleaseCause", "Bisection"]
