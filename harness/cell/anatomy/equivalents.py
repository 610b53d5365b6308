"""Public calls that build an op the model ran through a private path (cell side).

A Paddle layer often reaches its op without a public function: ``nn.Conv2D.forward`` calls the
private ``F.conv._conv_nd`` and then ``_C_ops.conv2d`` (or ``depthwise_conv2d``), the legacy
``nn.BatchNorm`` calls ``_C_ops.batch_norm`` itself. Written as ``_C_ops``, such an op builds under
PIR only: 2.6.2's ``to_static`` traces a legacy program and refuses it ("depthwise_conv2d():
argument (position 1) must be OpResult, but got Variable": PP-LCNet's converter cause could not be
asked there, measured). The public function that builds the same op from the same attributes is
written instead — ``F.conv2d`` builds ``depthwise_conv2d`` when the groups are the channels, at 2.6.2
and 3.3.1 alike (measured). Only where every attribute has its public spelling; the program is then
verified like every written one, and ``Written.as_c_ops`` keeps the ``_C_ops`` form as the fallback
where the public one says nothing."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from .pieces import Slot

Spell = Callable[[Any], str]

_CONV = "paddle.nn.functional.conv2d"


def _conv(args: List[Any], spell: Spell) -> Optional[str]:
    """``args`` in ``_C_ops.conv2d``'s order: x, weight, strides, paddings, padding_algorithm,
    dilations, groups, data_format."""
    x, weight, strides, paddings, algorithm, dilations, groups, data_format = args
    if not (isinstance(x, Slot) and isinstance(weight, Slot) and isinstance(groups, int)
            and algorithm in ("EXPLICIT", "SAME", "VALID") and data_format in ("NCHW", "NHWC")):
        return None
    padding = paddings if algorithm == "EXPLICIT" else algorithm
    return (f"{_CONV}({spell(x)}, {spell(weight)}, stride={spell(strides)}, padding={spell(padding)}, "
            f"dilation={spell(dilations)}, groups={groups}, data_format={data_format!r})")


def _conv2d(args: List[Any], spell: Spell) -> Optional[str]:
    # _C_ops.conv2d(x, weight, strides, paddings, padding_algorithm, dilations, groups, data_format)
    return _conv(args, spell) if len(args) == 8 else None


def _depthwise_conv2d(args: List[Any], spell: Spell) -> Optional[str]:
    # _C_ops.depthwise_conv2d(x, weight, strides, paddings, padding_algorithm, groups, dilations, data_format)
    if len(args) != 8:
        return None
    x, weight, strides, paddings, algorithm, groups, dilations, data_format = args
    return _conv([x, weight, strides, paddings, algorithm, dilations, groups, data_format], spell)


def _batch_norm(args: List[Any], spell: Spell) -> Optional[str]:
    # _C_ops.batch_norm(x, mean, variance, scale, bias, is_test, momentum, epsilon, data_format,
    # use_global_stats, trainable_statistics): in inference only (is_test), no trainable statistics.
    if len(args) != 11 or not all(isinstance(a, Slot) for a in args[:5]) or args[5] is not True or args[10]:
        return None
    x, mean, variance, scale, bias, _, momentum, epsilon, data_format, use_global_stats, _ = args
    return (f"paddle.nn.functional.batch_norm({spell(x)}, {spell(mean)}, {spell(variance)}, weight={spell(scale)}, "
            f"bias={spell(bias)}, training=False, momentum={momentum!r}, epsilon={epsilon!r}, "
            f"data_format={data_format!r}, use_global_stats={use_global_stats!r})")


def _binary(function: str) -> Callable[[List[Any], Spell], Optional[str]]:
    def spoken(args: List[Any], spell: Spell) -> Optional[str]:
        return f"{function}({spell(args[0])}, {spell(args[1])})" if len(args) == 2 and all(
            isinstance(a, Slot) for a in args) else None
    return spoken


_EQUIVALENTS = {
    "conv2d": _conv2d,
    "depthwise_conv2d": _depthwise_conv2d,
    "batch_norm": _batch_norm,
    **{name: _binary(f"paddle.{name}") for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum")},
}


def public_equivalent(op: str, args: List[Any], spell: Spell) -> Optional[str]:
    """The public call building ``_C_ops.<op>(*args)``'s op with the same attributes, returning its
    main output alone; None where there is none."""
    equivalent = _EQUIVALENTS.get(op)
    return equivalent(args, spell) if equivalent is not None else None


__all__ = ["public_equivalent"]
