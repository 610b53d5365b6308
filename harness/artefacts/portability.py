"""Host side: artifact portability, a model exported by Paddle X run by Paddle Y.

``python -m harness port`` runs in Paddle Y's environment (``nox -s portability@Y``). For every
cell of the run exported by another version, it loads the export in a fresh process (some
pairs crash: a 3.0 ``.json`` loaded by 2.6.2 segfaults), runs it on the cell's inputs and
compares with the exporting version's own baseline outputs at fp32 tolerance. One record per
(exporter, loader, model) under ``results/<run>/portability/``.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import time
from importlib import metadata
from pathlib import Path
from typing import Any, List, Optional


from ..launch import LocalLauncher, run_child
from ..shared.compare import Tolerance, compare_tol, worst
from ..shared.errors import UserError
from ..shared.records import atomic_write_json, load_records
from ..shared.spec import OUTPUTS
from ..shared.record_model import CellRecord
from ..shared.run_records import PortabilityLoad
from ..shared.vocab import Status
from ..shared.runfolder import RunFolder

LOAD_TIMEOUT = 300  # seconds: a load that hangs this long is recorded as a timeout


def this_paddle() -> str:
    """The Paddle version of this environment, read without importing paddle."""
    for dist in ("paddlepaddle", "paddlepaddle-gpu"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    raise UserError("no Paddle installed in this environment; run `python -m harness port` inside a Paddle env "
                    "(nox -s portability@<version>).")


def port_one(record: CellRecord, loader: str, out_dir: Path, launcher: Any) -> PortabilityLoad:
    work = record.work_dir
    export = record.setup.get("export")
    program = work / "export" / Path(export["program"]).name
    params = work / "export" / Path(export["params"]).name if export.get("params") else None
    out = out_dir / f"{record.model}.outputs.npz"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = ["load", "--program", launcher.path(program), "--inputs", launcher.path(work / "inputs.npz"),
            "--out", launcher.path(out)]
    if params:
        args += ["--params", launcher.path(params)]
    started = time.time()
    log = out_dir / f"{record.model}.log"
    log.unlink(missing_ok=True)
    outcome = run_child(launcher, args, log, timeout=LOAD_TIMEOUT)
    loaded = functools.partial(PortabilityLoad, record.version, loader, record.session, record.mode, record.model,
                               format=export.get("format"), program=str(program),
                               seconds=round(time.time() - started, 3), cpu_seconds=outcome.cpu_seconds)
    if outcome.timed_out:
        return loaded(Status.TIMEOUT, f"loading ran over {LOAD_TIMEOUT} s")
    if not outcome.ok:
        described = outcome.describe()
        if described["status"] is Status.CRASH:
            return loaded(Status.CRASH, f"loader died with {described['signal']}", signal=described["signal"],
                          ended={k: v for k, v in described.items() if k not in ("status", "message", "signal")})
        return loaded(described["status"], described["message"])
    reference = work / "baseline.npz"
    if not reference.exists():
        return loaded(Status.SKIP, "the exporting version has no baseline outputs to compare with")
    ref, got = OUTPUTS.load(reference), OUTPUTS.load(out)
    if len(ref) != len(got):
        return loaded(Status.FAIL, f"{len(got)} outputs, the exporter's baseline has {len(ref)}")
    tol = record.cell.tolerances["fp32"]
    stats = [compare_tol(r, g, Tolerance.of(tol)) for r, g in zip(ref, got)]
    w = worst(stats)
    return loaded(Status.FAIL if any(s.blocks for s in stats) else Status.PASS, w.note if w else "",
                  max_abs=w.max_abs if w else None, max_rel=w.max_rel if w else None)


def run(results: Path, session: str, models: Optional[List[str]], python: Optional[str] = None,
        force: bool = False, jobs: int = 1) -> List[PortabilityLoad]:
    if not results.is_dir():
        raise UserError(f"--results/--run: {results} does not exist; run the sessions of other versions first.")
    loader = this_paddle()
    records = [r for r in load_records(results) if r.session == session and portable(r, loader)
               and (not models or r.model in models)]
    if not records:
        print(f"[harness] nothing to port: no {session} records exported by a Paddle other than {loader} "
              f"under {results} (run `nox -s {session}@<version>` for other versions first)")
        return []
    launcher = LocalLauncher(python)  # one fork server for every load (each load its own process)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda record: port_record(record, results, loader, launcher, force), records))


def _say(line: str) -> None:
    print(line, flush=True)


def portable(record: CellRecord, loader: str) -> bool:
    """Whether another Paddle's ``loader`` has this record's export to load: its setup exported."""
    return record.version != loader and record.setup.passed


def load_path(results: Path, cell_id: str, loader: str) -> Path:
    """Where the load of a cell's export by ``loader`` is kept."""
    session, exporter, mode, model = cell_id.split("/")
    return RunFolder(Path(results)).load(exporter, loader, session, mode, model)


def port_record(record: CellRecord, results: Path, loader: str, launcher: Any, force: bool = False,
                say: Any = _say) -> PortabilityLoad:
    """One load of a record's export by ``loader``, kept under ``portability/`` (an earlier one is
    reused unless ``force``)."""
    path = load_path(results, record.id, loader)
    out_dir = path.parent
    if path.exists() and not force:
        result = PortabilityLoad.from_dict(json.loads(path.read_text(encoding="utf-8")))
        say(f"[harness] exported by {record.version}, run by {loader}: {record.model}: "
            f"{result.status} (recorded earlier; --force reruns)")
        return result
    result = port_one(record, loader, out_dir, launcher)
    atomic_write_json(path, result.to_dict())
    say(f"[harness] exported by {record.version}, run by {loader}: {record.model}: "
        f"{result.status} {result.message}".rstrip())
    return result
