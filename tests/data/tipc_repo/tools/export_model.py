"""Export the tiny model for inference: to_static + jit.save (Step6 and -o styles).

``--temperature`` (or ``-o Export.temperature=True``) exports TemperatureNet after one warm-up
call, the kind of export whose program and layer disagree. ``--static-save`` exports the way
older repositories do, in static mode through ``paddle.static.save_inference_model`` (no
``jit.save``, so nothing the harness can verify; initial weights)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import paddle  # noqa: E402
from paddle.static import InputSpec  # noqa: E402

from tiny import args, model  # noqa: E402


def main():
    opts = args.parse()
    weights = args.get(opts, "pretrained", "Global.pretrained_model")
    save_dir = args.get(opts, "save_inference_dir", "Global.save_inference_dir", default="./inference")
    temperature = args.truthy(args.get(opts, "temperature", "Export.temperature", default="False"))
    paddle.set_device("cpu")
    if args.truthy(args.get(opts, "static_save", default="False")):
        return static_save(save_dir)
    state = None
    if weights:
        state = paddle.load(weights if weights.endswith(".pdparams") else weights + ".pdparams")
    net = model.build(pact=bool(state) and model.is_pact(state), temperature=temperature)
    if state is not None:
        net.set_state_dict(state)
    net.eval()
    static = paddle.jit.to_static(net, input_spec=[InputSpec(model.INPUT_SHAPE, "float32", name="x")],
                                  full_graph=True)
    paddle.jit.save(static, os.path.join(save_dir, "inference"))
    print(f"exported to {save_dir}")


def static_save(save_dir):
    paddle.enable_static()
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        x = paddle.static.data("x", model.INPUT_SHAPE, "float32")
        net = model.build(pact=False, temperature=False)
        net.eval()
        out = net(x)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    paddle.static.save_inference_model(os.path.join(save_dir, "inference"), [x], [out], exe, program=main_program)
    print(f"exported to {save_dir} (static save_inference_model)")


if __name__ == "__main__":
    main()
