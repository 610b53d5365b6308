"""Lite training of the tiny model; ``--test-only`` evaluates instead (Step6 style and -o style)."""

import os

import paddle

from tiny import args, model


def main():
    opts = args.parse()
    epochs = int(args.get(opts, "epochs", "Global.epochs", default="1"))
    batch = int(args.get(opts, "batch_size", "DataLoader.Train.sampler.batch_size", default="4"))
    out = args.get(opts, "output_dir", "Global.output_dir", default="./output/")
    name = args.get(opts, "Arch.name")
    if name:  # PaddleClas style: <output_dir>/<Arch.name>/
        out = os.path.join(out, name)
    pretrained = args.get(opts, "pretrained", "Global.pretrained_model")
    amp_level = args.get(opts, "amp_level") or (args.get(opts, "AMP.level", default="O1")
                                                if args.truthy(args.get(opts, "AMP.use_amp", default="False")) else None)
    pact = args.truthy(args.get(opts, "pact_quant", default="False"))
    paddle.set_device("cpu")
    paddle.seed(1234)
    net = model.build(pact=pact)
    if pretrained and pretrained != "null":
        path = pretrained if pretrained.endswith(".pdparams") else pretrained + ".pdparams"
        state = paddle.load(path)
        net = model.build(pact=model.is_pact(state))
        net.set_state_dict(state)
    if args.truthy(args.get(opts, "test_only", default="False")):
        net.eval()
        correct = total = 0
        for x, y in model.data(batch, 2, seed=11):
            correct += int((net(x).argmax(-1) == y).sum())
            total += batch
        print(f"eval: top1 {correct / total:.3f}")
        return
    opt = paddle.optimizer.Adam(learning_rate=1e-2, parameters=net.parameters())
    scaler = None
    if amp_level:
        scaler = paddle.amp.GradScaler(init_loss_scaling=128)
        if amp_level == "O2":
            net, opt = paddle.amp.decorate(models=net, optimizers=opt, level="O2", save_dtype="float32")
    os.makedirs(out, exist_ok=True)
    lines = []
    for epoch in range(epochs):
        for x, y in model.data(batch, 3, seed=epoch):
            if amp_level:
                with paddle.amp.auto_cast(level=amp_level):
                    loss = paddle.nn.functional.cross_entropy(net(x), y)
                scaler.scale(loss).backward()
                scaler.minimize(opt, scaler.scale(loss))
            else:
                loss = paddle.nn.functional.cross_entropy(net(x), y)
                loss.backward()
                opt.step()
            opt.clear_grad()
            lines.append(f"epoch {epoch} loss {float(loss):.4f}")
    paddle.save(net.state_dict(), os.path.join(out, "latest.pdparams"))
    with open(os.path.join(out, "train.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
