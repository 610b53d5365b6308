"""What the reduction asks of a piece (cell side): export it alone, run it on the failing stage and
its reference, and say whether the stage's failure reproduces (a ``Trial``).

* an ``error`` reproduces when the piece raises the same cause (the same normalized message);
* a numeric ``fail`` reproduces when the stage's config is out of tolerance against the reference
  config (the baseline predictor) on the piece — or, for ``baseline`` itself, against the dygraph
  forward of the piece run just before its export (what ``to_static`` traced); for a stage its
  precision's floor judged, when it is beyond the piece's own floor (``precision_floor.piece_floor``).

When the culprit search named passes for the stage, a trial that ran the stage also runs the piece
with those passes off and records whether they changed the ops it executed (``culprit_fired``): a
piece where the pass did not fire says nothing about where the failure is.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...shared.causes import paddle_message, raised_status
from ...shared.compare import NothingCompared, compare_all
from ...shared.runtime import StagePlan
from ...shared.vocab import Analysis, Reference, Stage, Status
from ..base.context import CellContext
from ..base.ledger import Ledger
from .descent import Trial
from ..anatomy.isolation import ONE_OP, Written
from ..precision import precision_floor
from ..base import progress, sandbox
from ..anatomy.pieces import (
    SMALL_INT_INPUT, Call, VacuousPiece, load_piece, load_source, piece_source, source_path, specs, unique_tensors)
from ..base.registry import runtime

# What a trial is doing when its process dies (``sandbox.phase``): the piece's dygraph call, its
# export, the reference config's run, the failing stage's run.
DYGRAPH, EXPORT, REFERENCE, STAGE = "dygraph", "export", "reference", "stage"


@dataclasses.dataclass(frozen=True)
class Sought:
    """Which of a stage's causes a descent seeks (None: the stage's own, numeric or not), the cell's
    other causes (a piece raising one of them first masks the one sought), and where its pieces go."""

    cause: Optional[str] = None
    known: Sequence[str] = ()
    folder: str = "reduction"


class PieceTrials:
    """``trials(paths) -> Trial`` for the descent, ``trials.one_op(call)`` for the op isolation;
    counts the exports of each."""

    def __init__(self, ctx: CellContext, plan: StagePlan, plans: Dict[str, StagePlan],
                 done: Ledger, calls: Dict[str, Call], sought: Optional["Sought"] = None):
        sought = sought or Sought()
        cause, known, folder = sought.cause, sought.known, sought.folder
        stage = done.stage(plan.name)
        self.ctx, self.plan, self.calls = ctx, plan, calls
        self.failed = stage.status
        self.stage_message = stage.message or ""
        self.paddle = ctx.paddle
        self.engine = runtime(plan.runtime)
        # The cause sought (the runtime's own words; one of the stage's when its message holds several)
        # and the cell's other causes: a piece raising one of those first masks the one sought.
        self.cause = cause if cause is not None else self.engine.cause_words(stage.message)
        self.known = [c for c in known if c != self.cause]
        self.reference_plan = plans.get(Stage.BASELINE.value) if plan.reference == Reference.BASELINE else None
        # The run that names the piece's op types: the baseline config (the stage's own when it is the baseline).
        self.typing_plan = self.reference_plan or plans.get(Stage.BASELINE.value) or plan
        self.tolerance = ctx.tolerance(plan)
        # A stage the floor judged: each piece is judged against a floor of its own (its dygraph with
        # the format's rounding everywhere), not the fixed tolerance: a piece within what bf16 explains
        # does not reproduce a failure beyond it.
        measured = stage.extra.get("floor") or {}
        self.floor_format: Optional[str] = (measured.get("format") if stage.extra.get("floor_verdict")
                                            and not measured.get("why") else None)
        self.floor_k = float(measured.get("k") or 0.0)
        search = done.analysis(Analysis.BISECT)
        self.culprits: List[str] = (list(search.get("culprits") or [])
                                    if search is not None and search.stage == plan.name else [])
        self.folder = ctx.work / folder
        self.tried = 0      # pieces exported (or tried to be)
        self.op_exports = 0  # one-op programs exported (or tried to be)
        self.layers: Dict[Tuple[str, ...], Any] = {}  # the generated layer and inputs of each reproducing piece
        self.held_ids: set = set()  # the isolated forward's parameters and buffers (by id): they stay parameters
        self.trial_timeout = sandbox.deadline(ctx.cell.stage_timeout)

    def __call__(self, paths: List[str]) -> Trial:
        self.tried += 1
        where = self.folder / f"piece{self.tried}"
        members = sorted((self.calls[p] for p in paths), key=lambda c: c.order)
        trial = self._in_child(lambda: self._piece(paths, members, where), Trial(members=list(paths), reproduces=False),
                               where, harness_form=False)
        if trial.reproduces and trial.files:  # only a reproducing piece's layer can be the answer the op is sought in
            self.layers[tuple(trial.members)] = (_reloaded(trial.files, members), list((trial.feeds or {}).values()))
        return trial

    def _piece(self, paths: List[str], members: List[Call], where: Path) -> Trial:
        trial = Trial(members=list(paths), reproduces=False)
        built = self._build(members, where, trial)
        if built is None:
            return trial
        files, feeds, traced = built
        trial.files, trial.feeds = files, feeds
        return self._judge(trial, files, feeds, traced, where, lambda: _reloaded(files, members))

    def one_op(self, program: Written) -> Trial:
        """The op (or the chain of ops) alone, on the tensors it received in the piece's forward."""
        self.op_exports += 1
        where = self.folder / f"op{self.op_exports}"
        return self._in_child(lambda: self._one_op(program, where), Trial(members=program.op_types, reproduces=False),
                              where, harness_form=program.harness_form)

    def _one_op(self, program: Written, where: Path) -> Trial:
        trial = Trial(members=program.op_types, reproduces=False)
        try:
            files, arrays, traced = self._export(self._op_layer(program, where), list(program.fed), where)
        except Exception as exc:
            trial.untestable = True
            trial.note = f"could not be exported alone: {paddle_message(exc)[:300]}"
            return trial
        trial.files, trial.feeds = files, {f"in{k}": a for k, a in enumerate(arrays)}
        return self._judge(trial, files, trial.feeds, traced, where, lambda: self._op_layer(program, where / "floor"))

    def _op_layer(self, program: Written, where: Path) -> Any:
        """The one-op program's layer, a fresh instance, with the model's parameters as they were."""
        layer = load_source(program.source, where, ONE_OP)
        for name, array in program.held.items():
            getattr(layer, name).set_value(self.paddle.to_tensor(array))
        return layer

    def _in_child(self, fn: Callable[[], Trial], empty: Trial, where: Path, harness_form: bool) -> Trial:
        """``fn()`` where its death cannot end the reduction (``sandbox``): a trial whose process died
        says nothing of the failure sought and records how it died. A death while the harness's own
        ``_C_ops`` form was being built (dygraph or export) is the harness's gap; any other (the
        model's layers, a public call, a predictor) is Paddle's."""
        engine, numeric, message = self.engine, self.failed is Status.FAIL, self.stage_message

        def trial() -> Trial:
            engine.for_trials(numeric, message)  # in the trial's own process: it ends with it
            return fn()

        outcome = sandbox.in_child(trial, where, self.trial_timeout)
        if not isinstance(outcome, sandbox.Death):
            progress.ended(self.ctx.work, outcome.to_dict())
            return outcome
        if harness_form and outcome.phase in (DYGRAPH, EXPORT):
            outcome.by = "harness"
        empty.death = outcome
        if self._dies_as_the_stage(outcome):
            empty.files, empty.feeds = _ran_before_dying(where)
            empty.reproduces = True
            empty.note = f"its process died as the stage's did: {outcome.words()}"
            progress.ended(self.ctx.work, empty.to_dict())
            return empty
        empty.untestable = True
        empty.note = (f"its process died: {outcome.words()}"
                      + (" (a form only the harness writes: the harness's gap, not a finding)"
                         if outcome.by == "harness" else ""))
        progress.ended(self.ctx.work, empty.to_dict())
        return empty

    def _dies_as_the_stage(self, death: "sandbox.Death") -> bool:
        """A stage that killed its worker reproduces where the piece's run of that stage's config dies
        the same way: the signal and Paddle's innermost frame its message says."""
        if self.failed is not Status.CRASH or death.by != "paddle":
            return False
        running_the_stage = death.phase == STAGE or (death.phase == REFERENCE and self.typing_plan.name == self.plan.name)
        said = f"died with {death.how}" + (f" in {death.frame}" if death.frame else "")
        return running_the_stage and said in self.stage_message

    def _export(self, layer: Any, arrays: List[np.ndarray], where: Path):
        # Dygraph first: to_static replaces the layer's forward, and a forward called after it runs
        # the traced program — the reference would be the very program it judges.
        traced = self._traced(layer, arrays)
        sandbox.phase(EXPORT)
        return self.ctx.saved.export(layer, specs(self.paddle, arrays), where / "model"), arrays, traced

    def _export_reading_all(self, layer: Any, arrays: List[np.ndarray], where: Path):
        """The piece's files (or the indices of the inputs its program never reads) and its dygraph
        outputs (run before the trace, as in ``_export``)."""
        traced = self._traced(layer, arrays)
        sandbox.phase(EXPORT)
        return self.ctx.saved.export_reading_all(layer, specs(self.paddle, arrays), where / "model"), traced

    def _traced(self, layer: Any, arrays: List[np.ndarray]) -> List[np.ndarray]:
        """The piece's dygraph outputs: what ``to_static`` traces, the reference of a baseline failure."""
        paddle = self.paddle
        sandbox.phase(DYGRAPH)
        with paddle.no_grad():
            return [t.numpy() for t in unique_tensors(paddle, layer(*[paddle.to_tensor(a) for a in arrays]))]

    def _build(self, members: List[Call], where: Path, trial: Trial):
        """The piece's program, feeds and dygraph outputs; None (the trial says why) when it cannot
        be exported alone."""
        constants = written_in(members)
        if constants:
            captured = [a for m in members for a in m.arrays]
            trial.written_in = [f"captured input {k} ({captured[k].dtype} {list(captured[k].shape)})"
                                for k in sorted(constants)]
        try:
            source, arrays, fed_at = piece_source(members, constants=constants)
            piece = load_piece(source, where, members)
            exported, traced = self._export_reading_all(piece, arrays, where)
            if isinstance(exported, set):
                # Inputs its program never reads (a rotary table of another layer kind, positions
                # read only for their shape, hidden states read only for their dtype): Paddle refuses
                # such feeds, so the piece makes them inside, found in the traced program itself.
                unused = {fed_at[i] for i in exported}
                source, arrays, _ = piece_source(members, unused, constants)
                piece = load_piece(source, where / "fed", members)
                files, arrays, traced = self._export(piece, arrays, where / "fed")
                trial.note = (f"{len(unused)} input(s) its program never reads made inside the piece (Paddle "
                              f"refuses unread feeds); ")
            else:
                files = exported
        except VacuousPiece as exc:  # nothing to export, nothing that could fail: not a trial
            trial.note, trial.untestable, trial.vacuous = f"{exc}: no op of its own", True, True
            return None
        except Exception as exc:
            trial.note = f"could not be exported alone: {paddle_message(exc)[:300]}"
            trial.untestable = True
            return None
        return files, {f"in{k}": a for k, a in enumerate(arrays)}, traced

    def _judge(self, trial: Trial, files: Dict[str, str], feeds: Dict[str, np.ndarray], traced: List[np.ndarray],
               where: Path, rebuild: Optional[Callable[[], Any]] = None) -> Trial:
        # The reference: the baseline config on the piece, or (baseline's own failure) dygraph.
        # The baseline config's run also names the piece's op types; when the failing stage is the
        # baseline itself, that one run is the stage's run too.
        plan, typing_plan = self.plan, self.typing_plan
        if self.failed is Status.CRASH:
            _before_running(where, files, feeds)  # a death is this trial's answer: what it ran stays on disk
        expected: Optional[List[np.ndarray]] = traced
        got: Optional[List[np.ndarray]] = None
        try:
            sandbox.phase(REFERENCE)
            ref = runtime(typing_plan.runtime).session(files, typing_plan.config, feeds, where / "reference")
            _, ref_out, evidence = ref.run_with_evidence(feeds)
            trial.op_types = dict(evidence.get("op_types") or {})
            if self.reference_plan is not None:
                expected = ref_out
            if typing_plan.name == plan.name:
                got = ref_out
        except Exception as exc:
            if self.reference_plan is not None and self.failed is Status.FAIL:
                # No reference, no comparison: the piece says nothing either way.
                trial.note += f"the reference config raised on it: {paddle_message(exc)[:300]}"
                trial.untestable = True
                return trial
            if typing_plan.name == plan.name:  # the stage itself raised on the piece
                return _raised(trial, exc, self.failed, self.cause, self.engine, self.known)
        trial.expected = expected
        stage_types: Optional[Dict[str, int]] = None
        try:
            if got is None:
                sandbox.phase(STAGE)
                _, got, evidence = self.engine.session(files, plan.config, feeds, where / "stage").run_with_evidence(feeds)
                stage_types = dict(evidence.get("op_types") or {})
        except Exception as exc:
            return _raised(trial, exc, self.failed, self.cause, self.engine, self.known)
        empty = empty_program(trial.op_types if trial.op_types else stage_types, traced, got)
        if empty:  # a program of nothing cannot fail: the harness's, never "within tolerance"
            trial.untestable = True
            trial.note += f"says nothing: {empty}"
            return trial
        self._culprit_fired(trial, files, feeds, where, stage_types)
        return self._compared(trial, expected, got, (rebuild, list(feeds.values()), traced))

    def _culprit_fired(self, trial: Trial, files: Dict[str, str], feeds: Dict[str, np.ndarray], where: Path,
                       stage_types: Optional[Dict[str, int]]) -> None:
        """Did the culprit passes change what the piece executes? (The ops executed with them on and off.)"""
        if not self.culprits or self.failed is not Status.FAIL or not stage_types:
            return
        try:
            sandbox.phase(f"{STAGE} without {', '.join(self.culprits)}")
            config = self.engine.without(self.plan, self.culprits)
            _, _, evidence = self.engine.session(files, config, feeds, where / "without").run_with_evidence(feeds)
        except Exception as exc:  # no second run to compare with: whether they fired stays unknown (None)
            trial.note += (f"whether {', '.join(self.culprits)} fired is unknown: without them it raises "
                           f"({paddle_message(exc)[:120]}); ")
            return
        without = dict(evidence.get("op_types") or {})
        trial.culprit_fired = without != stage_types
        trial.note += (f"{', '.join(self.culprits)} {'fired' if trial.culprit_fired else 'did not fire'} "
                       f"(ops executed with and without it {'differ' if trial.culprit_fired else 'are the same'}); ")

    def _compared(self, trial: Trial, expected: List[np.ndarray], got: List[np.ndarray],
                  piece: Tuple[Optional[Callable[[], Any]], List[np.ndarray], List[np.ndarray]] = (None, [], [])) -> Trial:
        if self.failed in (Status.ERROR, Status.CRASH):
            trial.note += "runs without raising" if self.failed is Status.ERROR else "runs without dying"
            return trial
        try:
            stats = compare_all(expected, got, self.tolerance, "the piece's outputs")
        except NothingCompared as exc:  # outputs that cannot be paired say nothing either way
            trial.note += f"could not be compared alone: {exc}"
            trial.untestable = True
            return trial
        trial.margin = max((s.max_abs or 0.0) for s in stats) if stats else None
        within = self._within_the_piece_floor(trial, stats, *piece) if self.floor_format else None
        if within is None:
            trial.reproduces = any(s.status is Status.FAIL for s in stats)
            trial.note += "out of tolerance" if trial.reproduces else "within tolerance"
        else:
            trial.reproduces = not within
            tolerance = "out of" if any(s.status is Status.FAIL for s in stats) else "within"
            trial.note += f"{tolerance} tolerance, {'within' if within else 'beyond'} the piece's {self.floor_format} floor"
        return trial

    def _within_the_piece_floor(self, trial: Trial, stats: List[Any], rebuild: Optional[Callable[[], Any]],
                                arrays: List[np.ndarray], traced: List[np.ndarray]) -> Optional[bool]:
        """The piece's stage against its own floor (``precision_floor.piece_floor``, measured here:
        the trial's child is about to end, so Paddle's op functions may stay rewritten); None — said —
        when it cannot be measured (the tolerance judges then)."""
        if rebuild is None or len(traced) != len(stats):
            return None
        sandbox.phase(f"{self.floor_format} floor")
        try:
            floors = precision_floor.piece_floor(
                self.paddle, rebuild(), arrays, traced, self.floor_format,
                lambda out: [t.numpy() for t in unique_tensors(self.paddle, out)])
        except Exception as exc:  # the piece's own floor could not be measured: the tolerance judges it
            trial.note += f"no {self.floor_format} floor for the piece ({paddle_message(exc)[:120]}); "
            return None
        labels = [str(i) for i in range(len(stats))]
        measured = {"format": self.floor_format, "k": self.floor_k, "floor": {"0": dict(zip(labels, floors))}}
        verdict = precision_floor.judge(measured, 0, {label: precision_floor.error_of(c) for label, c in zip(labels, stats)},
                                        {label: self.ctx.fp32_atol for label in labels})
        return None if verdict is None else verdict["verdict"] == "within"


