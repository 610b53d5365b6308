"""An issue draft per cause (host side): ``issue.md`` beside the reproducer that stands for the
cause, in the shape Paddle's bug-report template asks for — a title naming the op (else the layer)
and the backend, the bug described with what was expected and what happened, the reproducer (its
script inline when short), the versions at which the same cells pass, what the harness found (layer,
op, culprit pass) as context, and the environment (Paddle version and commit, CPU and oneDNN ISA,
Python, OS).

Written from the records each time a report is made (a cell's rerun replaces its reproducer folder,
draft included), for causes whose reproducer was verified: a draft with a reproducer that does not
reproduce is not something to file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
import re
from typing import List, Optional, Sequence, Tuple

from ..shared.json_types import JsonObject
from ..shared.causes import at_word, names_its_call, run_words
from ..shared.machine import label as machine_label
from ..shared.notes import clip, fmt_number
from ..shared.vocab import SETUP, Owner, Status
from ..shared.record_model import CellRecord
from ..shared.releases import ReleaseSpan
from .model import DRAFT, Diagnosis, RunModel, VersionSpan

# A script up to this many lines goes into the draft inline.
INLINE_LINES = 80
SOURCE_INLINE_LINES = 140  # the source reproducer carries the model's classes


def write_all(model: RunModel) -> List[Path]:
    """A draft for each distinct cause and each numeric failure whose reproducer was verified."""
    written: List[Path] = []
    seen = set()
    items = [(model.diagnosis(c), c.message, c.kind, model.version_span(c.places), c.places) for c in model.causes()]
    # A converter's cause is one draft for every cell that met it: their numeric failures are in it.
    items += [(f.diagnosis, f"{f.output}: max abs {fmt_number(f.max_abs)} beyond the tolerance", Status.FAIL.value,
               model.numeric_span(f), [f.place]) for f in model.numeric_failures()
              if model.converter_cause(f.place, f.stage) is None]
    for diagnosis, message, kind, span, places in items:
        repro = diagnosis.reproducer if diagnosis else None
        if not repro or not repro.verified or diagnosis.script in seen:
            continue
        seen.add(diagnosis.script)
        record = _record_of(model, diagnosis.script)
        if record is None:
            continue
        path = Path(diagnosis.script).parent / DRAFT
        text = (converter_draft(record, diagnosis, message, places) if kind == Owner.CONVERTER.value else
                draft(record, diagnosis, message, kind, span, places))
        # A draft is filed elsewhere: a runtime's words name the file it read from this machine's run folder.
        path.write_text(run_words(text, record.run) if record.run is not None else text, encoding="utf-8")
        diagnosis.draft = str(path)
        written.append(path)
    # A draft left beside a reproducer that no longer stands for a cause (its cause is now drafted
    # beside another cell's, or its reproducer stopped reproducing) is not something to file.
    for record in model.records:
        repro = record.analysis.reproducer
        stale = record.located(repro.script).parent / DRAFT if repro is not None and repro.script else None
        if stale is not None and stale not in written and stale.is_file():
            stale.unlink()
    return written


def _record_of(model: RunModel, script: str) -> Optional[CellRecord]:
    """The record whose reproducer is ``script`` (as the diagnosis resolved it)."""
    return next((r for r in model.records if r.analysis.reproducer is not None
                 and str(r.located(r.analysis.reproducer.script)) == script), None)


def draft(record: CellRecord, diagnosis: Diagnosis, message: str, kind: str, span: Optional[VersionSpan],
          places: Sequence[str] = ()) -> str:
    paddle = record.paddle
    stage = next((s for s in record.stages if s.name == diagnosis.stage), None)
    session = record.session
    reduce = record.analysis.reduction
    exported = diagnosis.stage == SETUP  # the model's own export raised or its training died: no predictor was made
    trained = exported and record.setup.get("phase") == "train"
    subject = ("the model's lite training in dygraph" if trained else "the model's export (paddle.jit.save)" if exported
               else f"{diagnosis.stage}: {place_of(diagnosis, reduce)}")
    raised = kind != Status.FAIL.value
    lost = export_loss(record, diagnosis.stage) if not raised else None
    if lost is not None:  # the export's bug: the program against the Python forward, not a predictor's config
        return _export_draft(record, diagnosis, message, lost, places)
    said = clip(first_line(message), 120)
    # "predictor.run() raised ..." already says what raised: not "raises predictor.run() raised".
    what = (said.replace("worker died", "dies", 1) if _death(message) else
            f"fails: {said}" if names_its_call(message) else f"raises {said}") if raised else \
        "gives different numbers from the unoptimized predictor"
    culprits = _culprits(record, diagnosis.stage)
    script = Path(diagnosis.script)
    text = script.read_text(encoding="utf-8") if script.is_file() else ""
    lines = [
        title(session, subject, message if raised else "", culprits, paddle.get("version"), record.analysis.releases),
        "",
        "### Describe the Bug",
        "",
        ("Training the model in dygraph (a train-mode pass, then Adam steps towards seeded targets: forward, "
         f"`backward()`, `optimizer.step()`) {what}." if trained else
         f"Exporting the model (`paddle.jit.save` with its InputSpecs, after it ran in dygraph) {what}." if exported else
         f"With the inference config of stage `{diagnosis.stage}` ({(stage.get('lever') if stage else '') or 'see the script'}), "
         f"{'creating or running the predictor' if raised else 'the predictor'} {what}."),
        "",
        "**Expected**: " + ("the training steps end (the script prints \"trained: not reproduced\")." if trained else
                            "the model exports, as it runs in dygraph." if exported else
                            "the predictor runs, as it does with all optimizations off." if raised else
                            "the same outputs as with all optimizations off, within the tolerance in the script."),
        "",
        "**Actual**:",
        "",
        "```",
        clip(message, 1500),
        "```",
        "",
    ]
    lines += _to_reproduce(record, script, text)
    releases = record.analysis.releases
    lines += ["**Versions**: " + (_release_words(releases) if releases is not None else
                                  span.words() if span and span.words() else
                                  f"seen at Paddle {paddle.get('version')} (no other version ran this cell; "
                                  f"`python -m harness releases` places it among the releases)"), ""]
    workaround = record.analysis.get("workaround")
    if workaround is not None and workaround.stage == diagnosis.stage and workaround.get("verified"):
        speed = workaround.get("speed") or {}
        lines += [f"**Workaround (verified)**: `{'; '.join(workaround.get('change_lines') or [workaround.get('change')])}` "
                  f"— the stage passes with it at every shape the cell runs ({workaround.get('shapes')}); latency "
                  f"{speed.get('with_ms')} ms against {speed.get('against_ms')} ms for {speed.get('against')} "
                  f"(ratio {speed.get('ratio')}). `python -m harness workarounds` writes it as Config lines and "
                  f"PaddleX's hpi_config.", ""]
    elif culprits:
        lever = "; ".join(f'config.delete_pass("{c}")' for c in culprits)
        lines += [f"**A change to try**: `{lever}` — the culprit search found that the stage "
                  f"{'no longer raises' if raised else 'matches'} with it (not yet verified as a workaround "
                  f"at every shape, nor what else it changes).", ""]
    if len(places) > 1:
        lines += [f"**Met in** {len(places)} cells: " + ", ".join(f"`{p}`" for p in places), ""]
    # Names relative to the draft's folder: a draft carries no path of this machine.
    found = dataclasses.replace(diagnosis, draft="", script=script.name).words()
    context = [f"- where: {found}"] if found else []
    if reduce is not None and reduce.op_api:
        context.append("- the op alone, as the model's forward called it: " + "; ".join(f"`{c}`" for c in reduce.op_api))
        context.append("- as PaddleAPITest config lines (Paddle's API checker replays them): "
                       + "; ".join(f"`{c}`" for c in reduce.api_config))
    if reduce is not None and reduce.op_call:
        context.append(f"- the op alone: `{reduce.op_call}`")
    lines += ["### Additional Supplementary Information", "", *context, *_environment(record)]
    return "\n".join(lines)


def export_loss(record: CellRecord, stage: str) -> Optional[List[JsonObject]]:
    """What the exported program lacks of the forward (``cell/explain/export_loss``), when the triage
    put ``stage``'s numeric failure on the export; None otherwise."""
    triage = record.analysis.get("triage")
    if triage is None or triage.outcome != "export" or triage.stage != stage:
        return None
    return list((triage.get("export") or {}).get("lost") or []) or None


