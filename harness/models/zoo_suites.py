"""The zoo's models from the suites beyond PaddleX and PaddleClas (cell side): PaddleSeg 2.8.0's
segmenters, PaddleDetection 2.6.0's PP-YOLOE-s backbone and neck, PaddleScience 1.4.0's physics-
informed networks. Built from each package's own classes with the arguments of its released configs
(named per factory), random init; exported as each suite's export tool exports them: a segmenter's
logits (PaddleSeg's ``export.py`` adds the argmax outside the network it compares), the detector's
multi-scale features (the head's decode and NMS are post-processing), a PINN's fields.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import paddle
import paddle.nn as nn
from paddle.static import InputSpec

from .zoo import _image

# -- PaddleSeg -------------------------------------------------------------------------------------


class SegLogits(nn.Layer):
    """A PaddleSeg model's eval-mode forward returns ``[logit]`` (auxiliary heads only in training):
    the logits at the input's resolution."""

    def __init__(self, model: nn.Layer):
        super().__init__()
        self.net = model

    def forward(self, image):
        return self.net(image)[0]


def seg_bisenetv2() -> Tuple[nn.Layer, List[InputSpec]]:
    """BiSeNetV2 (configs/bisenet/bisenet_cityscapes_1024x1024_160k.yml), 19 classes."""
    from paddleseg.models import BiSeNetV2

    return SegLogits(BiSeNetV2(num_classes=19)), _image()


def seg_pp_liteseg() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-LiteSeg-T (configs/pp_liteseg/pp_liteseg_stdc1_cityscapes_1024x512_scale0.5_160k.yml):
    STDC1 backbone, 19 classes."""
    from paddleseg.models import PPLiteSeg
    from paddleseg.models.backbones import STDC1

    return SegLogits(PPLiteSeg(num_classes=19, backbone=STDC1(), arm_out_chs=[32, 64, 128],
                               seg_head_inter_chs=[32, 64, 64])), _image()


def seg_deeplabv3p() -> Tuple[nn.Layer, List[InputSpec]]:
    """DeepLabV3+ (configs/deeplabv3p/deeplabv3p_resnet50_os8_cityscapes_1024x512_80k.yml) on the
    ResNet18-vd backbone of its lighter configs, output stride 8, 19 classes."""
    from paddleseg.models import DeepLabV3P
    from paddleseg.models.backbones import ResNet18_vd

    return SegLogits(DeepLabV3P(num_classes=19, backbone=ResNet18_vd(output_stride=8), backbone_indices=[0, 3],
                                aspp_ratios=[1, 12, 24, 36])), _image()


# -- PaddleDetection ---------------------------------------------------------------------------------

class DetectorFeatures(nn.Layer):
    """PaddleDetection's ``YOLOv3``-style architecture up to its head: the backbone reads the inputs
    dict (``{"image": ...}``), the neck fuses its levels; the three feature maps come out."""

    def __init__(self, backbone: nn.Layer, neck: nn.Layer):
        super().__init__()
        self.backbone, self.neck = backbone, neck

    def forward(self, image):
        return self.neck(self.backbone({"image": image}))


def det_ppyoloe_s() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-YOLOE-s (configs/ppyoloe/_base_/ppyoloe_crn.yml at width 0.50, depth 0.33): CSPResNet and the
    CustomCSPPAN neck."""
    from ppdet.modeling.backbones import CSPResNet
    from ppdet.modeling.necks import CustomCSPPAN

    backbone = CSPResNet(layers=[3, 6, 6, 3], channels=[64, 128, 256, 512, 1024], return_idx=[1, 2, 3],
                         use_large_stem=True, width_mult=0.50, depth_mult=0.33)
    neck = CustomCSPPAN(in_channels=[s.channels for s in backbone.out_shape], out_channels=[768, 384, 192],
                        stage_num=1, block_num=3, act="swish", spp=True, width_mult=0.50, depth_mult=0.33)
    return DetectorFeatures(backbone, neck), _image()


# -- PaddleScience -----------------------------------------------------------------------------------

class Fields(nn.Layer):
    """A PaddleScience ``Arch`` takes and returns dicts of named columns: here the coordinates as one
    ``[N, len(keys)]`` tensor in, the output fields concatenated in key order out."""

    def __init__(self, net: nn.Layer, keys: Sequence[str]):
        super().__init__()
        self.net, self.keys = net, tuple(keys)

    def forward(self, coordinates):
        fields: Dict[str, Any] = self.net({k: coordinates[:, i:i + 1] for i, k in enumerate(self.keys)})
        return paddle.concat([fields[k] for k in sorted(fields)], axis=-1)


def _coordinates(n: int) -> List[InputSpec]:
    return [InputSpec([None, n], "float32", "coordinates")]


def sci_ns_pinn() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleScience's MLP as its 2-D unsteady Navier-Stokes examples configure it (x, y, t → u, v, p;
    9 layers of 50, tanh; examples/cylinder/2d_unsteady)."""
    from ppsci.arch import MLP

    return Fields(MLP(("x", "y", "t"), ("u", "v", "p"), num_layers=9, hidden_size=50, activation="tanh"),
                  ("x", "y", "t")), _coordinates(3)


def sci_modified_mlp() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleScience's ModifiedMLP (gated by two encoders, as PirateNet-era examples use it; x, t → u),
    4 layers of 64, tanh."""
    from ppsci.arch import ModifiedMLP

    return Fields(ModifiedMLP(("x", "t"), ("u",), num_layers=4, hidden_size=64, activation="tanh"),
                  ("x", "t")), _coordinates(2)
