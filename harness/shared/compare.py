"""Element-wise comparison of two arrays, numpy only (used on both sides).

Semantics (isclose-style): an element matches when
``|got - ref| <= atol + scaled_atol * max|ref| + rtol * |ref|``. ``scaled_atol`` (0 unless a
tolerance sets it) is for low-precision backends: bf16/fp16 round every activation relative to
its tensor's scale, so their error on an output is a fraction of that output's largest value;
with ``rtol`` alone every small logit of a large-logit output fails. NaN matches only NaN at the same position;
an infinity matches only the same infinity. Integer and boolean outputs are compared
exactly.

A comparison that cannot fail has the status ``vacuous``: when every reference element lies
inside its own tolerance band (``|ref| <= atol + rtol*|ref|``) an all-zero output would pass,
so a pass says nothing. It is never a pass and not a fail.

A comparison of no tensor at all says nothing either: ``compare_all`` refuses it (and outputs that
cannot be paired one to one) with ``NothingCompared``, the harness's own failure — whoever asked
(a stage, a culprit probe, a reduction trial, the triage) is then untestable, never "within
tolerance".
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .errors import HarnessFailure
from .vocab import Judged, Status
from .json_types import JsonMapping, JsonObject

__all__ = ["Comparison", "NothingCompared", "Tolerance", "compare_all", "compare_arrays", "compare_tol", "cosine",
           "describe_tolerance", "worst"]


class NothingCompared(HarnessFailure):
    """A comparison with no tensor on a side, or outputs that cannot be paired one to one."""


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """How far an output may be from its reference, element-wise: the matrix's
    ``[tolerances.<precision>]`` table (and a model's per-output override) as a value."""

    atol: float
    rtol: float
    scaled_atol: float = 0.0

    # The same bound as code for a standalone script (``tol``: ``to_dict()``, ``want``: the
    # reference array), so a reproducer judges exactly as ``compare_arrays`` does.
    ALLOWED_CODE = ('tol["atol"] + tol.get("scaled_atol", 0.0) * np.abs(want[np.isfinite(want)]).max(initial=0.0)'
                    ' + tol["rtol"] * np.abs(want)')

    @classmethod
    def of(cls, table: JsonMapping) -> "Tolerance":
        return cls(float(table["atol"]), float(table["rtol"]), float(table.get("scaled_atol", 0.0) or 0.0))

    def overridden(self, table: Optional[JsonMapping]) -> "Tolerance":
        """This tolerance with the keys a per-output override sets."""
        if not table:
            return self
        return Tolerance.of({**self.to_dict(), **table})

    def to_dict(self) -> Dict[str, float]:
        out = {"atol": self.atol, "rtol": self.rtol}
        if self.scaled_atol:
            out["scaled_atol"] = self.scaled_atol
        return out


def _optional_float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


@dataclasses.dataclass(frozen=True)
class Comparison(Judged):
    """``compare_arrays``'s answer for one output: the error statistics and the status.

    ``output`` (the output's label), ``predictor_name`` and ``at_shape`` (the input shape's label) are
    set where a comparison is named: a stage's outputs and its worst."""

    shape: Tuple[int, ...]
    dtype: str
    atol: float
    rtol: float
    status: Status
    scaled_atol: float = 0.0
    total: int = 0
    mismatched: int = 0
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    cosine: Optional[float] = None
    ref_absmax: Optional[float] = None
    nan_ref: int = 0
    nan_got: int = 0
    inf_ref: int = 0
    inf_got: int = 0
    vacuous: bool = False
    tol_ratio: Optional[float] = None
    note: str = ""
    exact: bool = False
    got_shape: Optional[Tuple[int, ...]] = None
    atol_effective: Optional[float] = None
    output: Optional[str] = None
    predictor_name: Optional[str] = None
    at_shape: Optional[str] = None

    @property
    def relative_to_scale(self) -> Optional[float]:
        """The worst element's error as a fraction of the reference's largest magnitude."""
        if self.max_abs is None or not self.ref_absmax:
            return None
        return self.max_abs / self.ref_absmax

    def named(self, **names: Any) -> "Comparison":
        return dataclasses.replace(self, **names)

    _ALWAYS = ("shape", "dtype", "atol", "rtol")
    _FLOAT_ONLY = ("ref_absmax", "nan_ref", "nan_got", "inf_ref", "inf_got", "tol_ratio")

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"shape": list(self.shape), "dtype": self.dtype, "atol": self.atol, "rtol": self.rtol}
        if self.scaled_atol:
            out["scaled_atol"] = self.scaled_atol
        out.update(total=self.total, mismatched=self.mismatched, max_abs=self.max_abs, max_rel=self.max_rel,
                   cosine=self.cosine)
        if not self.exact and self.got_shape is None:  # the float comparison's own statistics
            out.update({k: getattr(self, k) for k in self._FLOAT_ONLY})
        out["vacuous"] = self.vacuous
        out["status"] = self.status
        for key in ("note", "exact", "got_shape", "atol_effective", "predictor_name", "output", "at_shape"):
            value = getattr(self, key)
            if value:
                out[key] = list(value) if key == "got_shape" else value
        return out

    @classmethod
    def from_dict(cls, data: JsonMapping) -> "Comparison":
        shape, at_shape = data.get("shape"), data.get("at_shape")
        if isinstance(shape, str):  # schema 2 wrote the input shape's label over the tensor's shape
            shape, at_shape = (), at_shape or shape
        return cls(
            shape=tuple(shape or ()), dtype=str(data.get("dtype", "")), atol=float(data.get("atol", 0.0)),
            rtol=float(data.get("rtol", 0.0)), status=Status.of(data.get("status")),
            scaled_atol=float(data.get("scaled_atol") or 0.0), total=int(data.get("total") or 0),
            mismatched=int(data.get("mismatched") or 0), max_abs=_optional_float(data.get("max_abs")),
            max_rel=_optional_float(data.get("max_rel")), cosine=_optional_float(data.get("cosine")),
            ref_absmax=_optional_float(data.get("ref_absmax")), nan_ref=int(data.get("nan_ref") or 0),
            nan_got=int(data.get("nan_got") or 0), inf_ref=int(data.get("inf_ref") or 0),
            inf_got=int(data.get("inf_got") or 0), vacuous=bool(data.get("vacuous")),
            tol_ratio=_optional_float(data.get("tol_ratio")), note=str(data.get("note") or ""),
            exact=bool(data.get("exact")),
            got_shape=tuple(data["got_shape"]) if data.get("got_shape") is not None else None,
            atol_effective=_optional_float(data.get("atol_effective")), output=data.get("output"),
            predictor_name=data.get("predictor_name"), at_shape=at_shape)


