"""Host side: the nox sessions a matrix makes, as data, and the environment each one needs.

The noxfile registers exactly these sessions (names, Pythons, tags, in this order) and the job
pool (``python -m harness pool --tag cpu``, ``nox -s matrix -- --tag cpu``) selects from the same
list with nox's own rule: a session is selected when it carries any of the tags asked for. One
table, so ``nox -t cpu`` and the pool can never disagree on what "cpu" means.

An environment is a Python and a list of requirements (``Environment``); sessions whose lists
are equal (``cpu_fp32``, ``cpu_onednn_fp32``, ``cpu_onednn_bf16`` at one Paddle version) need the
same environment. The noxfile installs a session's list into the session's own venv; the pool
makes one venv per distinct list and runs every cell that needs it there.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from typing import Iterable, List, Optional, Sequence, Tuple

from . import ZOO, Matrix
from ..artefacts.shards import CELLS_TAG

# The host side: tabulate prints the tables; openpyxl and matplotlib write the per-tensor sheets
# and plots; the docker SDK drives containers.
HOST_SIDE = ("numpy", "tabulate", "openpyxl", "matplotlib", "docker", "jinja2", "packaging", "pyyaml", "tomli-w")
# The names they are imported by (a host command run from a Python without one says which, in one line).
HOST_SIDE_MODULES = frozenset({"numpy", "tabulate", "openpyxl", "matplotlib", "docker", "jinja2", "packaging", "yaml",
                               "tomli_w"})


def missing_host_package(exc: ModuleNotFoundError, command: str) -> str:
    """One line for a host command run from a Python that lacks one of the host side's packages (a
    cell environment's); any other missing module is the harness's own bug, raised as it is."""
    import sys

    if (exc.name or "").split(".")[0] not in HOST_SIDE_MODULES:
        raise exc
    return (f"python -m harness {command} needs the host side's package {exc.name!r}, which {sys.executable} does "
            f"not have: run it through nox (nox -s {command}), or install {' '.join(HOST_SIDE)} into this Python.")
# A uv-made venv cannot import paddle without setuptools.
# pysource-minimize: the minimizer of standalone reproducers (``cell/handover/minimize.py``), run in release environments.
CELL_SIDE_EXTRAS = ("setuptools", "tabulate", "openpyxl", "matplotlib", "pysource-minimize")


class SessionKind(str, enum.Enum):
    CELLS = "cells"  # a matrix session at one Paddle version, the run's models
    ZOO = "zoo"  # the same on the zoo's real architectures
    PORTABILITY = "portability"  # other versions' cpu_fp32 exports run by this version
    TIPC = "tipc"  # a repository's TIPC config (needs --repo/--config: never pooled)


@dataclasses.dataclass(frozen=True)
class NoxSession:
    name: str
    python: str
    tags: Tuple[str, ...]
    kind: SessionKind
    session: str  # the matrix session it runs (cpu_fp32 for portability and TIPC)
    version: str
    description: str

    @property
    def zoo(self) -> bool:
        return self.kind is SessionKind.ZOO


@dataclasses.dataclass(frozen=True)
class Environment:
    """What a cell-side process needs installed, in the order nox installs it: a Python, then
    Paddle with its runtime and the modes' packages, then the model families' packages without
    their dependencies (their pins fight Paddle's), then the families' other packages."""

    python: str
    packages: Tuple[str, ...]
    no_deps: Tuple[str, ...] = ()
    families: Tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """As JSON keeps it (lists), so that a stamp read back compares equal."""
        return {field.name: list(value) if isinstance(value, tuple) else value
                for field in dataclasses.fields(self) for value in [getattr(self, field.name)]}

    @property
    def key(self) -> str:
        return hashlib.sha1(json.dumps(self.to_dict()).encode()).hexdigest()[:10]


def nox_sessions(matrix: Matrix) -> List[NoxSession]:
    """Every session the noxfile registers, in registration order (the order ``nox -t`` runs them)."""
    out: List[NoxSession] = []
    default_paddle = matrix.run["default_paddle"]
    for session in matrix.sessions.values():
        for version in session.versions:
            default = version == session.versions[0]
            tags = [session.device, session.backend, session.precision, f"paddle-{version}", *session.tags, CELLS_TAG]
            out.append(NoxSession(session.name if default else f"{session.name}@{version}",
                                  matrix.version(version)["python"], tuple(tags + (["default"] if default else [])),
                                  SessionKind.CELLS, session.name, version,
                                  f"{session.description or session.name} · Paddle {version}"))
    # The zoo: every CPU session at the versions [zoo] names, tagged zoo only (not cpu/paddle-X):
    # `nox -t cpu` stays the fast built-in matrix. Its cells run in the train modes [zoo] names
    # (``zoo_modes``): the int8 session's in the quantization-aware ones, the others a skip at setup.
    for session in matrix.sessions.values():
        if session.device != "cpu" or not matrix.zoo["models"]:
            continue
        for version in matrix.zoo["versions"]:
            if version not in session.versions:
                continue
            name = f"{session.name}-zoo" if version == default_paddle else f"{session.name}-zoo@{version}"
            out.append(NoxSession(name, matrix.version(version)["python"], ("zoo", f"zoo-{version}", CELLS_TAG),
                                  SessionKind.ZOO, session.name, version,
                                  f"{session.description or session.name} · Paddle {version} · the zoo's real architectures"))
    # Portability and TIPC run cpu_fp32's exports, at each of its versions; portability after the
    # cell sessions, so that `nox -t cpu` runs it once every version has exported.
    versions = matrix.session("cpu_fp32").versions if "cpu_fp32" in matrix.sessions else []
    for kind, tags, description in (
            (SessionKind.PORTABILITY, ("cpu", "portability"), "Other versions' cpu_fp32 exports, run by Paddle {v}"),
            (SessionKind.TIPC, ("tipc",), "A repository's TIPC config at Paddle {v} (``-- --repo PATH --config CONFIG "
                                          "--mode MODE [--dry-run]``); every jit.save verified")):
        for version in versions:
            name = kind.value if version == default_paddle else f"{kind.value}@{version}"
            out.append(NoxSession(name, matrix.version(version)["python"], (*tags, f"paddle-{version}"), kind,
                                  "cpu_fp32", version, description.format(v=version)))
    return out


def select(sessions: Sequence[NoxSession], tags: Iterable[str] = (), names: Iterable[str] = ()) -> List[NoxSession]:
    """What ``nox -t TAG... -s NAME...`` selects: a session with any of the tags, or named, in order."""
    tags, names = set(tags), set(names)
    return [s for s in sessions if tags & set(s.tags) or s.name in names]


def zoo_modes(matrix: Matrix, nox_session: NoxSession, modes: Optional[List[str]]) -> Optional[List[str]]:
    """The train modes a session's cells run in: those asked; else a zoo session's [zoo] modes that
    deploy in it (``modes.X.zoo_sessions``; ``zoo_modes_left_out`` says the others); else the matrix's
    run.modes (None)."""
    if modes or not nox_session.zoo:
        return modes or None
    return [m for m in matrix.zoo["modes"] if nox_session.session in (matrix.zoo_sessions_of(m) or [nox_session.session])]


def zoo_modes_left_out(matrix: Matrix, nox_session: NoxSession, modes: Optional[List[str]]) -> List[str]:
    """The [zoo] modes a zoo session leaves out when no mode is asked, each with why."""
    if modes or not nox_session.zoo:
        return []
    return [f"{nox_session.name} × {m}: {m}'s programs deploy in {', '.join(matrix.zoo_sessions_of(m) or [])} "
            f"(modes.{m}.zoo_sessions)" for m in matrix.zoo["modes"]
            if m not in (zoo_modes(matrix, nox_session, modes) or [])]


def cell_environment(matrix: Matrix, nox_session: NoxSession, modes: Optional[List[str]] = None,
                     models: Optional[List[str]] = None, own_model: Optional[str] = None) -> Environment:
    """The environment a cell session (or a portability session) installs at its Paddle version:
    Paddle and the session's runtime, the modes' packages, the models' families' packages; with
    ``own_model``, that model's family alone (a family ``apart``: its cells' own environment)."""
    session = matrix.session(nox_session.session)
    version = nox_session.version
    packages = [*matrix.packages(session, version)]
    families = {"packages": [], "no_deps": []}
    if nox_session.kind in (SessionKind.CELLS, SessionKind.ZOO):
        packages += matrix.mode_packages(modes)
        chosen = [own_model] if own_model else ([ZOO] if nox_session.zoo else models)
        families = matrix.family_packages(chosen, version)
    return Environment(nox_session.python, tuple(dict.fromkeys([*packages, *CELL_SIDE_EXTRAS])),
                       tuple(families["no_deps"]), tuple(families["packages"]))
