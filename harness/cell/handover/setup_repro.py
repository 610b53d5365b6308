"""Reproducers of a setup that failed: the model did not build (``build_failure``: the call its code
made into Paddle, with the values it passed), its export raised (``export_failure``) or its lite
training raised or killed the worker (``training_death``). Each is a source reproducer (``source_repro``): the
model rebuilt from its classes with the weights it had, then the failing step done by whichever Paddle
runs the script — what ``releases`` bisects. Verified once here, in a child, at the cell's release.

A training death's script starts from the factory's untrained weights (the trained ones died with the
worker; the factory builds at the cell's seed, so they are the ones the setup trained from) and trains
as the cell did (``modes.lite_train``, plain mode): one train-mode pass with BatchNorm momentum 0,
then Adam steps towards seeded unit-scale targets. Its reproduction is the script dying by the same
signal in the same innermost Paddle frame (``causes.death_words``), the words the worker's death was
said in; a training that raised reproduces when the script raises Paddle's same words (PaddleNLP's
DeBERTa-v2 at 3.3.1: its ``XDropout`` PyLayer's backward returns a gradient for its non-tensor input).
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ...shared.causes import cause_of, death_words, shareable_path, stage_cause
from ...shared.errors import HarnessFailure
from ...shared.json_types import JsonObject
from ...shared.releases import BUILT, RunOutcome, outcome as run_outcome
from ...shared.vocab import Status
from . import inline, replay, source_repro
from ..base.context import CellContext
from ..base.modes import script_training
from .reproducer import run_script

REPO = Path(__file__).resolve().parents[3]  # what the statement's writer imports the harness from


def export_failure(ctx: CellContext, message: str) -> JsonObject:
    """The reproducer of an export that raised at setup (the model's ``jit.save``): the instance whose
    export raised, as it was trained, run in dygraph, then exported: ``verified`` when it raises the
    same cause. The one such cause has no program to replay."""

    def built(writer: "source_repro.Writer | None" = None) -> source_repro.Source:
        if ctx.built is None:
            raise HarnessFailure("the trained instance is not in this process (its worker was restarted)")
        layer, input_spec = ctx.built
        return source_repro.whole_model(ctx.paddle, layer, input_spec, ctx.feeds(0), writer)

    key = stage_cause(message)[:120]
    return _written(ctx, built, _export_script, key,
                    lambda folder, output, foreign: _alone(ctx, built, key, folder, output, foreign))


def build_failure(ctx: CellContext, exc: BaseException, message: str) -> JsonObject:
    """The reproducer of a model that did not build: the call its code made into Paddle where it raised
    (``call_site.paddle_call``), with the values it passed, in Paddle's public names — a script of
    Paddle alone, run at any release (``program: ops``), ``verified`` when it raises the same words."""
    from .call_site import paddle_call

    key = stage_cause(message)[:120]
    call = paddle_call(exc, ctx.paddle)
    if call is None:
        return {"status": Status.PASS, "stage": "setup", "verified": False,
                "source": {"why": "not written: the model's innermost line made no call into Paddle that can be told"}}
    writer = source_repro.Writer(ctx.paddle)
    try:
        spelled = [writer.value(a) for a in call.args] + [f"{k}={writer.value(v)}" for k, v in call.kwargs.items()]
        target = writer.reference(call.target)
    except source_repro.Unspellable as why:
        return {"status": Status.PASS, "stage": "setup", "verified": False, "source": {"why": f"not written: {why}"}}
    where = shareable_path(call.where.rsplit(":", 1)[0]) + ":" + call.where.rsplit(":", 1)[1]
    folder = ctx.work / "reproducer" / "source"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    script = folder / source_repro.SCRIPT
    script.write_text(textwrap.dedent(f'''\
        """Source reproducer written by the Paddle qualification harness: the call {where} made into Paddle
        while the model was built, with the values it passed, by the Paddle that runs this script: that
        raising is the bug. It runs at any release: python source_repro.py (exits non-zero when it reproduces)."""
        import paddle
        ''') + writer.header({"import paddle"}) + writer.body()
        + f'print(f"{BUILT} Paddle {{paddle.__version__}}, the arguments of the call built", flush=True)\n'
        + f"{target}({', '.join(spelled)})\nprint(\"ran without error: not reproduced\")\n", encoding="utf-8")
    run = run_script(folder, ctx.cell.stage_timeout, source_repro.SCRIPT)
    outcome, line = run_outcome(run["exit"], run["output"], key, False)
    verified = outcome is RunOutcome.REPRODUCED
    what = f"the call {where} made into Paddle ({target})"
    entry = {"folder": str(folder), "script": str(script), "what": what, "verified": verified,
             "outcome": outcome.value, "last_line": line, "cause_words": key, "numeric": False, "program": "ops"}
    return {"status": Status.PASS, "stage": "setup", "script": str(script), "folder": str(folder), "program": "ops",
            "verified": verified, "last_line": line, "source": entry, "paddle": ctx.paddle_api.paddle_info()}


def training_death(ctx: CellContext, message: str) -> JsonObject:
    """The reproducer of a worker that died in the lite training (run by the worker started after it):
    the factory's model at the cell's seed, trained in the script as the cell trained it."""
    from ...models import sources

    def built() -> source_repro.Source:
        layer, input_spec = sources.build(ctx.cell.model["factory"], ctx.paddle, ctx.cell.seed, f"{ctx.where}.factory")
        return source_repro.whole_model(ctx.paddle, layer, input_spec, ctx.feeds(0))

    def script(folder: Path, source: source_repro.Source) -> Path:
        return _training_script(folder, source, ctx.cell.train_steps, ctx.cell.seed)

    return _written(ctx, built, script, cause_of(message.removeprefix("worker ")))


def mode_failure(ctx: CellContext, message: str) -> JsonObject:
    """The reproducer of a quantization mode's training or export that raised: the factory's model at
    the cell's seed, prepared as the mode prepares it (its own calls, ``TrainMode.SCRIPT_PREPARE``),
    trained as the cell trained it, then exported the mode's way — raising the same words."""
    from ...models import sources

    mode = ctx.mode
    if mode.SCRIPT_PREPARE is None or mode.SCRIPT_EXPORT is None:
        return {"status": Status.PASS, "stage": "setup", "verified": False,
                "source": {"why": f"not written: train mode {mode.name} has no script form"}}

    if not ctx.paddle.in_dynamic_mode():
        # PaddleSlim's save raised after switching Paddle to static mode (the finding its successful
        # save is recorded with): the model is rebuilt in dygraph, where the cell built it.
        ctx.paddle.disable_static()

    def built() -> source_repro.Source:
        layer, input_spec = sources.build(ctx.cell.model["factory"], ctx.paddle, ctx.cell.seed, f"{ctx.where}.factory")
        return source_repro.whole_model(ctx.paddle, layer, input_spec, ctx.feeds(0))

    def script(folder: Path, source: source_repro.Source) -> Path:
        return _training_script(folder, source, ctx.cell.train_steps, ctx.cell.seed, mode)

    return _written(ctx, built, script, stage_cause(message)[:120])


def _written(ctx: CellContext, build: Callable[..., source_repro.Source],
             write: Callable[[Path, source_repro.Source], Path], key: str,
             standalone: Optional[Callable[[Path, str, bool], JsonObject]] = None) -> JsonObject:
    folder = ctx.work / "reproducer" / "source"
    if folder.exists():
        shutil.rmtree(folder)
    try:
        source = build()
        source.setup = replay.factory_setup(ctx.paddle, ctx.cell.model["factory"])
    except (source_repro.Unspellable, HarnessFailure) as why:
        return {"status": Status.PASS, "stage": "setup", "verified": False, "source": {"why": f"not written: {why}"}}
    script = write(folder, source)
    run = run_script(folder, ctx.cell.stage_timeout, source_repro.SCRIPT)
    outcome, line = run_outcome(run["exit"], run["output"], key, False)
    verified = outcome is RunOutcome.REPRODUCED
    entry = {"folder": str(folder), "script": str(script), "what": source.what, "verified": verified,
             "outcome": outcome.value, "last_line": line, "cause_words": key, "numeric": False, "program": "model"}
    if standalone is not None and verified:
        alone = standalone(folder, run["output"], bool(inline.foreign_imports(script.read_text(encoding="utf-8"))))
        entry.update({"standalone": alone} if alone.get("script") or "statement" not in alone else alone)
    return {"status": Status.PASS, "stage": "setup", "script": str(script), "folder": str(folder),
            "program": "model", "verified": verified, "last_line": line, "source": entry,
            "paddle": ctx.paddle_api.paddle_info()}


def _alone(ctx: CellContext, build: Callable[..., source_repro.Source], key: str, folder: Path,
           output: str, foreign: bool) -> JsonObject:
    """The export's smallest script of Paddle alone: its raising statement's function called alone
    (``statement.py``) where that reproduces at the cell's release; else, where the whole model's
    script imports its suite (``foreign``), the whole model with the suite's source written in — with
    why the statement's was not taken (``{"statement": why}`` alone when there is neither). ``output``:
    what the whole model's script printed (Paddle's report of every traced frame; the record keeps
    its last words only)."""
    alone = _statement(ctx, output, key, folder / "statement", folder / source_repro.SCRIPT)
    if alone.get("script"):
        return alone
    if not foreign:
        return {"statement": alone.get("why", "")}
    whole = _standalone(ctx, build, _export_script, folder / "standalone", key)
    return {**whole, "statement": alone.get("why", "")}


def _statement(ctx: CellContext, output: str, key: str, folder: Path, whole: Path) -> JsonObject:
    """The raising statement's function alone (``statement.py``), written by a fresh process that runs
    the whole model's script (``whole``) with a hook, then verified at the cell's release."""
    import json
    import subprocess
    import sys

    from ..anatomy.isolation import not_the_model
    from . import statement

    place = statement.raising_place(output, not_the_model(ctx.paddle))
    if place is None:
        return {"why": "no statement: Paddle's report of the error names no line of the model's files"}
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "setup.txt").write_text(replay.factory_setup(ctx.paddle, ctx.cell.model["factory"]), encoding="utf-8")
    argv = [sys.executable, "-m", "harness.cell.handover.statement", str(whole), "--file", place.file,
            "--line", str(place.line), "--function", place.function, "--out", str(folder), "--setup", str(folder / "setup.txt")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                              timeout=ctx.cell.stage_timeout)
    except subprocess.TimeoutExpired:
        return {"why": f"no statement: the model's script ran over {ctx.cell.stage_timeout:g} s with the hook on"}
    said = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not said:
        died = death_words(proc.returncode, proc.stdout + proc.stderr) or (proc.stderr.strip().splitlines() or ["nothing"])[-1]
        return {"why": f"no statement: its writer ended without a word ({died[:160]})", "harness_gap": True}
    written = json.loads(said[-1])
    if not written.get("script"):
        return {"why": f"no statement: {written.get('why', '')}"}
    run = run_script(folder, ctx.cell.stage_timeout, source_repro.SCRIPT)
    outcome, line = run_outcome(run["exit"], run["output"], key, False)
    if outcome is not RunOutcome.REPRODUCED:
        return {"why": f"its statement's script {outcome.value.replace('_', ' ')} at the cell's release ({line[:120]})"}
    return {"folder": str(folder), "script": written["script"], "what": written["what"], "verified": None,
            "cause_words": key, "numeric": False, "program": "inlined"}


