"""Real architectures from the Paddle suites' own packages, as matrix models (cell side).

No downloads: every model is built from its package's own code with random init, and the
harness's lite training (BatchNorm recalibration + a few steps towards unit-scale targets) gives
its outputs meaningful magnitudes. What is exported is what a deployment exports:

* **PaddleX 3.7.2** (``paddlex.inference.models.*.modeling``): the model classes' ``forward``
  takes numpy and returns numpy (post-processing around the network), so each factory here wraps
  the network parts in a layer whose ``forward`` is the tensor part of the original, up to the
  last activation: classification and recognition logits before the softmax, the OCR detector's
  probability map before the sigmoid (a random-init sigmoid head saturates to 0/1, where a
  comparison says nothing), RT-DETR's last decoder layer (boxes and class logits) before the
  top-k post-processing. Each wrapper's docstring says which lines of the package it follows.
* **PaddleClas 2.6.0** legendary backbones (``paddleclas.ppcls.arch.backbone``): plain layers,
  exported whole (logits).

Families declare their packages in the matrix (``[families.<name>]``); a family that needs
another Paddle than the cell's is ``skip`` with the reason (``requires_paddle``), not an error.
"""

from __future__ import annotations

import importlib
from typing import Any, List, Tuple

import paddle
import paddle.nn as nn
from paddle.static import InputSpec

_PX = "paddlex.inference.models"


def _load(module: str, *names: str) -> List[Any]:
    loaded = importlib.import_module(module)
    return [getattr(loaded, name) for name in names]


def _image(channels: int = 3, height: "int | None" = None, width: "int | None" = None) -> List[InputSpec]:
    return [InputSpec([None, channels, height, width], "float32", "image")]


class Deployed(nn.Layer):
    """A package's model whose ``forward`` (numpy in, numpy out) is rewritten on tensors by a
    subclass, up to the last activation: ``self.net`` is the package's model, its parameters as they are."""

    def __init__(self, model: Any):
        super().__init__()
        self.net = model


# -- PaddleX: classification -------------------------------------------------------------------

class PPLCNetLogits(Deployed):
    """PaddleX ``PPLCNet.forward`` (image_classification/modeling/pplcnet.py) up to the softmax."""

    def forward(self, image):
        net = self.net
        hidden = net.avg_pool(net.encoder(image))
        hidden = net.act_fn(net.last_convolution(hidden)) * (1 - net.hidden_dropout_prob)
        return net.head(net.flatten(hidden))


def pp_lcnet() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-LCNet x1.0 (PaddleX), 1000 classes."""
    model_cls, config_cls = _load(f"{_PX}.image_classification.modeling.pplcnet", "PPLCNet", "PPLCNetConfig")
    return PPLCNetLogits(model_cls(config_cls())), _image()


class HGNetV2Logits(Deployed):
    """PaddleX ``HGNetV2ForImageClassification.forward`` (hgnetv2.py) up to ``out_act``."""

    def forward(self, image):
        net = self.net
        hidden, _ = net.encoder(net.embedder(image))
        for layer in net.classifier:
            hidden = layer(hidden)
        return net.fc(hidden)


def pp_hgnetv2() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-HGNetV2 (PaddleX's default config), 1000 classes."""
    model_cls, config_cls = _load(f"{_PX}.image_classification.modeling.hgnetv2", "HGNetV2ForImageClassification",
                                  "HGNetV2Config")
    return HGNetV2Logits(model_cls(config_cls())), _image()


# -- PaddleX: OCR --------------------------------------------------------------------------------

class MobileDetLogits(nn.Layer):
    """PaddleX ``PPOCRV5MobileDet.forward`` (text_detection/modeling/pp_ocrv5_mobile_det.py):
    backbone + neck, then the head's ``conv_down``, ``conv_up``, ``conv_final``: the probability
    map before its sigmoid. Contains ``F.interpolate(scale_factor=2)`` in the neck."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model.model
        self.head = model.head

    def forward(self, image):
        hidden = self.model(image)
        return self.head.conv_final(self.head.conv_up(self.head.conv_down(hidden)))


def pp_ocrv5_mobile_det() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv5 mobile text detector (PP-LCNetV3 backbone, RSE-FPN neck, DB head)."""
    model_cls, config_cls = _load(f"{_PX}.text_detection.modeling.pp_ocrv5_mobile_det", "PPOCRV5MobileDet",
                                  "PPOCRV5MobileDetConfig")
    return MobileDetLogits(model_cls(config_cls())), _image()


