"""The suite's model: a registry decorator, a logger, a module constant, a namespace import and an
import inside a method, as the suites have them; and what the failing run never reaches, as the
suites' download helpers are: a name imported from a module that made it by a call, an import of a
package no test installs inside a method."""

import logging

import paddle
import paddle.nn as nn

from . import ops as F
from .blocks import Stem, Upsample
from .ops import ACTS, download, fetch, init_normal

logger = logging.getLogger(__name__)
MODELS = {}
SCALE = 3.0


def register(cls):
    MODELS[cls.__name__] = cls
    return cls


class ConvBNAct(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, 3, padding=1, weight_attr=paddle.ParamAttr(initializer=init_normal))
        self.bn = nn.BatchNorm2D(cout)

    def forward(self, x):
        return nn.functional.relu(self.bn(self.conv(x)))


@register
class CountingNet(nn.Layer):
    """Scales its output by how often forward ran."""

    def __init__(self, width=8):
        super().__init__()
        self.stem = Stem(3, width)
        self.head = ConvBNAct(width, width)
        self.act = ACTS["double"]
        self.calls = 0
        logger.debug("CountingNet of width %d", width)

    def forward(self, image):
        from harness_planted_suite.ops import scaled

        self.calls += 1
        if self.calls < 0:  # never taken: a download the forward can reach and the failing run does not
            return self.load_pretrained("")
        y = self.act(self.head(self.stem(image)))
        return scaled(F.scaled(y, SCALE), float(self.calls))

    def load_pretrained(self, url):
        import harness_planted_download_client  # noqa: F401 - installed nowhere: a download client

        return fetch(download(url))

    def save_card(self, path):
        """Nothing calls it: left out of a standalone script, with what only it reads."""
        return MODELS, path


@register
class GatedNet(nn.Layer):
    """Keeps its first call's output and scales later calls when it was positive: exported after an
    eager call, the trace reaches ``bool(Tensor)`` inside the suite's helper and raises."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.first = None

    def forward(self, x):
        hidden = self.norm(self.proj(x))
        if self.first is None:
            self.first = hidden.detach()
            return hidden
        return hidden * SCALE if F.positive(self.first) else hidden


class UpsampledNet(nn.Layer):
    """A stem, then the suite's upsampling block: the failure is one op (an interpolate under oneDNN
    at Paddle 3.3), inside a suite layer."""

    def __init__(self, width=8):
        super().__init__()
        self.stem = Stem(3, width)
        self.up = Upsample(2)

    def forward(self, image):
        return self.up(self.stem(image)).mean(axis=[2, 3])
