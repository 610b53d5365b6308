"""A reproducer per failing stage (cell side): a folder a Paddle developer can run without us.

For the first stage of a cell that failed on numbers or raised, ``<work>/reproducer/`` holds the
saved program and params, the inputs of the shape it failed at, the outputs it was compared with
(numeric failures), and ``repro.py``: a short script using only Paddle's public API and numpy
that builds the same ``paddle.inference.Config`` — the calls are the ones the harness made, in its
order, recorded as it made them (the runtime's ``config_calls``) — feeds the inputs by name and
runs. An error is let through (the script dies with Paddle's own message); a numeric failure is
printed per output (max abs against the allowed difference) and the script exits 1. ``README.md``
says the Paddle version and build, the machine and its oneDNN ISA, the stage's config in words
and the message.

The harness runs the script once in a fresh interpreter and records whether it reproduced:
``verified`` when it exits non-zero with the same cause (the same normalized message) or the same
numeric failure. The program is the smallest piece of the model the reduction found reproducing
(``reduction.py``; README names it), else the whole exported model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import numpy as np

from ...shared.json_types import JsonMapping, JsonObject
from ...shared.runtime import StagePlan
from ...shared.causes import cause_of, death_words
from ...shared.compare import Tolerance
from ...shared.errors import HarnessFailure
from ...shared.machine import label
from ...shared.notes import clip
from ...shared.spec import OUTPUTS
from ...shared.record_model import AnalysisEntry, StageRecord
from ...shared.releases import RunOutcome, outcome as run_outcome
from ...shared.vocab import Analysis, ProgramFormat, Status
from ..base.context import CellContext
from ..base.ledger import Ledger
from . import inline, replay, source_repro
from .formats import by_format
from ..base.registry import runtime

if TYPE_CHECKING:
    from ...runtimes.paddle2onnx.reference import ConversionJudge
from ..stages.ladder import stage_reference

SCRIPT = "repro.py"
TIMEOUT = 300.0


def write_and_verify(ctx: CellContext, plan: StagePlan, done: Ledger) -> JsonObject:
    """The reproducer of stage ``plan``'s failure: on the piece the reduction found (the smallest
    piece: its program, inputs and expected outputs) when there is one, else on the whole model."""
    started = time.perf_counter()
    setup, stage = done.setup, done.stage(plan.name)
    reduced = done.analysis(Analysis.REDUCE)
    piece: Optional[JsonMapping] = reduced.get("piece") if reduced is not None else None
    status = stage.status
    shape = stage.failing_shape or 0
    folder = ctx.work / "reproducer"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    engine = runtime(plan.runtime)
    files = piece["files"] if piece else setup.get("export")
    feeds = dict(np.load(piece["inputs"])) if piece else ctx.feeds(shape)
    np.savez(folder / "inputs.npz", **feeds)
    build = ""
    if piece and piece.get("op_source"):  # one op: the script builds its program itself
        model, params = f"op/model{Path(files['program']).suffix}", ""
        if piece.get("held"):
            shutil.copyfile(piece["held"], folder / "held.npz")
            # The parameters it holds are saved beside its program: a conversion handed no params file
            # writes a graph that reads a name nothing defines (paddle2onnx: "Node input 'eager_tmp_0' is
            # not a graph input", PP-LCNet's block under ORT — the reproducer, not the cell, failed).
            params = "op/model.pdiparams"
        build = _op_build_lines(Path(piece["op_source"]).read_text(encoding="utf-8"), len(feeds), bool(piece.get("held")))
    else:
        model = f"model{Path(files['program']).suffix}"
        _placed(files["program"], folder / model)
        params = ""
        if files.get("params"):
            params = f"model{Path(files['params']).suffix}"
            _placed(files["params"], folder / params)
    run_lines = build + engine.reproducer_lines(model, params, plan.config, files)
    expected = None
    if status is Status.FAIL:
        if piece:
            shutil.copyfile(piece["expected"], folder / "expected.npz")
            reference = plan.reference  # what the reduction held the piece to, as the stage
            tolerances = [ctx.tolerance(plan).to_dict()] * piece["outputs"]
        else:
            labels = setup.output_labels
            reference, arrays, _ = stage_reference(ctx, plan, labels, shape)  # what the stage was compared with
            OUTPUTS.save(folder / "expected.npz", arrays)
            tolerances = [ctx.tolerance(plan, label).to_dict() for label in labels]
        expected = {"reference": str(reference), "tolerances": tolerances}
    (folder / SCRIPT).write_text(_script(engine.reproducer_imports, run_lines, expected), encoding="utf-8")
    shapes = {name: list(array.shape) for name, array in feeds.items()}
    where = reduced if piece else None
    (folder / "README.md").write_text(_readme(ctx, plan, setup, stage, shapes, expected, where), encoding="utf-8")
    run = run_script(folder, ctx.cell.stage_timeout)
    verified = _verified(status, engine.cause_words(stage.message), run)
    judge = engine.conversion_judge(files) if verified else None
    if judge is not None and status is Status.ERROR and judge.converter_said(stage.message):
        judge = None  # the converter's own words already name one cause in every runtime's session
    judged = _conversion_judged(ctx, plan, folder, piece, judge, expected, reduced) if judge else None
    source = _source_reproducer(ctx, plan, done, folder / "source")
    return {"source": source, "status": Status.PASS, "stage": plan.name, "folder": str(folder), "script": str(folder / SCRIPT),
            "shape": shape, "program": "piece" if piece else "model", "path": where.get("path") if where else None,
            "verified": verified, "exit": run["exit"], "last_line": run["last_line"],
            **({"conversion": judged} if judged else {}),
            "seconds": round(time.perf_counter() - started, 3)}


def _placed(source: "str | Path", target: Path) -> None:
    """The exported file in the reproducer's folder: a hard link where the file system allows one (the
    folder stays whole on its own, and a zoo model's weights are not stored twice: 127 MB per
    PP-DocLayout-V3 cell), a copy otherwise. Exports are written once and never changed in place."""
    if target.exists():
        target.unlink()
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _conversion_judged(ctx: CellContext, plan: StagePlan, folder: Path, piece: Optional[JsonMapping],
                       judge: "ConversionJudge", expected: "JsonObject | None",
                       reduced: Optional[AnalysisEntry]) -> Optional[JsonObject]:
    """For a runtime that reads a converter's file: whose bug the verified failure is, judged by the
    format's own reference semantics on the file ``repro.py`` converted, against Paddle's outputs
    (the piece's, when the stage raised on it); None when no converted file or Paddle's outputs of
    the program are at hand."""
    if not (folder / judge.converted).is_file():  # the conversion itself failed: its own words say so
        return None
    if expected is None:  # the stage raised: the piece's Paddle outputs, held at the stage's tolerance
        outputs = piece.get("paddle_outputs") if piece else None
        if not outputs:
            return None
        shutil.copyfile(outputs, folder / "expected.npz")
        expected = {"reference": str(plan.reference), "tolerances": [ctx.tolerance(plan).to_dict()] * piece["outputs"]}
    (folder / judge.script).write_text(judge_script(judge, expected), encoding="utf-8")
    ran = run_script(folder, ctx.cell.stage_timeout, judge.script)
    op = str(reduced.get("op") or "") if reduced is not None and piece else ""
    return {**judge.judged(ran, op), "script": str(folder / judge.script), "op": op, "converter": judge.converter}


def _op_build_lines(source: str, inputs: int, held: bool = False) -> str:
    """The one-op program built by the script: the op's layer (its parameters set from ``held.npz``
    when the model's op read parameters), ``to_static`` + ``jit.save`` to ``op/``."""
    body = source.split("import paddle\n", 1)[-1].strip("\n")
    setting = textwrap.dedent("""
        # The model's parameters the op read, as they were (a parameter, not a feed: passes fold them).
        for name, value in np.load(os.path.join(here, "held.npz")).items():
            getattr(layer, name).set_value(paddle.to_tensor(value))
        """) if held else ""
    return textwrap.dedent("""
        # The program: one op (or adjacent ops), as the model's forward called it, built here with Paddle's static API.
        import paddle

        """) + body + textwrap.dedent(f"""

        spec = [paddle.static.InputSpec(list(inputs[f"in{{k}}"].shape), str(inputs[f"in{{k}}"].dtype), f"in{{k}}")
                for k in range({inputs})]
        layer = OneOp()
        layer.eval()
        """) + setting + textwrap.dedent("""
        paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), os.path.join(here, "op", "model"))

        """)


REPRODUCER_ABOUT = ("Reproducer written by the Paddle qualification harness: the runtime's public API and numpy only.\n"
                    "Run it with the Python of the stage's environment: python repro.py (exits non-zero when it reproduces).")
JUDGE_ABOUT = ("Whose bug repro.py's failure is, written by the Paddle qualification harness: the file repro.py\n"
               "converted, judged by the format's own reference semantics against Paddle's outputs. Run repro.py first.\n"
               "Exits 1 (MISMATCH) or 3 (invalid) when the converted file itself is wrong: the converter's bug;\n"
               "0 when the file computes what Paddle computes: the runtime's.")


def judge_script(judge: "ConversionJudge", expected: JsonObject) -> str:
    """The script that judges a converted file against Paddle's outputs (``expected``: reference and
    tolerances, as a reproducer's): run beside ``repro.py``, after it."""
    return _script(judge.imports, "\n".join(judge.lines()) + "\n", expected, JUDGE_ABOUT)


def _script(imports: str, run_lines: str, expected: "JsonObject | None", about: str = REPRODUCER_ABOUT) -> str:
    """The script: the runtime's own calls (``run_lines`` set ``names`` and ``outputs``), then the
    comparison with what the stage was compared with, or the error let through."""
    compare = ""
    if expected is not None:
        tolerances = json.dumps(expected["tolerances"])
        compare = textwrap.dedent(f'''
            # Compared with what the stage was compared with ({expected["reference"]} outputs), element-wise:
            # |got - ref| <= atol + scaled_atol * max|ref| + rtol * |ref|
            tolerances = {tolerances}
            ref = np.load(os.path.join(here, "expected.npz"))
            ''') + compare_code()
    return f'"""{about}"""\n' + textwrap.dedent('''\
        import os
        import sys

        import numpy as np
        ''') + imports + textwrap.dedent('''
        here = os.path.dirname(os.path.abspath(__file__))
        inputs = np.load(os.path.join(here, "inputs.npz"))
        ''') + run_lines + (compare or 'print("ran without error: not reproduced")\n')


def compare_code() -> str:
    """Every output (``names``, ``outputs``) against ``ref[o<i>]`` at ``tolerances[i]``; exits 1 on a
    mismatch (\"MISMATCH: reproduced\"), 0 otherwise."""
    return textwrap.dedent(f'''
            failed = False
            for i, (name, got) in enumerate(zip(names, outputs)):
                want = ref[f"o{{i}}"]
                tol = tolerances[i]
                if got.shape != want.shape:
                    print(f"output {{i}} ({{name}}): shape {{got.shape}}, expected {{want.shape}}")
                    failed = True
                    continue
                got64, want64 = got.astype("float64"), want.astype("float64")
                diff = np.abs(got64 - want64)
                allowed = {Tolerance.ALLOWED_CODE}
                # NaN matches only NaN and an infinity only the same infinity: a NaN difference is
                # never "within" (``diff > allowed`` is False for NaN, which would pass it).
                same = (np.isnan(got64) & np.isnan(want64)) | (np.isinf(want64) & (got64 == want64))
                bad = int((~((diff <= allowed) | same)).sum())
                worst = np.where(same, 0.0, diff)
                shown = float("nan") if np.isnan(worst).any() else float(worst.max(initial=0.0))
                print(f"output {{i}} ({{name}}): max abs {{shown:.6g}}, {{bad}}/{{diff.size}} beyond the tolerance")
                failed = failed or bad > 0
            print("MISMATCH: reproduced" if failed else "match: not reproduced")
            sys.exit(1 if failed else 0)
            ''')


def _readme(ctx: CellContext, plan: StagePlan, setup: StageRecord, stage: StageRecord,
            shapes: Dict[str, List[int]], expected: "JsonObject | None", where: Optional[AnalysisEntry]) -> str:
    paddle_info = setup.get("paddle") or {}
    machine = setup.get("machine")
    what = (f"Paddle raises: `{clip(stage.message, 400)}`" if expected is None else
            f"The outputs differ from the {expected['reference']} outputs beyond the {plan.precision} tolerance: "
            f"{clip(stage.message, 300)}")
    return textwrap.dedent(f"""\
        # Reproducer: {ctx.cell.id}, stage `{plan.name}`

        {what}

        * Paddle {paddle_info.get('version')} (commit {paddle_info.get('commit')}), CUDA {paddle_info.get('cuda') or 'none'},
          TensorRT {paddle_info.get('tensorrt') or 'none'}
        * Machine: {label(machine)}
        * Program: {_program_words(setup, where)}, inputs {shapes}
        * Stage `{plan.name}`: {plan.lever}; config {json.dumps(plan.config.to_dict())}

        Run: `python repro.py` with the Python of the stage's Paddle {paddle_info.get('version')} environment. It
        makes the same runtime calls the harness made (in its order), feeds `inputs.npz` by name and runs; it
        exits non-zero when the failure reproduces.
        """)


def _program_words(setup: StageRecord, where: Optional[AnalysisEntry]) -> str:
    export = setup.get("export")
    whole = f"`{Path(export['program']).name}` ({export['format']})"
    if where is None or not where.get("piece"):
        return f"the whole model, {whole}"
    if where.get("piece").get("op_source"):
        return (f"one op alone, `{where.get('op_call')}`, as the model's forward called it (in `{where.get('path') or 'the model'}`); "
                f"the script builds its program itself (`op/`), no params file")
    members = ", ".join(f"`{m}`" for m in where.get("members") or []) or f"`{where.get('path')}`"
    return (f"the smallest piece of the model that reproduces — {members} ({where.get('layer')}), exported alone "
            f"on the inputs it had in the model's dygraph forward; its op types: "
            f"{', '.join(sorted(where.get('op_types') or {})) or 'not recorded'}")


def _source_reproducer(ctx: CellContext, plan: StagePlan, done: Ledger, folder: Path) -> JsonObject:
    """The stage's failure as a source reproducer (``source_repro.py``), run once here: it must
    reproduce at this release as the program reproducer does, or it is not ``verified``.

    The smallest first: the reduction's op program (Paddle alone: no suite, runs at every release
    that has its calls); where it does not reproduce at the cell's own release, the piece, else the
    whole model, rebuilt from their classes (``smaller`` says what the smaller one said)."""
    if not ctx.mode.reducible:  # the reduction's own criterion: the mode converts the model as it exports
        if ctx.mode.SCRIPT_PREPARE is None or ctx.mode.SCRIPT_EXPORT is None:
            return {"why": f"not written: train mode {ctx.cell.mode} converts the model when it exports and has no "
                           f"script form; the program reproducer replays the program that failed"}
        return _mode_source(ctx, plan, done, folder)
    smaller = None
    reduced = done.analysis(Analysis.REDUCE)
    piece = (reduced.get("piece") or {}) if reduced is not None else {}
    if piece.get("op_source"):
        held = dict(np.load(piece["held"])) if piece.get("held") else {}
        built = source_repro.op_program(ctx.paddle, Path(piece["op_source"]).read_text(encoding="utf-8"), held,
                                        dict(np.load(piece["inputs"])), f"{reduced.get('op')}, as the model called it")
        tried = _source_written(ctx, plan, done, folder, built, [ctx.tolerance(plan).to_dict()] * max(1, piece.get("outputs") or 1))
        if tried.get("verified"):
            return dict(tried, program="ops", larger=_larger(ctx, plan, done, folder / "larger", reduced))
        smaller = {k: tried.get(k) for k in ("what", "outcome", "last_line")}
    try:
        built, tolerances = _source_of_piece_or_model(ctx, plan, done, reduced)
    except (source_repro.Unspellable, HarnessFailure) as why:  # the program reproducer above stands either way
        return {"why": f"not written: {why}", **({"smaller": smaller} if smaller else {})}
    tried = _source_written(ctx, plan, done, folder, built, tolerances)
    standalone = _standalone(ctx, plan, done, folder / "standalone", reduced) if tried.get("verified") else None
    return dict(tried, program="piece" if reduced is not None and reduced.get("source_piece") else "model",
                **({"smaller": smaller} if smaller else {}), **({"standalone": standalone} if standalone else {}))


def _mode_source(ctx: CellContext, plan: StagePlan, done: Ledger, folder: Path) -> JsonObject:
    """A quantization mode's stage failure from source: the factory's model at the cell's seed, prepared,
    trained and exported the mode's way (its own calls), its fake-quant dygraph outputs the reference,
    the export run with the stage's calls — the program the cell made, made again from the model's
    classes by the Paddle that runs the script. The whole model: the mode converts it whole."""
    from ...models import sources
    from ..base.modes import script_training

    setup, stage = done.setup, done.stage(plan.name)
    try:
        layer, input_spec = sources.build(ctx.cell.model["factory"], ctx.paddle, ctx.cell.seed, f"{ctx.where}.factory")
        built = source_repro.whole_model(ctx.paddle, layer, input_spec, ctx.feeds(stage.failing_shape or 0))
    except (source_repro.Unspellable, HarnessFailure) as why:
        return {"why": f"not written: {why}"}
    built.setup = replay.factory_setup(ctx.paddle, ctx.cell.model["factory"])
    built.how = f"built by its factory at the cell's seed, prepared for {ctx.cell.mode} and trained as the cell trained it"
    built.writer.lazy_annotations = True  # the harness's lite_train, copied in, is annotated with its types
    built.trained = script_training(ctx.cell.train_steps, ctx.cell.seed, ctx.mode) + textwrap.dedent('''\
        layer.eval()
        with paddle.no_grad():  # the reference: the mode's own dygraph model (fake-quant), trained
            dygraph = layer(*[paddle.to_tensor(inputs[name]) for name in feed_names])
        ''')
    built.exported = ctx.mode.SCRIPT_EXPORT
    tolerances = [ctx.tolerance(plan, label).to_dict() for label in setup.output_labels] or [ctx.tolerance(plan).to_dict()]
    return dict(_source_written(ctx, plan, done, folder, built, tolerances), program="model")


def _standalone(ctx: CellContext, plan: StagePlan, done: Ledger, folder: Path, reduced: Any) -> JsonObject:
    """The same piece (or model) with its suite's source written in (``inline.py``): a script that
    imports Paddle, numpy and the standard library only. Written, not run here (``verified`` None):
    ``releases`` runs it at the cell's own release, minimizes it (``minimize.py``) and asks every
    release with it, the suite's releases or not."""
    try:
        built, tolerances = _source_of_piece_or_model(ctx, plan, done, reduced, inline.StandaloneWriter(ctx.paddle))
        written = _source_written(ctx, plan, done, folder, built, tolerances, run_it=False)
        foreign = inline.foreign_imports(Path(written["script"]).read_text(encoding="utf-8"))
    except (source_repro.Unspellable, HarnessFailure) as why:
        return {"why": f"not written: {why}"}
    except Exception as exc:  # the writer's own bug (a script that does not parse): the harness's gap, said
        return inline.writer_failed(exc)
    if foreign:
        return {"why": f"not written: it would still import {', '.join(foreign[:3])}"}
    return dict(written, program="inlined")


def _larger(ctx: CellContext, plan: StagePlan, done: Ledger, folder: Path, reduced: Any) -> JsonObject:
    """The piece (else the model) in source beside a verified op-level one: what ``releases`` asks at a
    release where the op program cannot be asked (a form that release does not build or load).
    Written, not run here (``verified`` None): ``releases`` runs it at the cell's own release first,
    only for a cause that needs it — a run of a fresh interpreter per failing cell saved."""
    try:
        built, tolerances = _source_of_piece_or_model(ctx, plan, done, reduced)
    except (source_repro.Unspellable, HarnessFailure) as why:
        return {"why": f"not written: {why}"}
    written = dict(_source_written(ctx, plan, done, folder, built, tolerances, run_it=False),
                   program="piece" if reduced is not None and reduced.get("source_piece") else "model")
    # Beside it, the same with the suite's source written in: asked where the suite does not install
    # (PaddleX from Paddle 3.0 on), so a release the op program cannot run is asked all the same.
    standalone = _standalone(ctx, plan, done, folder / "standalone", reduced)
    return dict(written, standalone=standalone) if standalone.get("script") else written


def _source_of_piece_or_model(ctx: CellContext, plan: StagePlan, done: Ledger, reduced: Any, writer: Any = None):
    """The reduction's piece (else the whole model) rebuilt from its classes, and its tolerances;
    ``writer``: how its classes are spelled (``source_repro.Writer`` by default)."""
    from ..setup.rebuild import model_and_spec

    setup, stage = done.setup, done.stage(plan.name)
    chosen = reduced.get("source_piece") if reduced is not None else None
    model, input_spec, _ = model_and_spec(ctx, setup)
    if chosen:
        layers = dict(model.named_sublayers())
        members = [layers[path] if path else model for path in chosen["members"]]
        feeds = dict(np.load(chosen["inputs"]))
        what = f"the piece {', '.join(chosen['members'])} of {ctx.cell.model['name']}"
        built = source_repro.piece(ctx.paddle, Path(chosen["module"]).read_text(encoding="utf-8"), members, feeds, what,
                                   writer)
        built.setup = replay.factory_setup(ctx.paddle, ctx.cell.model["factory"])
        return built, [ctx.tolerance(plan).to_dict()]
    built = source_repro.whole_model(ctx.paddle, model, input_spec, ctx.feeds(stage.failing_shape or 0), writer)
    built.setup = replay.factory_setup(ctx.paddle, ctx.cell.model["factory"])
    triage = done.analysis(Analysis.TRIAGE)
    fresh = ((triage.get("export") or {}).get("fresh_export") or {}) if triage is not None else {}
    # The setup's last eager call before the export: its last shape variant's reference (else the first shape's).
    last_eager = max([int(v.get("index") or 0) for v in setup.get("shape_variants") or []], default=0)
    if fresh.get("agrees") is True and last_eager != (stage.failing_shape or 0):
        # It depends on an earlier eager call: the export traced what that call left (PaddleSpeech's
        # self.attn), at another shape than the failing one; the script makes that call.
        built.eager = ctx.feeds(last_eager)
    return built, ([ctx.tolerance(plan, label).to_dict() for label in setup.output_labels]
                   or [ctx.tolerance(plan).to_dict()])


def _source_written(ctx: CellContext, plan: StagePlan, done: Ledger, folder: Path, built: Any,
                    tolerances: List[JsonObject], run_it: bool = True) -> JsonObject:
    """``built`` written as the source reproducer in ``folder`` (anew) and run once here (unless
    ``run_it`` is False: then ``verified`` is None, for whoever runs it first)."""
    setup, stage = done.setup, done.stage(plan.name)
    engine = runtime(plan.runtime)
    numeric = stage.status is Status.FAIL
    if folder.exists():
        shutil.rmtree(folder)
    # The stage as the harness plans it for the format the running Paddle exports (.json on 3.x,
    # .pdmodel on 2.6): the same stage, the calls that exist for that program.
    export = setup.get("export")
    per_format = {}
    for fmt in (ProgramFormat.PIR, ProgramFormat.LEGACY):
        same = next((p for p in ctx.plan_for(fmt) if p.name == plan.name and p.skip is None), None)
        per_format[fmt.value] = (engine.reproducer_lines(source_repro.MODEL_PLACEHOLDER, source_repro.PARAMS_PLACEHOLDER,
                                                         same.config, {**export, "format": fmt.value})
                                 if same is not None else None)
    run_lines = by_format(per_format, plan.name)
    compare = compare_code() if numeric else 'print("ran without error: not reproduced")\n'
    source_repro.write(folder, built, run_lines, engine.reproducer_imports, tolerances, compare)
    key = engine.cause_words(stage.message)
    if not run_it:
        return {"folder": str(folder), "script": str(folder / source_repro.SCRIPT), "what": built.what,
                "verified": None, "cause_words": key, "numeric": numeric}
    run = run_script(folder, ctx.cell.stage_timeout, source_repro.SCRIPT)
    outcome, line = run_outcome(run["exit"], run["output"], key, numeric)
    return {"folder": str(folder), "script": str(folder / source_repro.SCRIPT), "what": built.what,
            "verified": outcome is RunOutcome.REPRODUCED, "outcome": outcome.value, "last_line": line,
            "cause_words": key, "numeric": numeric}


def run_script(folder: Path, timeout: float, script: str = SCRIPT) -> JsonObject:
    try:
        proc = subprocess.run([sys.executable, script], cwd=folder, capture_output=True, text=True,
                              timeout=min(timeout, TIMEOUT), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"exit": None, "last_line": f"ran over {min(timeout, TIMEOUT):g} s", "output": ""}
    output = (proc.stdout or "") + (proc.stderr or "")
    (folder / Path(script).with_suffix(".log").name).write_text(output, encoding="utf-8")
    # The script's verdict is its last stdout line; an error is the last line of stderr.
    out = [ln for ln in (proc.stdout or "").splitlines() if ln.strip()]
    err = [ln for ln in (proc.stderr or "").splitlines() if ln.strip() and not ln.lstrip().startswith("\x1b")]
    last = out[-1] if out and ("MISMATCH" in out[-1] or "not reproduced" in out[-1]) else (err[-1] if err else "")
    # A script a signal killed is said as its worker was: the signal and Paddle's innermost frame.
    return {"exit": proc.returncode, "last_line": death_words(proc.returncode, output) or last, "output": output}


def _verified(status: Status, key: str, run: JsonObject) -> bool:
    """``key``: the words of the stage's cause the runtime says its own script prints; a stage that
    killed its worker ("worker died with SIGSEGV in <frame>"), the script dying the same way."""
    if not run["exit"]:
        return False
    if status is Status.FAIL:
        return "MISMATCH: reproduced" in run["output"]
    if status is Status.CRASH:
        died = death_words(run["exit"], run["output"])
        return bool(died) and bool(key) and key.removeprefix("worker ") in died
    return bool(key) and key in cause_of(run["output"])


def first_failing(plans: List[StagePlan], done: Ledger) -> "StagePlan | None":
    """The first stage that failed on numbers, raised or killed its worker (the baseline included)."""
    for plan in plans:
        if done.status(plan.name) in (Status.FAIL, Status.ERROR, Status.CRASH):
            return plan
    return None


__all__ = ["write_and_verify", "first_failing", "judge_script", "run_script"]
