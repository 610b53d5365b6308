"""Cell side: train modes as objects — how a mode prepares the model, trains it a few steps on
the synthetic lite data, and exports it the way that mode's users export.

* ``normal``: plain fp32 training (Adam), ``to_static`` + ``jit.save``.
* ``amp_o1`` / ``amp_o2``: ``paddle.amp.auto_cast`` (+ ``decorate`` for O2) and ``GradScaler``,
  exported as PaddleClas does (O2 decorated with ``save_dtype="float32"``). Whether AMP really
  ran is measured, not assumed from the device: a forward under ``auto_cast`` must produce a
  low-precision op output; when it does not (Paddle's AMP does nothing on CPU in 2.6-3.3, and
  says so in a warning) the mode raises ``ModeUnsupported`` with Paddle's words and the cell is
  ``skip`` — never a pass that trained in fp32.
* ``qat``: Paddle's own ``paddle.quantization`` (``QuantConfig`` with
  ``FakeQuanterWithAbsMaxObserver``, ``QAT.quantize``, train, ``QAT.convert``, ``jit.save``). The
  consistency reference is the fake-quant dygraph model in eval, before conversion.
* ``pact``: PaddleSlim's ``paddleslim.dygraph.quant.QAT`` with ``activation_preprocess_type=
  "PACT"``, trained, saved with ``save_quantized_model`` as PaddleSlim's users do. Two measured
  PaddleSlim/Paddle findings are recorded in the setup (``findings``), each with the labelled
  workaround that runs beside it: ``import paddle, paddleslim`` kills the interpreter on Paddle 2.6.2
  (paddleslim 2.6.0) unless ``cv2`` is imported before paddle; ``save_quantized_model`` leaves
  Paddle in static mode (2.6.2 and 3.3.1), so the mode switches dygraph back on.

A mode that needs packages (``modes.<name>.packages`` in the matrix, installed by nox) and does
not find them is bad input: one line naming the matrix key, exit 2.
"""

from __future__ import annotations

import re

import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np



class ModeUnsupported(Exception):
    """The mode cannot do what it claims here (measured); the message is the evidence."""


class TrainMode:
    name = "normal"
    #: Whether a sublayer of the trained model exports on its own as the model did (plain
    #: ``to_static`` + ``jit.save``): what the reduction needs. Quantization modes convert first.
    reducible = True

    def __init__(self) -> None:
        # Paddle behaviour met on the way, each {"finding": Paddle's words, "workaround": what ran}.
        self.findings: List[Dict[str, str]] = []

    def before_paddle(self) -> None:
        """Runs before the cell imports Paddle (some combinations need an import order)."""

    def unsupported(self, api: Any) -> Optional[str]:
        """Why this mode cannot run in this Paddle build or on this machine, or None."""
        return None

    def prepare(self, paddle: Any, layer: Any) -> Any:
        """The layer to train (a mode may wrap or convert it)."""
        return layer

    def train(self, paddle: Any, layer: Any, call_args: List[Any], steps: int, seed: int) -> List[float]:
        return lite_train(paddle, layer, call_args, steps, seed)

    def export(self, saved: Any, layer: Any, input_spec: List[Any], prefix: Path) -> Dict[str, str]:
        return saved.export(layer, input_spec, prefix)

    #: What ``prepare`` and ``export`` call, written as a script writes them (a setup reproducer's:
    #: ``layer``, ``spec`` and ``path`` bound there); None where the mode has no script form.
    SCRIPT_PREPARE: Optional[str] = None
    SCRIPT_EXPORT: Optional[str] = None


