"""Built-in models (cell side: imports paddle). No downloads, no pretrained weights.

A model factory is any ``package.module:function`` that takes no argument and returns
``(layer, input_spec)``: a ``paddle.nn.Layer`` and the list ``to_static`` takes, each item
an ``InputSpec`` or a dict of them (as PaddleDetection exports do). Every InputSpec needs a
``name``: the harness feeds the predictor by name. Dimensions left ``None`` get their size
from the matrix (``models.<name>.inputs.<input>.shape``).
"""

from __future__ import annotations

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.static import InputSpec


def mobilenet_v3_small():
    """paddle.vision's MobileNetV3-small, 10 classes, random init."""
    from paddle.vision.models import mobilenet_v3_small as build

    layer = build(num_classes=10)
    return layer, [InputSpec([None, 3, None, None], "float32", "image")]


def resnet18():
    """paddle.vision's ResNet-18, 10 classes, random init."""
    from paddle.vision.models import resnet18 as build

    layer = build(num_classes=10)
    return layer, [InputSpec([None, 3, None, None], "float32", "image")]


class TinyDetector(nn.Layer):
    """A detection-shaped model: PaddleDetection's three inputs, passed as one dict.

    Paddle flattens a dict InputSpec in sorted key order, so the predictor's inputs are
    ``im_shape, image, scale_factor`` while the signature reads ``image, im_shape,
    scale_factor``: a harness that feeds by position feeds the wrong tensors.
    Outputs are a dict too (``bbox``, ``bbox_num``, ``scores``), flattened the same way.
    """

    def __init__(self, num_boxes: int = 8, num_classes: int = 4):
        super().__init__()
        self.num_boxes = num_boxes
        self.num_classes = num_classes
        self.backbone = nn.Sequential(
            nn.Conv2D(3, 16, 3, stride=2, padding=1),
            nn.BatchNorm2D(16),
            nn.ReLU(),
            nn.Conv2D(16, 32, 3, stride=2, padding=1),
            nn.BatchNorm2D(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2D(1),
        )
        self.box_head = nn.Linear(32, num_boxes * 4)
        self.cls_head = nn.Linear(32, num_boxes * num_classes)

    def forward(self, inputs):
        image = inputs["image"]
        im_shape = inputs["im_shape"]
        scale_factor = inputs["scale_factor"]
        feat = paddle.flatten(self.backbone(image), 1)
        batch = paddle.shape(image)[0]
        boxes = F.sigmoid(self.box_head(feat)).reshape([batch, self.num_boxes, 4])
        # Boxes in input-image pixels, mapped back to the original image as detectors do.
        hw = paddle.concat([im_shape[:, 1:2], im_shape[:, 0:1]], axis=1)
        size = paddle.tile(hw, [1, 2]).unsqueeze(1)
        scale = paddle.tile(paddle.concat([scale_factor[:, 1:2], scale_factor[:, 0:1]], axis=1), [1, 2])
        boxes = boxes * size / scale.unsqueeze(1)
        scores = F.softmax(self.cls_head(feat).reshape([batch, self.num_boxes, self.num_classes]), axis=-1)
        bbox_num = paddle.full([batch], self.num_boxes, dtype="int32")
        return {"scores": scores, "bbox": boxes, "bbox_num": bbox_num}


def detector():
    layer = TinyDetector()
    spec = {
        "image": InputSpec([None, 3, None, None], "float32", "image"),
        "im_shape": InputSpec([None, 2], "float32", "im_shape"),
        "scale_factor": InputSpec([None, 2], "float32", "scale_factor"),
    }
    return layer, [spec]


class TinyEncoder(nn.Layer):
    """A two-layer transformer encoder over token ids of any sequence length."""

    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 4, layers: int = 2, max_len: int = 64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 8)

    def forward(self, tokens):
        positions = paddle.arange(paddle.shape(tokens)[1], dtype="int64").unsqueeze(0)
        hidden = self.encoder(self.embed(tokens) + self.position(positions))
        hidden = self.norm(hidden)
        return {"hidden": hidden, "pooled": self.head(hidden.mean(axis=1))}


def encoder():
    return TinyEncoder(), [InputSpec([None, None], "int64", "tokens")]


class Upsample(nn.Layer):
    """A decoder step as segmentation and detection necks write it: a conv, then
    ``F.interpolate(scale_factor=2)``."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2D(channels, channels, 3, padding=1)

    def forward(self, x):
        return F.interpolate(self.conv(x), scale_factor=2, mode="bilinear")


class UpsampleDecoder(nn.Layer):
    """Stem, one upsampling decoder step, a 1x1 head: the smallest model with the pattern. Paddle
    3.3.1 raises on it under oneDNN (``ConvertPirAttribute2RuntimeAttribute not support
    [pir::ArrayAttribute<pir::DoubleAttribute>]``, Paddle issue #79749); the reduction localizes
    it to ``decoder``. Declared in the matrix, not in its default models: ``-- --model upsample``."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, padding=1)
        self.decoder = Upsample(8)
        self.head = nn.Conv2D(8, 2, 1)

    def forward(self, image):
        return self.head(self.decoder(F.relu(self.stem(image))))


def upsample_decoder():
    return UpsampleDecoder(), [InputSpec([None, 3, None, None], "float32", "image")]


class GatedConv(nn.Layer):
    """A conv scaled by a learned switch read in Python (``if self.gate > 0``), as models that turn
    a branch on at load write it: ``to_static`` writes a ``pd_op.if`` on a Parameter, which
    ``constant_folding_pass`` folds into an if with no regions — Paddle 3.0 to 3.3.1 raise when the
    predictor is made. Declared in the matrix, not in its default models: ``-- --model gated``."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 4, 3, padding=1)
        self.gate = self.create_parameter([1], default_initializer=nn.initializer.Constant(1.0))

    def forward(self, image):
        hidden = self.conv(image)
        if self.gate > 0:
            hidden = hidden * self.gate
        return hidden


def gated_conv():
    return GatedConv(), [InputSpec([None, 3, None, None], "float32", "image")]
