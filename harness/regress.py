"""Host side: cross-version reports rebuilt from result records.

* **regression**: for every cell (session, mode, model) and stage, the transition from a base
  Paddle version to a head version, and the drift of the error statistics;
* **agreement**: for the same weights (one version-neutral checkpoint per model, see the cell
  side) and the same seeded inputs, do the versions compute the same outputs? Dygraph against
  dygraph, baseline predictor against baseline predictor, each version against the head;
* **portability**: a model exported by version X, loaded and run by version Y (records written by
  ``python -m harness port``).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from tabulate import tabulate

from .compare import compare_tol
from .errors import UserError
from .records import WORKAROUND_SEP, atomic_write_text, load_records

OK = {"pass"}
BAD = {"fail", "error", "crash", "timeout"}
DRIFT_FACTOR = 10.0
TRANSITIONS = ("regressed", "still failing", "fixed", "new", "gone", "still pass")


def version_key(version: str) -> Tuple:
    parts = []
    for piece in version.replace("-", ".").split("."):
        parts.append((0, int(piece), "") if piece.isdigit() else (1, 0, piece))
    return tuple(parts)


def cell_key(record: Dict[str, Any]) -> Tuple[str, str, str]:
    cell = record["cell"]
    return cell["session"]["name"], cell["mode"], cell["model"]["name"]


def index(records: Sequence[Dict[str, Any]]) -> Dict[Tuple[str, str, str], Dict[str, Dict[str, Any]]]:
    """(session, mode, model) -> {paddle version: record}."""
    by_key: Dict[Tuple[str, str, str], Dict[str, Dict[str, Any]]] = collections.defaultdict(dict)
    for record in records:
        by_key[cell_key(record)][record["cell"]["paddle"]] = record
    return by_key


def _stage_map(record: Optional[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    if record is None:
        return {}
    if record["verdict"].get("first_failing_stage") == "setup":
        return {"setup": dict(record["setup"], name="setup")}
    return {s["name"]: s for s in record["stages"]}


def transition(base: Optional[Dict[str, Any]], head: Optional[Dict[str, Any]]) -> str:
    """A skipped stage counts as not run: it can only appear (`new`) or disappear (`gone`)."""
    b = base["status"] if base and base["status"] != "skip" else None
    h = head["status"] if head and head["status"] != "skip" else None
    if b is None and h is None:
        return "skipped"
    if b is None:
        return "new"
    if h is None:
        return "gone"
    if b in OK and h in OK:
        return "still pass"
    if b in BAD and h in OK:
        return "fixed"
    if b in OK and h in BAD:
        return "regressed"
    return "still failing"


def drift(base: Optional[Dict[str, Any]], head: Optional[Dict[str, Any]]) -> Tuple[str, bool]:
    """'base -> head' of the worst output's max abs, flagged when it grew 10x or more."""
    b = ((base or {}).get("worst") or {}).get("max_abs")
    h = ((head or {}).get("worst") or {}).get("max_abs")
    if b is None or h is None:
        return "", False
    text = f"{b:.3g} -> {h:.3g}"
    if b == 0.0:
        return (text + " (was exact)", True) if h > 0.0 else (text, False)
    grew = h / b >= DRIFT_FACTOR
    return (text + f" (x{h / b:.0f})" if grew else text), grew


def regression_rows(records: Sequence[Dict[str, Any]], base: str, head: str) -> List[Dict[str, Any]]:
    rows = []
    for key, by_version in sorted(index(records).items()):
        if base not in by_version and head not in by_version:
            continue
        b_stages, h_stages = _stage_map(by_version.get(base)), _stage_map(by_version.get(head))
        names = list(dict.fromkeys([*b_stages, *h_stages]))
        for name in names:
            b, h = b_stages.get(name), h_stages.get(name)
            # A workaround variant that runs on one side only is the same computation as the
            # other side's original stage with a knob that should not change the numbers: compare
            # with that, so a numeric change hidden behind an error still shows as a transition.
            original = name.partition(WORKAROUND_SEP)[0]
            paired = ""
            if WORKAROUND_SEP in name and b is None and original in b_stages:
                b, paired = b_stages[original], f"{base} {original} vs {head} {name}"
            elif WORKAROUND_SEP in name and h is None and original in h_stages:
                h, paired = h_stages[original], f"{base} {name} vs {head} {original}"
            text, flagged = drift(b, h)
            rows.append({
                "cell": "/".join((key[0], "{v}", key[1], key[2])),
                "stage": name,
                "base": b["status"] if b else "-",
                "head": h["status"] if h else "-",
                "transition": transition(b, h),
                "drift": text,
                "drift_flag": flagged,
                "message": "; ".join(filter(None, [
                    f"compared: {paired}" if paired else "",
                    (h or {}).get("message", "") if h and h["status"] in BAD else ""])),
            })
    return rows


