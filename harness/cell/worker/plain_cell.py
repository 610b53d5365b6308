"""The baseline of the cell benchmark: a minimal hand-written script making the same Paddle
(and PaddleSlim, paddle2onnx, ONNX Runtime) calls as one harness cell in its train mode (build,
quantize for qat/pact, BN recalibration, a few train steps, dygraph forward, export the mode's way,
one predictor or ORT session per stage config read from a harness record, element-wise compare).

Usage: python plain_cell.py RECORD.json WORKDIR
"""

import json
import sys
from pathlib import Path

import numpy as np


def _trained(spec, paddle):
    """resnet18 in the cell's mode, BatchNorm recalibrated and trained as the harness does."""
    mode = spec["mode"]
    if mode == "pact":
        import cv2  # noqa: F401  (PaddleSlim's import order on 2.6.2, as the harness measured)
    paddle.seed(spec["seed"])
    layer = paddle.vision.models.resnet18(num_classes=10)
    quanter = None
    if mode == "qat":
        from paddle.quantization import QAT, QuantConfig
        from paddle.quantization.quanters import FakeQuanterWithAbsMaxObserver

        q = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
        quanter = QAT(QuantConfig(activation=q, weight=q))
        layer = quanter.quantize(layer, inplace=True)
    elif mode == "pact":
        from paddleslim.dygraph.quant import QAT as SlimQAT

        from harness.cell.base.modes import PACT_CONFIG

        quanter = SlimQAT(config=dict(PACT_CONFIG))
        quanter.quantize(layer)
    shape = spec["model"]["inputs"]["image"]["shape"]
    x = np.random.default_rng(spec["seed"]).standard_normal(shape).astype("float32")
    norms = [m for m in layer.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    for m in norms:
        m._momentum = 0.0
    layer.train()
    with paddle.no_grad():
        layer(paddle.to_tensor(x))
    for m in norms:
        m._momentum = 0.9
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=layer.parameters())
    target = paddle.to_tensor(np.random.default_rng(1).standard_normal([shape[0], 10]).astype("float32"))
    for _ in range(spec["train_steps"]):
        loss = ((layer(paddle.to_tensor(x)) - target) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
    layer.eval()
    return layer, quanter, x


def _exported(paddle, layer, quanter, mode, prefix):
    """The program file, or None when Paddle raised (the same error the harness records)."""
    from paddle.static import InputSpec

    spec_in = [InputSpec([None, 3, None, None], "float32", "image")]
    try:
        if mode == "pact":
            quanter.save_quantized_model(layer, str(prefix), input_spec=spec_in)
            paddle.disable_static()
        else:
            exported = quanter.convert(layer, inplace=False) if mode == "qat" else layer
            paddle.jit.save(paddle.jit.to_static(exported, input_spec=spec_in, full_graph=True), str(prefix))
    except Exception as exc:  # the same Paddle error the harness records (QAT convert on 3.x)
        print("export error", str(exc).splitlines()[0][:80])
        return None
    return prefix.with_suffix(".json") if prefix.with_suffix(".json").exists() else prefix.with_suffix(".pdmodel")


def _ort_stage(name, knobs, program, prefix, feeds, references):
    """paddle2onnx once (the file is kept beside the program), then one ONNX Runtime session."""
    import onnxruntime as ort
    import paddle2onnx

    onnx_file = prefix.with_suffix(".onnx")
    if not onnx_file.exists():
        paddle2onnx.export(str(program), str(prefix.with_suffix(".pdiparams")), str(onnx_file))
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, {
        "disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
        "all": "ORT_ENABLE_ALL"}[knobs["level"]])
    options.intra_op_num_threads = knobs["threads"]
    session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    for feed, reference in zip(feeds, references):
        out = session.run(None, {"image": feed})[0]
        print(name, feed.shape, bool(np.allclose(out, reference, atol=1e-4, rtol=1e-4)))


def _paddle_stage(pi, name, knobs, program, prefix, feeds, references):
    config = pi.Config(str(program), str(prefix.with_suffix(".pdiparams")))
    config.switch_ir_optim(knobs.get("ir", False))
    if knobs.get("new_ir") is not None:
        config.enable_new_ir(knobs["new_ir"])
    if knobs.get("new_executor") is not None:
        config.enable_new_executor(knobs["new_executor"])
    if knobs.get("opt_level") is not None:
        config.set_optimization_level(knobs["opt_level"])
    if knobs.get("memory"):
        config.enable_memory_optim()
    if knobs.get("onednn"):
        config.enable_mkldnn()
        if knobs.get("int8"):
            config.enable_mkldnn_int8()
    else:
        config.disable_mkldnn()
    config.set_cpu_math_library_num_threads(knobs.get("threads", 1))
    try:
        predictor = pi.create_predictor(config)
    except Exception as exc:  # the same Paddle errors the harness records
        print(name, "error", str(exc).splitlines()[0][:80])
        return
    for feed, reference in zip(feeds, references):
        handle = predictor.get_input_handle("image")
        handle.reshape(list(feed.shape))
        handle.copy_from_cpu(feed)
        predictor.run()
        out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
        print(name, feed.shape, bool(np.allclose(out, reference, atol=1e-4, rtol=1e-4)))


def main(record_path: str, work: str) -> None:
    record = json.loads(Path(record_path).read_text())
    spec = record["cell"]
    import paddle
    import paddle.inference as pi

    layer, quanter, x = _trained(spec, paddle)
    # The other shapes the harness ran this cell at (its record says which): a deployment's batch
    # and sizes, each with its own dygraph reference and one more run of every predictor.
    feeds = [x] + [np.random.default_rng(spec["seed"] + v["index"]).standard_normal(v["inputs"]["image"]).astype("float32")
                   for v in record["setup"].get("shape_variants") or [] if v["status"] == "pass"]
    with paddle.no_grad():
        references = [layer(paddle.to_tensor(f)).numpy() for f in feeds]
    prefix = Path(work) / "model"
    program = _exported(paddle, layer, quanter, spec["mode"], prefix)
    if program is None:
        return
    for stage in record["stages"]:
        if stage["status"] == "skip":
            continue
        knobs = stage.get("config") or {}
        if knobs.get("runtime") == "onnxruntime":
            _ort_stage(stage["name"], knobs, program, prefix, feeds, references)
        else:
            _paddle_stage(pi, stage["name"], knobs, program, prefix, feeds, references)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