class Declared(TrainMode):
    """A mode the schema knows and this harness version does not run yet."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def unsupported(self, api: Any) -> Optional[str]:
        from ... import __version__

        return f"train mode {self.name} is declared in the schema but not run by harness {__version__} yet"


class Amp(TrainMode):
    """paddle.amp at O1 (white-list ops in low precision) or O2 (low-precision parameters with
    fp32 master weights)."""

    def __init__(self, level: str, dtype: str = "float16"):
        super().__init__()
        self.level = level
        self.dtype = dtype
        self.name = f"amp_{level.lower()}"
        self.evidence: Dict[str, Any] = {}

    def check(self, paddle: Any, layer: Any, args: List[Any]) -> None:
        """One forward under auto_cast: some op output must be in the low precision."""
        dtypes: List[str] = []
        hooks = [sub.register_forward_post_hook(lambda _l, _i, out: dtypes.append(str(getattr(out, "dtype", ""))))
                 for sub in layer.sublayers() if isinstance(sub, (paddle.nn.Conv2D, paddle.nn.Linear))]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with paddle.no_grad(), paddle.amp.auto_cast(level=self.level, dtype=self.dtype):
                layer(*args)
        for hook in hooks:
            hook.remove()
        said = [str(w.message) for w in caught if "amp" in str(w.message).lower()]
        low = [d for d in dtypes if self.dtype in d or ("bfloat16" in d and self.dtype == "bfloat16")]
        self.evidence = {"level": self.level, "dtype": self.dtype, "op_output_dtypes": sorted(set(dtypes)),
                         "low_precision_outputs": len(low), "paddle_said": said[:1]}
        if not low:
            raise ModeUnsupported(
                f"paddle.amp did nothing here: every conv/linear output stayed {sorted(set(dtypes)) or ['?']} under "
                f"auto_cast(level={self.level!r}, dtype={self.dtype!r})" + (f"; Paddle said: {said[0]}" if said else ""))

    def train(self, paddle: Any, layer: Any, call_args: List[Any], steps: int, seed: int) -> List[float]:
        self.check(paddle, layer, call_args)
        return lite_train(paddle, layer, call_args, steps, seed, amp=self)

    def export(self, saved: Any, layer: Any, input_spec: List[Any], prefix: Path) -> Dict[str, str]:
        return saved.export(layer, input_spec, prefix)


class Qat(TrainMode):
    name = "qat"
    reducible = False

    def __init__(self):
        super().__init__()
        self.qat = None

    def prepare(self, paddle: Any, layer: Any) -> Any:
        from paddle.quantization import QAT, QuantConfig
        from paddle.quantization.quanters import FakeQuanterWithAbsMaxObserver

        quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
        self.qat = QAT(QuantConfig(activation=quanter, weight=quanter))
        return self.qat.quantize(layer, inplace=True)

    def export(self, saved: Any, layer: Any, input_spec: List[Any], prefix: Path) -> Dict[str, str]:
        # Not in place: the fake-quant layer stays the consistency reference.
        converted = self.qat.convert(layer, inplace=False)
        return saved.export(converted, input_spec, prefix)

    SCRIPT_PREPARE = ("from paddle.quantization import QAT, QuantConfig\n"
                      "from paddle.quantization.quanters import FakeQuanterWithAbsMaxObserver\n\n"
                      "quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)\n"
                      "qat = QAT(QuantConfig(activation=quanter, weight=quanter))\n"
                      "layer = qat.quantize(layer, inplace=True)\n")
    SCRIPT_EXPORT = ("converted = qat.convert(layer, inplace=False)\n"
                     "paddle.jit.save(paddle.jit.to_static(converted, input_spec=spec, full_graph=True), path)\n")


PACT_CONFIG = {
    # PaddleSlim's documented PACT setup (its quant_aware dygraph demo): PACT clips activations
    # with a learned threshold before the moving-average abs-max quantizer.
    "weight_preprocess_type": None, "activation_preprocess_type": "PACT",
    "weight_quantize_type": "channel_wise_abs_max", "activation_quantize_type": "moving_average_abs_max",
    "weight_bits": 8, "activation_bits": 8, "dtype": "int8", "window_size": 10000, "moving_rate": 0.9,
    "quantizable_layer_type": ["Conv2D", "Linear"],
}


class Pact(TrainMode):
    name = "pact"
    reducible = False

    def __init__(self):
        super().__init__()
        self.quanter = None

    def before_paddle(self) -> None:
        crash = import_crash("paddle", "paddleslim")
        if crash:
            # One cause, however it ends: measured on 2.6.2, the same import ends with SIGSEGV on
            # most runs and with SIGABRT, SIGTERM or a hang in Paddle's fatal-signal handler on
            # some. The finding's words stay the same (it is counted once); how it ended is kept.
            self.findings.append({
                "finding": "`import paddle, paddleslim` kills the interpreter",
                "how": crash,
                "workaround": "import cv2 before paddle (measured: Paddle 2.6.2 with paddleslim 2.6.0)"})
            import cv2  # noqa: F401  (the labelled workaround above)

    def prepare(self, paddle: Any, layer: Any) -> Any:
        from paddleslim.dygraph.quant import QAT as SlimQAT

        self.quanter = SlimQAT(config=dict(PACT_CONFIG))
        self.quanter.quantize(layer)
        return layer

    def export(self, saved: Any, layer: Any, input_spec: List[Any], prefix: Path) -> Dict[str, str]:
        paddle = saved.paddle
        prefix.parent.mkdir(parents=True, exist_ok=True)
        self.quanter.save_quantized_model(layer, str(prefix), input_spec=input_spec)
        if not paddle.in_dynamic_mode():
            self.findings.append({"finding": "PaddleSlim's save_quantized_model leaves Paddle in static mode "
                                             "(paddle.in_dynamic_mode() is False afterwards)",
                                  "workaround": "paddle.disable_static() after saving"})
            paddle.disable_static()
        return saved.model_files(prefix)

    SCRIPT_PREPARE = ("from paddleslim.dygraph.quant import QAT as SlimQAT\n\n"
                      f"quanter = SlimQAT(config={PACT_CONFIG!r})\n"
                      "quanter.quantize(layer)\n")
    SCRIPT_EXPORT = "quanter.save_quantized_model(layer, path, input_spec=spec)\n"


def script_training(steps: int, seed: int, mode: "object | None" = None) -> str:
    """The lines that train ``layer`` as the cell did: the harness's ``lite_train`` copied in, after
    the mode's own preparation (``TrainMode.SCRIPT_PREPARE``: the layer in train mode, as its factory
    returned it). They hold the harness's functions annotated with its types: the script needs
    ``from __future__ import annotations``."""
    import inspect
    import textwrap

    from . import structure

    train = inspect.getsource(lite_train).replace("    from .structure import flatten_tensors\n", "")
    prepare = getattr(mode, "SCRIPT_PREPARE", None) or ""
    if prepare:
        prepare = "layer.train()\n" + prepare
    return ("\n\n" + inspect.getsource(structure.flatten_tensors) + "\n\n" + train + "\n\n" + prepare
            + textwrap.dedent(f'''
        paddle.seed({seed})
        losses = lite_train(paddle, layer, [paddle.to_tensor(inputs[name]) for name in feed_names], {steps}, {seed})
        '''))


IMPORT_PROBE_TIMEOUT = 60.0


def import_crash(*modules: str) -> Optional[str]:
    """The signal that kills ``import <modules>`` in a fresh interpreter of this environment, or
    None. Probed once per environment (the answer depends only on the installed versions, which
    key the cache), because the import itself costs seconds."""
    import hashlib
    import json
    import os
    import signal
    import subprocess
    import sys
    from importlib import metadata

    versions = []
    for module in modules:
        try:
            versions.append(metadata.version({"paddle": "paddlepaddle"}.get(module, module)))
        except metadata.PackageNotFoundError:
            versions.append("?")
    key = hashlib.sha1(json.dumps([sys.prefix, modules, versions]).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "paddle-harness" / "import-probes"
    path = cache / f"{key}.json"
    try:
        return json.loads(path.read_text())["crash"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        probe = subprocess.run([sys.executable, "-c", f"import {', '.join(modules)}"], capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=IMPORT_PROBE_TIMEOUT)
        crash = signal.Signals(-probe.returncode).name if probe.returncode < 0 else None
    except subprocess.TimeoutExpired as exc:
        # Measured on 2.6.2: Paddle's fatal-signal handler sometimes hangs after reporting the
        # signal instead of ending the process; the report it printed names the cause.
        probe = subprocess.CompletedProcess(exc.cmd, -9, exc.stdout, exc.stderr)
        crash = f"a hang (killed after {IMPORT_PROBE_TIMEOUT:g} s)"
    # Paddle's own fatal-signal handler names the signal that struck ("SignalInfo: *** SIGSEGV") and
    # sometimes ends the process with abort() or hangs: the cause is the signal it names (measured
    # on 2.6.2: SIGSEGV on most runs, SIGABRT or a hang on some, the same SIGSEGV report in all).
    named = re.search(rb"SignalInfo: \*\*\* (SIG[A-Z]+)", probe.stderr or b"")
    if crash and named:
        crash = named.group(1).decode()
    try:
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"modules": modules, "versions": versions, "crash": crash}))
    except OSError:  # a read-only home (a container): probe again next time
        pass
    return crash


MODES = {"normal": TrainMode, "amp_o1": lambda: Amp("O1"), "amp_o2": lambda: Amp("O2"), "qat": Qat, "pact": Pact}


def mode_for(name: str) -> TrainMode:
    return MODES[name]() if name in MODES else Declared(name)


def lite_train(paddle: Any, layer: Any, args: List[Any], steps: int, seed: int, amp: Optional[Amp] = None) -> List[float]:
    """A few optimizer steps on the synthetic batch, towards seeded unit-scale targets.

    First a BatchNorm recalibration pass (momentum 0 for one train-mode forward) so running
    statistics come from data: random-init networks evaluated with default statistics produce
    outputs around 1e-7, which no tolerance can judge. Targets are unit-scale random tensors so
    training keeps the outputs' magnitude meaningful.
    """
    from .structure import flatten_tensors

    norms = [m for m in layer.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    saved = [m._momentum for m in norms]
    for m in norms:
        m._momentum = 0.0
    layer.train()
    with paddle.no_grad():
        layer(*args)
    for m, momentum in zip(norms, saved):
        m._momentum = momentum
    if steps <= 0:
        return []
    params = [p for p in layer.parameters() if not p.stop_gradient]
    if not params:
        return []
    optimizer = paddle.optimizer.Adam(learning_rate=1e-3, parameters=params)
    scaler = None
    if amp is not None:
        scaler = paddle.amp.GradScaler(init_loss_scaling=1024)
        if amp.level == "O2":
            # As PaddleClas: fp32 master weights, and jit.save writes fp32 parameters.
            layer, optimizer = paddle.amp.decorate(models=layer, optimizers=optimizer, level="O2",
                                                   dtype=amp.dtype, save_dtype="float32")
    rng = np.random.default_rng(seed + 1)
    # A target per output and shape: an output whose length the weights decide (a TTS model's
    # predicted durations) changes shape between steps.
    targets: Dict[Tuple[int, Tuple[int, ...]], Any] = {}
    losses = []
    for _ in range(steps):
        if amp is not None:
            with paddle.amp.auto_cast(level=amp.level, dtype=amp.dtype):
                raw = layer(*args)
        else:
            raw = layer(*args)
        outputs = [t for _, t in flatten_tensors(paddle, raw)
                   if str(t.dtype).endswith(("float32", "float16", "bfloat16", "float64"))]
        for k, t in enumerate(outputs):
            if (k, tuple(t.shape)) not in targets:
                targets[(k, tuple(t.shape))] = paddle.to_tensor(rng.standard_normal(t.shape).astype("float32"))
        loss = paddle.add_n([((o.astype("float32") - targets[(k, tuple(o.shape))]) ** 2).mean()
                             for k, o in enumerate(outputs)])
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
    return losses
