"""A tiny classifier, with PACT-style fake quantization for the PACT trainer."""

import paddle
import paddle.nn as nn

INPUT_SHAPE = [None, 3, 16, 16]
CLASSES = 4


class PactQuant(nn.Layer):
    """Clip to a learned alpha, then round to 8 bits (straight-through in the backward)."""

    def __init__(self):
        super().__init__()
        self.alpha = self.create_parameter([1], default_initializer=nn.initializer.Constant(4.0))

    def forward(self, x):
        x = paddle.minimum(paddle.maximum(x, -self.alpha), self.alpha)
        scale = self.alpha / 127.0
        return x + (paddle.round(x / scale) * scale - x).detach()


class TinyNet(nn.Layer):
    def __init__(self, pact=False):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2D(8)
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(8, CLASSES)
        self.quant = PactQuant() if pact else None

    def forward(self, x):
        x = nn.functional.relu(self.bn(self.conv(x)))
        if self.quant is not None:
            x = self.quant(x)
        return self.fc(paddle.flatten(self.pool(x), 1))


class TemperatureNet(TinyNet):
    """A forward that reads Python-side state: the temperature schedule advances per call, so
    to_static bakes the value of the call it traces into the saved program."""

    def __init__(self, pact=False):
        super().__init__(pact)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x) / float(self.calls)


def build(pact=False, temperature=False):
    return (TemperatureNet if temperature else TinyNet)(pact)


def is_pact(state):
    return any(key.startswith("quant.") for key in state)


def data(batch, steps, seed=7):
    paddle.seed(seed)
    for _ in range(steps):
        yield paddle.randn([batch, 3, 16, 16]), paddle.randint(0, CLASSES, [batch])
