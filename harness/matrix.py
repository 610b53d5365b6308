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
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the host side runs on any Python
    import tomli as tomllib  # type: ignore[no-redef]

from .shared import vocab
from .shared.backends import QUANTIZED_MODES, DeployOptions, devices, plan_stages
from .shared.errors import UserError
from .shared.spec import DEFAULTS, CellSpec, at_least
from .shared.vocab import Device, Precision, ProgramFormat

PRECISIONS = tuple(p.value for p in Precision)

# Modes the schema knows; which of them a cell side can run is decided there (harness.cell.modes).
MODES = ("normal", "amp_o1", "amp_o2", "qat", "pact")

_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([.\-+]?[0-9A-Za-z.]+)?$")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_FACTORY_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

_TOP_KEYS = {"run", "paddle", "sessions", "modes", "tolerances", "models", "docker", "qualify", "families", "zoo"}
_FAMILY_KEYS = {"packages", "no_deps", "requires_paddle", "description"}
_ZOO_KEYS = {"models", "versions"}
ZOO = "zoo"  # the name that selects the zoo's models (``--model zoo``)
_QUALIFY_KEYS = {"sessions", "versions", "modes", "models"}
RUNNERS = ("venv", "docker")
_DOCKER_KEYS = {"cpu_base", "image_prefix", "memory", "pids"}
_DOCKER_DEFAULTS = {
    # A local image with python3, python3-venv, ca-certificates and libgomp1 (`python -m harness
    # images --make-base` builds one with debootstrap where no registry is reachable).
    "cpu_base": "harness-base:bookworm",
    "image_prefix": "paddle-harness",
    "memory": "8g",  # per container: a cell of the built-in models peaks well under 2 GB
    "pids": 1024,
}
_RUN_KEYS = {
    "default_paddle", "modes", "models", "seed", "train_steps",
    "reference_threads", "deploy_threads", "stage_timeout", "trt_workspace_mb", "trt_min_subgraph_size",
    "derive_shapes",
}
_PADDLE_KEYS = {"python", "packages", "gpu_packages", "gpu_base", "note"}
_SESSION_KEYS = {"device", "backend", "precision", "paddle", "description", "tags", "runner", "packages", "packages_before",
                 "requires_paddle"}