def lost_words(lost: Sequence[JsonObject]) -> Tuple[str, str, List[str]]:
    """The lost statement first: the op that wrote what the model returns (``lost[0]``) with its line
    and the branch before it, then the ops lost from under the same branch; the rest are consequences.
    Returns (the title's words, the description's sentence, the consequences' op names)."""
    head = lost[0]
    at = (head.get("at") or [""])[0]
    branch = head.get("context") or ""
    statement = f"`{head['line']}`" if head.get("line") else f"`{head['op']}`"
    beside = [e for e in lost[1:] if branch and e.get("context") == branch]
    rest = [e["op"] for e in lost[1:] if e not in beside]
    counts = f"{head.get('dygraph')} call(s) in dygraph, {head.get('program')} in the program"
    title_words = f"loses `{head['op']}` ({at}{', ' + branch.split(' (')[0] if branch else ''})"
    sentence = (f"the program lacks `{head['op']}`: {statement} at {at} ({counts})"
                + (f", {branch}" if branch else "")
                + (f"; from under the same branch it lacks " + ", ".join(f"`{e['op']}`" for e in beside) if beside else ""))
    return title_words, sentence, rest


def _export_draft(record: CellRecord, diagnosis: Diagnosis, message: str, lost: Sequence[JsonObject],
                  places: Sequence[str]) -> str:
    """An export bug, in its own terms: the exported program against the Python forward, the statement
    it lost first (the branch, then the ops under it), the consequences last."""
    paddle = record.paddle
    script = Path(diagnosis.script)
    text = script.read_text(encoding="utf-8") if script.is_file() else ""
    title_words, sentence, rest = lost_words(lost)
    releases = record.analysis.releases
    since = (f"since Paddle {releases.first_bad}" if releases is not None and releases.last_good and releases.first_bad
             else f"Paddle {paddle.get('version')}")
    lines = [
        f"# [export] paddle.jit.save {title_words} ({since})", "",
        "### Describe the Bug", "",
        f"The model ran in dygraph, then `paddle.jit.save` exported it: {sentence}. Run on the same inputs, the "
        f"program's outputs differ from the model's Python forward (dygraph).", "",
        "**Expected**: the exported program computes what the Python forward computes, within the tolerance in "
        "the script.", "",
        "**Actual**:", "", "```", clip(message, 1500), "```", "",
    ]
    if rest:
        lines += ["**Consequences** (further from the cause): the program also lacks "
                  + ", ".join(f"`{op}`" for op in rest) + ".", ""]
    lines += _to_reproduce(record, script, text)
    lines += ["**Versions**: " + (_release_words(releases) if releases is not None else
                                  f"seen at Paddle {paddle.get('version')} (no other version ran this cell; "
                                  f"`python -m harness releases` places it among the releases)"), ""]
    if len(places) > 1:
        lines += [f"**Met in** {len(places)} cells: " + ", ".join(f"`{p}`" for p in places), ""]
    found = dataclasses.replace(diagnosis, draft="", script=script.name).words()
    lines += ["### Additional Supplementary Information", "", *([f"- where: {found}"] if found else []),
              *_environment(record)]
    return "\n".join(lines)


