"""The shapes a deployment feeds: variants of a cell's inputs beside its primary shape.

Exported programs have free dims (a ``None`` batch, free H/W for detection and segmentation, a
free sequence length); deployments feed batch 1 and batch N, other image sizes, other lengths.
Every stage of a cell runs at each variant (one predictor built once, run per shape), so a
program that is right only at the shape it was traced or tested at fails, and says where.

Variants come from the matrix (``inputs.<name>.shapes = [[...], ...]``: variant k feeds each
input its k-th listed shape, inputs without a list keep their primary shape) or, when a model
lists none and ``run.derive_shapes`` is on, from the InputSpec's free dims:

* ``batch 1``: the batch dim 1 (when it is free and the primary batch is not 1);
* ``other sizes``: batch + 1 and every other free dim ``3·d/2 + 1`` (for 224: 337, not a
  multiple of the usual strides; for a sequence of 16: 25).

A variant the dygraph model itself cannot take (its forward raises) is skipped with the reason.
Standard library only.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

Shape = List[int]
Shapes = Dict[str, Shape]


def label(shapes: Shapes) -> str:
    """``image=1x3x32x24, mask=1x24``: how a variant is named in records and notes."""
    return ", ".join(f"{name}={'x'.join(str(d) for d in shape)}" for name, shape in shapes.items())


def derive(free: Dict[str, Sequence[Optional[int]]], primary: Shapes) -> List[Shapes]:
    """Variants from the free dims (``None`` in ``free[name]``) of each input's InputSpec."""
    variants: List[Shapes] = []
    batched = [name for name, dims in free.items() if dims and dims[0] is None]
    if any(primary[name][0] != 1 for name in batched):
        variants.append({name: [1, *shape[1:]] if name in batched else list(shape) for name, shape in primary.items()})
    other: Shapes = {}
    changed = False
    for name, shape in primary.items():
        dims = free.get(name, [])
        new = []
        for i, size in enumerate(shape):
            if i < len(dims) and dims[i] is None:
                new.append(size + 1 if i == 0 else size * 3 // 2 + 1)
                changed = True
            else:
                new.append(size)
        other[name] = new
    if changed:
        variants.append(other)
    return variants


def declared(inputs: Dict[str, Dict[str, object]], primary: Shapes) -> List[Shapes]:
    """Variants the matrix lists (``inputs.<name>.shapes``), zipped across inputs."""
    lists = {name: entry.get("shapes") for name, entry in inputs.items() if entry.get("shapes")}
    if not lists:
        return []
    count = max(len(v) for v in lists.values())  # type: ignore[arg-type]
    variants = []
    for k in range(count):
        variants.append({name: list(lists[name][k]) if name in lists and k < len(lists[name]) else list(shape)  # type: ignore[index]
                         for name, shape in primary.items()})
    return variants


def shape_range(variants: Sequence[Shapes]) -> Dict[str, Dict[str, Shape]]:
    """TensorRT's dynamic-shape profile from the shapes a cell runs: per input the elementwise
    min and max over every variant, and the primary (first) shape as opt."""
    out: Dict[str, Dict[str, Shape]] = {}
    for name in variants[0]:
        shapes = [v[name] for v in variants if name in v and len(v[name]) == len(variants[0][name])]
        out[name] = {"min": [min(d) for d in zip(*shapes)], "opt": list(variants[0][name]),
                     "max": [max(d) for d in zip(*shapes)]}
    return out
