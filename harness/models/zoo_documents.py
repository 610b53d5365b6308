"""PaddleX 3.7.2's document models, as matrix models (cell side): PP-OCRv6 detection and recognition,
UVDoc (unwarping), PP-DocLayout V2/V3 (layout detection with reading order), SLANet and SLANeXt
(table structure). As in ``zoo.py``: built from PaddleX's own classes at their released
configuration (PaddleX's config classes, defaults), random init; what is exported is the tensor part
of each class's ``forward`` (numpy in and out around it), up to the last activation — the sigmoid
of a DB map and the softmax of a recognizer are left out, since a random-init head saturates them
to where a comparison says nothing.
"""

from __future__ import annotations

from typing import Any, List, Tuple

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.static import InputSpec

from .zoo import _PX, MobileDetLogits, RTDETRHead, RecLogits, _image, _load


def _built(module: str, model: str, config: str, **reduced: Any) -> Any:
    """PaddleX's model at its config class's defaults (the released configuration), but for ``reduced``
    (said in the factory's docstring)."""
    model_cls, config_cls = _load(f"{_PX}.{module}", model, config)
    return model_cls(config_cls(**reduced))


# -- PP-OCRv6 --------------------------------------------------------------------------------------

def pp_ocrv6_small_det() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv6 small text detector (PP-LCNetV4 backbone): the DB map before its sigmoid."""
    return MobileDetLogits(_built("text_detection.modeling.pp_ocrv6_small_det", "PPOCRV6SmallDet",
                                  "PPOCRV6SmallDetConfig")), _image()


def pp_ocrv6_medium_det() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv6 medium text detector: the DB map before its sigmoid."""
    return MobileDetLogits(_built("text_detection.modeling.pp_ocrv6_medium_det", "PPOCRV6MediumDet",
                                  "PPOCRV6MediumDetConfig")), _image()


def pp_ocrv6_small_rec() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv6 small text recognizer (PP-LCNetV4 backbone, SVTR encoder): per-step logits."""
    return RecLogits(_built("text_recognition.modeling.pp_ocrv6_small_rec", "PPOCRV6SmallRec",
                            "PPOCRV6SmallRecConfig")), _image(height=48)


class TinyRecLogits(nn.Layer):
    """PaddleX ``PPOCRV6TinyRecHead.forward`` (pp_ocrv6_tiny_rec.py) up to its softmax: depthwise and
    pointwise 1-D convs, then two linear layers: per-step character logits ``[N, T, C]``."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model.model
        self.head = model.head

    def forward(self, image):
        head = self.head
        hidden = self.model(image).squeeze(2)
        hidden = head.act_fn(head.norm1(head.conv1(hidden)))
        hidden = head.act_fn(head.norm2(head.conv2(hidden)))
        return head.fc2(head.fc1(hidden.transpose([0, 2, 1])))


def pp_ocrv6_tiny_rec() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv6 tiny text recognizer (convolutional head): per-step logits."""
    return TinyRecLogits(_built("text_recognition.modeling.pp_ocrv6_tiny_rec", "PPOCRV6TinyRec",
                                "PPOCRV6TinyRecConfig")), _image(height=48)


# -- unwarping, layout, tables --------------------------------------------------------------------

class UVDocUnwarped(nn.Layer):
    """PaddleX ``UVDocNet.forward`` (image_unwarping/modeling/uvdoc.py) on tensors: the image resized
    to the model's size, the backbone's maps fused by the head into a 2-D grid, the grid resized back
    and the image resampled through it (``grid_sample``): the unwarped image."""

    def __init__(self, model: Any):
        super().__init__()
        self.backbone, self.head = model.backbone, model.head
        self.upsample_size, self.upsample_mode = model.upsample_size, model.upsample_mode

    def forward(self, image):
        h_ori, w_ori = image.shape[2:]
        x = F.interpolate(image, size=self.upsample_size, mode=self.upsample_mode, align_corners=True)
        out = self.head(paddle.concat(self.backbone(x), axis=1))
        grid = F.interpolate(out, size=(h_ori, w_ori), mode=self.upsample_mode, align_corners=True)
        return F.grid_sample(image, grid.transpose([0, 2, 3, 1]), align_corners=True)


def uvdoc() -> Tuple[nn.Layer, List[InputSpec]]:
    """UVDoc document unwarping (PaddleX's default config)."""
    return UVDocUnwarped(_built("image_unwarping.modeling.uvdoc", "UVDocNet", "UVDocConfig")), _image()


def pp_doclayout_v2() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-DocLayout V2's detector (RT-DETR family: the last decoder layer's boxes and class logits;
    the reading-order model runs on the post-processed boxes, outside the program)."""
    return RTDETRHead(_built("object_detection.modeling.pp_doclayout_v2", "PPDocLayoutV2",
                             "PPDocLayoutV2Config")), _image()


class DocLayoutV3Head(nn.Layer):
    """PaddleX ``PPDocLayoutV3.forward`` (pp_doclayout_v3.py) up to its post-process: the last decoder
    layer's boxes, class logits and reading-order logits."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model.model

    def forward(self, image):
        out = self.model(image)
        return {"boxes": out["intermediate_reference_points"][:, -1], "logits": out["intermediate_logits"][:, -1],
                "order_logits": out["out_order_logits"][:, -1]}


def pp_doclayout_v3() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-DocLayout V3 (layout detection with reading order in the decoder)."""
    return DocLayoutV3Head(_built("object_detection.modeling.pp_doclayout_v3", "PPDocLayoutV3",
                                  "PPDocLayoutV3Config")), _image()


class TableStructure(nn.Layer):
    """PaddleX ``SLANet.forward`` / ``SLANeXt.forward`` (table_structure_recognition/modeling) on
    tensors: the backbone's features, then the structure head's autoregressive decode (its own loop
    over steps, as shipped): the structure token probabilities."""

    def __init__(self, model: Any):
        super().__init__()
        self.backbone, self.head = model.backbone, model.head

    def forward(self, image):
        return self.head(self.backbone(image))


def slanet() -> Tuple[nn.Layer, List[InputSpec]]:
    """SLANet table structure recognizer, as shipped (its decode loop included)."""
    return TableStructure(_built("table_structure_recognition.modeling.slanet", "SLANet", "SLANetConfig")), _image()


def slanext() -> Tuple[nn.Layer, List[InputSpec]]:
    """SLANeXt table structure recognizer (its ViT-B backbone at the released 512×512), decoding 16
    structure steps instead of the released 500: at 500 one forward takes 23 s on two cores (the
    decode never stops early on random weights), which no staged ladder can repeat."""
    return TableStructure(_built("table_structure_recognition.modeling.slanext", "SLANeXt",
                                 "SLANeXtConfig", max_text_length=16)), _image()
