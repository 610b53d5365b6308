"""Host side: load and validate a matrix file, expand it to cells.

A matrix file (TOML, see ``matrix/default.toml``) declares Paddle versions, sessions
(device, backend, precision), train modes, models and tolerances. Everything a cell
needs is resolved here into a plain JSON-able *cell spec*, so the cell side never
reads TOML and never has to guess a default.

Every problem is reported as a :class:`UserError` naming the file and the key.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Dict, List, Optional

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the host side runs on any Python
    import tomli as tomllib  # type: ignore[no-redef]

from ..shared.json_types import TomlTable
from ..shared import vocab
from ..shared.backends import DeployOptions, plan_stages
from ..shared.vocab import QUANTIZED_MODES
from ..shared.errors import UserError
from ..shared.spec import CellSpec, SessionSpec, at_least
from ..shared.vocab import Device, Precision, ProgramFormat
from .schema import MODES, PRECISIONS, RUNNERS, ZOO, validate  # noqa: F401  (the schema's words, read from here too)

session_name = vocab.session_name  # one naming rule, in the vocabulary


@dataclasses.dataclass(frozen=True)
class Session:
    name: str
    device: Device
    backend: str
    precision: Precision
    versions: List[str]
    description: str
    tags: List[str]
    # Where the cells run unless the command line says otherwise: CPU sessions in a venv (the
    # README's first command needs no Docker), GPU sessions in their image (the only way Paddle
    # 3.x GPU builds reach most users).
    runner: str = "venv"

    @property
    def stages(self) -> List[str]:
        """The stage names of the session's ladder (the same for either program format)."""
        return [p.name for p in plan_stages(self.device, self.backend, self.precision, ProgramFormat.PIR,
                                            DeployOptions())]