def worst(comparisons: "Mapping[str, Comparison] | List[Comparison]") -> Optional[Comparison]:
    """The worst output, one rule everywhere (stage notes, regression drift, portability): a
    failing one first, then the one furthest past (or least inside) its tolerance band
    (``tol_ratio``, which honours per-output tolerances), then the largest max abs. Named by its
    output's label (its index for a list)."""
    items = (list(comparisons.items()) if isinstance(comparisons, Mapping)
             else [(str(i), c) for i, c in enumerate(comparisons)])
    if not items:
        return None

    def badness(item: Tuple[str, Comparison]) -> Tuple[bool, float, float]:
        c = item[1]
        return (not c.passed, _num(c.tol_ratio), _num(c.max_abs))

    label, found = max(items, key=badness)
    return found.named(output=label)


def _num(value: Optional[float]) -> float:
    return -1.0 if value is None else float(value)


def tolerance_band(ref: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    return atol + rtol * np.abs(ref)


def compare_tol(ref: np.ndarray, got: np.ndarray, tol: Tolerance) -> Comparison:
    """``compare_arrays`` at a ``Tolerance``."""
    return compare_arrays(ref, got, tol.atol, tol.rtol, tol.scaled_atol)


def describe_tolerance(compared: Comparison) -> str:
    text = f"atol {compared.atol:g} rtol {compared.rtol:g}"
    if compared.scaled_atol:
        text += f" scaled_atol {compared.scaled_atol:g}"
    return text


def compare_arrays(ref: np.ndarray, got: np.ndarray, atol: float, rtol: float,
                   scaled_atol: float = 0.0) -> Comparison:
    """Error statistics of ``got`` against ``ref`` and whether it is within tolerance."""
    ref = np.asarray(ref)
    got = np.asarray(got)
    base = Comparison(shape=tuple(ref.shape), dtype=str(ref.dtype), atol=float(atol), rtol=float(rtol),
                      scaled_atol=float(scaled_atol or 0.0), status=Status.FAIL)
    if ref.shape != got.shape:
        return dataclasses.replace(base, note=f"shape mismatch: expected {list(ref.shape)}, got {list(got.shape)}",
                                   got_shape=tuple(got.shape), total=int(ref.size), mismatched=int(ref.size))
    if not (np.issubdtype(ref.dtype, np.floating) or np.issubdtype(ref.dtype, np.complexfloating)):
        return _compare_exact(base, ref, got)
    return _compare_float(base, ref, got, atol, rtol, scaled_atol)


def _compare_exact(base: Comparison, ref: np.ndarray, got: np.ndarray) -> Comparison:
    """Integer and boolean outputs (counts, indices, masks) match only exactly."""
    a, b = ref.astype(np.float64), got.astype(np.float64)
    diff = np.abs(a - b)
    mismatched = int(np.count_nonzero(ref != got))
    return dataclasses.replace(base, total=int(ref.size), mismatched=mismatched,
                               max_abs=float(diff.max()) if ref.size else 0.0, max_rel=_max_rel(diff, np.abs(a)),
                               cosine=cosine(a, b), exact=True, status=Status.PASS if mismatched == 0 else Status.FAIL)


def _compare_float(base: Comparison, ref: np.ndarray, got: np.ndarray, atol: float, rtol: float,
                   scaled_atol: float) -> Comparison:
    a = ref.astype(np.float64)
    b = got.astype(np.float64)
    total = int(ref.size)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    inf_a, inf_b = np.isinf(a), np.isinf(b)
    finite = ~(nan_a | nan_b | inf_a | inf_b)
    # Non-finite positions match only when both sides hold the same special value.
    special_ok = (nan_a & nan_b) | (inf_a & inf_b & (a == b))
    diff = np.zeros_like(a)
    diff[finite] = np.abs(a[finite] - b[finite])
    finite_ref = np.abs(a[np.isfinite(a)])
    effective = None
    if scaled_atol and finite_ref.size:
        atol = atol + scaled_atol * float(finite_ref.max())
        effective = atol
    band = tolerance_band(a[finite], atol, rtol)
    within = np.zeros(a.shape, dtype=bool)
    within[finite] = diff[finite] <= band
    within |= special_ok
    # How far past (>1) or inside (<1) the tolerance the worst element is.
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(band > 0, diff[finite] / np.where(band > 0, band, 1.0),
                          np.where(diff[finite] > 0, np.inf, 0.0))
    mismatched = int(total - np.count_nonzero(within))
    # The comparison cannot fail if zeros everywhere would still pass.
    vacuous = bool(total) and finite_ref.size == total and bool(
        np.all(finite_ref <= tolerance_band(finite_ref, atol, rtol)))
    ref_absmax = float(finite_ref.max()) if finite_ref.size else None
    note = ""
    if mismatched:
        status = Status.FAIL
    elif vacuous:
        status = Status.VACUOUS
        note = (f"vacuous: reference |max| {ref_absmax:.3g} lies inside atol {atol:g}"
                f"{' (with scaled_atol)' if scaled_atol else ''}"
                f" + rtol {rtol:g}*|ref|; an all-zero output would pass")
    else:
        status = Status.PASS
    return dataclasses.replace(
        base, total=total, mismatched=mismatched,
        max_abs=float(diff[finite].max()) if np.any(finite) else None,
        max_rel=_max_rel(diff[finite], np.abs(a[finite])),
        cosine=cosine(a[finite], b[finite]), ref_absmax=ref_absmax,
        nan_ref=int(np.count_nonzero(nan_a)), nan_got=int(np.count_nonzero(nan_b)),
        inf_ref=int(np.count_nonzero(inf_a)), inf_got=int(np.count_nonzero(inf_b)),
        vacuous=vacuous, tol_ratio=float(ratios.max()) if ratios.size else None, atol_effective=effective,
        status=status, note=note)


def _max_rel(diff: np.ndarray, ref_abs: np.ndarray) -> "float | None":
    """Largest |diff|/|ref| over elements with a non-zero reference (zeros have no relative error)."""
    nz = ref_abs > 0
    if diff.size == 0:
        return None
    if not np.any(nz):
        return 0.0 if not np.any(diff > 0) else math.inf
    return float((diff[nz] / ref_abs[nz]).max())


def cosine(a: np.ndarray, b: np.ndarray) -> "float | None":
    """Cosine similarity; None for empty or zero vectors, where it says nothing (two all-zero
    tensors are compared by the element-wise check, not by a direction they do not have)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.size == 0:
        return None
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return None
    return float(np.dot(a, b) / (na * nb))


def compare_all(expected: List[np.ndarray], got: List[np.ndarray], tolerances: "Tolerance | List[Tolerance]",
                what: str = "the outputs") -> List[Comparison]:
    """``compare_tol`` over paired outputs; raises ``NothingCompared`` when there is nothing to pair
    (no tensor on a side) or the counts differ — a comparison of nothing cannot fail."""
    if not expected or not got:
        raise NothingCompared(f"nothing to compare: {what} are {len(expected)} reference tensor(s) and "
                              f"{len(got)} tensor(s) to judge")
    if len(expected) != len(got):
        raise NothingCompared(f"{what} cannot be paired: {len(got)} tensor(s) against {len(expected)} reference "
                              f"tensor(s)")
    tols = tolerances if isinstance(tolerances, list) else [tolerances] * len(expected)
    return [compare_tol(e, g, t) for e, g, t in zip(expected, got, tols)]
