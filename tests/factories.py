"""Model factories used by the tests (cell side: imported inside the Paddle environment).

Each one is a small real model; some misbehave on purpose in ways real models and real
Paddle processes do (Python-side state baked in by to_static, a process that dies, a stage
that hangs), so the tests can check the harness's answer to each.
"""

import os
import signal
import time
from collections import OrderedDict
from pathlib import Path

import paddle
import paddle.nn as nn
from paddle.static import InputSpec


class SmallConvNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2D(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, image):
        x = nn.functional.relu(self.bn(self.conv(image)))
        return self.fc(x.mean(axis=[2, 3]))


def _image_spec():
    return [InputSpec([None, 3, None, None], "float32", "image")]


def clean():
    return SmallConvNet(), _image_spec()


class CallCounter(SmallConvNet):
    """Scales its output by how often forward ran: to_static bakes in the count at trace time."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, image):
        self.calls += 1
        return super().forward(image) * float(self.calls)


def python_state():
    return CallCounter(), _image_spec()


class Tiny(SmallConvNet):
    def forward(self, image):
        return super().forward(image) * 1e-7


def tiny_outputs():
    """Outputs around 1e-7, as random-init networks give: fp32 atol 1e-4 cannot judge them."""
    layer = Tiny()
    return layer, _image_spec()


def dies_in_factory():
    os.kill(os.getpid(), signal.SIGSEGV)


def _on_second_predictor(action):
    """Make creating the second predictor of this process misbehave: the first stage after the
    baseline that builds one (``memory`` on legacy programs, ``ir`` under PIR).

    Installed by the factory, so it lives only in the worker that ran the setup; the
    worker the host restarts after the crash or timeout resumes without it.
    """
    real = paddle.inference.create_predictor
    built = []

    def create_predictor(config):
        built.append(config)
        if len(built) == 2:
            action()
        return real(config)

    paddle.inference.create_predictor = create_predictor


def dies_after_baseline():
    _on_second_predictor(lambda: os.kill(os.getpid(), signal.SIGKILL))
    return clean()


def hangs_after_baseline():
    _on_second_predictor(lambda: time.sleep(3600))
    return clean()


def truncated_params():
    """Exports fine, then loses the second half of its params file (a copy cut short): every
    predictor build raises Paddle's own error, the same cause in every cell that uses it."""
    real = paddle.jit.save

    def save(layer, path, *args, **kwargs):
        real(layer, path, *args, **kwargs)
        params = path + ".pdiparams"
        size = os.path.getsize(params)
        with open(params, "r+b") as handle:
            handle.truncate(size // 2)

    paddle.jit.save = save
    return clean()


def returns_garbage():
    return "not a layer"


def escapes():
    """Tries what a cell must not be able to do in a container: reach the network, write into
    the repository. Raises with what happened, so the cell's setup error says it."""
    import urllib.request
    from pathlib import Path

    try:
        urllib.request.urlopen("https://pypi.org/simple/", timeout=5).close()
        network = "reached pypi.org"
    except Exception as exc:  # what a container without network answers
        network = f"no network ({exc})"
    target = Path(__file__).resolve().parent / "data" / ".written-by-a-cell"
    try:
        target.write_text("escaped")
        target.unlink()
        repo = "wrote into the repository"
    except OSError as exc:
        repo = f"repository not writable ({exc.strerror})"
    raise RuntimeError(f"escape attempt: {network}; {repo}")


def hostile():
    """A model whose error message is markup: a report that prints it unescaped runs it."""
    raise RuntimeError("<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">")


class FixedSizePool(nn.Layer):
    """Global pooling written as ``avg_pool2d(kernel_size=y.shape[2:])`` in a model exported with
    fixed H/W (as classification exports often are): right at the export's size, wrong at any
    other size a deployment feeds (the kernel stays the traced size)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 4, 3, padding=1)

    def forward(self, image):
        y = self.conv(image)
        y = nn.functional.avg_pool2d(y, kernel_size=y.shape[2:])
        return y.flatten(1)


def fixed_size_pool():
    return FixedSizePool(), [InputSpec([None, 3, 16, 16], "float32", "image")]


def conv_interpolate():
    """The built-in upsampling decoder (a conv and ``F.interpolate(scale_factor=2)`` in ``decoder``)."""
    from harness.models import upsample_decoder

    return upsample_decoder()


class FourBranchNeck(nn.Layer):
    """A neck as detection and OCR models write it: four branch convs (sublayers) summed, then
    upsampled by its own forward (``F.interpolate``, no sublayer): what oneDNN raises on at 3.3.1
    is an op of the neck's own, so no group of its sublayers reproduces."""

    def __init__(self, channels):
        super().__init__()
        self.branches = nn.LayerList([nn.Conv2D(channels, channels, 1) for _ in range(4)])

    def forward(self, x):
        y = self.branches[0](x) + self.branches[1](x) + self.branches[2](x) + self.branches[3](x)
        return nn.functional.interpolate(y, scale_factor=2, mode="bilinear")


class NeckModel(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, padding=1)
        self.neck = FourBranchNeck(8)
        self.head = nn.Conv2D(8, 2, 1)

    def forward(self, image):
        return self.head(self.neck(nn.functional.relu(self.stem(image))))


def neck_interpolate():
    return NeckModel(), [InputSpec([None, 3, None, None], "float32", "image")]


class Block(nn.Layer):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2D(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2D(channels)

    def forward(self, x):
        return x + nn.functional.relu(self.bn(self.conv(x)))


class CountingBlock(Block):
    """Reads Python state: scales by how often it ran, which to_static fixes at trace time."""

    def __init__(self, channels):
        super().__init__(channels)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x) * (1.0 + 0.5 * self.calls)


class Stage(nn.Layer):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.LayerList(blocks)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class Backbone(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, padding=1)
        self.stages = nn.LayerList([Stage([Block(8), Block(8)]), Stage([Block(8), CountingBlock(8), Block(8)])])

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return x


class DeepPythonState(nn.Layer):
    """A consistency failure three levels down: ``backbone.stages.1.blocks.1`` reads Python state."""

    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(8, 4)

    def forward(self, image):
        return self.head(self.backbone(image).mean(axis=[2, 3]))


def deep_python_state():
    return DeepPythonState(), _image_spec()


class Unconvertible(SmallConvNet):
    """A cumulative product after the conv: Paddle runs it, paddle2onnx 2.1.0 has no converter for
    ``cumprod`` and aborts its process on it."""

    def forward(self, image):
        x = nn.functional.relu(self.bn(self.conv(image)))
        return self.fc(paddle.cumprod(x, dim=1).mean(axis=[2, 3]))


def unconvertible():
    return Unconvertible(), _image_spec()


class ReciprocalTimes(nn.Layer):
    """``y * (1 / (y*y + 1))`` on an elementwise scale: every op is exact in IEEE arithmetic, so
    Paddle and ONNX Runtime with its optimizations off agree bit for bit; ORT's ``DivMulFusion``
    rewrites ``a * (1 / b)`` as ``a / b``, which rounds once instead of twice (a last-bit change
    in about a third of the elements, on any CPU)."""

    def __init__(self):
        super().__init__()
        self.scale = self.create_parameter([1, 3, 1, 1], default_initializer=nn.initializer.Uniform(0.5, 2.0))

    def forward(self, image):
        y = image * self.scale
        return y * paddle.divide(paddle.full([1], 1.0, "float32"), y * y + 1.0)


def reciprocal_times():
    return ReciprocalTimes(), _image_spec()


class PadThenConv(SmallConvNet):
    """A constant zero pad before the conv, as PP-HGNetV2's stem pads: paddle2onnx 2.1.0's
    ``pad3d`` converter writes the ONNX Pad's ``value`` from memory it never initialised (0.0 when
    that memory happens to be zero; any number when it is not)."""

    def forward(self, image):
        x = nn.functional.relu(self.bn(self.conv(nn.functional.pad(image, [0, 1, 0, 1]))))
        return self.fc(x.mean(axis=[2, 3]))


def pad_then_conv():
    return PadThenConv(), _image_spec()


class MaskedConv(SmallConvNet):
    """A mask written by slice assignment (``set_value``), as Swin's shifted windows build theirs:
    paddle2onnx 1.3.1 aborts on Paddle 2.6.2's ``set_value`` ("Cannot found attribute fp32_values")."""

    def forward(self, image):
        x = nn.functional.relu(self.bn(self.conv(image)))
        mask = paddle.zeros_like(x)
        mask[:, :, 0:2, :] = 1.0
        return self.fc((x * mask).mean(axis=[2, 3]))


def masked_conv():
    return MaskedConv(), _image_spec()


class NeedsItsParent(Block):
    """Works only inside its parent's forward (the parent arms it first), as layers that read a
    parent's state do: alone, a piece of it cannot even be traced."""

    armed = False

    def forward(self, x):
        if not self.armed:
            raise RuntimeError("NeedsItsParent called outside its parent")
        return super().forward(x)


class StateBesideAnUnexportable(nn.Layer):
    """``guarded`` cannot be exported alone (a piece the harness cannot build); ``counting`` reads
    Python state (the baseline's consistency failure)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, padding=1)
        self.guarded = NeedsItsParent(8)
        self.counting = CountingBlock(8)
        self.head = nn.Linear(8, 4)

    def forward(self, image):
        self.guarded.armed = True
        x = self.guarded(self.stem(image))
        self.guarded.armed = False
        return self.head(self.counting(x).mean(axis=[2, 3]))


def state_beside_an_unexportable():
    return StateBesideAnUnexportable(), _image_spec()


class StateAndUpsample(nn.Layer):
    """Two causes in two stages: a block reading Python state (``baseline`` fails) and an
    interpolate (Paddle 3.3's oneDNN raises on it at ``onednn_fp32``)."""

    def __init__(self):
        super().__init__()
        self.counting = CountingBlock(3)
        self.conv = nn.Conv2D(3, 4, 3, padding=1)

    def forward(self, image):
        x = self.conv(self.counting(image))
        return nn.functional.interpolate(x, scale_factor=2, mode="bilinear")


def state_and_upsample():
    return StateAndUpsample(), _image_spec()


class Slow(SmallConvNet):
    """Slow in Python (a second per forward call: setup runs several), so that a test can interrupt
    cells in flight; its predictor stages are as fast as ``clean``'s."""

    def forward(self, image):
        time.sleep(1.0)
        return super().forward(image)


def slow():
    return Slow(), _image_spec()


class TwoConvBN(nn.Layer):
    """Two conv+BN pairs as sibling sublayers (the known answer of the fusion search): on legacy IR
    (2.6) ``conv_bn_fuse_pass`` folds each BN into its conv, which changes the rounding; a piece
    finds it only when the conv feeds its BN inside the piece as in the model."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2D(3, 8, 3, padding=1, bias_attr=False)
        self.bn_a = nn.BatchNorm2D(8)
        self.b = nn.Conv2D(8, 8, 3, padding=1, bias_attr=False)
        self.bn_b = nn.BatchNorm2D(8)
        self.head = nn.Linear(8, 4)
        for bn in (self.bn_a, self.bn_b):  # running statistics as training leaves them, not 0 and 1
            bn._mean.set_value(paddle.uniform([8], min=-0.5, max=0.5))
            bn._variance.set_value(paddle.uniform([8], min=0.5, max=2.0))

    def forward(self, image):
        x = nn.functional.relu(self.bn_a(self.a(image)))
        x = nn.functional.relu(self.bn_b(self.b(x)))
        return self.head(x.mean(axis=[2, 3]))


def two_conv_bn():
    return TwoConvBN(), _image_spec()


class Tap(nn.Layer):
    """Returns its input beside what it computes (as feature taps do), and reads Python state."""

    def __init__(self, channels):
        super().__init__()
        self.counting = CountingBlock(channels)

    def forward(self, x):
        return x, self.counting(x)


class PassesItsInputThrough(nn.Layer):
    """The baseline's consistency failure sits in ``tap``, a sublayer whose output holds its input
    as is: a piece of it must still be a program Paddle builds (each output written once)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, padding=1)
        self.tap = Tap(8)
        self.head = nn.Linear(8, 4)

    def forward(self, image):
        x, y = self.tap(self.stem(image))
        return self.head((x + y).mean(axis=[2, 3]))


def passes_its_input_through():
    return PassesItsInputThrough(), _image_spec()


# -- models of the kinds the suites ship beyond image classifiers -------------------------------

class Fields(OrderedDict):
    """A layer's output as the suites' ``ModelOutput`` keeps it: every field an attribute, an item
    only when ``isinstance(value, paddle.Tensor)`` — under ``to_static`` (a traced value is no
    ``paddle.Tensor``) it holds no item at all."""

    def __init__(self, **fields):
        super().__init__()
        for key, value in fields.items():
            object.__setattr__(self, key, value)
            if isinstance(value, paddle.Tensor):
                self[key] = value


class TokenUpsampler(nn.Layer):
    """Embeds token ids as a 16x16 map, a conv, then ``F.interpolate(scale_factor=2)`` (Paddle 3.3's
    oneDNN raises on it); returns ``Fields``."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.conv = nn.Conv2D(1, 2, 3, padding=1)

    def forward(self, ids):
        x = self.conv(self.embed(ids).reshape([-1, 1, 16, 16]))
        return Fields(hidden=nn.functional.interpolate(x, scale_factor=2, mode="bilinear"), tokens=16)


class TokenModel(nn.Layer):
    """Fed token ids ``[1, 16]`` int64; the failing sublayer ``decoder`` takes the ids themselves."""

    def __init__(self):
        super().__init__()
        self.decoder = TokenUpsampler()
        self.head = nn.Linear(2, 4)

    def forward(self, ids):
        return self.head(self.decoder(ids).hidden.mean(axis=[2, 3]))


def token_model():
    return TokenModel(), [InputSpec([1, 16], "int64", "ids")]


class BuiltOnce(nn.Layer):
    """Builds once per process, as a suite's layer appending to a mutable default argument does:
    a second build in the same process asserts. ``blocks.1`` reads Python state (the consistency
    check fails there on every version)."""

    def __init__(self, registry=[]):  # noqa: B006 - the mutable default is the point
        super().__init__()
        registry.append(type(self).__name__)
        assert len(registry) == 1
        self.blocks = nn.LayerList([Block(3), CountingBlock(3), Block(3)])
        self.head = nn.Linear(3, 4)

    def forward(self, image):
        for block in self.blocks:
            image = block(image)
        return self.head(image.mean(axis=[2, 3]))


def built_once():
    return BuiltOnce(), _image_spec()


def builds_otherwise_the_second_time():
    """A ``BuiltOnce``-like model whose head is wider from its second build on (across processes:
    the file named by ``HARNESS_TEST_BUILDS`` counts the builds)."""
    counter = Path(os.environ["HARNESS_TEST_BUILDS"])
    builds = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(builds + 1))
    model = BuiltOnce.__new__(BuiltOnce)
    nn.Layer.__init__(model)
    model.blocks = nn.LayerList([Block(3), CountingBlock(3), Block(3)])
    model.head = nn.Linear(3, 4 if builds == 0 else 6)
    return model, _image_spec()


class TwoUnconvertible(nn.Layer):
    """Two ops paddle2onnx has no converter for, each in its own sublayer: ``cumprod`` in
    ``first`` and ``lgamma`` in ``second`` (two causes of one conversion)."""

    def __init__(self):
        super().__init__()
        self.first = Unconvertible()
        self.second = LogGamma()

    def forward(self, image):
        return self.second(self.first(image))


class LogGamma(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(paddle.lgamma(x.abs() + 1.0))


def two_unconvertible():
    return TwoUnconvertible(), _image_spec()


class EmptyOutput(nn.Layer):
    """Returns ``Fields`` holding its result under an attribute name only, read by the caller
    through the mapping (``out["hidden"]``): its piece, written as the model wrote it, would
    return nothing under ``to_static``."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 3, 1)

    def forward(self, x):
        return Fields(hidden=self.conv(x))


class ConvThenGRU(nn.Layer):
    """A time-series network as the suites build one: a Conv1D over ``[B, T, C]`` (``NLC``) feeding a
    GRU. Under oneDNN at 3.3.1 ``predictor.run()`` raises a bare ``RuntimeError: std::exception``;
    native kernels run it and match."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1D(4, 8, 3, padding=1, data_format="NLC")
        self.gru = nn.GRU(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, series):
        hidden, _ = self.gru(self.conv(series))
        return self.head(hidden)


def conv_then_gru():
    return ConvThenGRU(), [InputSpec([None, 12, 4], "float32", "series")]


class RMSNorm(nn.Layer):
    """The decoder suites' unfused RMS norm (their fused kernel is GPU-only)."""

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = self.create_parameter([hidden], default_initializer=nn.initializer.Constant(1.0))
        self.eps = eps

    def forward(self, x):
        return x * paddle.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Rotary(nn.Layer):
    """The rotary tables, computed once from the positions (the hidden states read only for their dtype)."""

    def __init__(self, dim, base):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (base ** (paddle.arange(0, dim, 2, dtype="float32") / dim)),
                             persistable=False)

    def forward(self, hidden, positions):
        freqs = positions.astype("float32").unsqueeze(-1) * self.inv_freq
        emb = paddle.concat([freqs, freqs], axis=-1)
        return emb.cos().astype(hidden.dtype), emb.sin().astype(hidden.dtype)


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = paddle.concat([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos.unsqueeze(1) + rotated * sin.unsqueeze(1)


class ExportedOtherwise(nn.Linear):
    """A projection whose weight is scaled only in the exported program (``to_static`` traces with
    ``in_dynamic_mode()`` False): a planted silent numeric failure at one place, every op as usual."""

    def forward(self, x):
        weight = self.weight if paddle.in_dynamic_mode() else self.weight * 3.0
        return nn.functional.linear(x, weight, self.bias)


class Attention(nn.Layer):
    def __init__(self, hidden, heads, perturbed=False):
        super().__init__()
        self.heads, self.dim = heads, hidden // heads
        self.q_proj, self.k_proj = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.v_proj = nn.Linear(hidden, hidden)
        self.o_proj = (ExportedOtherwise if perturbed else nn.Linear)(hidden, hidden)

    def forward(self, x, cos, sin, mask):
        b, t = x.shape[0], x.shape[1]
        q, k, v = [p(x).reshape([b, t, self.heads, self.dim]).transpose([0, 2, 1, 3])
                   for p in (self.q_proj, self.k_proj, self.v_proj)]
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        scores = paddle.matmul(q, k, transpose_y=True) / float(self.dim) ** 0.5 + mask
        out = paddle.matmul(nn.functional.softmax(scores, axis=-1), v)
        return self.o_proj(out.transpose([0, 2, 1, 3]).reshape([b, t, -1]))


class Mlp(nn.Layer):
    """A gated MLP; ``upsampled`` takes the hidden states through a nearest interpolate by a scale
    factor and back (Paddle 3.3's oneDNN raises on any interpolate)."""

    def __init__(self, hidden, upsampled=False):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(hidden, 2 * hidden), nn.Linear(hidden, 2 * hidden)
        self.down_proj = nn.Linear(2 * hidden, hidden)
        self.upsampled = upsampled

    def forward(self, x):
        h = nn.functional.silu(self.gate_proj(x)) * self.up_proj(x)
        if self.upsampled:
            wide = nn.functional.interpolate(h.transpose([0, 2, 1]).unsqueeze(2), scale_factor=2, mode="nearest")
            h = wide[:, :, 0, ::2].transpose([0, 2, 1])
        return self.down_proj(h)


class DecoderLayer(nn.Layer):
    """Reads only what its kind needs: a sliding-window layer the local table, a global one the
    global table; both get the mask and the positions, and return a tuple ``(hidden,)``."""

    def __init__(self, hidden, heads, sliding, upsampled=False, perturbed=False):
        super().__init__()
        self.sliding = sliding
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(hidden), RMSNorm(hidden)
        self.self_attn = Attention(hidden, heads, perturbed)
        self.mlp = Mlp(hidden, upsampled)

    def forward(self, hidden, global_table, local_table, mask, positions):
        cos, sin = local_table if self.sliding else global_table
        hidden = hidden + self.self_attn(self.input_layernorm(hidden), cos, sin, mask)
        return (hidden + self.mlp(self.post_attention_layernorm(hidden)),)


class DecoderStack(nn.Layer):
    """The suites' ``model.model``: rotary tables computed once and passed with the mask and the
    positions to every layer; a structured output (``Fields``). The planted failure is layer
    ``failing``'s MLP (an interpolate) or layer ``perturbed``'s attention output projection."""

    def __init__(self, vocab=64, hidden=16, heads=2, layers=4, failing=2, perturbed=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.rotary_global, self.rotary_local = Rotary(hidden // heads, 10000.0), Rotary(hidden // heads, 100.0)
        self.layers = nn.LayerList([DecoderLayer(hidden, heads, sliding=i % 2 == 0, upsampled=i == failing,
                                                 perturbed=i == perturbed) for i in range(layers)])
        self.norm = RMSNorm(hidden)

    def forward(self, input_ids):
        hidden = self.embed_tokens(input_ids)
        t = input_ids.shape[1]
        positions = paddle.arange(t, dtype="int64").unsqueeze(0).expand([input_ids.shape[0], t])
        global_table = self.rotary_global(hidden, positions)
        local_table = self.rotary_local(hidden, positions)
        mask = paddle.triu(paddle.full([t, t], -1e4, dtype=hidden.dtype), diagonal=1).unsqueeze(0).unsqueeze(0)
        for layer in self.layers:
            hidden = layer(hidden, global_table, local_table, mask, positions)[0]
        return Fields(last_hidden_state=self.norm(hidden))


class CausalLM(nn.Layer):
    """A causal LM shaped as the decoder suites build one (``model`` + ``lm_head``); exported as
    a deployment exports it, returning the logits."""

    def __init__(self, **sizes):
        super().__init__()
        self.model = DecoderStack(**sizes)
        self.lm_head = nn.Linear(16, 64)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids).last_hidden_state)


def causal_lm():
    return CausalLM(), [InputSpec([None, None], "int64", "input_ids")]


def causal_lm_perturbed():
    """The causal LM without the interpolate, layer 1's ``self_attn.o_proj`` scaled in the export only."""
    return CausalLM(failing=None, perturbed=1), [InputSpec([None, None], "int64", "input_ids")]


def if_on_parameter():
    """An ``if`` on a Parameter: the built-in gated conv (``harness.models.GatedConv``), whose ``if``
    ``constant_folding_pass`` folds at 3.x (the predictor raises)."""
    from harness.models import gated_conv

    return gated_conv()


class Graph:
    """A graph as the graph-learning suites pass one between layers: node features and edges."""

    def __init__(self, node_feat, edges):
        self.node_feat = node_feat
        self.edges = edges
        self.num_nodes = int(node_feat.shape[0])


class GraphConv(nn.Layer):
    """Mean aggregation over incoming edges, then a projection (``projection`` may be planted)."""

    def __init__(self, dim, projection=nn.Linear):
        super().__init__()
        self.proj = projection(dim, dim)

    def forward(self, graph):
        messages = paddle.gather(graph.node_feat, graph.edges[:, 0])
        summed = paddle.zeros_like(graph.node_feat).scatter_(graph.edges[:, 1], messages, overwrite=False)
        return nn.functional.relu(self.proj(summed + graph.node_feat))


class TwoLayerGNN(nn.Layer):
    """Layers called with a ``Graph`` object (tensors inside), the second's projection scaled only
    in the exported program."""

    def __init__(self, dim=8):
        super().__init__()
        self.conv1 = GraphConv(dim)
        self.conv2 = GraphConv(dim, ExportedOtherwise)
        self.head = nn.Linear(dim, 3)

    def forward(self, node_feat, edges):
        hidden = self.conv1(Graph(node_feat, edges))
        hidden = self.conv2(Graph(hidden, edges))
        return self.head(hidden)


def graph_gnn():
    return TwoLayerGNN(), [InputSpec([None, 8], "float32", "node_feat"), InputSpec([None, 2], "int64", "edges")]


class SegmentPool(nn.Layer):
    """Segment pooling as a user's head writes it: the token-to-segment table is an int64
    **buffer**, deduplicated with ``paddle.unique(..., return_inverse=True)``, the tokens gathered by
    the inverse. Under PIR (3.0.0 on) ``constant_folding_pass`` folds the unique over the buffer and
    ``create_predictor`` raises "The type of data we are trying to retrieve (float32) does not match
    the type of data (int64)"; 2.6.2 loads it (FIELD_NOTES)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("segment_ids", paddle.to_tensor([3, 3, 1, 1, 7, 7, 5, 5], dtype="int64"))

    def forward(self, tokens):
        _, inverse = paddle.unique(self.segment_ids, return_inverse=True, dtype="int64")
        return paddle.gather(tokens, inverse, axis=1)


class SegmentHead(nn.Layer):
    def __init__(self, dim=8):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.pool = SegmentPool()
        self.head = nn.Linear(dim, 3)

    def forward(self, tokens):
        return self.head(self.pool(nn.functional.relu(self.embed(tokens))))


def segment_head():
    return SegmentHead(), [InputSpec([None, 8, 8], "float32", "tokens")]


class DiesWhenTracedElsewhere(nn.Linear):
    """Kills its process (SIGSEGV) when ``to_static`` traces it in a process other than the one that
    built it: a reduction trial's death, planted (the cell's own export runs where it was built)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.built_in = os.getpid()

    def forward(self, x):
        if not paddle.in_dynamic_mode() and os.getpid() != self.built_in:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().forward(x)


class TrialDiesBesideTheFailure(nn.Layer):
    """A trial of its first half dies; the failure (a projection scaled only in the program) is in
    its second half."""

    def __init__(self, dim=8):
        super().__init__()
        self.first = DiesWhenTracedElsewhere(dim, dim)
        self.mid = nn.Linear(dim, dim)
        self.last = ExportedOtherwise(dim, dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        hidden = nn.functional.relu(self.mid(nn.functional.relu(self.first(x))))
        return self.head(nn.functional.relu(self.last(hidden)))


def trial_dies():
    return TrialDiesBesideTheFailure(), [InputSpec([None, 8], "float32", "x")]


_TRACES = [0]


@paddle.jit.not_to_static
def _traced_once_more():
    """Counts this process's traces (out of dy2static's reach); the second one, in a trial's child,
    kills the cell's worker (its parent) and then itself."""
    if not paddle.in_dynamic_mode():
        _TRACES[0] += 1
        if _TRACES[0] > 1:
            os.kill(os.getppid(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGSEGV)


class KillsItsWorkerOnASecondTrace(nn.Linear):
    """The second time ``to_static`` traces it (the cell's own export is the first; a reduction trial,
    in a child of the worker, the second) it kills the worker: a stand-in for a worker the kernel
    takes while a trial runs (the OOM killer), which no child can shield."""

    def forward(self, x):
        _traced_once_more()
        return super().forward(x)


class UnconvertibleThenDies(Unconvertible):
    """A cumprod paddle2onnx cannot convert, then a layer whose second trace kills the worker: the
    reduction's first half (conv, bn) ends, its second (fc, tail) kills it."""

    def __init__(self):
        super().__init__()
        self.tail = KillsItsWorkerOnASecondTrace(4, 4)

    def forward(self, image):
        return self.tail(super().forward(image))


def unconvertible_then_dies():
    return UnconvertibleThenDies(), _image_spec()


class CentredByItsMean(nn.Layer):
    """A conv whose output is centred by its mean over every element (``Tensor.mean()`` with no
    axis): paddle2onnx 2.1.0 aborts on it below opset 18 ("Can not get input 'axis(dim)' value",
    measured), and converts it at 18."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 4, 3, padding=1)

    def forward(self, image):
        feature = self.conv(image)
        return feature - feature.mean()


def centred_by_its_mean():
    return CentredByItsMean(), _image_spec()


class RoutedExperts(nn.Layer):
    """A mixture-of-experts loop as decoders write it (PaddleNLP's Mixtral): each expert's tokens by
    ``nonzero``, skipped when it has none, its output added in place with ``index_add_``. Under
    ``to_static`` the ``if`` on a shape becomes a tensor condition and ``jit.save`` keeps none of the
    routing (measured at 3.3.1: the program holds ``full_like`` alone; max abs 4.2 at 6 tokens)."""

    def __init__(self, dim=8, experts=4, top_k=2):
        super().__init__()
        self.top_k, self.experts_n = top_k, experts
        self.gate = nn.Linear(dim, experts)
        self.experts = nn.LayerList([nn.Linear(dim, dim) for _ in range(experts)])

    def forward(self, x):
        weights = nn.functional.softmax(self.gate(x), axis=-1)
        _, chosen = paddle.topk(weights, self.top_k)
        routed = nn.functional.one_hot(chosen, self.experts_n).sum(axis=1)
        out = paddle.zeros_like(x)
        for e in range(self.experts_n):
            rows = paddle.nonzero(routed[:, e])
            if rows.shape[0] == 0:
                continue
            tokens = rows.squeeze(-1)
            out.index_add_(tokens, 0, self.experts[e](paddle.gather(x, tokens)))
        return out


def routed_experts():
    return RoutedExperts(), [InputSpec([None, 8], "float32", "x")]


class AnnealsItsClip(nn.Layer):
    """Anneals a clip bound by a Python counter kept on ``self`` and bumped in ``forward`` (a schedule
    by call, as step-annealed temperatures are): the trace writes the bound it saw into the program
    as a constant, so the program's ``clip`` parts from dygraph's at every later call."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.calls = 0

    def forward(self, x):
        h = paddle.tanh(self.proj(x))
        self.calls += 1
        bound = 1.0 / self.calls
        return paddle.clip(h, -bound, bound) * 4.0


def anneals_its_clip():
    return AnnealsItsClip(), [InputSpec([None, 8], "float32", "x")]


class KeepsItsAttention(nn.Layer):
    """Keeps its attention on ``self`` in ``forward`` (PaddleSpeech's FastSpeech2 does): after an eager
    call the attribute holds that call's tensor, and ``to_static`` reads it back as a value of the
    program (measured at 3.3.1: a parameter where the softmax was; the program raises at any other
    length)."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.attn = None

    def forward(self, x):
        scores = paddle.matmul(x, x, transpose_y=True)
        self.attn = nn.functional.softmax(scores, axis=-1)
        return paddle.matmul(self.attn, self.proj(x))


def keeps_its_attention():
    return KeepsItsAttention(), [InputSpec([None, None, 8], "float32", "x")]


class RotaryTable(nn.Layer):
    """The cos and sin of one rotary table from integer positions, as decoders compute it (the
    Gemma-3 decoder's rotary embedding, where oneDNN's result parts from dygraph)."""

    def __init__(self, dim=16, base=10000.0, scaling=1.0):
        super().__init__()
        self.scaling = scaling  # Gemma 3's attention_scaling
        self.register_buffer("inv_freq", 1.0 / (base ** (paddle.arange(0, dim, 2, dtype="float32") / dim)),
                             persistable=True)

    def forward(self, positions):
        freqs = positions.astype("float32").unsqueeze(-1) * self.inv_freq
        emb = paddle.concat([freqs, freqs], axis=-1)
        return emb.cos() * self.scaling, emb.sin() * self.scaling


def rotary_table():
    return RotaryTable(), [InputSpec([None, None], "int64", "positions")]


class CumsumBesideMean(nn.Layer):
    """A row's cumulative sum and its mean, both read from one projection. Under oneDNN (fp32 and
    bf16) at 3.3.1 the program runs ``cumsum_`` in place and the mean then reads the cumulative
    sums (about half the row's total, where the mean is near 0): a runtime wrong far beyond what
    any precision explains, the bf16 floor's planted "beyond" on every CPU that runs bf16."""

    def __init__(self, dim=16, width=64):
        super().__init__()
        self.proj = nn.Linear(dim, width)

    def forward(self, x):
        h = self.proj(x)
        return h.cumsum(axis=-1), h.mean(axis=-1, keepdim=True)


def cumsum_beside_mean():
    return CumsumBesideMean(), [InputSpec([None, 16], "float32", "x")]


class WidensItsMaskWhenTraced(nn.Layer):
    """Sizes its scale from a mask whose width it reads only when the mask is a ``paddle.Tensor``,
    as PaddleX's PaddleOCR-VL decoder sizes its causal mask: while ``to_static`` traces, the mask is a
    static value, the test is False and the program takes the other branch (one column wider)."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        mask = paddle.ones_like(x)
        width = mask.shape[-1] if isinstance(mask, paddle.Tensor) else mask.shape[-1] + 1
        return self.proj(x) * float(width)


def widens_its_mask_when_traced():
    return WidensItsMaskWhenTraced(), [InputSpec([None, 8], "float32", "x")]


class RoundedAtAnOffset(nn.Layer):
    """A projection lifted by 100 and lowered again: under bf16 the lifted sum keeps 0.5 of resolution,
    so the piece lies far past bf16's fixed tolerance on outputs near 1 — and within its own floor."""

    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("offset", paddle.full([dim], 100.0), persistable=True)

    def forward(self, x):
        return (self.proj(x) + self.offset) - self.offset


class RoundedThenCumsumBesideMean(nn.Layer):
    """The planted oneDNN cumsum/mean bug behind a piece that bf16 moves past the tolerance but not
    past its floor: the reduction must place the bug, not the noise."""

    def __init__(self):
        super().__init__()
        self.rounded, self.bug = RoundedAtAnOffset(), CumsumBesideMean()

    def forward(self, x):
        return self.bug(self.rounded(x))


def rounded_then_cumsum_beside_mean():
    return RoundedThenCumsumBesideMean(), [InputSpec([None, 16], "float32", "x")]


class NearlyTied(nn.Layer):
    """A classifier whose two classes differ by less than bf16 resolves at their scale (1e-3 at
    ~100, where bf16's spacing is 0.5): under bf16 the answer changes whatever the runtime does right."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        score = self.proj(x).abs().sum(axis=-1, keepdim=True) + 100.0
        return paddle.concat([score, score + 1e-3], axis=-1)


def nearly_tied():
    return NearlyTied(), [InputSpec([None, 8], "float32", "x")]


class DoubledAfterItsFirstCall(nn.Layer):
    """Keeps its first call's output in ``forward`` and doubles later calls when its mean is positive,
    asked through Python's ``any``: exported after an eager call, the trace reaches ``bool(Tensor)``
    and raises; a fresh instance takes the first branch when traced and exports."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.first = None

    def forward(self, x):
        hidden = self.proj(x)
        if self.first is None:
            self.first = hidden.detach()
            return hidden
        return hidden * 2.0 if any(v > 0 for v in [self.first.mean()]) else hidden


def doubled_after_its_first_call():
    return DoubledAfterItsFirstCall(), [InputSpec([None, 8], "float32", "x")]


class ThresholdedValue(SmallConvNet):
    """``thresholded_relu`` with a ``value`` below the threshold, as some activations are written:
    ONNX's ThresholdedRelu has no such value (it writes 0), and paddle2onnx 2.1.0 converts to it
    and drops ``value`` — ONNX Runtime and OpenVINO alike run the converted graph and agree with
    each other, not with Paddle (the converter's bug, one cause in both runtimes' sessions)."""

    def forward(self, image):
        x = nn.functional.thresholded_relu(self.bn(self.conv(image)), threshold=0.5, value=0.3)
        return self.fc(x.mean(axis=[2, 3]))


def thresholded_value():
    return ThresholdedValue(), _image_spec()


def reciprocal_times_dies_without_divmul():
    """``reciprocal_times``, in a process where an ONNX Runtime session built with ``DivMulFusion``
    switched off dies by SIGSEGV: a stand-in for a runtime that crashes on a config a user can write,
    met by the culprit search (it switches optimizers off one by one). Installed by the factory, so
    only the worker that ran the setup, and the trials it forks, have it."""
    import onnxruntime

    real = onnxruntime.InferenceSession

    def session(path, options=None, providers=None, **kwargs):
        if "DivMulFusion" in (kwargs.get("disabled_optimizers") or ()):
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, options, providers=providers, **kwargs)

    onnxruntime.InferenceSession = session
    return reciprocal_times()


class WarpedByItsOwnGrid(nn.Layer):
    """An image resampled at a grid the model predicts from it, as document unwarping does (PaddleX's
    UVDoc): ``grid_sample``'s CPU backward at Paddle 3.3 dies by SIGSEGV when the image needs no
    gradient (first bad 3.3.0, last good 3.2.2, 2.6.2 dies too): the cell's lite training kills its
    worker. Dygraph inference and the export are fine."""

    def __init__(self):
        super().__init__()
        self.grid = nn.Conv2D(3, 2, 3, padding=1)

    def forward(self, image):
        grid = paddle.tanh(self.grid(image)).transpose([0, 2, 3, 1])
        return nn.functional.grid_sample(image, grid, align_corners=True)


def warped_by_its_own_grid():
    return WarpedByItsOwnGrid(), _image_spec()


class NoisyAtInference(nn.Layer):
    """Noise added in ``forward`` whatever the mode (as some augmenting or sampling heads do): dygraph
    and the exported program each draw their own numbers, so no two runs agree and no tolerance can."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)  # in eval the identity: no draw (PaddleTS's Informer has both kinds)

    def forward(self, x):
        hidden = self.drop(self.fc(x))
        return hidden + 0.5 * paddle.randn(paddle.shape(hidden))


def noisy_at_inference():
    return NoisyAtInference(), [InputSpec([None, 8], "float32", "x")]


class WritesInPlaceUnderATensorCondition(nn.Layer):
    """An in-place write inside ``if`` on a tensor: the exported program returns the zeros (measured at
    3.3.1: it holds no ``if``; the condition and the write are gone), dygraph the layer's output."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        hidden = self.fc(x)
        out = paddle.zeros_like(hidden)
        if hidden.mean() > -100.0:
            out.add_(hidden)
        return out


def writes_in_place_under_a_tensor_condition():
    return WritesInPlaceUnderATensorCondition(), [InputSpec([None, 8], "float32", "x")]


# -- models of planted suites (tests/suites): the fork server's preload ----------------------------

def slow_suite_narrow():
    from tests.suites.slow_suite import SuiteNet

    return SuiteNet(4), _image_spec()


def slow_suite_wide():
    from tests.suites.slow_suite import SuiteNet

    return SuiteNet(8), _image_spec()


def slow_suite_widest():
    from tests.suites.slow_suite import SuiteNet

    return SuiteNet(12), _image_spec()


def threaded_suite_net():
    from tests.suites.threaded_suite import ThreadedNet

    return ThreadedNet(), _image_spec()


def incomplete_suite_net():
    from tests.suites.incomplete_suite import SuiteNet  # noqa: F401  - its import raises first

    return SuiteNet(4), _image_spec()


class ScaledInTheProgram(nn.Layer):
    """Wrong only in the exported program, the same way in every session (no state, no randomness)."""

    def __init__(self, dim=8):
        super().__init__()
        self.first = nn.Linear(dim, dim)
        self.scaled = ExportedOtherwise(dim, dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        return self.head(nn.functional.relu(self.scaled(nn.functional.relu(self.first(x)))))


def scaled_in_the_program():
    return ScaledInTheProgram(), [InputSpec([None, 8], "float32", "x")]


def planted_suite_counting():
    """A model of an installed suite (``tests/suites/harness_planted_suite``, copied into site-packages
    by its test): its export freezes a Python call count."""
    from harness_planted_suite.model import CountingNet

    return CountingNet(8), _image_spec()


def planted_suite_upsampled():
    """A model of the installed planted suite whose failure is one op inside the suite's layer."""
    from harness_planted_suite.model import UpsampledNet

    return UpsampledNet(8), _image_spec()


def planted_suite_gated():
    """A model of the installed planted suite whose export raises ``bool(Tensor)`` in the suite's helper."""
    from harness_planted_suite.model import GatedNet

    return GatedNet(8), [InputSpec([None, 8], "float32", "x")]


def misnamed_suite_class():
    """A factory asking its suite for a class the suite does not have (a renamed class): the
    factory's mistake, which the harness says as its own."""
    import importlib

    return getattr(importlib.import_module("tests.suites.aliased_suite"), "RenamedNet")()


class _ScaledDropout(paddle.autograd.PyLayer):
    """A dropout as PaddleNLP 2.8.1's DeBERTa-v2 writes it (``XDropout``): its context object is a
    second, non-tensor input, and its backward returns a gradient for each input — ``(grad, None)``."""

    @staticmethod
    def forward(ctx, x, keep):
        ctx.keep = keep
        return x * keep

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.keep, None


class DropoutAsAPyLayer(nn.Layer):
    """Linear layers around that dropout: inference and the export never call the backward; the lite
    training does, and Paddle 3.3.1 raises "The number of outputs of `PyLayer.backward` should be 1,
    but received 2" (measured on DeBERTa-v2)."""

    def __init__(self):
        super().__init__()
        self.embed, self.fc = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        h = self.embed(x)  # what the dropout reads needs a gradient, as a hidden state does
        return self.fc(_ScaledDropout.apply(h, 1.0) if self.training else h)


def dropout_as_a_pylayer():
    return DropoutAsAPyLayer(), [InputSpec([None, 8], "float32", "x")]


class _AllByPosition(nn.Conv2D):
    """As PaddleSpeech 1.5.0's ``align.Conv2D``: every argument of Paddle's ``Conv2D`` by position, and
    one beyond what any release takes — the model does not build, at every release (Paddle 3.2 on
    also refuses the eleven the suite passes: its ``padding_mode`` and after are keyword-only)."""

    def __init__(self, cin, cout):
        super(_AllByPosition, self).__init__(cin, cout, 3, 1, 1, 1, 1, "zeros", None, None, "NCHW", "beyond")


def built_with_too_many_positions():
    return nn.Sequential(_AllByPosition(3, 4)), [InputSpec([None, 3, 8, 8], "float32", "x")]


class ConvLeakyReluUnderOneDNN(nn.Layer):
    """A convolution without bias, then LeakyReLU (behind a plain convolution): from Paddle 3.3.0 a oneDNN
    predictor dies building it — SIGSEGV in ``FusedConv2dOp::Build`` reading an absent
    ``FloatAttribute`` (measured 3.3.0 and 3.3.1; 2.6.2 and 3.0.0 build and agree). Paddle3D's
    SqueezeSegV3 met it first; a stage that kills the worker."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(4, 8, 3, padding=1)
        self.conv = nn.Conv2D(8, 8, 3, padding=1, bias_attr=False)
        self.act = nn.LeakyReLU(0.1)

    def forward(self, x):
        return self.act(self.conv(nn.functional.relu(self.stem(x))))


def conv_leaky_relu_onednn():
    return ConvLeakyReluUnderOneDNN(), [InputSpec([None, 4, 8, 8], "float32", "x")]


def _banded_mask(input_shape, past=0, window=2):
    """As PaddleFormers' ``_make_sliding_window_mask`` (Gemma 3): a band per traced position, bounded
    with Python's ``max`` — under ``to_static`` (Paddle 3.x) ``bool`` of a traced value; 2.6.2 traces it."""
    batch, seq = input_shape
    mask = paddle.zeros((seq, seq + past), dtype="float32")
    for i in range(seq):
        current = past + i
        start = max(0, current - window + 1)
        mask[i, start:current + 1] = 1.0
    return mask


class BandedAttention(nn.Layer):
    """A projection plus a band mask built from the traced sequence length: its export raises in the
    helper, deep below the forward, with none of the layer's weights needed to raise it."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.window = 2

    def forward(self, x):
        mask = _banded_mask(x.shape[:2], window=self.window)
        return self.proj(x) + mask.sum()


def banded_attention():
    return BandedAttention(), [InputSpec([None, None, 8], "float32", "x")]


class LinearThenGelu(nn.Layer):
    """A projection and ``F.gelu``, as PP-OCRv6's blocks call it: PaddleSlim 2.6.0's PACT saves it
    through a legacy static program, and 3.3.1's ``gelu`` refuses that program's ``Variable``."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return nn.functional.gelu(self.proj(x))


def linear_then_gelu():
    return LinearThenGelu(), [InputSpec([None, 8], "float32", "x")]


class ConvBnStack(nn.Layer):
    """Four blocks of a 3x3 convolution, batch norm and hardswish then a 1x1 one (PP-LCNet's blocks, without
    depthwise): PaddleSlim 2.6.0's PACT program, once saved, computes 45% of the output's scale away from
    its own fake-quantized dygraph model at 3.3.1 (measured; a conv-relu-linear model stays within 1%)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([nn.Sequential(
            nn.Conv2D(8 if i else 3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.Hardswish(),
            nn.Conv2D(8, 8, 1), nn.BatchNorm2D(8), nn.Hardswish()) for i in range(4)])
        self.head = nn.Linear(8, 4)

    def forward(self, image):
        x = image
        for block in self.blocks:
            x = block(x)
        return self.head(paddle.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def conv_bn_stack():
    return ConvBnStack(), [InputSpec([None, 3, 8, 8], "float32", "image")]
