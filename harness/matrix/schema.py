"""The matrix file's schema: every table and key it may hold, checked on load with a one-line
error naming the file, the key and what to do (``harness.shared.errors.UserError``)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, List

from ..shared.json_types import TomlTable
from ..shared.backends import devices
from ..shared.errors import UserError
from ..shared.spec import DEFAULTS
from ..shared.task import Task
from ..shared.vocab import Precision, session_name

PRECISIONS = tuple(p.value for p in Precision)

# Modes the schema knows; which of them a cell side can run is decided there (harness.cell.base.modes).
MODES = ("normal", "amp_o1", "amp_o2", "qat", "pact")

_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([.\-+]?[0-9A-Za-z.]+)?$")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_FACTORY_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

_TOP_KEYS = {"run", "paddle", "sessions", "modes", "tolerances", "models", "docker", "qualify", "families", "zoo"}
_FAMILY_KEYS = {"packages", "no_deps", "requires_paddle", "description", "apart"}
_ZOO_KEYS = {"models", "versions", "modes"}
ZOO = "zoo"  # the name that selects the zoo's models (``--model zoo``)
_QUALIFY_KEYS = {"sessions", "versions", "modes", "models", "optional", "precision_risks"}
RUNNERS = ("venv", "docker")
_DOCKER_KEYS = {"cpu_base", "image_prefix", "memory", "pids"}
DOCKER_DEFAULTS = {
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
_MODE_KEYS = {"description", "requires_device", "packages", "zoo_sessions"}
_TOL_KEYS = {"atol", "rtol", "scaled_atol"}
_TOL_REQUIRED = {"atol", "rtol"}
_MODEL_KEYS = {"factory", "inputs", "tolerances", "description", "derive_shapes", "family", "task", "modes"}
_INPUT_KEYS = {"shape", "shapes", "low", "high"}

RUN_DEFAULTS = {
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


def _fail(path: Path, key: str, what: str) -> None:
    raise UserError(f"{path}: {key}: {what}")


def _check_keys(path: Path, where: str, table: Any, allowed: set) -> None:
    if not isinstance(table, dict):
        _fail(path, where, f"expected a table, got {type(table).__name__}.")
    for key in table:
        if key not in allowed:
            _fail(path, f"{where}.{key}" if where else key,
                  f"unknown key; allowed here: {', '.join(sorted(allowed))}.")


def _require(path: Path, where: str, table: TomlTable, key: str, kind: type) -> Any:
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


def validate(path: Path, data: TomlTable) -> None:
    _check_keys(path, "", data, _TOP_KEYS)
    for key in ("paddle", "sessions", "tolerances", "models"):
        if not data.get(key):
            _fail(path, f"[{key}]", "missing or empty; the matrix needs at least one entry.")
    _validate_paddle(path, data["paddle"])
    _validate_docker(path, data)
    _check_keys(path, "qualify", data.get("qualify", {}), _QUALIFY_KEYS)
    for key, value in data.get("qualify", {}).items():
        _str_list(path, f"qualify.{key}", value)
    for key in ("optional", "precision_risks"):
        for name in data.get("qualify", {}).get(key, []):
            if name not in data["sessions"]:
                _fail(path, f"qualify.{key}", f"unknown session {name!r}; known: {', '.join(data['sessions'])}.")
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
        if not isinstance(entry.get("apart", False), bool):
            _fail(path, f"families.{name}.apart", "expected true or false (whether it installs in an environment of its own).")
    for name, raw in data["models"].items():
        if raw.get("family") is not None and raw["family"] not in families:
            _fail(path, f"models.{name}.family", f"{raw['family']!r} is not declared in [families].")
    zoo = data.get("zoo", {})
    _check_keys(path, "zoo", zoo, _ZOO_KEYS)
    zoo.setdefault("models", [])
    zoo.setdefault("versions", [run["default_paddle"]])
    zoo.setdefault("modes", ["normal"])
    for key in ("models", "versions", "modes"):
        _str_list(path, f"zoo.{key}", zoo[key])
    for mode in zoo["modes"]:
        if mode not in data.get("modes", {"normal": {}}):
            _fail(path, "zoo.modes", f"{mode!r} is not declared in [modes].")
    for model in zoo["models"]:
        if model not in data["models"]:
            _fail(path, "zoo.models", f"{model!r} is not declared in [models].")
    for version in zoo["versions"]:
        if version not in data["paddle"]:
            _fail(path, "zoo.versions", f"{version!r} is not in [paddle].")
    if ZOO in data["models"]:
        _fail(path, f"models.{ZOO}", f"{ZOO!r} names the zoo's models; give the model another name.")


def _validate_paddle(path: Path, versions: TomlTable) -> None:
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


def _validate_docker(path: Path, data: TomlTable) -> None:
    docker = data.setdefault("docker", {})
    _check_keys(path, "docker", docker, _DOCKER_KEYS)
    for key, value in DOCKER_DEFAULTS.items():
        docker.setdefault(key, value)
    for key in ("cpu_base", "image_prefix", "memory"):
        _require(path, "docker", docker, key, str)
    _require(path, "docker", docker, "pids", int)
    if not re.match(r"^[a-z0-9][a-z0-9._/-]*$", docker["image_prefix"]):
        _fail(path, "docker.image_prefix", f"{docker['image_prefix']!r} is not a Docker repository name (lowercase).")
    for version, entry in data["paddle"].items():
        if "gpu_base" in entry:
            _require(path, f'paddle."{version}"', entry, "gpu_base", str)


def _validate_run(path: Path, data: TomlTable) -> TomlTable:
    run = data.setdefault("run", {})
    _check_keys(path, "run", run, _RUN_KEYS)
    for key, value in RUN_DEFAULTS.items():
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


def _validate_modes(path: Path, data: TomlTable, run: TomlTable) -> None:
    modes = data.setdefault("modes", {"normal": {}})
    for mode, entry in modes.items():
        if mode not in MODES:
            _fail(path, f"modes.{mode}", f"unknown train mode; known: {', '.join(MODES)}.")
        _check_keys(path, f"modes.{mode}", entry, _MODE_KEYS)
        if entry.get("requires_device") not in (None, *devices()):
            _fail(path, f"modes.{mode}.requires_device", f"expected one of {', '.join(devices())}.")
        if "packages" in entry:
            _str_list(path, f"modes.{mode}.packages", entry["packages"])
        if "zoo_sessions" in entry:
            _str_list(path, f"modes.{mode}.zoo_sessions", entry["zoo_sessions"])
            unknown = sorted(set(entry["zoo_sessions"]) - set(data.get("sessions") or {}))
            if unknown:
                _fail(path, f"modes.{mode}.zoo_sessions", f"{unknown[0]!r} is not a session of [sessions].")
    for mode in run["modes"]:
        if mode not in modes:
            _fail(path, "run.modes", f"{mode!r} is not declared in [modes].")


def _validate_session(path: Path, data: TomlTable, name: str, raw: Any) -> None:
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
    if "task" in raw:
        try:
            Task.of(raw["task"])
        except (ValueError, TypeError) as exc:
            _fail(path, f"{where}.task", f"{exc}.")
    for mode, how in raw.get("modes", {}).items():  # the train modes its suite trains it in, and where
        if mode not in MODES:
            _fail(path, f"{where}.modes.{mode}", f"unknown train mode; known: {', '.join(MODES)}.")
        if not isinstance(how, str) or not how.strip():
            _fail(path, f"{where}.modes.{mode}", "expected the suite's config or script that trains it so (a string).")
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