class ServerDet(nn.Layer):
    """PaddleX ``PPOCRV5ServerDet.forward`` (pp_ocrv5_server_det.py) on tensors: its head mixes a
    binarization branch with a sigmoid-refined one (0.5·(a + σ(b))), kept whole."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model.model
        self.head = model.head

    def forward(self, image):
        return self.head(self.model(image))


def pp_ocrv5_server_det() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv5 server text detector (PP-HGNetV2 backbone)."""
    model_cls, config_cls = _load(f"{_PX}.text_detection.modeling.pp_ocrv5_server_det", "PPOCRV5ServerDet",
                                  "PPOCRV5ServerDetConfig")
    return ServerDet(model_cls(config_cls())), _image()


class RecLogits(nn.Layer):
    """PaddleX ``PPOCRV5{Mobile,Server}Rec.forward`` (text_recognition/modeling): backbone, then
    the head's SVTR encoder and linear layer: per-step character logits ``[N, T, C]`` before the
    softmax (CTC decoding is outside the program)."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model.model
        self.encoder = model.head.encoder
        self.linear = model.head.head

    def forward(self, image):
        return self.linear(self.encoder(self.model(image)))


def pp_ocrv5_mobile_rec() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv5 mobile text recognizer (sequence output)."""
    model_cls, config_cls = _load(f"{_PX}.text_recognition.modeling.pp_ocrv5_mobile_rec", "PPOCRV5MobileRec",
                                  "PPOCRV5MobileRecConfig")
    return RecLogits(model_cls(config_cls())), _image(height=48)


def pp_ocrv5_server_rec() -> Tuple[nn.Layer, List[InputSpec]]:
    """PP-OCRv5 server text recognizer (PP-HGNetV2 backbone, sequence output)."""
    model_cls, config_cls = _load(f"{_PX}.text_recognition.modeling.pp_ocrv5_server_rec", "PPOCRV5ServerRec",
                                  "PPOCRV5ServerRecConfig")
    return RecLogits(model_cls(config_cls())), _image(height=48)


# -- PaddleX: detection with attention -----------------------------------------------------------

