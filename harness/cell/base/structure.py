"""Cell side: the structure of a model's inputs and outputs, as Paddle flattens them.

Plain functions with ``paddle`` passed in and no harness imports (numpy only): the cell worker imports
this module, and the TIPC ``jit.save`` interception loads it by file path inside a user's process
(where the harness package is not importable).
"""

from typing import Any, Dict, List, Tuple

import numpy as np


def flatten_spec(input_spec: List[Any]) -> List[Any]:
    """The InputSpecs in the order Paddle flattens them (dicts by sorted key)."""
    flat: List[Any] = []
    for item in input_spec:
        if isinstance(item, dict):
            flat.extend(item[k] for k in sorted(item))
        elif isinstance(item, (list, tuple)):
            flat.extend(flatten_spec(list(item)))
        else:
            flat.append(item)
    return flat


def build_call_args(paddle: Any, input_spec: List[Any], arrays: Dict[str, np.ndarray]) -> List[Any]:
    """Dygraph arguments with the same structure as the InputSpecs."""
    args = []
    for item in input_spec:
        if isinstance(item, dict):
            args.append({k: paddle.to_tensor(arrays[v.name]) for k, v in item.items()})
        elif isinstance(item, (list, tuple)):
            args.append(type(item)(build_call_args(paddle, list(item), arrays)))
        else:
            args.append(paddle.to_tensor(arrays[item.name]))
    return args


def flatten_tensors(paddle: Any, value: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """(label, tensor) pairs in Paddle's flattening order: dicts by sorted key, then sequence order."""
    if isinstance(value, paddle.Tensor):
        return [(prefix or "output", value)]
    if isinstance(value, dict):
        return [x for key in sorted(value)
                for x in flatten_tensors(paddle, value[key], f"{prefix}.{key}" if prefix else str(key))]
    if isinstance(value, (list, tuple)):
        return [x for i, item in enumerate(value)
                for x in flatten_tensors(paddle, item, f"{prefix}.{i}" if prefix else str(i))]
    return []  # non-tensor returns are not program outputs


def flatten_outputs(paddle: Any, value: Any) -> List[Tuple[str, np.ndarray]]:
    return [(label, tensor.numpy()) for label, tensor in flatten_tensors(paddle, value)]