def _standalone(ctx: CellContext, build: Callable[..., source_repro.Source],
                write: Callable[[Path, source_repro.Source], Path], folder: Path, key: str) -> JsonObject:
    """The same script with the suite's source written in (``inline.py``): written, not run here —
    ``releases`` runs it without the suite, minimizes it and asks every release with it."""
    try:
        source = build(inline.StandaloneWriter(ctx.paddle))
        source.setup = replay.factory_setup(ctx.paddle, ctx.cell.model["factory"])
        script = write(folder, source)
        foreign = inline.foreign_imports(script.read_text(encoding="utf-8"))
    except (source_repro.Unspellable, HarnessFailure) as why:
        return {"why": f"not written: {why}"}
    except Exception as exc:  # the writer's own bug (a script that does not parse): the harness's gap, said
        return inline.writer_failed(exc)
    if foreign:
        return {"why": f"not written: it would still import {', '.join(foreign[:3])}"}
    return {"folder": str(folder), "script": str(script), "what": source.what, "verified": None,
            "cause_words": key, "numeric": False, "program": "inlined"}


def _header(source: source_repro.Source, does: str, lazy_annotations: bool = False) -> str:
    """The script's docstring and imports, what the factory's module did to the suite, the model's
    classes, and the lines that rebuild it with its weights and run it once in dygraph.
    ``lazy_annotations``: the script holds the harness's own functions, annotated with its types."""
    doc = textwrap.dedent(f'''\
        """Source reproducer written by the Paddle qualification harness: {source.what}, {source.how},
        run in dygraph, then {does} by the Paddle that runs this script: that failing is the bug. It runs
        at any release that builds the model: python source_repro.py (exits non-zero when it reproduces;
        "{BUILT}" is printed once the model built and ran in dygraph)."""
        @FUTURE@import os
        import sys
        import tempfile

        import numpy as np
        import paddle
        ''').replace("@FUTURE@", "from __future__ import annotations\n\n" if lazy_annotations else "")
    return (doc + source_repro.MODEL_SOURCE + source.setup + source.writer.header(set(doc.splitlines())) + "\n\n"
            + source.writer.body()
            + source_repro.MODEL_SOURCE_END + source_repro.rebuilt(source)
            + f'print(f"{BUILT} Paddle {{paddle.__version__}}, the model built and ran in dygraph", flush=True)\n')


