"""Export the tiny model for inference: to_static + jit.save (Step6 and -o styles).

``--temperature`` (or ``-o Export.temperature=True``) exports TemperatureNet after one warm-up
call, the kind of export whose program and layer disagree."""

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


if __name__ == "__main__":
    main()