def versions_in(records: Sequence[Dict[str, Any]]) -> List[str]:
    return sorted({r["cell"]["paddle"] for r in records}, key=version_key)


def pick_pairs(records: Sequence[Dict[str, Any]], base: Optional[str], head: Optional[str]) -> List[Tuple[str, str]]:
    versions = versions_in(records)
    if not versions:
        raise UserError("no result records to compare; run sessions at two Paddle versions first.")
    for flag, value in (("--base", base), ("--head", head)):
        if value is not None and value not in versions:
            raise UserError(f"{flag} {value}: no records for Paddle {value} in this run (have: "
                            f"{', '.join(versions)}); run its sessions first or pick another version.")
    head = head or versions[-1]
    if base is not None:
        if base == head:
            raise UserError(f"--base and --head are both {head}; pick two different versions.")
        pairs = [(base, head)]
    else:
        pairs = [(v, head) for v in versions if v != head]
        if not pairs:
            raise UserError(f"only Paddle {head} has records; run another version's sessions to compare.")
    index_ = index(records)
    for b, h in pairs:
        if not any(b in vs and h in vs for vs in index_.values()):
            raise UserError(f"Paddle {b} and {h} have no cell in common (same session, mode and model); "
                            f"run the same sessions at both versions.")
    return pairs


# -- agreement across versions (same weights, same inputs) ---------------------

def _work_dir(record: Dict[str, Any]) -> Path:
    return Path(record["_path"]).with_suffix("")


def _load_npz(path: Path) -> Optional[List[np.ndarray]]:
    if not path.exists():
        return None
    with np.load(path) as data:
        return [data[f"o{i}"] for i in range(len(data.files))]


def agreement_rows(records: Sequence[Dict[str, Any]], reference: str) -> List[Dict[str, Any]]:
    """Each version's outputs against the reference version's, for cells with the same weights."""
    rows = []
    for key, by_version in sorted(index(records).items()):
        ref = by_version.get(reference)
        if ref is None or ref["setup"].get("status") != "pass":
            continue
        ref_sha = (ref["setup"].get("weights") or {}).get("sha256")
        tol = ref["cell"]["tolerances"]["fp32"]
        for version, record in sorted(by_version.items(), key=lambda kv: version_key(kv[0])):
            if version == reference or record["setup"].get("status") != "pass":
                continue
            sha = (record["setup"].get("weights") or {}).get("sha256")
            for what, name in (("dygraph", "dygraph.npz"), ("inference", "baseline.npz")):
                row = {"cell": "/".join((key[0], "{v}", key[1], key[2])), "version": version,
                       "reference": reference, "what": what}
                if sha is None or sha != ref_sha:
                    row.update(status="skip", note="different weights (no shared checkpoint)")
                    rows.append(row)
                    continue
                a, b = _load_npz(_work_dir(ref) / name), _load_npz(_work_dir(record) / name)
                if a is None or b is None:
                    row.update(status="skip", note=f"no {what} outputs in one of the two cells")
                elif len(a) != len(b):
                    row.update(status="fail", note=f"{len(a)} outputs vs {len(b)}")
                else:
                    stats = [compare_tol(x, y, tol) for x, y in zip(a, b)]
                    bad = [s for s in stats if s["status"] != "pass"]
                    worst = max(stats, key=lambda s: (s["status"] != "pass", s.get("max_abs") or 0.0))
                    row.update(status="fail" if bad else "pass", max_abs=worst.get("max_abs"),
                               max_rel=worst.get("max_rel"), note=worst.get("note", ""))
                rows.append(row)
    return rows


