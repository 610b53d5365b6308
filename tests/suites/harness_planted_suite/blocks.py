"""A second module of the suite reading ``ops`` by the same name as ``model`` does."""

import paddle.nn as nn

from . import ops as F


class Stem(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, 3, padding=1)

    def forward(self, x):
        return F.scaled(self.conv(x), 1.0)


class Upsample(nn.Layer):
    """Nearest upsampling by a scale factor, as the suites' necks do (Paddle 3.3's oneDNN raises on it)."""

    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=self.factor, mode="nearest")
