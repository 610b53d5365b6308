"""A planted suite written against Paddle 3.2+'s PyTorch-style aliases, as PaddleX's PP-LCNet and
SLANet are (``nn.Conv2d``, ``bias=False``): the same objects and parameters as ``nn.Conv2D`` and
``bias_attr=False`` there, absent from older releases."""

import paddle
from paddle import nn


class AliasedBlock(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.mix = nn.Conv2D(8, 8, 1, bias=False)
        self.keep = nn.Conv2d(8, 8, 1, bias=True)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        y = paddle.cat([self.conv(x), paddle.nn.functional.relu(self.conv(x))], axis=1)
        return self.pool(self.keep(self.mix(y))).flatten(1)


class ScaledEmbedding(nn.Embedding):
    """PaddleX's formula decoder: ``super().forward`` in a converted ``forward`` (2.6.2's dy2static
    lost the ``__class__`` cell)."""

    def forward(self, ids):
        return super().forward(ids) * 2.0