def _environment(record: CellRecord) -> List[str]:
    """What a draft says of where it was found: Paddle and its build, the CPU, Python and the OS, the cell."""
    paddle, machine = record.paddle, record.machine
    return [f"- Paddle {paddle.get('version')} (commit {paddle.get('commit')}), CUDA {paddle.get('cuda') or 'none'}, "
            f"TensorRT {paddle.get('tensorrt') or 'none'}",
            f"- CPU: {machine_label(machine)}",
            f"- Python {machine.get('python') or '?'}; OS {machine.get('os') or '?'} (kernel {machine.get('kernel') or '?'}, "
            f"{machine.get('libc') or '?'})",
            f"- found by the qualification harness, cell `{record.id}`", ""]


def converter_draft(record: CellRecord, diagnosis: Diagnosis, message: str, places: Sequence[str]) -> str:
    """The draft of a converter's bug, addressed to the converter: the op it converts into a file
    whose own semantics (the format's reference evaluator) differ from Paddle's, or that is not valid,
    met by every runtime session listed; the reproducer, then the judging script."""
    repro = record.analysis.reproducer
    judged = repro.conversion
    reduce = record.analysis.reduction
    converter, op = judged.get("converter") or "the converter", judged.get("op") or "the op"
    script = Path(diagnosis.script)
    judge = script.parent / Path(str(judged.get("script") or "")).name
    sessions = sorted({p.split("/")[0] for p in places})
    called = "; ".join(f"`{c}`" for c in reduce.op_api) if reduce is not None and reduce.op_api else f"`{op}`"
    log = judge.with_suffix(".log")
    judged_said = log.read_text(encoding="utf-8").strip() if log.is_file() else message
    lines = [
        f"# [{converter}] {op} converted into ONNX that does not compute what Paddle computes "
        f"(met by {', '.join(sessions)}; Paddle {record.paddle.get('version')})",
        "",
        "### Describe the Bug",
        "",
        f"{message} (the op as a model calls it: {called}). Every runtime that read the converted file met it: "
        + ", ".join(f"`{s}`" for s in sessions) + ".",
        "",
        "**Expected**: the converted file computes what Paddle computes (ONNX's reference evaluator on it within the "
        "tolerance in the script), as valid ONNX.",
        "",
        "**Actual** (`python onnx_reference.py`):",
        "",
        "```",
        judged_said[-1500:],
        "```",
        "",
        f"**To reproduce**: `python {script.name}` (the failing program — the op's, built with Paddle's public API, "
        f"or the piece's — converted with {converter} and run as the session did; exits non-zero when it reproduces), then `python "
        f"{judge.name}` (the file it converted, judged by `onnx.checker` and `onnx.reference.ReferenceEvaluator`; "
        f"exits non-zero when the file itself is wrong).",
        "",
    ]
    text = judge.read_text(encoding="utf-8") if judge.is_file() else ""
    if text and len(text.splitlines()) <= INLINE_LINES:
        lines += [f"`{judge.name}`:", "", "```python", text.rstrip("\n"), "```", ""]
    if len(places) > 1:
        lines += [f"**Met in** {len(places)} cells: " + ", ".join(f"`{p}`" for p in places), ""]
    releases = record.analysis.releases
    if releases is not None:
        lines += [f"**Versions**: {_release_words(releases)}", ""]
    lines += ["### Additional Supplementary Information", "", f"- {converter}", *_environment(record)]
    return "\n".join(lines)