@dataclasses.dataclass
class Matrix:
    path: Path
    data: TomlTable

    # -- accessors -------------------------------------------------------
    @property
    def run(self) -> TomlTable:
        return self.data["run"]

    @property
    def versions(self) -> List[str]:
        return list(self.data["paddle"])

    def version(self, version: str) -> TomlTable:
        if version not in self.data["paddle"]:
            known = ", ".join(self.versions)
            raise UserError(
                f"{self.path}: Paddle version {version!r} is not in [paddle]; known: {known}. "
                f"Add a [paddle.\"{version}\"] table or pick a known version."
            )
        return self.data["paddle"][version]

    @property
    def sessions(self) -> Dict[str, Session]:
        return {name: self._session(name) for name in self.data["sessions"]}

    def session(self, name: str) -> Session:
        if name not in self.data["sessions"]:
            known = ", ".join(self.data["sessions"])
            raise UserError(f"{self.path}: unknown session {name!r}; known: {known}.")
        return self._session(name)

    def _session(self, name: str) -> Session:
        raw = self.data["sessions"][name]
        versions = list(raw.get("paddle") or self._default_versions())
        return Session(
            name=name,
            device=Device(raw["device"]),
            backend=raw["backend"],
            precision=Precision(raw["precision"]),
            versions=versions,
            description=raw.get("description", ""),
            tags=list(raw.get("tags", [])),
            runner=raw.get("runner") or ("docker" if raw["device"] == "gpu" else "venv"),
        )

    def _default_versions(self) -> List[str]:
        default = self.run["default_paddle"]
        return [default] + [v for v in self.versions if v != default]

    def packages(self, session: Session, version: str) -> List[str]:
        entry = self.version(version)
        key = "gpu_packages" if session.device == "gpu" else "packages"
        if key not in entry:
            raise UserError(
                f"{self.path}: [paddle.\"{version}\"] has no {key}; session {session.name} "
                f"cannot install Paddle {version}. Add {key} or remove {version} from the session."
            )
        return list(entry[key]) + session_runtime_packages(self.data["sessions"][session.name], version)

    def runtime_packages(self, version: str, device: str) -> List[str]:
        """Every runtime package the ``device`` sessions pin for Paddle ``version`` (ONNX Runtime,
        OpenVINO): what that version's image carries so its sessions run in a container too."""
        found: List[str] = []
        for raw in self.data["sessions"].values():
            if raw.get("device") == device:
                found += [p for p in session_runtime_packages(raw, version) if p not in found]
        return found

    @property
    def fingerprint(self) -> str:
        """What the matrix says, after defaults, as a short digest: records carry it, and shards
        made from different matrices are not merged."""
        import hashlib
        import json

        return hashlib.sha256(json.dumps(self.data, sort_keys=True, default=str).encode()).hexdigest()[:16]

    @property
    def docker(self) -> TomlTable:
        return self.data["docker"]

    def image(self, version: str, device: str) -> str:
        self.version(version)
        return f"{self.docker['image_prefix']}:{version}-{device}"

    @property
    def zoo(self) -> Dict[str, List[str]]:
        """``[zoo]``: the real architectures (``models``) and the Paddle versions their sessions run."""
        return self.data.get("zoo", {"models": [], "versions": []})

    def select_models(self, models: Optional[List[str]]) -> List[str]:
        """``--model`` names, with ``zoo`` standing for the zoo's models."""
        chosen: List[str] = []
        for name in models or self.run["models"]:
            for model in (self.zoo["models"] if name == ZOO else [name]):
                if model not in chosen:
                    chosen.append(model)
        return chosen

    def family_packages(self, models: List[str], version: str) -> Dict[str, List[str]]:
        """What the models' families install at this Paddle version: ``packages`` (with their
        dependencies) and ``no_deps`` (without: a package whose pins fight Paddle's). Families
        that need another Paddle install nothing there (their cells say why they skip); a family
        ``apart`` installs only where it is the one family (``pool`` gives its cells their own
        environment; a nox zoo session skips them, saying so)."""
        out: Dict[str, List[str]] = {"packages": [], "no_deps": []}
        families = list(dict.fromkeys(f for f in map(self.family_of, self.select_models(models)) if f))
        for family in families:
            entry = self.data["families"][family]
            if not at_least(version, entry.get("requires_paddle")):
                continue
            if len(families) > 1 and self.apart(family):
                continue  # its pins fight the others': its models' cells get an environment of their own
            for key in out:
                out[key] += [p for p in entry.get(key, []) if p not in out[key]]
        return out

    def family_of(self, model: str) -> Optional[str]:
        return self.data["models"].get(model, {}).get("family")

    def apart(self, family: Optional[str]) -> bool:
        """Whether the family installs in an environment of its own (``families.X.apart``)."""
        return bool(family) and bool(self.data["families"][family].get("apart", False))

    def mode_packages(self, modes: Optional[List[str]] = None) -> List[str]:
        """Extra pip packages of the modes that will run (``modes.<name>.packages``)."""
        chosen = modes or self.run["modes"]
        return [p for mode in chosen for p in self.data["modes"].get(mode, {}).get("packages", [])]

    def zoo_sessions_of(self, mode: str) -> Optional[List[str]]:
        """The sessions a zoo run deploys this mode's programs in (``modes.<name>.zoo_sessions``);
        None: every session."""
        chosen = self.data["modes"].get(mode, {}).get("zoo_sessions")
        return list(chosen) if chosen is not None else None

    def tolerance(self, precision: str) -> Dict[str, float]:
        return dict(self.data["tolerances"][precision])

    # -- expansion -------------------------------------------------------
    def expand(
        self,
        session_name_: str,
        version: str,
        modes: Optional[List[str]] = None,
        models: Optional[List[str]] = None,
    ) -> List[CellSpec]:
        """Every cell of one session at one Paddle version."""
        session = self.session(session_name_)
        self.version(version)
        if version not in session.versions:
            raise UserError(
                f"{self.path}: session {session.name} does not run Paddle {version} "
                f"(sessions.{session.name}.paddle lists {', '.join(session.versions)})."
            )
        modes = list(modes or self.run["modes"])
        models = self.select_models(models)
        for mode in modes:
            if mode not in self.data["modes"]:
                raise UserError(
                    f"{self.path}: unknown train mode {mode!r}; known: {', '.join(self.data['modes'])}."
                )
        for model in models:
            if model not in self.data["models"]:
                raise UserError(
                    f"{self.path}: unknown model {model!r}; known: {', '.join(self.data['models'])}."
                )
        cells = []
        for mode in modes:
            for model in models:
                cells.append(self._cell(session, version, mode, model))
        return cells

    def _cell(self, session: Session, version: str, mode: str, model: str) -> CellSpec:
        raw_model = self.data["models"][model]
        mode_table = self.data["modes"][mode]
        return self._spec(session, version, mode, model,
                          {"factory": raw_model["factory"], "inputs": copy.deepcopy(raw_model.get("inputs", {})),
                           "derive_shapes": raw_model.get("derive_shapes", self.run["derive_shapes"]),
                           **({"task": copy.deepcopy(raw_model["task"])} if "task" in raw_model else {}),
                           **({"modes": dict(raw_model["modes"])} if "modes" in raw_model else {}),
                           **self._family(raw_model.get("family"))},
                          raw_model.get("tolerances", {}), mode_table)

    def _family(self, name: Optional[str]) -> TomlTable:
        """The model family's facts the cell side needs: its name, packages, the Paddle it needs."""
        if not name:
            return {}
        entry = self.data["families"][name]
        return {"family": {"name": name, "packages": [*entry.get("packages", []), *entry.get("no_deps", [])],
                           "requires_paddle": entry.get("requires_paddle"), "apart": self.apart(name)}}

    def capture_cell(self, session: str, version: str, mode: str, model: str, capture: "str | Path") -> CellSpec:
        """A cell whose model is an export someone else made (a TIPC command's ``jit.save``): no
        factory, no training; the capture holds the program, the inputs and the dygraph outputs.
        ``mode`` names how the repository trained it (it sets the tolerances and the plan)."""
        return self._spec(self.session(session), version, mode, model, {"capture": str(capture), "inputs": {}},
                          {}, {})

    def _spec(self, session: Session, version: str, mode: str, model: str, model_fields: TomlTable,
              tolerance_overrides: TomlTable, mode_table: TomlTable) -> CellSpec:
        """``mode_table``: the mode's [modes.X] entry (the device it needs, its packages)."""
        precisions = sorted({Precision.FP32.value, session.precision.value,
                             *([Precision.INT8.value] if mode in QUANTIZED_MODES else [])})
        tolerances = {p: self.tolerance(p) for p in precisions}
        overrides = {p: copy.deepcopy(tolerance_overrides.get(p, {})) for p in precisions}
        run = self.run
        return CellSpec(
            id=vocab.cell_id(session.name, version, mode, model),
            session=SessionSpec(session.name, session.device, session.backend, session.precision),
            stages=session.stages,
            paddle=version,
            mode=mode,
            mode_requires_device=mode_table.get("requires_device"),
            mode_packages=list(mode_table.get("packages", [])),
            model={"name": model, **model_fields},
            tolerances=tolerances,
            output_tolerances=overrides,
            seed=run["seed"],
            train_steps=run["train_steps"],
            reference_threads=run["reference_threads"],
            deploy_threads=run["deploy_threads"],
            stage_timeout=run["stage_timeout"],
            trt_workspace_mb=run["trt_workspace_mb"],
            trt_min_subgraph_size=run["trt_min_subgraph_size"],
            matrix=str(self.path),
            matrix_fingerprint=self.fingerprint,
        )


# -- loading and validation ---------------------------------------------

def session_runtime_packages(raw: TomlTable, version: str) -> List[str]:
    """A session's runtime packages for Paddle ``version`` (pinned in the matrix: nothing installs
    itself at run time): ``packages_before."<V>"`` for versions below V (the lowest such V; ONNX
    Runtime's .pdmodel converter is paddle2onnx 1.x, its PIR one 2.x), else ``packages`` from
    ``requires_paddle`` on; below that nothing, and the stages skip with the reason."""
    before = sorted((k for k in raw.get("packages_before", {}) if not at_least(version, k)),
                    key=lambda k: [int(x) for x in k.split(".")])
    if before:
        return list(raw["packages_before"][before[0]])
    return list(raw.get("packages", [])) if at_least(version, raw.get("requires_paddle")) else []


def load(path: "str | Path") -> Matrix:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: matrix file not found; pass an existing file with --matrix.") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read the matrix file ({exc.strerror}).") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}; fix the file.") from None
    validate(path, data)
    return Matrix(path=path, data=data)
