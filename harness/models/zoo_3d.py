"""The zoo's 3D perception networks (cell side): Paddle3D 1.0.0's LiDAR and monocular models, each
built from the package's own classes at its released configuration's layout (random init):

- LiDAR segmentation: ``SqueezeSegV3`` on ``SACRangeNet21`` (SemanticKITTI's: a range image of 5
  channels — range, x, y, z, remission — in, 20 classes' logits out). The suite's ``export_forward``
  takes the argmax of the last head; the logits before it are what is compared here, since the
  argmax of a random-init model's near-equal logits flips on an ulp and would measure the rounding;
- LiDAR detection, the bird's-eye-view network a pillar encoder feeds (its voxelizer and scatter
  are index operations on the point cloud, ahead of it): PointPillars' ``SecondBackbone`` +
  ``SecondFPN`` + ``SSDHead`` (KITTI car's layout) and CenterPoint's ``SecondBackbone`` +
  ``SecondFPN`` + ``CenterHead`` (nuScenes pillars' layout: FPN strides 0.5, 1, 2, separate heads for
  centre, height, size, rotation and velocity), a 64-channel pseudo-image in;
- monocular detection: SMOKE's ``DLA34`` backbone and ``SMOKEPredictor`` (KITTI's: 3 classes, group
  norm), an image in, the keypoint heatmap and the 3D box regression out (its decoding with the
  camera's intrinsics is post-processing outside the network).

Each head's outputs (dicts, lists of dicts) are returned as a tuple of tensors in a fixed order.
"""

from __future__ import annotations

import importlib
from typing import Any, List, Tuple

import paddle.nn as nn
from paddle.static import InputSpec


def _models() -> Any:
    return importlib.import_module("paddle3d.models")


class _Flat(nn.Layer):
    """A network whose head returns dicts (or a list of them): its tensors as a tuple, by key order."""

    def __init__(self, net: nn.Layer):
        super().__init__()
        self.net = net

    def forward(self, x):
        out = self.net(x)
        dicts = out if isinstance(out, (list, tuple)) else [out]
        return tuple(d[k] for d in dicts for k in sorted(d))


class _BirdsEye(nn.Layer):
    """The pseudo-image network of a pillar detector: backbone, FPN neck, detection head."""

    def __init__(self, upsample: List[float], head: nn.Layer):
        super().__init__()
        m = _models()
        self.backbone = m.SecondBackbone(in_channels=64, out_channels=[64, 128, 256], layer_nums=[3, 5, 5],
                                         downsample_strides=[2, 2, 2])
        self.neck = m.SecondFPN(in_channels=[64, 128, 256], out_channels=[128, 128, 128], upsample_strides=upsample)
        self.head = head

    def forward(self, pseudo_image):
        return self.head(self.neck(self.backbone(pseudo_image)))


class _Logits(nn.Layer):
    """SqueezeSegV3's ``export_forward`` before its argmax: the last head on the last features."""

    def __init__(self, model: nn.Layer):
        super().__init__()
        self.net = model

    def forward(self, range_image):
        return self.net.heads[-1](self.net.backbone(range_image)[-1])


class _Tasks(nn.Layer):
    """``CenterHead`` returns each task's dict and the shared features: the dicts' tensors."""

    def __init__(self, net: nn.Layer):
        super().__init__()
        self.net = net

    def forward(self, pseudo_image):
        tasks, _shared = self.net(pseudo_image)
        return tuple(t[k] for t in tasks for k in sorted(t))


class _Smoke(nn.Layer):
    """SMOKE's backbone and predictor: the heatmap and the box regression."""

    def __init__(self, backbone: nn.Layer, head: nn.Layer):
        super().__init__()
        self.backbone, self.head = backbone, head

    def forward(self, image):
        heatmap, regression = self.head(self.backbone(image))
        return heatmap, regression


def p3d_squeezesegv3() -> Tuple[nn.Layer, List[InputSpec]]:
    """SqueezeSegV3-21 (SemanticKITTI: 5 input channels, 20 classes), its logits."""
    m = _models()
    backbone = m.SACRangeNet21(in_channels=5, encoder_dropout_prob=0.01, decoder_dropout_prob=0.01)
    model = m.SqueezeSegV3(backbone=backbone, loss=nn.Identity(), num_classes=20)
    return _Logits(model), [InputSpec([None, 5, 64, None], "float32", "range_image")]


def p3d_pointpillars_bev() -> Tuple[nn.Layer, List[InputSpec]]:
    """PointPillars' network after the scatter (KITTI car: one class, two anchors per place)."""
    head = _models().SSDHead(num_classes=1, feature_channels=384, num_anchor_per_loc=2,
                             encode_background_as_zeros=True, use_direction_classifier=True, box_code_size=7)
    return _Flat(_BirdsEye([1, 2, 4], head)), [InputSpec([None, 64, None, None], "float32", "pseudo_image")]


def p3d_centerpoint_bev() -> Tuple[nn.Layer, List[InputSpec]]:
    """CenterPoint's network after the scatter (nuScenes pillars' heads, two of its six tasks)."""
    head = _models().CenterHead(
        in_channels=384, tasks=[dict(num_class=1, class_names=["car"]), dict(num_class=2, class_names=["truck", "bus"])],
        common_heads=dict(reg=[2, 2], height=[1, 2], dim=[3, 2], rot=[2, 2], vel=[2, 2]), share_conv_channel=64,
        code_weights=[1.0] * 10)
    return _Tasks(_BirdsEye([0.5, 1, 2], head)), [InputSpec([None, 64, None, None], "float32", "pseudo_image")]


def p3d_smoke() -> Tuple[nn.Layer, List[InputSpec]]:
    """SMOKE's network (KITTI: DLA-34, 3 classes, regression channels 1, 2, 3, 2, 2, group norm)."""
    m = _models()
    backbone = m.DLA34()
    head = m.SMOKEPredictor(num_classes=3, reg_channels=(1, 2, 3, 2, 2), num_chanels=256, norm_type="gn",
                            in_channels=64)
    return _Smoke(backbone, head), [InputSpec([None, 3, None, None], "float32", "image")]


__all__ = ["p3d_squeezesegv3", "p3d_pointpillars_bev", "p3d_centerpoint_bev", "p3d_smoke"]