def _to_reproduce(record: CellRecord, script: Path, text: str) -> List[str]:
    """The source reproducer inline (it runs at any release), the program reproducer beside it."""
    source = record.analysis.reproducer.source if record.analysis.reproducer is not None else None
    source_path = record.located(source.script) if source is not None and source.verified and source.script else None
    if source_path is not None and source_path.is_file():
        code = source_path.read_text(encoding="utf-8")
        where = source_path.relative_to(script.parent).as_posix() if source_path.is_relative_to(script.parent) \
            else source_path.name
        built = ("written in Paddle's public API with the tensors it was fed (inputs in `inputs.npz`, the model's "
                 "parameters it read in `weights.npz`; no other package)" if source.needs_no_suite else
                 "rebuilt from its classes with the weights it had (`weights.npz`, inputs in `inputs.npz` beside it)")
        done = "trained" if record.setup.get("phase") == "train" and source.program == "model" else "exported"
        lines = [f"**To reproduce** (any Paddle release): `python {where}` — {source.what}, {built}, {done} "
                 f"by the Paddle that runs it; it exits non-zero when the bug reproduces."
                 + (" The script:" if len(code.splitlines()) <= SOURCE_INLINE_LINES else ""), ""]
        if len(code.splitlines()) <= SOURCE_INLINE_LINES:
            lines += ["```python", code.rstrip("\n"), "```", ""]
        if source_path == script:  # a setup's reproducer: no saved program to replay
            return lines
        return lines + [f"The saved program this release wrote replays it too: `python {script.name}` (this "
                        f"release's program format only).", ""]
    lines = ["**To reproduce**: `python repro.py` in the folder of this file (inputs in `inputs.npz`; it exits "
             "non-zero when the bug reproduces)." + (" The script:" if text and len(text.splitlines()) <= INLINE_LINES
                                                     else ""), ""]
    if text and len(text.splitlines()) <= INLINE_LINES:
        lines += ["```python", text.rstrip("\n"), "```", ""]
    return lines


