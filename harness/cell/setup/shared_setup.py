"""One setup per program (cell side): the sessions that read one exported program share its setup.

Every session of one (Paddle version, train mode, model) would build the model, load the run's
shared weights, export and run dygraph again, to get the same files: four exports of one program
over the four fp32 CPU sessions, and four imports of the model's suite (the import alone costs a
zoo cell 15-41 s, its stages under 1 s). The first cell of a program whose setup passed
**publishes** it in the run folder (``RunFolder.program``: the export, the inputs and the dygraph
outputs at every shape, and its setup entry); the other cells **reuse** it: their work folders get
hard links to those files (a copy where the file system refuses links) and their setup entry is
the publisher's with its paths moved to their own folder and ``program`` saying which cell made it.

A published setup is reused only when it was made from the same inputs, checked here and not
assumed: the same key (every part of the cell's provenance that setup reads — model source and
entry, mode, run settings, tolerances, Paddle and harness versions — but the session), the same
Paddle build and numpy in this environment, and the same weights (the checkpoint's sha256 now).
Anything else, or a folder that cannot be read, and the cell makes its own setup, as before.
Of the setups that did not pass, an export that raised and a lite training that killed its worker
are shared (with their reproducers): setup reads no session, so every session meets them alike;
other failures each cell meets itself. A reused setup has no trained instance in the process: a later step
that takes the model apart rebuilds it from its source with the exported weights (what a
restarted worker does), and says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Mapping, Optional

from ...shared.json_types import JsonObject
from ...shared.records import atomic_write_json, file_sha256
from ...shared.runfolder import PROGRAM_ENTRY as ENTRY
from ...shared.runfolder import PROGRAM_WORK as WORK
from ...shared.causes import stage_cause
from ...shared.vocab import ANALYSIS_PREFIX, SETUP, Analysis, Status

# The provenance parts a setup does not read: the session (which stages run on the program).
_NOT_READ_BY_SETUP = ("session",)


def program_key(cell: Any, paddle_info: JsonObject) -> Optional[str]:
    """What a setup is made from, as one digest; None when the cell's provenance is unknown."""
    produced_by = cell.produced_by
    if not isinstance(produced_by, dict) or cell.captured:
        return None
    import numpy

    parts = {k: v for k, v in produced_by.items() if k not in _NOT_READ_BY_SETUP}
    parts.update(mode=cell.mode, model=cell.model_name, seed=cell.seed, numpy=numpy.__version__,
                 paddle_build={k: paddle_info.get(k) for k in ("version", "commit")})
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _weights_now(result: JsonObject) -> Optional[str]:
    path = (result.get("weights") or {}).get("path")
    try:
        return file_sha256(Path(path)) if path else None
    except OSError:
        return None