# -- rendering ------------------------------------------------------------------

def _f(value: Any) -> str:
    return "-" if value is None else (f"{value:.3g}" if isinstance(value, float) else str(value))


def render(records: Sequence[Dict[str, Any]], pairs: List[Tuple[str, str]], portability: List[Dict[str, Any]],
           fmt: str) -> Tuple[str, int]:
    out: List[str] = []
    regressed = 0
    heading = (lambda t: f"## {t}\n") if fmt == "github" else (lambda t: f"\n== {t} ==")
    for base, head in pairs:
        rows = regression_rows(records, base, head)
        counts = collections.Counter(r["transition"] for r in rows)
        regressed += counts.get("regressed", 0)
        out.append(heading(f"Paddle {base} -> {head}"))
        out.append(", ".join(f"{counts.get(t, 0)} {t}" for t in TRANSITIONS) +
                   f"; {sum(r['drift_flag'] for r in rows)} with error growth >= {DRIFT_FACTOR:g}x")
        order = {t: i for i, t in enumerate(TRANSITIONS)}
        rows.sort(key=lambda r: (order.get(r["transition"], 99), r["cell"], r["stage"]))
        table = [[r["cell"].format(v=f"{base}->{head}"), r["stage"], r["base"], r["head"], r["transition"],
                  ("! " if r["drift_flag"] else "") + r["drift"], r["message"][:100]] for r in rows]
        out.append(tabulate(table, headers=["cell", "stage", base, head, "transition", "max abs drift", "head message"],
                            tablefmt=fmt))
    head = pairs[0][1]
    agreement = agreement_rows(records, head)
    if agreement:
        out.append(heading(f"Same weights, same inputs: each version against Paddle {head}"))
        out.append(tabulate([[r["cell"].format(v=r["version"]), r["what"], r["status"], _f(r.get("max_abs")),
                              _f(r.get("max_rel")), r.get("note", "")] for r in agreement],
                            headers=["cell", "outputs", "status", "max abs", "max rel", "note"], tablefmt=fmt))
    if portability:
        out.append(heading("Artifact portability: exported by X, run by Y"))
        out.append(portability_table(portability, fmt))
    return "\n".join(out), regressed


def portability_table(port: List[Dict[str, Any]], fmt: str) -> str:
    exporters = sorted({p["exported_by"] for p in port}, key=version_key)
    loaders = sorted({p["loaded_by"] for p in port}, key=version_key)
    cells: Dict[Tuple[str, str], List[str]] = collections.defaultdict(list)
    for p in port:
        cells[(p["exported_by"], p["loaded_by"])].append(f"{p['model']}: {p['status']}")
    table = [[f"exported by {x}"] + ["; ".join(sorted(cells.get((x, y), ["-"]))) for y in loaders] for x in exporters]
    lines = [tabulate(table, headers=["", *[f"run by {y}" for y in loaders]], tablefmt=fmt)]
    notes = [p for p in port if p["status"] in BAD]
    if notes:
        lines.append("")
        lines.extend(f"- {p['exported_by']} -> {p['loaded_by']} {p['model']}: {p['status']}: {p.get('message', '')[:200]}"
                     for p in notes)
    return "\n".join(lines)


def load_portability(results: Path) -> List[Dict[str, Any]]:
    import json

    out = []
    for path in sorted((results / "portability").rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("kind") == "portability":
            out.append(data)
    return out


def run(results: Path, base: Optional[str], head: Optional[str], out: Optional[Path]) -> int:
    if not results.is_dir():
        raise UserError(f"--results/--run: {results} does not exist; run sessions first.")
    records = load_records(results)
    pairs = pick_pairs(records, base, head)
    portability = load_portability(results)
    text, regressed = render(records, pairs, portability, "simple")
    print(text)
    markdown, _ = render(records, pairs, portability, "github")
    path = out or results / "regression.md"
    atomic_write_text(path, f"# Cross-version report\n\n{markdown}\n")
    print(f"\nreport: {path}")
    if regressed:
        print(f"{regressed} stage(s) regressed", flush=True)
    return 1 if regressed else 0