def _saved(folder: Path, source: source_repro.Source, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "weights.npz", **source.weights)
    np.savez(folder / "inputs.npz", **source.inputs)
    path = folder / source_repro.SCRIPT
    path.write_text(script, encoding="utf-8")
    return path


def _export_script(folder: Path, source: source_repro.Source) -> Path:
    """The export raising with Paddle's words is the reproduction; an export that passes exits 0."""
    return _saved(folder, source, _header(source, "exported (paddle.jit.save)", source.writer.lazy_annotations)
                  + textwrap.dedent('''\
        scratch = tempfile.TemporaryDirectory(prefix="source-repro-")  # removed when the script exits
        paddle.jit.save(layer, os.path.join(scratch.name, "model"), input_spec=spec)
        print("exported: not reproduced")
        '''))


def _training_script(folder: Path, source: source_repro.Source, steps: int, seed: int, mode: "object | None" = None) -> Path:
    """The process dying is the reproduction; a training that ends exits 0. The training is the
    harness's own ``modes.lite_train`` (and the ``flatten_tensors`` it reads), copied in as written:
    the script trains exactly as the cell did. ``mode``: a quantization mode, whose preparation runs
    before the training and whose export after it (either raising is the reproduction)."""
    code = script_training(steps, seed, mode)
    export = getattr(mode, "SCRIPT_EXPORT", None) or ""
    if export:
        code += ("layer.eval()\nscratch = tempfile.TemporaryDirectory(prefix=\"source-repro-\")  # removed when the script exits\n"
                 "path = os.path.join(scratch.name, \"model\")\n" + export + 'print("trained and exported: not reproduced")\n')
    else:
        code += 'print(f"trained: not reproduced (losses {losses})")\n'
    does = f"prepared for {mode.name}, trained and exported as the harness does it" if export else \
        "trained as the harness's lite training trains it"
    return _saved(folder, source, _built_before_dygraph(_header(source, does, True)) + code)


def _built_before_dygraph(header: str) -> str:
    """A training's script says it built once its layer holds its weights, before its first dygraph
    call: the failing step it reproduces is running the model in dygraph and training it (CodeGen's
    forward raises at 3.3.1 in dygraph itself — ``paddle.where`` with a float condition — and was said
    "not built" at its own release, NOT verified)."""
    lines = header.splitlines(keepends=True)
    said = next(k for k in range(len(lines) - 1, -1, -1) if f'print(f"{BUILT}' in lines[k])
    del lines[said]
    at = lines.index("layer.eval()\n")
    lines.insert(at, f'print(f"{BUILT} Paddle {{paddle.__version__}}, the model built; it runs and trains next", flush=True)\n')
    return "".join(lines)


__all__ = ["export_failure", "training_death", "mode_failure"]