class RTDETRHead(nn.Layer):
    """PaddleX ``RTDETR.forward`` (object_detection/modeling/rt_detr.py) up to the post-process:
    the last decoder layer's boxes and class logits."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model.model

    def forward(self, image):
        out = self.model(image)
        return {"boxes": out["intermediate_reference_points"][:, -1], "logits": out["intermediate_logits"][:, -1]}


def rt_detr() -> Tuple[nn.Layer, List[InputSpec]]:
    """RT-DETR (PaddleX's default config: ResNet backbone, hybrid encoder, deformable decoder)."""
    model_cls, config_cls = _load(f"{_PX}.object_detection.modeling.rt_detr", "RTDETR", "RTDETRConfig")
    return RTDETRHead(model_cls(config_cls())), _image()


# -- PaddleX: language models (token ids in) ------------------------------------------------------
# PaddleNLP 2.8/3.0b4 and PaddleX 3.7.2 do not install together (measured: PaddleNLP's transformers
# import ``aistudio_sdk.hub.download``, gone from the aistudio-sdk >= 0.3.5 PaddleX requires), and
# PaddleX's Qwen2 / ERNIE-4.5 decoders call Python helpers to_static cannot convert; the suites'
# language-model code that installs beside the zoo and exports is PaddleX's own, below.

class FormulaTextLogits(Deployed):
    """PaddleX PP-FormulaNet's text decoder (``formula_recognition/modeling/mbart.py``,
    ``MBartDecoder``: causal self-attention and cross-attention over the encoder's states) and its
    ``lm_head``, as ``PPFormulaNetForConditionalGeneration._decode_step`` runs them without a cache:
    token ids in, next-token logits out."""

    def __init__(self, decoder: Any, vocab: int):
        super().__init__(decoder)
        self.lm_head = nn.Linear(decoder.config.d_model, vocab, bias_attr=False)

    def forward(self, input_ids, encoder_hidden_states):
        return self.lm_head(self.net(input_ids=input_ids, encoder_hidden_states=encoder_hidden_states,
                                     cache=None, past_length=0))


def formula_text_decoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """A decoder language model: PP-FormulaNet's MBart text decoder, tiny (2 layers, d_model 64,
    vocabulary 1000), fed token ids [batch, length] and 8 encoder states."""
    (decoder_cls,) = _load(f"{_PX}.formula_recognition.modeling.mbart", "MBartDecoder")
    (config_cls,) = _load(f"{_PX}.formula_recognition.modeling._config_pp_formulanet", "PPFormulaNetTextConfig")
    config = config_cls(vocab_size=1000, d_model=64, decoder_layers=2, decoder_ffn_dim=128, decoder_attention_heads=4,
                        max_position_embeddings=128, dropout=0.0)
    return FormulaTextLogits(decoder_cls(config), 1000), [
        InputSpec([None, None], "int64", "input_ids"), InputSpec([None, 8, 64], "float32", "encoder_hidden_states")]


class ReadingOrderStates(Deployed):
    """PaddleX PP-DocLayoutV2's reading-order encoder (``object_detection/modeling/pp_doclayout_v2.py``):
    ``PPDocLayoutV2TextEmbeddings`` (token, position, layout embeddings) and the encoder with its
    spatial attention bias, as ``PPDocLayoutV2ReadingOrder.forward`` runs them once it has made
    its token ids — fed here, as a text encoder is — with every position attended."""

    def __init__(self, config: Any):
        (embeddings_cls, encoder_cls) = _load(f"{_PX}.object_detection.modeling.pp_doclayout_v2",
                                              "PPDocLayoutV2TextEmbeddings", "PPDocLayoutV2ReadingOrderEncoder")
        super().__init__(encoder_cls(config))
        self.embeddings = embeddings_cls(config)

    def forward(self, input_ids, bbox):
        hidden = self.embeddings.dropout(self.embeddings.norm(self.embeddings(input_ids=input_ids, bbox=bbox)))
        mask = paddle.zeros([input_ids.shape[0], 1, 1, input_ids.shape[1]], dtype=hidden.dtype)
        positions = paddle.arange(input_ids.shape[1]).unsqueeze(0).expand(input_ids.shape)
        return self.net(hidden_states=hidden, bbox=bbox, attention_mask=mask, position_ids=positions)


def reading_order_encoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """An encoder language model: PP-DocLayoutV2's LayoutLMv3-style reading-order encoder, tiny
    (2 layers, hidden 64, vocabulary 1000), fed token ids and their boxes (0..1000)."""
    (config_cls,) = _load(f"{_PX}.object_detection.modeling._config_pp_doclayout_v2", "PPDocLayoutV2ReadingOrderConfig")
    config = config_cls(hidden_size=64, num_attention_heads=4, intermediate_size=128, num_hidden_layers=2,
                        vocab_size=1000, coordinate_size=16, shape_size=16, max_position_embeddings=128,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return ReadingOrderStates(config), [InputSpec([None, None], "int64", "input_ids"),
                                        InputSpec([None, None, 4], "int64", "bbox")]


# -- PaddleFormers: decoder-only language models (token ids in, next-token logits out) --------------
# PaddleFormers 1.2.0 (``paddleformers.transformers``), tiny random-init configs,
# KV cache off. Each family's model computes its rotary table (cos, sin) once from the positions,
# its causal mask once, and passes both and the positions to every decoder layer, as the suite
# does. ``fuse_rms_norm=False`` everywhere: the suite's default fused RMS norm calls
# ``fused_rms_norm_ext``, a kernel Paddle registers for GPUs only ("The kernel
# `fused_rms_norm_ext` is not registered" on this CPU); the suite's own unfused branch is used.
# The head is ``calc_lm_head_logits``' matmul (``transpose_y=True``, no bias) called on the decoder's
# last hidden state: ``LMHead.forward`` reads ``config.get(...)``, whose ``__getattribute__``
# (``super()`` inside) to_static converts into an endless recursion (RecursionError at 3.3.1).
# Left out: Gemma 3 (its sliding-window mask is a Python loop over the sequence length, refused by
# to_static: "bool(Tensor) is not supported in static graph mode"); Qwen2/Qwen3 (they import
# ``paddlefleet``, which the package index does not serve).

_PF = "paddleformers.transformers"
_DECODER = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, max_position_embeddings=128, use_cache=False,
                fuse_rms_norm=False)


class CausalLMLogits(nn.Layer):
    """A PaddleFormers ``<Family>ForCausalLM``: its decoder (``.model``, embeddings, the layers,
    the final norm) and the logits its ``lm_head`` computes (``calc_lm_head_logits``: hidden @ W^T)."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model.model
        self.lm_head = model.lm_head

    def forward(self, input_ids):
        hidden = self.model(input_ids=input_ids, use_cache=False, return_dict=False)[0]
        return paddle.matmul(hidden, self.lm_head.weight, transpose_y=True)


def _causal_lm(model_name: str, config_name: str) -> Tuple[nn.Layer, List[InputSpec]]:
    model_cls, config_cls = _load(_PF, model_name, config_name)
    return CausalLMLogits(model_cls(config_cls(**_DECODER))), [InputSpec([None, None], "int64", "input_ids")]


class ShippedCausalLM(nn.Layer):
    """A PaddleFormers ``<Family>ForCausalLM`` exported through its own ``forward`` as it ships (its
    ``lm_head`` included): the finding beside the workaround ``CausalLMLogits`` takes, so that what
    the workaround routes around stays recorded (a setup error in Paddle's words)."""

    def __init__(self, model: Any):
        super().__init__()
        self.net = model

    def forward(self, input_ids):
        return self.net(input_ids=input_ids, use_cache=False, return_dict=False)[0]


def llama_as_shipped() -> Tuple[nn.Layer, List[InputSpec]]:
    """Llama as PaddleFormers ships it: at 3.3.1 ``to_static`` of its ``LMHead`` recurses without end
    (``config.get`` -> ``__getattribute__``): RecursionError, the finding ``llama_decoder`` routes around."""
    model_cls, config_cls = _load(_PF, "LlamaForCausalLM", "LlamaConfig")
    return ShippedCausalLM(model_cls(config_cls(**_DECODER))), [InputSpec([None, None], "int64", "input_ids")]


def gemma3_as_shipped() -> Tuple[nn.Layer, List[InputSpec]]:
    """Gemma 3 as PaddleFormers ships it (a sliding window of 4): its sliding-window mask is a
    Python loop over the sequence length, which ``to_static`` refuses at 3.3.1 ("bool(Tensor) is not
    supported in static graph mode") — recorded, not routed around."""
    model_cls, config_cls = _load(_PF, "Gemma3ForCausalLM", "Gemma3TextConfig")
    return ShippedCausalLM(model_cls(config_cls(sliding_window=4, **_DECODER))), [
        InputSpec([None, None], "int64", "input_ids")]


def llama_decoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """Llama (PaddleFormers 1.2.0): RMS norm, rotary positions, grouped-query attention, SwiGLU MLP;
    2 layers, hidden 64, vocabulary 1000."""
    return _causal_lm("LlamaForCausalLM", "LlamaConfig")


def ernie45_decoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """ERNIE 4.5 dense (PaddleFormers 1.2.0); 2 layers, hidden 64, vocabulary 1000."""
    return _causal_lm("Ernie4_5ForCausalLM", "Ernie4_5Config")


def phi3_decoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """Phi-3 (PaddleFormers 1.2.0): fused qkv and gate-up projections; 2 layers, hidden 64,
    vocabulary 1000."""
    return _causal_lm("Phi3ForCausalLM", "Phi3Config")


# -- PaddleClas 2.6.0 legendary backbones ----------------------------------------------------------

def _paddleclas(name: str, **kwargs: Any) -> Tuple[nn.Layer, List[InputSpec]]:
    (build,) = _load("paddleclas.ppcls.arch.backbone", name)
    return build(class_num=kwargs.pop("class_num", 1000), **kwargs), _image()


def clas_resnet50_vd() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleClas ResNet50_vd."""
    return _paddleclas("ResNet50_vd")


def clas_pplcnet_x1_0() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleClas PPLCNet_x1_0."""
    return _paddleclas("PPLCNet_x1_0")


def clas_mobilenetv3_large() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleClas MobileNetV3_large_x1_0 (hardswish, SE)."""
    return _paddleclas("MobileNetV3_large_x1_0")


def clas_swin_tiny() -> Tuple[nn.Layer, List[InputSpec]]:
    """PaddleClas SwinTransformer_tiny_patch4_window7_224 (window attention; fixed 224 input)."""
    layer, _ = _paddleclas("SwinTransformer_tiny_patch4_window7_224")
    return layer, [InputSpec([None, 3, 224, 224], "float32", "image")]


__all__ = ["paddle"]
