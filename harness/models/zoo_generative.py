"""The zoo's diffusion models (cell side): PPDiffusers 0.29.0's denoisers and autoencoder, each built
from the package's own model class at a small configuration of its released layout (two resolution
levels of 32 and 64 channels, groups of 8; random init), exported as a pipeline calls it per step:

- ``UNet2DModel`` (DDPM's): the noisy image and the timestep in, the predicted noise out;
- ``UNet2DConditionModel`` (Stable Diffusion's): the noisy latent, the timestep and the text
  encoder's states in (cross-attention of 32), the predicted noise out;
- ``AutoencoderKL.decode`` (Stable Diffusion's VAE decoder): a 4-channel latent in, the image out;
- ``Transformer2DModel`` with adaptive norm zero (DiT's): the latent in patches of 2, the timestep and a class label in.

PPDiffusers imports PaddleNLP (``families.ppdiffusers``: apart, with PaddleNLP's pins).
"""

from __future__ import annotations

import importlib
from typing import Any, List, Tuple

import paddle.nn as nn
from paddle.static import InputSpec

_LEVELS = dict(layers_per_block=1, block_out_channels=(32, 64), norm_num_groups=8)


def _class(name: str) -> Any:
    return getattr(importlib.import_module("ppdiffusers"), name)


class Denoiser(nn.Layer):
    """One denoising step: ``(sample, timestep[, condition]) -> noise``; ``condition`` is the text
    states (a conditioned UNet) or the class label (DiT)."""

    def __init__(self, model: Any, condition: str = ""):
        super().__init__()
        self.net = model
        self.condition = condition

    def forward(self, sample, timestep, condition=None):
        if self.condition == "encoder_hidden_states":
            return self.net(sample, timestep, encoder_hidden_states=condition, return_dict=False)[0]
        if self.condition == "class_labels":
            return self.net(sample, timestep=timestep, class_labels=condition, return_dict=False)[0]
        return self.net(sample, timestep, return_dict=False)[0]


class LatentDecoder(nn.Layer):
    """The VAE's decoder as a pipeline's last step calls it: ``decode(latent)``."""

    def __init__(self, model: Any):
        super().__init__()
        self.net = model

    def forward(self, latent):
        return self.net.decode(latent, return_dict=False)[0]


def _step(channels: int, size: int) -> List[InputSpec]:
    return [InputSpec([None, channels, size, size], "float32", "sample"), InputSpec([1], "int64", "timestep")]


def diff_unet2d() -> Tuple[nn.Layer, List[InputSpec]]:
    """DDPM's UNet: a plain and an attention level down and up, 16x16 RGB."""
    model = _class("UNet2DModel")(sample_size=16, in_channels=3, out_channels=3, down_block_types=(
        "DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"), **_LEVELS)
    return Denoiser(model), _step(3, 16)


def diff_unet2d_condition() -> Tuple[nn.Layer, List[InputSpec]]:
    """Stable Diffusion's UNet: cross-attention levels over 8 text states of 32, a 4-channel 16x16 latent."""
    model = _class("UNet2DConditionModel")(sample_size=16, in_channels=4, out_channels=4, down_block_types=(
        "CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, **_LEVELS)
    return Denoiser(model, "encoder_hidden_states"), [*_step(4, 16), InputSpec([None, 8, 32], "float32", "text_states")]


def diff_vae_decoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """Stable Diffusion's VAE decoder: a 4-channel 8x8 latent to a 16x16 image."""
    model = _class("AutoencoderKL")(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                                    up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(32, 64),
                                    latent_channels=4, norm_num_groups=8, sample_size=16)
    return LatentDecoder(model), [InputSpec([None, 4, 8, 8], "float32", "latent")]


def diff_dit() -> Tuple[nn.Layer, List[InputSpec]]:
    """DiT: 2 blocks of adaptive-norm-zero attention over 2x2 patches of a 4-channel 8x8 latent,
    conditioned on the timestep and one of 10 classes."""
    # PPDiffusers 0.29 builds DiT's transformer as ``Transformer2DModel`` with adaptive norm zero
    # (what ``DiTPipeline`` loads for facebook/DiT-XL-2-256).
    model = _class("Transformer2DModel")(num_attention_heads=2, attention_head_dim=16, in_channels=4, num_layers=2,
                                         sample_size=8, patch_size=2, num_embeds_ada_norm=10,
                                         norm_type="ada_norm_zero", norm_num_groups=8)
    return Denoiser(model, "class_labels"), [*_step(4, 8), InputSpec([1], "int64", "class_label")]