def reuse(ctx: Any, paddle_info: JsonObject) -> Optional[JsonObject]:
    """The published setup of this cell's program, brought into its work folder; None when there is
    none this cell may use (then it makes its own)."""
    folder = Path(ctx.cell.program) if ctx.cell.program else None
    key = program_key(ctx.cell, paddle_info)
    if folder is None or key is None:
        return None
    started = time.perf_counter()
    try:
        published = json.loads((folder / ENTRY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _failed_setup(ctx, folder, key, started)
    result = published.get("setup") if isinstance(published, dict) else None
    if published.get("made_by") == ctx.cell.id:
        return None  # this cell made it, in a run that ended before its record: it is redone whole
    if published.get("key") != key or not isinstance(result, dict) or result.get("status") != Status.PASS.value:
        return None
    if (result.get("weights") or {}).get("sha256") != _weights_now(result):
        return None  # the run's weights were trained again since
    try:
        _bring(folder, ctx.work, published["files"])
    except (OSError, KeyError, TypeError):
        for name in published.get("files") or []:
            (ctx.work / name).unlink(missing_ok=True)
        return None
    moved = _moved(result, str(folder), str(ctx.work))
    # The timings are this cell's own (what bringing the files took); the maker's stay with its name.
    moved["program"] = {"made_by": published.get("made_by"), "reused": True, "key": key, "folder": str(folder),
                        "maker_timings": moved.get("timings") or {},
                        "words": f"setup of {published.get('made_by')} reused: one export per program"}
    moved["timings"] = {"reused": round(time.perf_counter() - started, 4)}
    if isinstance(moved.get("weights"), dict) and moved["weights"].get("source") == "trained":
        moved["weights"] = dict(moved["weights"], source="checkpoint")  # the maker trained them; this cell read them
    return moved


# A setup whose export raised, or whose lite training killed its worker, is the same failure for
# every session of the program (setup reads no session): the maker's entry and its setup reproducer
# are taken by the others, like a passing setup, from what it wrote when it ended (``WORK``'s
# ``failed_setup``). Its words say it was taken, from whom.
SHARED_FAILURES = {(Status.ERROR, "export"): "its export raised", (Status.CRASH, "train"): "its lite training died"}


def _shareable_failure(entry: Any) -> bool:
    return isinstance(entry, Mapping) and (Status.of(entry.get("status")), entry.get("phase")) in SHARED_FAILURES


def _failed_setup(ctx: Any, folder: Path, key: str, started: float) -> Optional[JsonObject]:
    try:
        work = json.loads((folder / WORK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    failed = work.get("failed_setup") if isinstance(work, dict) else None
    if not isinstance(failed, dict) or failed.get("key") != key or work.get("made_by") == ctx.cell.id \
            or not _shareable_failure(failed.get("setup")):
        return None
    status = Status.of(failed["setup"]["status"])
    entry = dict(failed["setup"], status=status)
    entry.pop("machine", None)  # this cell's, as every record's
    how = SHARED_FAILURES[(status, entry.get("phase"))]
    entry["program"] = {"made_by": work["made_by"], "reused": True, "key": key, "folder": str(folder),
                        "maker_timings": entry.get("timings") or {},
                        "words": f"setup of {work['made_by']} reused: {how}, the same for every session"}
    entry["timings"] = {"reused": round(time.perf_counter() - started, 4)}
    return entry


def failed_setup_reproducer(ctx: Any, setup_entry: Any) -> "JsonObject | None":
    """The maker's reproducer of the setup failure this cell's setup took from it, else None."""
    program = setup_entry.get("program") if setup_entry is not None else None
    if not (isinstance(program, dict) and program.get("reused") and ctx.cell.program):
        return None
    try:
        work = json.loads((Path(ctx.cell.program) / WORK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    failed = work.get("failed_setup") or {}
    kept = failed.get("reproducer")
    if work.get("made_by") != program.get("made_by") or failed.get("key") != program.get("key") or not isinstance(kept, dict):
        return None
    return dict(kept, reused_from=work["made_by"])


def publish(ctx: Any, result: JsonObject) -> Optional[str]:
    """Make this cell's passing setup the program's: its files linked (or copied) into the run's
    program folder, its entry written last (the folder is not reusable before). Returns why not,
    or None. Never fails the cell: sharing only saves work."""
    folder = Path(ctx.cell.program) if ctx.cell.program else None
    key = program_key(ctx.cell, result.get("paddle") or {})
    if folder is None or key is None or result.get("status") != Status.PASS:
        return "not shared"
    files = sorted(str(p.relative_to(ctx.work)) for p in ctx.work.rglob("*") if p.is_file() and _setup_file(p, ctx.work))
    staging = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        _bring(ctx.work, staging, files)
        atomic_write_json(staging / ENTRY, {"key": key, "made_by": ctx.cell.id, "files": files,
                                            "setup": _moved(_plain(result), str(ctx.work), str(folder))})
        if folder.exists():
            shutil.rmtree(folder)  # made from other inputs (the cell was redone): replaced whole
        os.replace(staging, folder)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        return f"not shared: {exc}"
    return None


def _setup_file(path: Path, work: Path) -> bool:
    """What setup wrote that the stages read: the export, the inputs and dygraph outputs per shape."""
    rel = path.relative_to(work)
    if rel.parts[0] == "export":
        return True
    return len(rel.parts) == 1 and rel.suffix == ".npz" and rel.name.startswith(("inputs", "dygraph"))


def _bring(source: Path, target: Path, files: Any) -> None:
    if Path(source).resolve() == Path(target).resolve():
        return  # nothing to bring: the files are where they are
    for name in files:
        src, dst = source / name, target / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.exists():
            dst.unlink()
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)


def _plain(value: Any) -> Any:
    """The setup entry as the journal writes it (statuses as their words)."""
    return json.loads(json.dumps(value, default=str))


def _moved(value: Any, old: str, new: str) -> Any:
    """``value`` with every path under ``old`` moved under ``new``."""
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    if isinstance(value, str) and (value == old or value.startswith(old + os.sep)):
        return new + value[len(old):]
    return value


# -- the stages and analyses every session runs alike ---------------------------------------------
# A reader of a program runs the same stages as its maker up to where the sessions differ (the
# baseline, and the Paddle stages before a session's backend): the same program, inputs, Paddle and
# config give the same result, and a failure there gets the same analysis. The maker writes what it
# ran when it ends (``WORK``); a reader takes the longest prefix of its ladder whose plans are the
# maker's, plan for plan (a digest of the whole StagePlan: runtime, config, precision, reference),
# and the analyses of those stages. Files those entries name stay in the maker's work folder (the
# reader's record names them from the run folder, as every record names files); the baseline's
# outputs, which the reader's own later stages compare with, are linked into its folder.


def plan_digest(plan: Any) -> str:
    return hashlib.sha256(repr(plan).encode()).hexdigest()[:20]


def made_here(setup_entry: Any) -> bool:
    """Whether this cell made its setup (no shared one was reused): it is its program's maker."""
    program = setup_entry.get("program") if setup_entry is not None else None
    return not (isinstance(program, dict) and program.get("reused"))


def publish_work(ctx: Any, done: Any, plans: Any) -> None:
    """The maker's stages and analyses, for the program's readers; written when the cell ends, in
    every case (an empty one when its setup was not shared: the readers then make their own)."""
    folder = Path(ctx.cell.program) if ctx.cell.program else None
    setup = done.setup if SETUP in done else None
    if folder is None or not made_here(setup):
        return
    stages, analyses, files = {}, {}, []
    try:
        published = json.loads((folder / ENTRY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        published = {}
    key = published.get("key") if published.get("made_by") == ctx.cell.id else None
    if key is not None:
        for plan in plans:
            if plan.name in done:
                stages[plan.name] = {"plan": plan_digest(plan), "entry": _plain(done.entry(plan.name))}
        analyses = {k: _plain(v) for k, v in done.entries().items() if k.startswith(ANALYSIS_PREFIX)}
        files = sorted(p.name for p in ctx.work.glob("baseline*.npz"))
    failed = None
    raw = done.entry(SETUP) if SETUP in done else None
    if _shareable_failure(raw) and ctx.cell.root_cause:
        reproducer = done.entries().get(Analysis.REPRODUCER.journal_key)
        # A worker that died has no Paddle in its entry (the host wrote it): this worker's Paddle is the same.
        paddle_info = raw.get("paddle") or ctx.paddle_api.paddle_info()
        failed = {"key": program_key(ctx.cell, paddle_info), "setup": _plain(raw),
                  "reproducer": _plain(reproducer) if isinstance(reproducer, dict) and reproducer.get("stage") == SETUP else None}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / WORK, {"key": key, "made_by": ctx.cell.id, "work": str(ctx.work), "stages": stages,
                                          "analysis": analyses, "files": files, "failed_setup": failed})
    except OSError:
        pass  # the readers wait for the maker to end, then make their own


class Reused:
    """What a reader takes from its program's maker: the ladder's common prefix and its analyses."""

    def __init__(self, ctx: Any, setup_entry: Any):
        self.ctx, self.made_by, self.stages, self.analyses, self.names = ctx, None, {}, {}, set()
        program = setup_entry.get("program") if setup_entry is not None else None
        if not (isinstance(program, dict) and program.get("reused") and ctx.cell.program):
            return
        try:
            work = json.loads((Path(ctx.cell.program) / WORK).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if work.get("made_by") != program.get("made_by") or work.get("key") != program.get("key") or not work.get("key") \
                or work.get("made_by") == ctx.cell.id:
            return
        self.made_by, self.stages, self.analyses, self.maker_work = work["made_by"], work["stages"], work["analysis"], work["work"]
        self.files = work.get("files") or []
        self.open = True  # the prefix goes on while every plan so far was the maker's

    def seen(self, plan: Any, entry: Any) -> None:
        """A stage an earlier worker of this cell journalled: taken from the maker, or its own."""
        if isinstance(entry, dict) and entry.get("reused_from") and self.made_by is not None and self.open:
            self.names.add(plan.name)
        else:
            self.open = False

    def stage(self, plan: Any) -> "JsonObject | None":
        """The maker's entry of ``plan`` when the ladder so far is the maker's, else None (and never again)."""
        if self.made_by is None or not self.open:
            return None
        kept = self.stages.get(plan.name)
        if kept is None or kept.get("plan") != plan_digest(plan):
            self.open = False
            return None
        if not self.names:
            _bring(Path(self.maker_work), self.ctx.work, self.files)
        self.names.add(plan.name)
        return dict(kept["entry"], reused_from=self.made_by)

    def analysis(self, journal_key: str, stage: str) -> "JsonObject | None":
        """The maker's analysis step of a stage this reader took from it, else None."""
        kept = self.analyses.get(journal_key)
        if stage not in self.names or not isinstance(kept, dict) or kept.get("stage") != stage:
            return None
        return dict(kept, reused_from=self.made_by)


# -- a failing step other sessions run alike -------------------------------------------------------
# ONNX Runtime and OpenVINO read one ONNX: the paddle2onnx conversion of the program, run alike in
# both sessions. When it raises (the converter aborts, or its output depends on memory it never
# wrote), the stage of each session raises the same words from the same step (``Finding.shared_step``:
# the converter, its options, the program's and weights' bytes), and the reduction and reproducer of
# that failure are the converter's, whatever runtime would have read the file (their predicate is
# the converter's words). The first cell to analyse it publishes those analyses under the step's key;
# a later cell of the program whose stage raised the same words from the same step takes them
# (``reused_from``, ``reused_stage``), the words compared as the cause's (``stage_cause``: a
# memory-dependent conversion differs in the values it read, run to run). What depends on the
# runtime stays each cell's own: the culprit search, and the workaround — unless every change it
# tried ended in the shared step's own failure (the runtime never ran), when it is taken too. The
# pool runs the first cell of a program's converting sessions before the others.

SHARED_ANALYSES = (Analysis.REDUCE, Analysis.REPRODUCER, Analysis.WORKAROUND)
PADDLE_FILES = (".json", ".pdmodel", ".pdiparams", ".info")  # an export's own files (``.info``: .pdiparams.info)
STEPS = "steps"


def _shareable(kind: Analysis, kept: Any, cause: str) -> bool:
    """Whether the analysis answers for another runtime too: the reduction and the reproducer (their
    predicate is the step's words); a workaround none of whose changes got past the step."""
    if kind is not Analysis.WORKAROUND:
        return True
    tried = kept.get("tried") or []
    return (kept.get("status") == Status.PASS.value and kept.get("outcome") == "none verified" and bool(tried)
            and all(_ended_in_the_step(t, cause) for t in tried))


def _ended_in_the_step(tried: Any, cause: str) -> bool:
    """A workaround's change whose check raised the step's own words (the runtime never ran). The
    cause is the whole message's, in the runtime's words (a ``why`` is clipped, and a memory-dependent
    conversion names other nodes and values each run: no change was taken, measured on the zoo)."""
    return isinstance(tried, dict) and str(tried.get("cause") or stage_cause(str(tried.get("why") or ""))) == cause


def step_cause(plan: Any, message: str) -> str:
    """A shared step's failure in its runtime's words (``Runtime.cause_words``: a converter's own, the
    same for every runtime that reads its output)."""
    from ..base.registry import runtime

    return runtime(plan.runtime).cause_words(message)


def _step_file(ctx: Any, step: str) -> Optional[Path]:
    if not ctx.cell.program:
        return None
    return Path(ctx.cell.program) / STEPS / f"{hashlib.sha256(step.encode()).hexdigest()[:20]}.json"


def _failing_shared_step(done: Any, plans: Any) -> "tuple[Any, Any] | None":
    """The first stage that raised from a shared step, and its entry."""
    for plan in plans:
        if plan.name in done:
            entry = done.entry(plan.name)
            if isinstance(entry, dict) and entry.get("shared_step") and Status.of(entry.get("status")) is not Status.PASS:
                return plan, entry
    return None


def publish_steps(ctx: Any, done: Any, plans: Any) -> None:
    """This cell's own analyses of a stage that raised from a shared step, for the program's other
    sessions; the first publication of a step stays (a later one would say the same)."""
    found = _failing_shared_step(done, plans)
    if found is None:
        return
    plan, entry = found
    path = _step_file(ctx, entry["shared_step"])
    cause = step_cause(plan, str(entry.get("message") or ""))
    analyses = {}
    changes: JsonObject = {}
    exports: JsonObject = {}
    for kind in SHARED_ANALYSES:
        kept = _plain(done.entries().get(kind.journal_key))
        if not isinstance(kept, dict) or kept.get("stage") != plan.name or kept.get("reused_from"):
            continue
        if _shareable(kind, kept, cause):
            analyses[kind.journal_key] = kept
        elif kind is Analysis.WORKAROUND:  # its changes that ended in the step answer for the others too
            changes = {t["change"]: t for t in kept.get("tried") or [] if _ended_in_the_step(t, cause) and t.get("change")}
        if kind is Analysis.WORKAROUND:  # the model exported with a change: the same program for every runtime
            exports = {t["change"]: t["exported"] for t in kept.get("tried") or []
                       if isinstance(t.get("exported"), dict) and not t["exported"].get("reused_from")}
    if path is None or path.exists() or not (analyses or changes or exports):
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"step": entry["shared_step"], "cause": cause, "made_by": ctx.cell.id,
                                 "stage": plan.name, "analysis": analyses, "changes": changes, "exports": exports})
    except OSError:
        pass  # the others analyse it themselves


def _published(ctx: Any, plan: Any, done: Any) -> "JsonObject | None":
    """What another session's cell published of the very failure this cell's stage met in a shared
    step (the same step key and words), else None."""
    entry = done.entry(plan.name) if plan.name in done else None
    if not isinstance(entry, dict) or not entry.get("shared_step"):
        return None
    path = _step_file(ctx, entry["shared_step"])
    try:
        published = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return None
    if not isinstance(published, dict) or published.get("step") != entry["shared_step"] \
            or published.get("cause") != step_cause(plan, str(entry.get("message") or "")) \
            or published.get("made_by") == ctx.cell.id:
        return None
    return published


def step_change(ctx: Any, plan: Any, done: Any, change: str) -> "JsonObject | None":
    """A workaround's change another session's cell tried whose check ended in the shared step's own
    failure (the same for every runtime that reads the step), else None."""
    published = _published(ctx, plan, done)
    taken = ((published or {}).get("changes") or {}).get(change)
    if not isinstance(taken, dict):
        return None
    return dict(taken, reused_from=published["made_by"])


def step_export(ctx: Any, plan: Any, done: Any, change: str, folder: Path) -> "JsonObject | None":
    """The model exported with a workaround's model-side change by another session's cell of the same
    conversion (the same program and weights: the same files), brought into ``folder``; None when there
    is none to take. Only Paddle's files: the conversion is the cell's own check, run again with its
    memory comparison — an ONNX brought along was read as converted and never compared (measured on the
    zoo: the maker's conversion of PP-OCRv6 medium det's respelled program depended on memory, and the
    reader passed on the maker's file)."""
    published = _published(ctx, plan, done)
    made = ((published or {}).get("exports") or {}).get(change)
    if not isinstance(made, dict) or not made.get("folder") or not Path(made["folder"]).is_dir():
        return None
    source = Path(made["folder"])
    try:
        _bring(source, folder, [f.name for f in source.iterdir() if f.is_file() and f.suffix in PADDLE_FILES])
    except OSError:
        return None  # this cell exports it itself
    return dict(_moved(made, str(source), str(folder)), reused_from=published["made_by"])


def step_analysis(ctx: Any, journal_key: str, plan: Any, done: Any) -> "JsonObject | None":
    """Another session's analysis of the very failure this cell's stage met in a shared step (the
    same step key and words), else None."""
    if journal_key not in {k.journal_key for k in SHARED_ANALYSES}:
        return None
    published = _published(ctx, plan, done)
    if published is None:
        return None
    kept = (published.get("analysis") or {}).get(journal_key)
    if not isinstance(kept, dict):
        return None
    return dict(kept, stage=plan.name, reused_from=published["made_by"], reused_stage=published.get("stage"))


__all__ = ["program_key", "reuse", "failed_setup_reproducer", "publish", "publish_work", "publish_steps", "step_analysis",
           "step_change", "step_export", "Reused",
           "made_here", "plan_digest"]