def _reloaded(files: Dict[str, str], members: List[Call]) -> Any:
    """A fresh instance of an exported piece, from the source written beside its program."""
    home = Path(files["program"]).parent
    return load_piece(source_path(home, "Piece").read_text(encoding="utf-8"), home, members)


# Ops every program has (feeding, fetching, parameters, constants): never an op of its own.
BOOKKEEPING = {"feed", "fetch", "data", "parameter", "shadow_output", "fetch_v2", "pd_op.feed", "pd_op.fetch",
               "pd_op.data", "builtin.parameter", "builtin.shadow_output", "pd_op.full", "full",
               "pd_op.full_int_array", "full_int_array",
               "onednn_to_paddle_layout", "pd_op.onednn_to_paddle_layout", "transfer_layout"}


def bookkeeping(op_type: str) -> bool:
    return op_type in BOOKKEEPING or op_type.split(".", 1)[-1] in BOOKKEEPING


def empty_program(op_types: Optional[Dict[str, int]], traced: List[np.ndarray], outputs: List[np.ndarray]) -> str:
    """Why a piece's program cannot hold any failure ('' when it can): it runs no op but
    bookkeeping, returns no output, or fewer outputs than its dygraph call returned (what the
    trace dropped is not tested)."""
    if op_types and all(bookkeeping(t) for t in op_types):
        return f"its program runs no op but feeding and fetching ({', '.join(sorted(op_types))})"
    if not traced:
        return "its dygraph call returned no tensor"
    if not outputs:
        return f"its program returns no output while its dygraph call returned {len(traced)} tensor(s)"
    if len(outputs) < len(traced):
        return (f"its program returns {len(outputs)} output(s) while its dygraph call returned {len(traced)}: "
                f"the trace dropped some")
    return ""


