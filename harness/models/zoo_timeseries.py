"""The zoo's time-series forecasters (cell side): PaddleTS 1.1.0's networks, each built from the
package's own network class with its model class's defaults (the released configuration: what
``LSTNetRegressor(in_chunk_len, out_chunk_len)`` builds in ``_init_network``), random init, a
lookback of 32 steps, a horizon of 8, two target series, no covariates.

PaddleTS's networks read a dict of tensors (``X["past_target"]``, as its data adapter batches them);
its own export (``PaddleBaseModel.save``) saves the network with an InputSpec per key. The factories
export the same network through a layer that takes the one tensor and hands the network that dict,
so the program's feed is the past target, as a deployment feeds it; its output is the forecast
``[N, 8, 2]`` (SCINet's last stack, as its model's ``_predict`` reads it).
"""

from __future__ import annotations

import collections
import collections.abc
from typing import Any, List, Tuple

import paddle.nn as nn
from paddle.static import InputSpec

# PaddleTS 1.1.0's utils/backtest.py imports Iterable from collections, gone in Python 3.10; its
# package imports that module on the way to any network. Said here, and replayed by a source reproducer.
collections.Iterable = collections.abc.Iterable  # type: ignore[attr-defined]

LOOKBACK, HORIZON, TARGETS = 32, 8, 2


class PastTarget(nn.Layer):
    """A PaddleTS network fed its ``past_target`` as the one input: ``{"past_target": x}``."""

    def __init__(self, network: nn.Layer):
        super().__init__()
        self.net = network

    def forward(self, past_target):
        out = self.net({"past_target": past_target})
        return out[0] if isinstance(out, (tuple, list)) else out


def _series() -> List[InputSpec]:
    return [InputSpec([None, LOOKBACK, TARGETS], "float32", "past_target")]


def _made(network: Any) -> Tuple[nn.Layer, List[InputSpec]]:
    return PastTarget(network), _series()


def ts_lstnet() -> Tuple[nn.Layer, List[InputSpec]]:
    """LSTNet (paddlets.models.forecasting.LSTNetRegressor's defaults: a Conv1D of 1 channel, GRU and
    skip-GRU of 10 cells, skip 1, kernel 3, dropout 0.2), the recurrent and autoregressive parts summed."""
    from paddlets.models.forecasting.dl.lstnet import _LSTNetModule

    return _made(_LSTNetModule(in_chunk_len=LOOKBACK, out_chunk_len=HORIZON, target_dim=TARGETS, skip_size=1,
                               channels=1, kernel_size=3, rnn_cell_type="GRU", rnn_num_cells=10,
                               skip_rnn_cell_type="GRU", skip_rnn_num_cells=10, dropout_rate=0.2))


def ts_nhits() -> Tuple[nn.Layer, List[InputSpec]]:
    """N-HiTS (NHiTSModel's defaults: 3 stacks of 3 blocks, 2 layers of width 512, max-pooling, dropout
    0.1): multi-rate pooling and interpolated forecasts."""
    from paddlets.models.forecasting.dl.nhits import _NHiTSModule

    # NHiTSModel widens an int layer width to one per stack before it builds the network.
    return _made(_NHiTSModule(LOOKBACK, HORIZON, TARGETS, 0, 0, 3, 3, 2, [512] * 3, None, None, False, 0.1, "ReLU", True))


def ts_nbeats() -> Tuple[nn.Layer, List[InputSpec]]:
    """N-BEATS, generic architecture (NBEATSModel's defaults: 2 stacks of 3 blocks, 4 layers of width
    128, expansion coefficients 128)."""
    from paddlets.models.forecasting.dl.nbeats import _NBEATSModule

    # NBEATSModel widens its int block count and layer width to one per stack before it builds the network.
    return _made(_NBEATSModule(LOOKBACK, HORIZON, TARGETS, 0, 0, True, 2, [3] * 2, 4, [128] * 2, 128, 4))


def ts_scinet() -> Tuple[nn.Layer, List[InputSpec]]:
    """SCINet (SCINetModel's defaults: 1 stack, 3 levels of sample-convolution-interaction trees,
    kernel 5, dropout 0.5, hidden size 1)."""
    from paddlets.models.forecasting.dl.scinet import _StackedSCINetModule

    return _made(_StackedSCINetModule(in_chunk_len=LOOKBACK, out_chunk_len=HORIZON, in_dim=TARGETS, num_stack=1,
                                      num_level=3, num_decoder_layer=1, concat_len=0, kernel_size=5,
                                      dropout_rate=0.5, num_group=1, hidden_size=1))


def ts_tcn() -> Tuple[nn.Layer, List[InputSpec]]:
    """TCN (TCNRegressor's defaults: dilated causal convolutions, kernel 3, dropout 0.2, its channels
    derived from the lookback)."""
    from paddlets.models.forecasting.dl.tcn import _TCNModule

    return _made(_TCNModule(in_chunk_len=LOOKBACK, out_chunk_len=HORIZON, target_dim=TARGETS, hidden_config=None,
                            kernel_size=3, dropout_rate=0.2))


def ts_informer() -> Tuple[nn.Layer, List[InputSpec]]:
    """Informer (InformerModel's defaults: d_model 512, 8 heads, feed-forward 2048, 2 encoder layers with
    ProbSparse attention and distilling, 1 decoder layer, dropout 0.1)."""
    from paddlets.models.forecasting.dl.informer import _InformerModule

    return _made(_InformerModule(in_chunk_len=LOOKBACK, out_chunk_len=HORIZON, start_token_len=0, target_dim=TARGETS,
                                 d_model=512, nhead=8, ffn_channels=2048, num_encoder_layers=2, num_decoder_layers=1,
                                 activation="relu", dropout_rate=0.1))


def ts_transformer() -> Tuple[nn.Layer, List[InputSpec]]:
    """The vanilla Transformer forecaster (TransformerModel's defaults: d_model 8, 4 heads, 1 encoder and
    1 decoder layer, feed-forward 64, dropout 0.1), the last step fed to its decoder."""
    from paddlets.models.forecasting.dl.transformer import _TransformerModule

    return _made(_TransformerModule(in_chunk_len=LOOKBACK, out_chunk_len=HORIZON, target_dim=TARGETS, input_dim=TARGETS,
                                    d_model=8, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64,
                                    activation="relu", dropout_rate=0.1, custom_encoder=None, custom_decoder=None))


__all__ = ["PastTarget", "ts_lstnet", "ts_nhits", "ts_nbeats", "ts_scinet", "ts_tcn", "ts_informer", "ts_transformer"]
