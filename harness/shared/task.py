"""A verdict in the model's own terms, beside the tensor comparison (shared by the cell and the reports).

The tensor comparison says whether a stage is within tolerance; it cannot say whether what the
model answers changed. A task verdict reads the same two sets of outputs as the model's user
would: the next token a language model would emit at each position (greedy) and its five best;
a classifier's top class and its five best; a detector's top detections, each keeping its class
and a box overlapping the reference's (IoU). The stage's status stays the tensor comparison's;
the task verdict says how much a failure matters (``changed``) and is shown beside it.

A matrix model declares its task (``task = "causal_lm"``, or a table naming the detector's outputs
and box format); nothing is guessed from shapes.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence

import numpy as np

from .vocab import Word
from .json_types import JsonMapping, JsonObject

TOP_K = 5
IOU_KEPT = 0.9
TOP_DETECTIONS = 10


class TaskKind(Word):
    CAUSAL_LM = "causal_lm"
    CLASSIFIER = "classifier"
    DETECTOR = "detector"


BOX_FORMATS = ("xyxy", "cxcywh")
_LOGITS_NAMES = ("logits", "scores", "pooled")


@dataclasses.dataclass(frozen=True)
class Task:
    """What the model's outputs mean: which output holds the logits (or the detector's scores and
    boxes) and, for a detector, how its boxes are written."""

    kind: TaskKind
    logits: Optional[str] = None
    boxes: Optional[str] = None
    box_format: str = "xyxy"

    @classmethod
    def of(cls, raw: "str | JsonMapping | None") -> Optional["Task"]:
        """From a matrix model's ``task`` (a word or a table); ``ValueError`` names what is wrong."""
        if raw is None:
            return None
        table = {"kind": raw} if isinstance(raw, str) else dict(raw)
        unknown = set(table) - {"kind", "logits", "boxes", "box_format"}
        if unknown:
            raise ValueError(f"unknown key(s) {sorted(unknown)}; known: kind, logits, boxes, box_format")
        kinds = [k.value for k in TaskKind]
        if table.get("kind") not in kinds:
            raise ValueError(f"kind {table.get('kind')!r} is not one of {kinds}")
        if table.get("box_format", "xyxy") not in BOX_FORMATS:
            raise ValueError(f"box_format {table['box_format']!r} is not one of {list(BOX_FORMATS)}")
        return cls(TaskKind(table["kind"]), table.get("logits"), table.get("boxes"), table.get("box_format", "xyxy"))

    def to_dict(self) -> JsonObject:
        return {k: str(v) for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclasses.dataclass(frozen=True)
class TaskVerdict:
    """How many of the model's answers the stage kept: ``agree`` of ``of`` (tokens, top-1 classes,
    detections), the mean top-5 overlap (logits) or the smallest IoU of the kept detections."""

    kind: TaskKind
    output: str
    agree: int
    of: int
    top5_overlap: Optional[float] = None
    min_iou: Optional[float] = None
    note: str = ""

    @property
    def changed(self) -> bool:
        return self.agree < self.of

    @property
    def summary(self) -> str:
        if self.note:
            return self.note
        if self.kind is TaskKind.DETECTOR:
            iou = "" if self.min_iou is None else f", min IoU {self.min_iou:.2f}"
            return f"detections kept {self.agree}/{self.of} (class and IoU > {IOU_KEPT}){iou}"
        word = "tokens agree" if self.kind is TaskKind.CAUSAL_LM else "top-1 agree"
        return f"{word} {self.agree}/{self.of}, top-{TOP_K} overlap {self.top5_overlap:.2f}"

    def to_dict(self) -> JsonObject:
        out = {"kind": str(self.kind), "output": self.output, "agree": self.agree, "of": self.of,
               "changed": self.changed, "summary": self.summary}
        if self.top5_overlap is not None:
            out["top5_overlap"] = round(self.top5_overlap, 4)
        if self.min_iou is not None:
            out["min_iou"] = round(self.min_iou, 4)
        return out


def judge(task: Optional[Task], labels: Sequence[str], reference: Sequence[np.ndarray],
          got: Sequence[np.ndarray]) -> Optional[TaskVerdict]:
    """The task verdict of one run against its reference (None when the model declares no task)."""
    if task is None:
        return None
    if task.kind is TaskKind.DETECTOR:
        return _detections(task, labels, reference, got)
    label = _pick(labels, task.logits, _LOGITS_NAMES, reference)
    if label is None:
        return TaskVerdict(task.kind, "", 0, 0, note=f"no logits output among {list(labels)}: name it (task.logits)")
    k = list(labels).index(label)
    ref, out = np.asarray(reference[k], dtype=np.float64), np.asarray(got[k], dtype=np.float64)
    if ref.shape != out.shape or ref.ndim < 2:
        return TaskVerdict(task.kind, label, 0, 0, note=f"{label}: shapes {list(ref.shape)} and {list(out.shape)} "
                                                         f"cannot be read as logits")
    ref2, out2 = ref.reshape(-1, ref.shape[-1]), out.reshape(-1, out.shape[-1])
    agree = int((ref2.argmax(-1) == out2.argmax(-1)).sum())
    k_top = min(TOP_K, ref2.shape[-1])
    ref_top, out_top = _top(ref2, k_top), _top(out2, k_top)
    overlap = float(np.mean([len(set(a) & set(b)) / k_top for a, b in zip(ref_top, out_top)]))
    return TaskVerdict(task.kind, label, agree, ref2.shape[0], top5_overlap=overlap)


def _top(rows: np.ndarray, k: int) -> List[List[int]]:
    return [list(r) for r in np.argsort(-rows, axis=-1, kind="stable")[:, :k]]


def _pick(labels: Sequence[str], named: Optional[str], names: Sequence[str], arrays: Sequence[np.ndarray]) -> Optional[str]:
    if named is not None:
        return named if named in labels else None
    for name in names:
        if name in labels:
            return name
    floats = [l for l, a in zip(labels, arrays) if np.asarray(a).dtype.kind == "f" and np.asarray(a).ndim >= 2]
    return floats[0] if len(floats) == 1 else None


def _detections(task: Task, labels: Sequence[str], reference: Sequence[np.ndarray],
                got: Sequence[np.ndarray]) -> TaskVerdict:
    """The reference's top detections (by their best class score; query slots are the model's, so
    a detection is the same slot on both sides) each keeping its class and an IoU above 0.9."""
    scores = _pick(labels, task.logits, _LOGITS_NAMES, reference)
    boxes = _pick(labels, task.boxes, ("boxes", "bbox"), [np.zeros(0)] * len(labels))
    if scores is None or boxes is None:
        return TaskVerdict(task.kind, "", 0, 0, note=f"no scores and boxes among {list(labels)}: name them "
                                                     f"(task.logits, task.boxes)")
    i, j = list(labels).index(scores), list(labels).index(boxes)
    ref_s, out_s = np.asarray(reference[i], np.float64), np.asarray(got[i], np.float64)
    ref_b, out_b = np.asarray(reference[j], np.float64), np.asarray(got[j], np.float64)
    if ref_s.shape != out_s.shape or ref_b.shape != out_b.shape or ref_b.shape[-1] != 4:
        return TaskVerdict(task.kind, scores, 0, 0, note="scores or boxes differ in shape: no detection to match")
    ref_s, out_s = ref_s.reshape(-1, ref_s.shape[-1]), out_s.reshape(-1, out_s.shape[-1])
    ref_b, out_b = ref_b.reshape(-1, 4), out_b.reshape(-1, 4)
    top = np.argsort(-ref_s.max(-1), kind="stable")[:TOP_DETECTIONS]
    ious = iou(_xyxy(ref_b[top], task.box_format), _xyxy(out_b[top], task.box_format))
    same_class = ref_s[top].argmax(-1) == out_s[top].argmax(-1)
    kept = same_class & (ious > IOU_KEPT)
    return TaskVerdict(task.kind, f"{scores}+{boxes}", int(kept.sum()), len(top),
                       min_iou=float(ious.min()) if len(top) else None)


def _xyxy(boxes: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "cxcywh":
        half = boxes[:, 2:] / 2
        boxes = np.concatenate([boxes[:, :2] - half, boxes[:, :2] + half], axis=1)
    # Corners in either order (an untrained head's boxes are not ordered): sorted per axis.
    return np.concatenate([np.minimum(boxes[:, :2], boxes[:, 2:]), np.maximum(boxes[:, :2], boxes[:, 2:])], axis=1)


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise IoU of two [N, 4] xyxy arrays (1.0 for two identical empty boxes)."""
    low, high = np.maximum(a[:, :2], b[:, :2]), np.minimum(a[:, 2:], b[:, 2:])
    inter = np.prod(np.clip(high - low, 0, None), axis=1)
    union = np.prod(a[:, 2:] - a[:, :2], axis=1) + np.prod(b[:, 2:] - b[:, :2], axis=1) - inter
    same = np.all(a == b, axis=1)
    return np.where(union > 0, inter / np.where(union > 0, union, 1), np.where(same, 1.0, 0.0))


def worst_verdict(verdicts: Sequence[Optional[JsonMapping]]) -> Optional[JsonObject]:
    """The verdict with the smallest share kept, among a stage's shapes (records' dicts)."""
    found = [dict(v) for v in verdicts if v and v.get("of")]
    return min(found, key=lambda v: v["agree"] / v["of"]) if found else None


__all__ = ["Task", "TaskKind", "TaskVerdict", "judge", "iou", "worst_verdict"]
