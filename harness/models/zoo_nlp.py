"""The zoo's text encoders (cell side): PaddleNLP 2.8.1's transformer encoders, each built from the
package's own model and config classes (``paddlenlp.transformers``), 2 layers, hidden 64, 4 heads,
vocabulary 1000, random init, exported from token ids to the last hidden states (what a deployment
of an encoder exports: the task head and the tokenizer outside).

The configurations keep what tells the released ones apart — T5 v1.1's (and Flan-T5's and mT5's)
gated-GELU feed-forward (``feed_forward_proj="gated-gelu"``: ``gelu_new`` of one projection times
the other), FNet's Fourier mixing, Nyströmformer's landmarks, ELECTRA's and ALBERT's factorized
embeddings, DeBERTa-v2's relative positions — and shrink the widths, as the other families do.

PaddleNLP's top-level import loads ``datasets`` and its hub helpers, whose versions fight
PaddleFormers' (``families.paddlenlp.apart``); it also calls ``paddle.disable_signal_handler()``,
so a crash in one of these cells is reported without Paddle's own C++ stack.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Dict, List, Tuple

import paddle.nn as nn
from paddle.static import InputSpec

PINNED = (1, 16)
_WIDTHS: Dict[str, Any] = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                               intermediate_size=128, max_position_embeddings=64)


class HiddenStates(nn.Layer):
    """A PaddleNLP encoder fed token ids, giving its last hidden states ``[N, L, hidden]``."""

    def __init__(self, model: Any):
        super().__init__()
        self.net = model
        self.tuple_out = "return_dict" in inspect.signature(model.forward).parameters

    def forward(self, input_ids):
        out = self.net(input_ids, return_dict=False) if self.tuple_out else self.net(input_ids)
        return out[0] if isinstance(out, (tuple, list)) else out


def _encoder(model_name: str, config_name: str, pinned: bool = False, **config: Any) -> Tuple[nn.Layer, List[InputSpec]]:
    module = importlib.import_module("paddlenlp.transformers")
    model_cls, config_cls = getattr(module, model_name), getattr(module, config_name)
    # Pinned: exported for one batch of one length, as a deployment that fixes its sequence length
    # exports it; the predictor's passes then see static shapes (and fold and fuse more).
    shape = list(PINNED) if pinned else [None, None]
    return HiddenStates(model_cls(config_cls(**config))), [InputSpec(shape, "int64", "input_ids")]


def nlp_bert() -> Tuple[nn.Layer, List[InputSpec]]:
    """BERT (post-norm, GELU feed-forward)."""
    return _encoder("BertModel", "BertConfig", **_WIDTHS)


def nlp_ernie3() -> Tuple[nn.Layer, List[InputSpec]]:
    """ERNIE 3.0 (PaddleNLP's ``ernie`` model)."""
    return _encoder("ErnieModel", "ErnieConfig", **_WIDTHS)


def nlp_roberta() -> Tuple[nn.Layer, List[InputSpec]]:
    """RoBERTa."""
    return _encoder("RobertaModel", "RobertaConfig", **_WIDTHS)


def nlp_electra() -> Tuple[nn.Layer, List[InputSpec]]:
    """ELECTRA's discriminator: embeddings of 32 projected to the hidden 64."""
    return _encoder("ElectraModel", "ElectraConfig", embedding_size=32, **_WIDTHS)


def nlp_albert() -> Tuple[nn.Layer, List[InputSpec]]:
    """ALBERT: factorized embeddings (32), one layer's weights shared by both layers."""
    return _encoder("AlbertModel", "AlbertConfig", embedding_size=32, **_WIDTHS)


def nlp_deberta_v2() -> Tuple[nn.Layer, List[InputSpec]]:
    """DeBERTa-v2: disentangled attention over relative positions."""
    return _encoder("DebertaV2Model", "DebertaV2Config", **_WIDTHS)


def nlp_fnet() -> Tuple[nn.Layer, List[InputSpec]]:
    """FNet: token mixing by a 2-D Fourier transform instead of attention; ``gelu_new`` feed-forward."""
    widths = {k: v for k, v in _WIDTHS.items() if k != "num_attention_heads"}
    return _encoder("FNetModel", "FNetConfig", **widths)


def nlp_fnet_pinned() -> Tuple[nn.Layer, List[InputSpec]]:
    """FNet exported at a pinned ``[1, 16]``."""
    widths = {k: v for k, v in _WIDTHS.items() if k != "num_attention_heads"}
    return _encoder("FNetModel", "FNetConfig", pinned=True, **widths)


def nlp_nystromformer() -> Tuple[nn.Layer, List[InputSpec]]:
    """Nyströmformer: attention through 4 landmarks over segments of a 16-token sequence."""
    return _encoder("NystromformerModel", "NystromformerConfig", segment_means_seq_len=16, num_landmarks=4,
                    **_WIDTHS)


def nlp_t5_encoder() -> Tuple[nn.Layer, List[InputSpec]]:
    """T5 v1.1's encoder (as Flan-T5 and mT5 ship it): RMS norm, relative position buckets and the
    gated-GELU feed-forward; d_model 64, d_kv 16, d_ff 128, 2 layers, 4 heads."""
    return _encoder("T5EncoderModel", "T5Config", vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                    num_heads=4, feed_forward_proj="gated-gelu")


def nlp_t5_encoder_pinned() -> Tuple[nn.Layer, List[InputSpec]]:
    """T5 v1.1's encoder exported at a pinned ``[1, 16]``."""
    return _encoder("T5EncoderModel", "T5Config", pinned=True, vocab_size=1000, d_model=64, d_kv=16, d_ff=128,
                    num_layers=2, num_heads=4, feed_forward_proj="gated-gelu")


def nlp_gpt() -> Tuple[nn.Layer, List[InputSpec]]:
    """GPT (PaddleNLP's ``gpt``): a causal decoder, its hidden states."""
    return _encoder("GPTModel", "GPTConfig", **_WIDTHS)


def nlp_codegen() -> Tuple[nn.Layer, List[InputSpec]]:
    """CodeGen: rotary positions over 8 of each head's dims, ``gelu_new`` feed-forward, a causal decoder."""
    return _encoder("CodeGenModel", "CodeGenConfig", vocab_size=1000, n_positions=64, n_ctx=64, n_embd=64, n_layer=2,
                    n_head=4, rotary_dim=8)


def nlp_xlnet() -> Tuple[nn.Layer, List[InputSpec]]:
    """XLNet: two-stream relative attention (its content stream, as inference runs it)."""
    return _encoder("XLNetModel", "XLNetConfig", vocab_size=1000, d_model=64, n_layer=2, n_head=4, d_inner=128)


def nlp_ernie_m() -> Tuple[nn.Layer, List[InputSpec]]:
    """ERNIE-M: the multilingual encoder (no token types)."""
    return _encoder("ErnieMModel", "ErnieMConfig", **_WIDTHS)


def nlp_mpnet() -> Tuple[nn.Layer, List[InputSpec]]:
    """MPNet: relative position buckets in every layer's attention."""
    return _encoder("MPNetModel", "MPNetConfig", **_WIDTHS)
