"""PaddleX 3.7.2's document vision-language models' parts, as matrix models (cell side): what
``PaddleOCRVLForConditionalGeneration`` runs, taken apart into models of their own (its SigLIP
vision tower and its ERNIE decoder), and the vision encoders of the other document VLMs PaddleX ships
(Qwen2-VL's and Qwen2.5-VL's, which PP-DocBee and PP-DocBee2 run; GOT-OCR 2.0's, which PP-Chart2Table
runs, with its projector). Built from PaddleX's own classes and config classes, random init, reduced
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


class ErnieVLDecoder(nn.Layer):
    """PaddleOCR-VL's language model (``paddleocr_vl._ernie.Ernie4_5Model`` and its ``lm_head``) as
    ``PaddleOCRVLForConditionalGeneration.forward`` calls it once the image tokens are merged: the
    input embeddings and the 3-D multimodal rotary positions in (temporal, height, width per token;
    batch 1, as that forward requires), the logits out."""

    def __init__(self, model: Any, lm_head: nn.Layer):
        super().__init__()
        self.model, self.lm_head = model, lm_head

    def forward(self, inputs_embeds, position_ids):
        # The processor's mask of one unpadded sequence (that forward requires one).
        attention_mask = paddle.ones(paddle.shape(inputs_embeds)[:2], dtype="int64")
        out = self.model(input_ids=None, position_ids=position_ids, attention_mask=attention_mask,
                         inputs_embeds=inputs_embeds, use_cache=False, return_dict=False)
        return self.lm_head(out[0])


def paddleocr_vl_decoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleOCR-VL's ERNIE 4.5 decoder (PaddleX 3.7.2), reduced to hidden 64, 2 layers, 4 heads (2 of
    them key-value), head 16, vocabulary 512 (released: ERNIE-4.5-0.3B, hidden 1024, 18 layers, head 128,
    vocabulary 103424), its multimodal rotary sections scaled with the head ([16, 24, 24] of 64 → [2, 3, 3] of 8)."""
    vl = f"{_PX}.doc_vlm.modeling.paddleocr_vl"
    (model_cls,), (config_cls,) = _load(f"{vl}._ernie", "Ernie4_5Model"), _load(f"{vl}._config", "PaddleOCRVLConfig")
    config = config_cls(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                        rope_scaling={"mrope_section": [2, 3, 3], "rope_type": "default", "type": "default"})
    decoder = ErnieVLDecoder(model_cls(config), nn.Linear(config.hidden_size, config.vocab_size, bias_attr=False))
    return decoder, [InputSpec([1, None, 64], "float32", "inputs_embeds"), InputSpec([3, 1, None], "int64", "position_ids")]


class GridVisionTower(nn.Layer):
    """A Qwen-VL vision transformer as the VL model calls it for one image: its flattened patches in
    (temporal × channel × 14 × 14 values each), the image's grid (temporal, height, width in patches:
    what the image processor decides from the image's size, fixed here), the merged patch embeddings
    out (the decoder's image tokens)."""

    def __init__(self, tower: Any, grid: Tuple[int, int, int]):
        super().__init__()
        self.tower, self.grid = tower, grid

    def forward(self, pixel_values):
        return self.tower(pixel_values, paddle.to_tensor([list(self.grid)], dtype="int64"))


QWEN_GRID = (1, 8, 8)  # one image of 8×8 patches of 14×14 pixels (112×112), merged 2×2
QWEN_PATCH = 3 * 2 * 14 * 14  # channels × temporal patch × patch²