def written_in(members: List[Call]) -> set:
    """The captured inputs (indexed over the members' inputs in call order) written into a piece
    as their values: small 1-D integer tensors the model computed (shapes, level offsets) — fed or
    folded, they would make different programs, so every piece writes them alike. A tensor the
    model itself was fed (token ids, masks, positions) stays an input, whatever its size, and so
    does integer data the model computed ([batch, length] ids or boxes: folded, a constant could
    hide the very ops that fail)."""
    found, offset = set(), 0
    for member in members:
        for local, array in enumerate(member.arrays):
            if (array.dtype.kind in "iub" and array.size <= SMALL_INT_INPUT and array.ndim <= 1
                    and local not in member.model_inputs):
                found.add(offset + local)
        offset += len(member.arrays)
    return found


_RAN = ("trial-files.json", "trial-feeds.npz")


def _before_running(where: Path, files: Dict[str, str], feeds: Dict[str, np.ndarray]) -> None:
    """The piece's program and inputs, written before a stage that may kill the trial runs them."""
    where.mkdir(parents=True, exist_ok=True)
    (where / _RAN[0]).write_text(json.dumps(files), encoding="utf-8")
    np.savez(where / _RAN[1], **feeds)


def _ran_before_dying(where: Path) -> Tuple[Optional[Dict[str, str]], Optional[Dict[str, np.ndarray]]]:
    """What a trial that died had run (``_before_running``), or nothing."""
    try:
        files = json.loads((where / _RAN[0]).read_text(encoding="utf-8"))
        with np.load(where / _RAN[1]) as data:
            return files, {name: data[name] for name in data.files}
    except (OSError, ValueError):
        return None, None


def _raised(trial: Trial, exc: BaseException, failed: Status, cause: str, engine: Any, known: Sequence[str]) -> Trial:
    """The stage's config raised on the piece: the cause sought reproduces an error; another error
    masks it (neither a reproduction nor clean: the failure sought may be behind it, and the
    descent looks inside); what the harness made itself (its own code raised) says nothing."""
    status, message = raised_status(exc)
    if status is Status.UNTESTABLE:
        trial.untestable = True
        trial.note += f"could not be run alone: {message[:300]}"
        return trial
    found = engine.causes(message)
    trial.reproduces = failed is Status.ERROR and bool(cause) and cause in found
    if trial.reproduces:
        trial.note += "raises the same cause"
        return trial
    other = next((c for c in found if c in known), None)
    trial.masked = other or message[:300]
    trial.note += (f"masked by the cell's other cause ({other})" if other else
                   f"masked: raises otherwise ({message[:300]})")
    return trial


__all__ = ["PieceTrials"]
