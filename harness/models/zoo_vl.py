"""PaddleX 3.7.2's document vision-language models' parts, as matrix models (cell side): what
``PaddleOCRVLForConditionalGeneration`` runs, taken apart into models of their own — its SigLIP
vision tower so far. Built from PaddleX's own classes and config classes, random init, reduced
where the released size does not fit a cell on two cores (said per factory).
"""

from __future__ import annotations

from typing import Any, List, Tuple

import paddle
import paddle.nn as nn
from paddle.static import InputSpec

from .zoo import _PX, _load


class SiglipTower(nn.Layer):
    """PaddleOCR-VL's vision tower (``doc_vlm.modeling.paddleocr_vl._siglip.SiglipVisionModel``) as
    ``PaddleOCRVLForConditionalGeneration.forward`` calls it for one image: its patches in, the
    position ids, sample indices and sequence bounds of that image's grid (fixed here: the grid is
    what the image processor decides from the image's size), 2-D rotary positions on, the last hidden
    states out (what the projector turns into the decoder's image tokens)."""

    def __init__(self, visual: Any, grid: Tuple[int, int, int]):
        super().__init__()
        self.visual, self.grid = visual, grid

    def forward(self, pixel_values):
        patches = self.grid[0] * self.grid[1] * self.grid[2]
        position_ids = paddle.arange(patches) % (self.grid[1] * self.grid[2])
        sample_indices = paddle.zeros([patches], dtype="int64")
        cu_seqlens = paddle.to_tensor([0, patches], dtype="int32")
        out = self.visual(pixel_values=pixel_values.unsqueeze(0), image_grid_thw=[self.grid], position_ids=position_ids,
                          vision_return_embed_list=True, interpolate_pos_encoding=True, sample_indices=sample_indices,
                          cu_seqlens=cu_seqlens, return_pooler_output=False, use_rope=True, window_size=-1)
        return out.last_hidden_state[0]


VL_GRID = (1, 4, 6)  # one image of 4×6 patches of 14×14 pixels (56×84)


def paddleocr_vl_vision() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleOCR-VL's SigLIP vision tower (PaddleX 3.7.2), fed one image's 24 patches, reduced to
    hidden 64, 2 layers, 4 heads (its config class's defaults: 768 hidden, 12 layers, 12 heads; the
    released checkpoint's larger still), so that a cell's every stage and analysis fit two cores."""
    vl = f"{_PX}.doc_vlm.modeling.paddleocr_vl"
    (model_cls,), (config_cls,) = _load(f"{vl}._siglip", "SiglipVisionModel"), _load(f"{vl}._config", "PaddleOCRVisionConfig")
    config = config_cls(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    patches = VL_GRID[0] * VL_GRID[1] * VL_GRID[2]
    return SiglipTower(model_cls(config), VL_GRID), [InputSpec([patches, 3, 14, 14], "float32", "pixel_values")]
