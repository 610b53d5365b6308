"""Paddle Inference on the exported tiny model (Step6 --key=value and PaddleClas -o styles)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import paddle.inference as paddle_infer  # noqa: E402

from tiny import args  # noqa: E402


def main():
    opts = args.parse()
    model_dir = args.get(opts, "model_dir", "Global.inference_model_dir")
    batch = int(args.get(opts, "batch_size", "Global.batch_size", default="1"))
    if args.truthy(args.get(opts, "use_gpu", "Global.use_gpu", default="False")):
        raise SystemExit("this tiny repository infers on CPU only")
    program = next(os.path.join(model_dir, "inference" + ext) for ext in (".json", ".pdmodel")
                   if os.path.exists(os.path.join(model_dir, "inference" + ext)))
    config = paddle_infer.Config(program, os.path.join(model_dir, "inference.pdiparams"))
    config.disable_gpu()
    if args.truthy(args.get(opts, "Global.enable_mkldnn", default="False")):
        config.enable_mkldnn()
    else:
        config.disable_mkldnn()
    config.set_cpu_math_library_num_threads(int(args.get(opts, "Global.cpu_num_threads", default="1")))
    predictor = paddle_infer.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.copy_from_cpu(np.random.default_rng(0).standard_normal((batch, 3, 16, 16)).astype("float32"))
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    print(f"class ids: {out.argmax(-1).tolist()}")


if __name__ == "__main__":
    main()