def qwen2_vl_vision() -> Tuple[nn.Layer, List[InputSpec]]:
    """Qwen2-VL's vision transformer (PaddleX 3.7.2 ``qwen2_vl.Qwen2VisionTransformerPretrainedModel``,
    PP-DocBee's), reduced to embed 64, 2 blocks, 4 heads (released: embed 1280, 32 blocks, 16 heads)."""
    module = f"{_PX}.doc_vlm.modeling.qwen2_vl"
    tower_cls, config_cls = _load(module, "Qwen2VisionTransformerPretrainedModel", "Qwen2VLVisionConfig")
    config = config_cls(depth=2, embed_dim=64, hidden_size=64, num_heads=4, mlp_ratio=2, in_channels=3,
                        patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
    patches = QWEN_GRID[0] * QWEN_GRID[1] * QWEN_GRID[2]
    return GridVisionTower(tower_cls(config), QWEN_GRID), [InputSpec([patches, QWEN_PATCH], "float32", "pixel_values")]


def qwen25_vl_vision() -> Tuple[nn.Layer, List[InputSpec]]:
    """Qwen2.5-VL's vision transformer (PaddleX 3.7.2 ``qwen2_5_vl.Qwen2_5_VisionTransformerPretrainedModel``,
    PP-DocBee2's): window attention in 56-pixel windows, full attention in its last block, reduced to
    hidden 64, 2 blocks, 4 heads (released: hidden 1280, 32 blocks, 16 heads, 112-pixel windows, full
    attention every 8th block), its attention the eager one PP-DocBee2's inference class sets."""
    module = f"{_PX}.doc_vlm.modeling.qwen2_5_vl"
    tower_cls, config_cls = _load(module, "Qwen2_5_VisionTransformerPretrainedModel", "Qwen2_5_VLVisionConfig")
    config = config_cls(depth=2, hidden_size=64, intermediate_size=128, num_heads=4, out_hidden_size=64,
                        window_size=56, fullatt_block_indexes=[1])
    config._attn_implementation = "eager"  # what PPDocBee2Inference sets (its default)
    patches = QWEN_GRID[0] * QWEN_GRID[1] * QWEN_GRID[2]
    return GridVisionTower(tower_cls(config), QWEN_GRID), [InputSpec([patches, QWEN_PATCH], "float32", "pixel_values")]


class GotImageFeatures(nn.Layer):
    """GOT-OCR 2.0's image features (``GOT_ocr_2_0.GotOcr2Model.get_image_features``): the SAM-ViT vision
    encoder (windowed and global attention with relative positions, its convolutional neck), then the
    projector's two strided convolutions and linear layer — the image tokens the decoder reads."""

    def __init__(self, vision_tower: nn.Layer, projector: nn.Layer):
        super().__init__()
        self.vision_tower, self.multi_modal_projector = vision_tower, projector

    def forward(self, pixel_values):
        return self.multi_modal_projector(self.vision_tower(pixel_values))


def got_ocr_vision() -> Tuple[nn.Layer, List[InputSpec]]:
    """GOT-OCR 2.0's vision encoder and projector as PaddleX 3.7.2 ships them for PP-Chart2Table, at
    128×128 pixels (8×8 patches, windows of 4, global attention in the second of 2 layers), hidden 64,
    4 heads, neck 32 channels, into a 64-wide decoder (released: 1024 pixels, 12 layers, hidden 768,
    neck 256, decoder 1024)."""
    module = f"{_PX}.doc_vlm.modeling"
    encoder_cls, projector_cls = _load(f"{module}.GOT_ocr_2_0", "GotOcr2VisionEncoder", "GotOcr2MultiModalProjector")
    vision_cls, config_cls = _load(f"{module}._config_pp_chart2table", "GotOcr2VisionConfig", "PPChart2TableConfig")
    vision = vision_cls(hidden_size=64, output_channels=32, num_hidden_layers=2, num_attention_heads=4, image_size=128,
                        patch_size=16, window_size=4, global_attn_indexes=[1], mlp_dim=128)
    config = config_cls(vision_config=vision, text_config={"hidden_size": 64, "vocab_size": 64, "intermediate_size": 64,
                                                           "num_hidden_layers": 1, "num_attention_heads": 4})
    return GotImageFeatures(encoder_cls(vision), projector_cls(config)), [InputSpec([None, 3, 128, 128], "float32",
                                                                                   "pixel_values")]