def _release_words(span: ReleaseSpan) -> str:
    tried = ", ".join(f"{t.version} {t.outcome.value.replace('_', ' ')}" for t in span.tried)
    return (f"{span.words()} — the source reproducer run at the releases the package index serves "
            f"({len(span.releases)}), bisected, {span.confirmations} runs on each side of the boundary: {tried}")


TITLE_WORDS = 110  # characters of Paddle's words a title keeps, cut at a word


def title(session: str, subject: str, error: str, culprits: Sequence[str], version: Optional[str],
          releases: Optional[ReleaseSpan] = None) -> str:
    """``[session] <op or layer> raises <error> under <pass> (Paddle X)``: the words cut at a word
    boundary (never mid-word), the culprit pass named when the search found one."""
    said = at_word(_without_source(first_line(error)), TITLE_WORDS)
    # "predictor.run() raised ..." already says what raised: not "raises predictor.run() raised".
    what = ("gives different numbers" if not error else said.replace("worker died", "dies", 1) if _death(error) else
            f"fails: {said}" if names_its_call(error) else f"raises {said}")
    under = f" under {', '.join(culprits)}" if culprits else ""
    since = (f"since Paddle {releases.first_bad}" if releases is not None and releases.last_good and releases.first_bad
             else f"Paddle {version}")
    return f"# [{session}] {subject} {what}{under} ({since})"


def _death(message: str) -> bool:
    """A worker a signal killed (``causes.death_words``): said as the process dying, not raising."""
    return message.startswith("worker died with ")


def place_of(diagnosis: Diagnosis, reduce: Optional[object]) -> str:
    """What fails, as far as the analysis placed it: the op in its layer, the layer, else the model.
    Never an analysis's status (a reduction that did not end is said in the draft's body)."""
    op = getattr(reduce, "op", None) if getattr(reduce, "op_call", None) else None
    if op and diagnosis.layer:
        return f"{op} in {diagnosis.layer}"
    return op or diagnosis.layer or "the model"


def _without_source(error: str) -> str:
    """Paddle's words without its ``(at /paddle/...cc:N)`` suffix: the file says nothing to a title."""
    return re.sub(r"\s*\(at [^)]*\)\s*$", "", error).strip().rstrip(".")


def _culprits(record: CellRecord, stage: str) -> List[str]:
    """The passes the culprit search found for ``stage`` (what a change to try switches off)."""
    search = record.analysis.get("bisect")
    if search is None or search.stage != stage or search.get("kind") != "passes":
        return []
    return list(search.get("culprits") or [])


def first_line(message: str) -> str:
    return (message or "").strip().splitlines()[0] if (message or "").strip() else ""


__all__ = ["write_all", "draft", "INLINE_LINES"]
