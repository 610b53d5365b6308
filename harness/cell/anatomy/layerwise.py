"""Cell side: per-tensor (layer-wise) diff between two predictor configs of one model.

Both predictors run with an output hook (``register_output_hook``, 2.6-3.3) that writes every
tensor to disk as it is produced, so neither run holds the model's intermediates in memory;
the comparison then streams over the pairs, loading one pair at a time (memory-mapped).

Before the hook is registered each predictor runs once plain: its outputs with and without
the hook must agree bitwise, otherwise fetching intermediates changed the result and the
report says so.

Matching (only what really corresponds is compared; the rest is listed as unmatched):

* names: legacy names (``conv2d_0.tmp_0``) as they are; PIR names lose their per-predictor
  ``0x..._`` prefix (``inner_var_111``);
* a pair needs the same *normalized op type* (dialect prefix, ``:N`` index and the in-place
  ``_`` dropped: ``pd_op.conv2d:0`` and ``onednn_op.conv2d:5`` are both ``conv2d``, but
  ``onednn_op.fused_conv2d`` is not), and the same shape once oneDNN layouts are undone
  (``layout == 'ONEDNN'`` tensors are physically NHWC under an NCHW shape);
* when names do not line up (PIR numbers variables per predictor), the k-th ``pool2d`` with the
  k-th ``pool2d``, for op types that occur equally often in both runs (or a caller's own anchors);
* a mismatching tensor whose later matched tensors all agree again is marked *suspect* (the
  same name holding a different tensor after a fusion) and is not taken as the first
  divergence.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ...shared.compare import Tolerance, compare_tol, cosine
from ...shared.config import PredictorConfig
from ...shared.engine_info import engine_output_names
from ...shared.errors import UserError
from ...shared.tensor_diff import Dump, DumpedTensor, TensorDiff, TensorRow, Unmatched, key_name

_DIALECT = re.compile(r"^[a-z_]+_op\.")

# (base row, test row, how they were paired)
Pairs = List[Tuple[int, int, str]]


def is_fetch(name: str) -> bool:
    """The program's outputs keep their names whatever op produces them last."""
    return name.startswith(("fetch_name_", "save_infer_model/"))


def is_layout_op(op_type: str) -> bool:
    """Ops that only move data between layouts or places: their output equals their input."""
    op = normalized_op(op_type)
    return "layout" in op or op in ("transfer_layout", "memcpy", "memcpy_h2d", "memcpy_d2h", "share_data", "assign")


def normalized_op(op_type: str) -> str:
    op = _DIALECT.sub("", op_type.split(":")[0])
    return op[:-1] if op.endswith("_") and not op.endswith("__") else op


