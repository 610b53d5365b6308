"""The zoo's speech models (cell side): PaddleSpeech 1.5.0's recognition, synthesis and speaker
networks, each built from the package's own classes at a small configuration of its released
layout (random init), exported as the suite's own export code exports it:

- synthesis, acoustic models: ``FastSpeech2`` and ``SpeedySpeech`` behind their ``*Inference``
  wrappers (the phone ids in, the log-mel out through the ``ZScore`` normalizer), with the input
  specs of ``t2s/exps/syn_utils.py``'s ``am_to_static`` (``[-1]`` int64 phones, and tones);
  SpeedySpeech fed the phones' durations too (``_WithDurations`` says why);
- synthesis, vocoder: ``HiFiGANGenerator`` behind ``HiFiGANInference`` (a log-mel ``[T, 80]`` in,
  the waveform out; ``voc_to_static``'s ``[-1, 80]``);
- recognition: ``DeepSpeech2InferModel`` bidirectional (its ``export()``'s two inputs: features and
  lengths) and the U2 Conformer's ``ConformerEncoder`` (features and lengths in, the encoder's
  states and mask out);
- speaker verification: ``EcapaTdnn`` (log-fbanks ``[N, 80, T]`` in, the embedding out).

Tones and lengths are fed as the suite feeds them at inference; the length regulator of the
acoustic models makes their output length depend on the durations (a dynamic shape the export must
keep).
"""

from __future__ import annotations

import importlib
from typing import Any, List, Tuple

import paddle
import paddle.nn as nn
from paddle.static import InputSpec

_MELS = 80


def _attr(module: str, name: str) -> Any:
    return getattr(importlib.import_module(f"paddlespeech.{module}"), name)


def _zscore(width: int) -> nn.Layer:
    """The statistics normalizer the suite loads from ``feats_stats.npy``: here mean 0, std 1 per bin."""
    return _attr("t2s.modules.normalizer", "ZScore")(paddle.zeros([width]), paddle.ones([width]))


def speech_fastspeech2() -> Tuple[nn.Layer, List[InputSpec]]:
    """FastSpeech2 (CSMSC's layout: transformer encoder and decoder, conv postnet, pitch and energy
    predictors) at 2+2 blocks of 64, 60 phones."""
    model = _attr("t2s.models.fastspeech2", "FastSpeech2")(
        idim=60, odim=_MELS, adim=64, aheads=2, elayers=2, eunits=128, dlayers=2, dunits=128,
        positionwise_layer_type="conv1d", positionwise_conv_kernel_size=3, duration_predictor_layers=2,
        duration_predictor_chans=64, pitch_predictor_layers=2, pitch_predictor_chans=64,
        energy_predictor_layers=2, energy_predictor_chans=64, postnet_layers=2, postnet_chans=64)
    inference = _attr("t2s.models.fastspeech2", "FastSpeech2Inference")(_zscore(_MELS), model)
    return inference, [InputSpec([None], "int64", "phones")]


class _WithDurations(nn.Layer):
    """An acoustic model's ``*Inference`` fed the phones' durations (the argument the suite's inference
    takes for given durations): its length regulator expands by them. Left to its duration predictor,
    a random-init model predicts ``round(exp(d))`` frames of nonsense — 26.8 GB for 20 phones
    (measured) — and a rounding that one ulp flips changes the output's length: a comparison of
    backends would measure the rounding, not the backend."""

    def __init__(self, inference: nn.Layer):
        super().__init__()
        self.net = inference

    def forward(self, phones, tones, durations):
        return self.net(phones, tones, durations=durations)


def speech_speedyspeech() -> Tuple[nn.Layer, List[InputSpec]]:
    """SpeedySpeech (CSMSC's: dilated residual conv encoder and decoder, duration predictor) at
    width 64, 60 phones and 6 tones, fed the phones' durations."""
    model = _attr("t2s.models.speedyspeech", "SpeedySpeech")(
        vocab_size=60, tone_size=6, encoder_hidden_size=64, duration_predictor_hidden_size=64,
        decoder_hidden_size=64, decoder_output_size=_MELS)
    inference = _attr("t2s.models.speedyspeech", "SpeedySpeechInference")(_zscore(_MELS), model)
    return _WithDurations(inference), [InputSpec([None], "int64", "phones"), InputSpec([None], "int64", "tones"),
                                       InputSpec([1, None], "int64", "durations")]


def speech_hifigan() -> Tuple[nn.Layer, List[InputSpec]]:
    """HiFiGAN's generator (CSMSC's: upsampling ×(5,5,4,3) with multi-receptive-field residual
    blocks, weight norm) at 64 channels."""
    generator = _attr("t2s.models.hifigan", "HiFiGANGenerator")(in_channels=_MELS, channels=64)
    inference = _attr("t2s.models.hifigan", "HiFiGANInference")(_zscore(_MELS), generator)
    return inference, [InputSpec([None, _MELS], "float32", "logmel")]


class _DeepSpeech2(nn.Layer):
    """``DeepSpeech2InferModel`` as its ``export()`` traces it (bidirectional): the probabilities and lengths."""

    def __init__(self, model: nn.Layer):
        super().__init__()
        self.net = model

    def forward(self, audio, audio_len):
        return self.net(audio, audio_len)


def speech_deepspeech2() -> Tuple[nn.Layer, List[InputSpec]]:
    """DeepSpeech2 (LibriSpeech's offline layout: two conv layers, bidirectional RNN) at 3 RNN layers of
    64, 161 spectrogram bins, 30 tokens."""
    model = _attr("s2t.models.ds2.deepspeech2", "DeepSpeech2InferModel")(
        feat_size=161, dict_size=30, num_conv_layers=2, num_rnn_layers=3, rnn_size=64, rnn_direction="bidirect",
        num_fc_layers=0, fc_layers_size_list=[], use_gru=False)
    return _DeepSpeech2(model), [InputSpec([None, None, 161], "float32", "audio"),
                                 InputSpec([None], "int64", "audio_len")]


def speech_conformer() -> Tuple[nn.Layer, List[InputSpec]]:
    """The U2 Conformer's encoder (AISHELL's: conv2d subsampling ×4, relative-position self-attention,
    macaron feed-forward, conv module of kernel 15) at 2 blocks of 64, 80 fbank bins."""
    encoder = _attr("s2t.modules.encoder", "ConformerEncoder")(
        input_size=_MELS, output_size=64, attention_heads=4, linear_units=128, num_blocks=2, dropout_rate=0.0,
        positional_dropout_rate=0.0, attention_dropout_rate=0.0, cnn_module_kernel=15)
    return encoder, [InputSpec([None, None, _MELS], "float32", "feats"), InputSpec([None], "int64", "feats_len")]


def speech_ecapa_tdnn() -> Tuple[nn.Layer, List[InputSpec]]:
    """ECAPA-TDNN (VoxCeleb's: SE-Res2Net blocks, attentive statistics pooling) at channels of 64
    (192 in the last), embedding 32."""
    model = _attr("vector.models.ecapa_tdnn", "EcapaTdnn")(
        input_size=_MELS, lin_neurons=32, channels=[64, 64, 64, 64, 192], attention_channels=16, se_channels=16)
    return model, [InputSpec([None, _MELS, None], "float32", "fbank")]


__all__ = ["speech_fastspeech2", "speech_speedyspeech", "speech_hifigan", "speech_deepspeech2",
           "speech_conformer", "speech_ecapa_tdnn"]