_MODE_KEYS = {"description", "requires_device", "packages"}
_TOL_KEYS = {"atol", "rtol", "scaled_atol"}
_TOL_REQUIRED = {"atol", "rtol"}
_MODEL_KEYS = {"factory", "inputs", "tolerances", "description", "derive_shapes", "family"}
_INPUT_KEYS = {"shape", "shapes", "low", "high"}


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
    data: Dict[str, Any]

    # -- accessors -------------------------------------------------------
    @property
    def run(self) -> Dict[str, Any]:
        return self.data["run"]

    @property
    def versions(self) -> List[str]:
        return list(self.data["paddle"])

    def version(self, version: str) -> Dict[str, Any]:
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
    def docker(self) -> Dict[str, Any]:
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
        that need another Paddle install nothing there (their cells say why they skip)."""
        out: Dict[str, List[str]] = {"packages": [], "no_deps": []}
        for model in self.select_models(models):
            family = self.data["models"].get(model, {}).get("family")
            if not family:
                continue
            entry = self.data["families"][family]
            if not at_least(version, entry.get("requires_paddle")):
                continue
            for key in out:
                out[key] += [p for p in entry.get(key, []) if p not in out[key]]
        return out

    def mode_packages(self, modes: Optional[List[str]] = None) -> List[str]:
        """Extra pip packages of the modes that will run (``modes.<name>.packages``)."""
        chosen = modes or self.run["modes"]
        return [p for mode in chosen for p in self.data["modes"].get(mode, {}).get("packages", [])]

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
                           **self._family(raw_model.get("family"))},
                          raw_model.get("tolerances", {}), mode_table.get("requires_device"),
                          list(mode_table.get("packages", [])))

    def _family(self, name: Optional[str]) -> Dict[str, Any]:
        """The model family's facts the cell side needs: its name, packages, the Paddle it needs."""
        if not name:
            return {}
        entry = self.data["families"][name]
        return {"family": {"name": name, "packages": [*entry.get("packages", []), *entry.get("no_deps", [])],
                           "requires_paddle": entry.get("requires_paddle")}}

    def capture_cell(self, session: str, version: str, mode: str, model: str, capture: "str | Path") -> CellSpec:
        """A cell whose model is an export someone else made (a TIPC command's ``jit.save``): no
        factory, no training; the capture holds the program, the inputs and the dygraph outputs.
        ``mode`` names how the repository trained it (it sets the tolerances and the plan)."""
        return self._spec(self.session(session), version, mode, model, {"capture": str(capture), "inputs": {}},
                          {}, None, [])

    def _spec(self, session: Session, version: str, mode: str, model: str, model_fields: Dict[str, Any],
              tolerance_overrides: Dict[str, Any], requires_device: Optional[str], packages: List[str]) -> CellSpec:
        precisions = sorted({Precision.FP32.value, session.precision.value,
                             *([Precision.INT8.value] if mode in QUANTIZED_MODES else [])})
        tolerances = {p: self.tolerance(p) for p in precisions}
        overrides = {p: copy.deepcopy(tolerance_overrides.get(p, {})) for p in precisions}
        run = self.run
        return CellSpec(
            id=vocab.cell_id(session.name, version, mode, model),
            session={"name": session.name, "device": session.device.value, "backend": session.backend,
                     "precision": session.precision.value},
            stages=session.stages,
            paddle=version,
            mode=mode,
            mode_requires_device=requires_device,
            mode_packages=packages,
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

_RUN_DEFAULTS = {
    "modes": ["normal"],
    "seed": 2026,
    "train_steps": 2,
    "reference_threads": 1,
    "deploy_threads": 2,
    "stage_timeout": DEFAULTS.stage_timeout,
    # Paddle's documented TensorRT defaults (workspace 1 GiB, subgraphs of at least 3 ops).
    "trt_workspace_mb": DEFAULTS.trt_workspace_mb,
    "trt_min_subgraph_size": DEFAULTS.trt_min_subgraph_size,
    # Run every stage at shapes derived from the InputSpec's free dims too (harness.shared.shapes).
    "derive_shapes": True,
}


def session_runtime_packages(raw: Dict[str, Any], version: str) -> List[str]:
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
    _validate(path, data)
    return Matrix(path=path, data=data)


def _fail(path: Path, key: str, what: str) -> None:
    raise UserError(f"{path}: {key}: {what}")


def _check_keys(path: Path, where: str, table: Any, allowed: set) -> None:
    if not isinstance(table, dict):
        _fail(path, where, f"expected a table, got {type(table).__name__}.")
    for key in table:
        if key not in allowed:
            _fail(path, f"{where}.{key}" if where else key,
                  f"unknown key; allowed here: {', '.join(sorted(allowed))}.")


def _require(path: Path, where: str, table: Dict[str, Any], key: str, kind: type) -> Any:
    if key not in table:
        _fail(path, f"{where}.{key}", "missing; add it.")
    value = table[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        _fail(path, f"{where}.{key}", f"expected {kind.__name__}, got {value!r}.")
    return value


def _str_list(path: Path, where: str, value: Any) -> List[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _fail(path, where, f"expected a list of strings, got {value!r}.")
    return value


def _validate(path: Path, data: Dict[str, Any]) -> None:
    _check_keys(path, "", data, _TOP_KEYS)
    for key in ("paddle", "sessions", "tolerances", "models"):
        if not data.get(key):
            _fail(path, f"[{key}]", "missing or empty; the matrix needs at least one entry.")
    _validate_paddle(path, data["paddle"])
    _validate_docker(path, data)
    _check_keys(path, "qualify", data.get("qualify", {}), _QUALIFY_KEYS)
    for key, value in data.get("qualify", {}).items():
        _str_list(path, f"qualify.{key}", value)
    run = _validate_run(path, data)
    _validate_modes(path, data, run)
    for precision, tol in data["tolerances"].items():
        if precision not in PRECISIONS:
            _fail(path, f"tolerances.{precision}", f"unknown precision; known: {', '.join(PRECISIONS)}.")
        _validate_tolerance(path, f"tolerances.{precision}", tol)
    if "fp32" not in data["tolerances"]:
        _fail(path, "tolerances.fp32", "missing; every stage before the backend is compared at fp32.")
    for name, raw in data["sessions"].items():
        _validate_session(path, data, name, raw)
    for name, raw in data["models"].items():
        _validate_model(path, name, raw)
    for model in run["models"]:
        if model not in data["models"]:
            _fail(path, "run.models", f"{model!r} is not declared in [models].")
    families = data.get("families", {})
    for name, entry in families.items():
        _check_keys(path, f"families.{name}", entry, _FAMILY_KEYS)
        for key in ("packages", "no_deps"):
            _str_list(path, f"families.{name}.{key}", entry.get(key, []))
        if "requires_paddle" in entry and not re.fullmatch(r"\d+(\.\d+)*", str(entry["requires_paddle"])):
            _fail(path, f"families.{name}.requires_paddle", "expected a version like \"3.0.0\" (the lowest it needs).")
    for name, raw in data["models"].items():
        if raw.get("family") is not None and raw["family"] not in families:
            _fail(path, f"models.{name}.family", f"{raw['family']!r} is not declared in [families].")
    zoo = data.get("zoo", {})
    _check_keys(path, "zoo", zoo, _ZOO_KEYS)
    zoo.setdefault("models", [])
    zoo.setdefault("versions", [run["default_paddle"]])
    for key in ("models", "versions"):
        _str_list(path, f"zoo.{key}", zoo[key])
    for model in zoo["models"]:
        if model not in data["models"]:
            _fail(path, "zoo.models", f"{model!r} is not declared in [models].")
    for version in zoo["versions"]:
        if version not in data["paddle"]:
            _fail(path, "zoo.versions", f"{version!r} is not in [paddle].")
    if ZOO in data["models"]:
        _fail(path, f"models.{ZOO}", f"{ZOO!r} names the zoo's models; give the model another name.")


def _validate_paddle(path: Path, versions: Dict[str, Any]) -> None:
    for version, entry in versions.items():
        where = f'paddle."{version}"'
        if not _VERSION_RE.match(version):
            _fail(path, where, "not a Paddle version like 3.3.1.")
        _check_keys(path, where, entry, _PADDLE_KEYS)
        python = _require(path, where, entry, "python", str)
        if not re.match(r"^3\.\d+$", python):
            _fail(path, f"{where}.python", f"expected a Python like \"3.11\", got {python!r}.")
        if "packages" not in entry and "gpu_packages" not in entry:
            _fail(path, f"{where}.packages", "missing; list the pip requirements for this version.")
        for key in ("packages", "gpu_packages"):
            if key in entry:
                _str_list(path, f"{where}.{key}", entry[key])


def _validate_docker(path: Path, data: Dict[str, Any]) -> None:
    docker = data.setdefault("docker", {})
    _check_keys(path, "docker", docker, _DOCKER_KEYS)
    for key, value in _DOCKER_DEFAULTS.items():
        docker.setdefault(key, value)
    for key in ("cpu_base", "image_prefix", "memory"):
        _require(path, "docker", docker, key, str)
    _require(path, "docker", docker, "pids", int)
    if not re.match(r"^[a-z0-9][a-z0-9._/-]*$", docker["image_prefix"]):
        _fail(path, "docker.image_prefix", f"{docker['image_prefix']!r} is not a Docker repository name (lowercase).")
    for version, entry in data["paddle"].items():
        if "gpu_base" in entry:
            _require(path, f'paddle."{version}"', entry, "gpu_base", str)


def _validate_run(path: Path, data: Dict[str, Any]) -> Dict[str, Any]:
    run = data.setdefault("run", {})
    _check_keys(path, "run", run, _RUN_KEYS)
    for key, value in _RUN_DEFAULTS.items():
        run.setdefault(key, copy.deepcopy(value))
    run.setdefault("default_paddle", next(iter(data["paddle"])))
    if run["default_paddle"] not in data["paddle"]:
        _fail(path, "run.default_paddle", f"{run['default_paddle']!r} is not in [paddle].")
    run.setdefault("models", list(data["models"]))
    for key in ("modes", "models"):
        _str_list(path, f"run.{key}", run[key])
    for key in ("seed", "train_steps", "reference_threads", "deploy_threads", "trt_workspace_mb", "trt_min_subgraph_size"):
        _require(path, "run", run, key, int)
    run["stage_timeout"] = _require(path, "run", run, "stage_timeout", float)
    _require(path, "run", run, "derive_shapes", bool)
    if run["train_steps"] < 0 or run["reference_threads"] < 1 or run["deploy_threads"] < 1:
        _fail(path, "run", "train_steps must be >= 0 and thread counts >= 1.")
    if run["trt_workspace_mb"] < 1 or run["trt_min_subgraph_size"] < 1:
        _fail(path, "run", "trt_workspace_mb and trt_min_subgraph_size must be >= 1.")
    if run["stage_timeout"] <= 0:
        _fail(path, "run.stage_timeout", "must be a positive number of seconds.")
    return run


def _validate_modes(path: Path, data: Dict[str, Any], run: Dict[str, Any]) -> None:
    modes = data.setdefault("modes", {"normal": {}})
    for mode, entry in modes.items():
        if mode not in MODES:
            _fail(path, f"modes.{mode}", f"unknown train mode; known: {', '.join(MODES)}.")
        _check_keys(path, f"modes.{mode}", entry, _MODE_KEYS)
        if entry.get("requires_device") not in (None, *devices()):
            _fail(path, f"modes.{mode}.requires_device", f"expected one of {', '.join(devices())}.")
        if "packages" in entry:
            _str_list(path, f"modes.{mode}.packages", entry["packages"])
    for mode in run["modes"]:
        if mode not in modes:
            _fail(path, "run.modes", f"{mode!r} is not declared in [modes].")


def _validate_session(path: Path, data: Dict[str, Any], name: str, raw: Any) -> None:
    where = f"sessions.{name}"
    _check_keys(path, where, raw, _SESSION_KEYS)
    device = _require(path, where, raw, "device", str)
    backend = _require(path, where, raw, "backend", str)
    precision = _require(path, where, raw, "precision", str)
    known = devices()
    if device not in known:
        _fail(path, f"{where}.device", f"{device!r} unknown; known: {', '.join(known)}.")
    if backend not in known[device]:
        _fail(path, f"{where}.backend",
              f"{backend!r} is not a {device} backend; known: {', '.join(sorted(known[device]))}.")
    if precision not in PRECISIONS:
        _fail(path, f"{where}.precision", f"{precision!r} unknown; known: {', '.join(PRECISIONS)}.")
    if precision not in data["tolerances"]:
        _fail(path, f"{where}.precision", f"no [tolerances.{precision}] table; add one.")
    canonical = session_name(device, backend, precision)
    if name != canonical:
        _fail(path, where, f"a session's name says what runs: call it {canonical!r}.")
    if "paddle" in raw:
        for version in _str_list(path, f"{where}.paddle", raw["paddle"]):
            if version not in data["paddle"]:
                _fail(path, f"{where}.paddle", f"{version!r} is not in [paddle].")
    if "tags" in raw:
        _str_list(path, f"{where}.tags", raw["tags"])
    if "packages" in raw:
        _str_list(path, f"{where}.packages", raw["packages"])
    before = raw.get("packages_before", {})
    if not isinstance(before, dict):
        _fail(path, f"{where}.packages_before", "expected a table: \"<Paddle version>\" = [packages for the versions below it].")
    for bound, listed in before.items():
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", str(bound)):
            _fail(path, f"{where}.packages_before.{bound}", f"{bound!r} is not a release like \"3.0.0\".")
        _str_list(path, f"{where}.packages_before.{bound}", listed)
    if "requires_paddle" in raw and not re.fullmatch(r"\d+\.\d+(\.\d+)?", str(raw["requires_paddle"])):
        _fail(path, f"{where}.requires_paddle", f"{raw['requires_paddle']!r} is not a release like \"3.0.0\".")
    if raw.get("runner", "venv") not in RUNNERS:
        _fail(path, f"{where}.runner", f"{raw['runner']!r} unknown; known: {', '.join(RUNNERS)}.")


def _validate_model(path: Path, name: str, raw: Any) -> None:
    where = f"models.{name}"
    if not _NAME_RE.match(name):
        _fail(path, where, "model names are identifiers (letters, digits, _).")
    _check_keys(path, where, raw, _MODEL_KEYS)
    if "derive_shapes" in raw and not isinstance(raw["derive_shapes"], bool):
        _fail(path, f"{where}.derive_shapes", f"expected true or false, got {raw['derive_shapes']!r}.")
    factory = _require(path, where, raw, "factory", str)
    if not _FACTORY_RE.match(factory):
        _fail(path, f"{where}.factory", f"{factory!r} is not of the form package.module:function.")
    for input_name, spec in raw.get("inputs", {}).items():
        _validate_input(path, f"{where}.inputs.{input_name}", spec)
    for precision, per_output in raw.get("tolerances", {}).items():
        if precision not in PRECISIONS:
            _fail(path, f"{where}.tolerances.{precision}", f"unknown precision; known: {', '.join(PRECISIONS)}.")
        if not isinstance(per_output, dict):
            _fail(path, f"{where}.tolerances.{precision}", "expected a table of outputs.")
        for output, tol in per_output.items():
            _validate_tolerance(path, f"{where}.tolerances.{precision}.{output}", tol, partial=True)


def _is_shape(shape: Any) -> bool:
    return isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)


def _validate_input(path: Path, where: str, spec: Any) -> None:
    _check_keys(path, where, spec, _INPUT_KEYS)
    if "shape" in spec and not _is_shape(spec["shape"]):
        _fail(path, f"{where}.shape", f"expected a list of positive integers, got {spec['shape']!r}.")
    if "shapes" in spec:
        shapes = spec["shapes"]
        if "shape" not in spec:
            _fail(path, f"{where}.shapes", "needs shape too: the primary shape every stage runs first.")
        if not isinstance(shapes, list) or not shapes or not all(_is_shape(s) and len(s) == len(spec["shape"])
                                                                  for s in shapes):
            _fail(path, f"{where}.shapes", f"expected a list of shapes of rank {len(spec['shape'])} "
                                           f"(lists of positive integers), got {shapes!r}.")
    for key in ("low", "high"):
        if key in spec and not isinstance(spec[key], (int, float)):
            _fail(path, f"{where}.{key}", f"expected a number, got {spec[key]!r}.")
    if "low" in spec and "high" in spec and not spec["low"] < spec["high"]:
        _fail(path, where, "low must be below high.")


def _validate_tolerance(path: Path, where: str, tol: Any, partial: bool = False) -> None:
    _check_keys(path, where, tol, _TOL_KEYS)
    for key in sorted(_TOL_KEYS):
        if key not in tol:
            if partial or key not in _TOL_REQUIRED:
                continue
            _fail(path, f"{where}.{key}", "missing; give both atol and rtol.")
        value = tol[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            _fail(path, f"{where}.{key}", f"expected a non-negative number, got {value!r}.")
        tol[key] = float(value)