def to_plain_layout(array: np.ndarray, layout: str) -> np.ndarray:
    """Undo oneDNN's physical NHWC under a logical NCHW shape."""
    if "ONEDNN" in str(layout).upper() or "MKLDNN" in str(layout).upper():
        if array.ndim == 4:
            n, c, h, w = array.shape
            return np.ascontiguousarray(array.reshape(n, h, w, c).transpose(0, 3, 1, 2))
    return array


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """bf16 is the top half of a float32: numpy has no bf16, so Paddle hands its tensors over as
    their raw uint16 bits. Widening them is exact; comparing the bits as numbers would be bogus."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def is_bfloat16(tensor: Any) -> bool:
    name = str(getattr(tensor, "dtype", "")).lower()
    return "bfloat16" in name or name.endswith("bf16")


def dump(predictor: Any, feeds: Dict[str, np.ndarray], out_dir: Path) -> Dump:
    """Run once plain, once hooked; every hooked tensor goes straight to ``out_dir``."""
    from ..paddle_api import predictor as paddle_predictor

    out_dir.mkdir(parents=True, exist_ok=True)
    _, plain = paddle_predictor.run_predictor(predictor, feeds)
    index: List[DumpedTensor] = []

    def hook(op_type: str, var_name: str, tensor: Any) -> None:
        try:
            array = np.asarray(tensor.numpy())
        except Exception as exc:  # some hooked vars (e.g. uninitialised) cannot be read
            index.append(DumpedTensor(op_type, var_name, error=str(exc).splitlines()[0][:200]))
            return
        stored = str(array.dtype)
        if is_bfloat16(tensor):
            array, stored = bfloat16_bits_to_float32(array), "bfloat16"
        layout = getattr(tensor, "layout", "")
        layout = layout() if callable(layout) else layout
        array = to_plain_layout(array, str(layout))
        path = out_dir / f"{len(index):05d}.npy"
        np.save(path, array)
        index.append(DumpedTensor(op_type, var_name, tuple(array.shape), stored, path.name, str(layout)))

    paddle_predictor.register_output_hook(predictor, hook)
    _, hooked = paddle_predictor.run_predictor(predictor, feeds)
    _write_index(out_dir, index)
    return Dump(index, hooked, not same_outputs(plain, hooked))


def _write_index(out_dir: Path, index: List[DumpedTensor]) -> None:
    (out_dir / "index.json").write_text(json.dumps([t.to_dict() for t in index]))


def match(base: List[DumpedTensor], test: List[DumpedTensor], value_of=None, anchors=None) -> Tuple[Pairs, List[Unmatched]]:
    """Pairs (base row, test row, how) and the unmatched rows with the reason: by name, then by
    occurrence (or ``anchors(base, test)``'s pairs instead of those two), then (with ``value_of``) by value."""
    base_rows = [(i, r) for i, r in enumerate(base) if r.readable]
    test_rows = [(j, r) for j, r in enumerate(test) if r.readable]
    used_b: set = set()
    used_t: set = set()
    if anchors:
        pairs, unmatched = anchors(base, test), []
        used_b.update(i for i, _, _ in pairs)
        used_t.update(j for _, j, _ in pairs)
    else:
        pairs, unmatched = _match_by_name(base_rows, test, used_b, used_t)
        pairs.extend(_match_by_occurrence(base_rows, test_rows, base, test, used_b, used_t))
    if value_of is not None:
        pairs.extend(_match_by_value(base_rows, test_rows, pairs, used_b, used_t, value_of))
    unmatched += [Unmatched.of(r, "base", "no corresponding tensor in the test run") for i, r in base_rows if i not in used_b]
    unmatched += [Unmatched.of(r, "test", "no corresponding tensor in the base run") for j, r in test_rows if j not in used_t]
    pairs.sort()
    return pairs, unmatched


def _match_by_name(base_rows, test, used_b, used_t):
    """A name seen once on each side, with the same normalized op type and shape."""
    pairs: Pairs = []
    unmatched: List[Unmatched] = []
    by_name_test: Dict[str, List[int]] = {}
    for j, r in enumerate(test):
        if r.readable:
            by_name_test.setdefault(r.name, []).append(j)
    base_name_count: Dict[str, int] = {}
    for _, r in base_rows:
        base_name_count[r.name] = base_name_count.get(r.name, 0) + 1
    for i, r in base_rows:
        name = r.name
        candidates = by_name_test.get(name, [])
        if len(candidates) != 1 or base_name_count[name] != 1:
            continue  # a name seen several times is no identity
        j = candidates[0]
        t = test[j]
        used_b.add(i)
        used_t.add(j)
        if normalized_op(r.op) != normalized_op(t.op) and not is_fetch(name):
            unmatched.append(Unmatched.of(r, "base", f"same name, op differs: {normalized_op(r.op)} vs {normalized_op(t.op)}"))
            unmatched.append(Unmatched.of(t, "test", f"same name, op differs: {normalized_op(t.op)} vs {normalized_op(r.op)}"))
        elif r.shape != t.shape:
            unmatched.append(Unmatched.of(r, "base", f"same name, shape {list(r.shape)} vs {list(t.shape)}"))
        else:
            pairs.append((i, j, "name"))
    return pairs, unmatched


def _match_by_occurrence(base_rows, test_rows, base, test, used_b, used_t):
    """What names could not pair: the k-th tensor of an op type with the k-th, for op types that
    occur equally often on both sides with the same shapes."""
    rest_b: Dict[str, List[int]] = {}
    rest_t: Dict[str, List[int]] = {}
    for i, r in base_rows:
        if i not in used_b:
            rest_b.setdefault(normalized_op(r.op), []).append(i)
    for j, r in test_rows:
        if j not in used_t:
            rest_t.setdefault(normalized_op(r.op), []).append(j)
    pairs = []
    for op, b_ids in rest_b.items():
        t_ids = rest_t.get(op, [])
        if len(b_ids) == len(t_ids) and all(base[i].shape == test[j].shape for i, j in zip(b_ids, t_ids)):
            pairs.extend((i, j, "occurrence") for i, j in zip(b_ids, t_ids))
            used_b.update(b_ids)
            used_t.update(t_ids)
    return pairs


VALUE_MATCH_COSINE = 0.999


def _match_by_value(base_rows, test_rows, pairs, used_b, used_t, value_of):
    """Pair what fusion renamed (``fused_conv2d`` holding conv+bn+relu) with the base tensor
    it equals in value: same shape, between the neighbouring anchored pairs in both execution
    orders, cosine similarity >= 0.999, the latest such base tensor (a fused op's output is the
    last op of its pattern). Labelled ``value`` in the table: a tensor that diverged beyond
    that similarity stays unmatched, and the run's final outputs still show the divergence."""
    anchors = sorted(pairs)
    test_rows_by_id = dict(test_rows)
    found = []
    # Same op type first (a oneDNN pool2d is the base's pool2d), so those pairs anchor the
    # windows of the fused ops matched in the second pass.
    for same_op in (True, False):
        for j, t in test_rows:
            if j in used_t:
                continue
            lo = max((i for i, jj, _ in anchors if jj < j), default=-1)
            after = [(i, jj) for i, jj, _ in anchors if jj > j]
            hi, hi_j = min(after, default=(10**9, None))
            # A layout-conversion copy (onednn_to_paddle_layout before a fetch) and the op before
            # it both equal the same base tensor: then the next anchor's base tensor is a candidate.
            inclusive = hi_j is not None and is_layout_op(test_rows_by_id[hi_j].op)
            candidates = [i for i, r in base_rows
                          if (lo < i < hi or (inclusive and i == hi)) and r.shape == t.shape
                          and (not same_op or normalized_op(r.op) == normalized_op(t.op))]
            if not candidates:
                continue
            got = value_of("test", j)
            best = None
            for i in reversed(candidates):  # latest first: a fused op ends where its pattern ends
                cos = _cosine(value_of("base", i), got)
                if cos is not None and cos >= VALUE_MATCH_COSINE:
                    best = i
                    break
            if best is not None:
                used_b.add(best)
                used_t.add(j)
                found.append((best, j, "value"))
                anchors = sorted(anchors + [(best, j, "value")])
    return found


def _cosine(a: np.ndarray, b: np.ndarray) -> Optional[float]:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.size != b.size or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return None
    return cosine(a, b)


def select(base: List[DumpedTensor], how: Mapping[str, Any]) -> Optional[set]:
    """Indices of the base rows chosen by ``how`` (a diff request's selection; None: all)."""
    kind = how.get("kind", "all")
    names = [r.name for r in base]
    if kind == "all":
        return None
    if kind == "names":
        wanted = set(how["names"])
        chosen = {i for i, n in enumerate(names) if n in wanted}
    elif kind == "regex":
        pattern = re.compile(how["pattern"])
        chosen = {i for i, n in enumerate(names) if pattern.search(n) or pattern.search(base[i].op)}
    elif kind == "segment":
        start, end = how["start"], how["end"]
        if start not in names or end not in names:
            missing = [n for n in (start, end) if n not in names]
            raise UserError(f"--segment: no tensor named {missing} in the base run; see the names in its table.")
        a, b = names.index(start), names.index(end)
        chosen = set(range(min(a, b), max(a, b) + 1))
    else:
        raise UserError(f"--select: unknown selection {kind!r}.")
    if not chosen:
        raise UserError(f"--select: {how} chose no tensor of the base run ({len(names)} tensors); "
                        f"check the names or the pattern.")
    return chosen


NHWC = "nhwc"  # a pairing whose base tensor is the NHWC transpose of the test's NCHW one


def match_converted(base: List[DumpedTensor], test: List[DumpedTensor],
                    program_ops: Mapping[str, int]) -> Tuple[Pairs, List[Unmatched]]:
    """Pairs for a converted program: each test row names the Paddle op it came from and that op's
    occurrence in the program (``op``, ``occurrence``; paddle2onnx's ``p2o.<op>.<k>.<output>``),
    each base row the instruction that wrote it (``pd_op.conv2d:<id>``, the id in program order).
    The converter numbers an op type's occurrences in the saved program (``program_ops``: how
    often each normalized op type occurs there), also those it folds away, so the k-th instruction
    of an op type is occurrence k where the predictor runs that op type as often as the saved
    program holds it (a pass that added or removed such ops breaks the count: unmatched, said so); within
    the instruction the output of the same shape — or the NHWC transpose of it, where Paddle's
    layout pass moved the op to NHWC — is the pair."""
    instructions: Dict[str, List[str]] = {}  # normalized op -> instruction ids in execution order
    rows_of: Dict[str, List[int]] = {}
    for i, r in enumerate(base):
        if not r.readable:
            continue
        op, _, ident = r.op.partition(":")
        key = f"{op}:{ident}"
        if key not in rows_of:
            instructions.setdefault(normalized_op(op), []).append(key)
        rows_of.setdefault(key, []).append(i)
    for calls in instructions.values():
        calls.sort(key=lambda key: int(key.rpartition(":")[2] or 0))

    def find(t: DumpedTensor) -> Tuple[List[int], str, str]:
        op = normalized_op(t.op)
        calls = instructions.get(op, [])
        if len(calls) != program_ops.get(op, 0) or t.occurrence >= len(calls):
            return [], "", (f"{op} runs {len(calls)} times in Paddle's predictor and occurs "
                            f"{program_ops.get(op, 0)} times in the saved program")
        call = calls[t.occurrence]
        same = [i for i in rows_of[call] if base[i].shape == t.shape]
        moved = [i for i in rows_of[call]
                 if len(t.shape) == 4 and base[i].shape == tuple(t.shape[k] for k in (0, 2, 3, 1))]
        found, how = (same, "occurrence") if same else (moved, f"occurrence, {NHWC}")
        return found, how, f"{len(found)} outputs of {call} have its shape"

    return _pair_each(base, test, find, "no corresponding tensor in the converted graph")


def _pair_each(base: List[DumpedTensor], test: List[DumpedTensor], find,
               unpaired: str) -> Tuple[Pairs, List[Unmatched]]:
    """Each test tensor paired with the one base tensor ``find(row) -> (candidates, how, why not)``
    names; the rest listed as unmatched (a test tensor with ``why not``, a base one with ``unpaired``)."""
    pairs: Pairs = []
    unmatched: List[Unmatched] = []
    used_b: set = set()
    for j, t in enumerate(test):
        if not t.readable:
            continue
        found, how, why = find(t)
        if len(found) != 1:
            unmatched.append(Unmatched.of(t, "test", why))
            continue
        used_b.add(found[0])
        pairs.append((found[0], j, how))
    unmatched += [Unmatched.of(r, "base", unpaired) for i, r in enumerate(base) if r.readable and i not in used_b]
    pairs.sort()
    return pairs, unmatched


def match_by_tensor_name(base: List[DumpedTensor], test: List[DumpedTensor]) -> Tuple[Pairs, List[Unmatched]]:
    """Pairs for a runtime that keeps Paddle's variable names on its tensors (OpenVINO's Paddle
    frontend names each op output after the legacy variable it computes): the name seen once on
    each side, with the same shape."""
    by_name: Dict[str, List[int]] = {}
    for i, r in enumerate(base):
        if r.readable:
            by_name.setdefault(r.name, []).append(i)

    def find(t: DumpedTensor) -> Tuple[List[int], str, str]:
        named = by_name.get(t.raw, [])
        found = [i for i in named if base[i].shape == t.shape]
        why = f"{len(named)} tensors of this name in Paddle's run" + ("" if found else ", none of its shape")
        return (found if len(named) == 1 else []), "name", why

    return _pair_each(base, test, find, "no tensor of this name in the runtime's model")


def compare_dumps(base_dir: Path, test_dir: Path, base: List[DumpedTensor], test: List[DumpedTensor],
                  tol: Tolerance, chosen: Optional[set] = None,
                  matcher=None) -> Tuple[List[TensorRow], List[Unmatched], int]:
    """The rows of matched pairs, and what could not be matched; ``matcher(value_of) -> (pairs,
    unmatched)`` replaces the default matching (``match``)."""
    def value_of(side: str, k: int) -> np.ndarray:
        rows_, folder = (base, base_dir) if side == "base" else (test, test_dir)
        return np.load(folder / rows_[k].file, mmap_mode="r")

    pairs, unmatched = matcher(value_of) if matcher else match(base, test, value_of)
    rows: List[TensorRow] = []
    for i, j, how in pairs:
        if chosen is not None and i not in chosen:
            continue
        a = np.load(base_dir / base[i].file, mmap_mode="r")
        b = np.load(test_dir / test[j].file, mmap_mode="r")
        if how.endswith(NHWC):
            a = np.transpose(a, (0, 3, 1, 2))
        stats = compare_tol(np.asarray(a), np.asarray(b), tol)
        finite = np.asarray(a, dtype=np.float64) if a.size else np.zeros(1)
        rows.append(TensorRow(
            index=i, op=base[i].op, test_op=test[j].op, name=base[i].name, matched_by=how, shape=base[i].shape,
            test_shape=test[j].shape, status=stats.status, mismatched=stats.mismatched, total=stats.total,
            max_abs=stats.max_abs, max_rel=stats.max_rel, tol_ratio=stats.tol_ratio,
            min_base=float(np.nanmin(finite)) if finite.size else None,
            max_base=float(np.nanmax(finite)) if finite.size else None, vacuous=stats.vacuous))
        del a, b
    return _first_divergence(_mark_suspects(rows)), unmatched, len(pairs)


def _mark_suspects(rows: List[TensorRow], window: int = 2) -> List[TensorRow]:
    """A real divergence propagates to the tensors computed from it. A mismatch whose next
    matched tensors all agree again is most likely one name holding two different tensors (a
    fusion rewrote the op in place): it is kept in the table, marked, and not taken as the
    first divergence."""
    marked = []
    for k, row in enumerate(rows):
        following = rows[k + 1:k + 1 + window]
        if not row.passed and following and all(r.passed for r in following):
            row = dataclasses.replace(row, suspect="the next tensors agree again: probably one name for two "
                                                   "tensors after a fusion")
        marked.append(row)
    return marked


def _first_divergence(rows: List[TensorRow]) -> List[TensorRow]:
    first = next((k for k, r in enumerate(rows) if not r.passed and not r.suspect), None)
    if first is not None:
        rows[first] = dataclasses.replace(rows[first], first_divergence=True)
    return rows


def _diff(base_dump: Dump, test_dump: Dump, compared: Tuple[List[TensorRow], List[Unmatched], int], tol: Tolerance,
          configs: Tuple[PredictorConfig, PredictorConfig], started: float) -> TensorDiff:
    rows, unmatched, pairs = compared
    final = [compare_tol(a, b, tol) for a, b in zip(base_dump.outputs, test_dump.outputs)]
    return TensorDiff(
        rows=rows, unmatched=unmatched, pairs=pairs, base_tensors=len(base_dump.index),
        test_tensors=len(test_dump.index), atol=tol.atol, rtol=tol.rtol, scaled_atol=tol.scaled_atol,
        hooks_changed_output={"base": base_dump.hooks_changed_output, "test": test_dump.hooks_changed_output},
        final_outputs=[{"status": s.status, "max_abs": s.max_abs, "max_rel": s.max_rel} for s in final],
        base_config=configs[0].to_dict(), test_config=configs[1].to_dict(),
        seconds=round(time.perf_counter() - started, 3))


def run_diff(files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
             test: PredictorConfig, out_dir: Path, tol: Tolerance,
             selection: Optional[Mapping[str, Any]] = None) -> TensorDiff:
    """Dump both runs to ``out_dir`` and compare them.

    Memory optimization is off in both runs: it reuses variables, so a hooked name would hold
    several tensors in turn."""
    from ..paddle_api import config as paddle_config, predictor as paddle_predictor

    started = time.perf_counter()
    dumps = {}
    shapes = {k: list(v.shape) for k, v in feeds.items()}
    for side, cfg in (("base", base), ("test", test)):
        config = paddle_config.make_config(files, cfg.replace(memory=False), shapes)
        predictor = paddle_predictor.create_predictor(config)
        dumps[side] = dump(predictor, feeds, out_dir / side)
        del predictor  # one predictor alive at a time
    base_index, test_index = dumps["base"].index, dumps["test"].index
    chosen = None
    if selection and selection.get("kind") == "engine_info":
        names = set(engine_output_names(Path(selection["path"])))
        chosen = {i for i, r in enumerate(base_index) if r.name in names}
        if not chosen:
            raise UserError(f"--engine-info: none of the engine's {len(names)} layer outputs is a tensor of the base run.")
    elif selection:
        chosen = select(base_index, selection)
    compared = compare_dumps(out_dir / "base", out_dir / "test", base_index, test_index, tol, chosen)
    return _diff(dumps["base"], dumps["test"], compared, tol, (base, test), started)


@dataclasses.dataclass(frozen=True)
class OtherRuntime:
    """Another runtime's side of a per-tensor diff: ``dump(folder)`` writes its tensors,
    ``pair(base_index, test_index)`` matches them with Paddle's."""

    dump: Callable[[Path], Dump]
    pair: Callable[[List[DumpedTensor], List[DumpedTensor]], Tuple[Pairs, List[Unmatched]]]


def diff_against_paddle(files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                        test: PredictorConfig, tol: Tolerance, out: Path, other_runtime: OtherRuntime) -> TensorDiff:
    """Paddle's predictor at ``base`` with every op output hooked against another runtime's run at
    ``test``. Written to ``out/result.json`` as ``run_diff``'s result is."""
    from ..paddle_api import config as paddle_config, predictor as paddle_predictor

    started = time.perf_counter()
    folder = out / "dump"
    shapes = {k: list(v.shape) for k, v in feeds.items()}
    predictor = paddle_predictor.create_predictor(paddle_config.make_config(files, base.replace(memory=False), shapes))
    paddle_side = dump(predictor, feeds, folder / "base")
    del predictor
    other = other_runtime.dump(folder / "test")
    compared = compare_dumps(folder / "base", folder / "test", paddle_side.index, other.index, tol,
                             matcher=lambda value_of: other_runtime.pair(paddle_side.index, other.index))
    result = _diff(paddle_side, other, compared, tol, (base, test), started)
    write_result(out / "result.json", result)
    return result


def save_tensors(folder: Path, tensors: List[Tuple[DumpedTensor, np.ndarray]]) -> List[DumpedTensor]:
    """A runtime's fetched tensors on disk, one ``.npy`` each, with the index ``compare_dumps`` reads
    (each row: the caller's tensor with its shape, dtype and file)."""
    folder.mkdir(parents=True, exist_ok=True)
    index: List[DumpedTensor] = []
    for named, array in tensors:
        array = np.asarray(array)
        path = folder / f"{len(index):05d}.npy"
        np.save(path, array)
        index.append(dataclasses.replace(named, shape=tuple(array.shape), dtype=str(array.dtype), file=path.name))
    _write_index(folder, index)
    return index


def same_outputs(a: List[np.ndarray], b: List[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


def write_result(path: Path, result: TensorDiff) -> Path:
    """The diff as JSON for the host side, which renders its tables and plot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.to_dict(), default=lambda v: v.item() if hasattr(v, "item") else str(v)))
    return path
