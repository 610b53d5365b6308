"""The baseline of the cell benchmark: a minimal hand-written script making the same Paddle
calls as one harness cell (build, BN recalibration, a few train steps, export, dygraph
forward, one predictor per stage config read from a harness record, element-wise compare).

Usage: python plain_cell.py RECORD.json WORKDIR
"""

import json
import sys
from pathlib import Path

import numpy as np


def main(record_path: str, work: str) -> None:
    record = json.loads(Path(record_path).read_text())
    spec = record["cell"]
    import paddle
    import paddle.inference as pi
    from paddle.static import InputSpec

    paddle.seed(spec["seed"])
    layer = paddle.vision.models.resnet18(num_classes=10)
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
    prefix = Path(work) / "model"
    static = paddle.jit.to_static(layer, input_spec=[InputSpec([None, 3, None, None], "float32", "image")],
                                  full_graph=True)
    paddle.jit.save(static, str(prefix))
    program = prefix.with_suffix(".json") if prefix.with_suffix(".json").exists() else prefix.with_suffix(".pdmodel")
    with paddle.no_grad():
        reference = layer(paddle.to_tensor(x)).numpy()
    for stage in record["stages"]:
        if stage["status"] == "skip":
            continue
        knobs = stage.get("config") or {}
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
        else:
            config.disable_mkldnn()
        config.set_cpu_math_library_num_threads(knobs.get("threads", 1))
        try:
            predictor = pi.create_predictor(config)
        except Exception as exc:  # the same Paddle errors the harness records
            print(stage["name"], "error", str(exc).splitlines()[0][:80])
            continue
        handle = predictor.get_input_handle("image")
        handle.reshape(list(x.shape))
        handle.copy_from_cpu(x)
        predictor.run()
        out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
        print(stage["name"], bool(np.allclose(out, reference, atol=1e-4, rtol=1e-4)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
