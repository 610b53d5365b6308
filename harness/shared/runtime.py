"""What a runtime is to the harness, and the registry of the ones it has: plain code, no Paddle.

A runtime is one vertical. Its **descriptor** (a ``Backend`` subclass per session backend word:
plain code, imported by the host and the cell side alike) says what it is: its device and backend
word, the precisions it runs, the type of its stages' configs (``Backend.config``, a
``StageConfig`` of its own, Paddle Inference's being ``PredictorConfig``), how it plans its stages for a program format and precision, what it
requires, the search spaces the culprit search may vary and how its evidence reads in one line.
Its **cell module** (named by ``Backend.cell``, imported only inside a cell) builds and runs
sessions (``harness.cell.base.runtime.Runtime``).

Every runtime, Paddle Inference included, is a package ``harness/runtimes/<name>/``: its
``__init__`` is the descriptor and registers itself here, its other modules are its cell side.
``harness.runtimes`` finds those packages by looking and hands out the registry (``REGISTRY``)
once they all registered; this module imports none of them, so the arrows run one way (a
descriptor imports this module, never the reverse). Adding one is its descriptor, its cell
module and its sessions in the matrix.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Dict, List, Optional, Tuple, Type

from .config import PredictorConfig, StageConfig
from .spec import DEFAULTS
from .vocab import Device, Precision, ProgramFormat, Reference, backend_stage_name
from .json_types import JsonMapping, JsonObject

RUNTIME_PACKAGES = "harness.runtimes"  # where the runtime verticals live, Paddle Inference among them


@dataclasses.dataclass(frozen=True)
class Requirement:
    """A capability a stage needs from the build, the environment or the machine; checked on the
    cell side by the stage's runtime (``Runtime.unmet``). Unmet: the stage is ``skip`` with why."""

    key: str
    words: str  # what is needed, as the skip reason says it
    # A step several backends run alike on one program before their own (a conversion into a format
    # they all read): its failures are met alike by each backend's session (``shared.backends.shared_step``).
    shared_step: bool = False

    def __str__(self) -> str:
        return self.words


@dataclasses.dataclass(frozen=True)
class SearchSpace:
    """What the culprit search may switch off one by one for a stage (passes, op types an engine
    takes, a runtime's optimizers): ``key`` is what records keep as the search's kind. Made with
    ``search_space``, which keeps it findable by that key."""

    key: str
    what: str  # "IR passes": how a culprit list is introduced
    verdict_words: str  # "when pass {} runs": how a culprit reads in a verdict

    @property
    def value(self) -> str:
        return self.key


_SPACES: Dict[str, SearchSpace] = {}


def search_space(key: str, what: str, verdict_words: str) -> SearchSpace:
    space = SearchSpace(key, what, verdict_words)
    if _SPACES.setdefault(key, space) != space:
        raise ValueError(f"search space {key!r} defined twice, differently")
    return space


@dataclasses.dataclass(frozen=True)
class StagePlan:
    name: str
    config: StageConfig  # of the type its runtime reads (``Backend.config``)
    # The precision the stage asks its runtime to run in (a lower one must show in its evidence).
    precision: Precision
    reference: Reference  # what the stage's outputs are compared with
    lever: str  # the call(s) this stage adds to its reference, for the record and the README
    skip: Optional[str] = None  # the lever does not exist here: reason and source
    requires: Tuple[Requirement, ...] = ()
    search: Optional[SearchSpace] = None
    # Whose tolerance the comparison uses, when not the stage's own precision: a quantized
    # program's consistency check runs fp32 against its fake-quant dygraph model at int8's.
    tolerance_of: Optional[Precision] = None
    # Whether the executed ops' dtypes can show the precision (TensorRT engines hide their layers).
    dtypes_visible: bool = True

    @property
    def tolerance_precision(self) -> Precision:
        return self.tolerance_of or self.precision

    @property
    def runtime(self) -> str:
        """The registered runtime whose cell module runs the stage: the one its config is for."""
        return self.config.runtime


@dataclasses.dataclass(frozen=True)
class DeployOptions:
    """The matrix's run settings a plan needs."""

    reference_threads: int = 1
    deploy_threads: int = 2
    trt_workspace_mb: int = DEFAULTS.trt_workspace_mb
    trt_min_subgraph_size: int = DEFAULTS.trt_min_subgraph_size


@dataclasses.dataclass(frozen=True)
class LadderContext:
    """What a backend plans its stages from, after the Paddle baseline every session starts with."""

    fmt: ProgramFormat
    precision: Precision
    options: DeployOptions
    baseline: StagePlan
    quantized: bool = False  # the program comes from a quantization-aware mode (its own int8 scales)


class Backend:
    """One deployment path (a session's ``<device>_<backend word>``): the descriptor of a runtime.

    Subclasses set the class attributes and implement ``deploy`` and ``stages``; registering one
    (``register``) makes its backend word a session word of its device."""

    device: ClassVar[Device] = Device.CPU
    word: ClassVar[str] = "native"  # the session's backend word
    runtime: ClassVar[str] = "paddle_inference"  # what stage plans carry
    cell: ClassVar[str] = ""  # "module:Class" of the cell side
    search: ClassVar[Optional[SearchSpace]] = None
    precisions: ClassVar[Tuple[Precision, ...]] = (Precision.FP32,)
    config: ClassVar[Type[StageConfig]] = PredictorConfig  # the type of its stages' configs
    # The import names of the packages it runs on: an exception raised from their frames is theirs.
    packages: ClassVar[Tuple[str, ...]] = ()

    def deploy(self, fmt: ProgramFormat, precision: Precision, options: DeployOptions) -> StageConfig:
        raise NotImplementedError

    def stages(self, ladder: LadderContext) -> List[StagePlan]:
        """The stages after the baseline, in order (the backend's own stage last)."""
        raise NotImplementedError

    def requires(self, fmt: ProgramFormat, precision: Precision) -> Tuple[Requirement, ...]:
        return ()

    def stage_name(self, precision: Precision) -> str:
        return backend_stage_name(self.device, self.word, precision)

    def for_format(self, fmt: ProgramFormat) -> "Backend":
        """The descriptor that serves programs in ``fmt`` (one backend word may take two paths)."""
        return self

    def evidence_note(self, evidence: JsonMapping) -> Optional[str]:
        """One line on what a stage of this runtime ran, or None for the passes-and-ops line."""
        return None

    def unsupported(self, precision: Precision) -> Optional[str]:
        if precision in self.precisions:
            return None
        return (f"{precision} is not a precision of the {self.device} {self.word} backend "
                f"({', '.join(p.value for p in self.precisions)})")


class Registry:
    """Every registered backend, by (device, word); runtime packages are imported when first asked."""

    def __init__(self) -> None:
        self._backends: Dict[Tuple[str, str], Type[Backend]] = {}
        self._found = False

    def register(self, backend: Type[Backend]) -> Type[Backend]:
        key = (Device(backend.device).value, backend.word)
        known = self._backends.get(key)
        if known is not None and known is not backend:
            raise ValueError(f"backend {key} registered twice ({known.__module__}, {backend.__module__})")
        self._backends[key] = backend
        return backend

    def _find(self) -> None:
        if not self._found:
            raise RuntimeError("the runtimes are found by importing harness.runtimes (its REGISTRY): "
                               "harness.shared.runtime only holds what registered")

    def found(self, order: List[str]) -> "Registry":
        """Every runtime package registered (``harness.runtimes`` imported them): backends in one
        order whatever was imported first — the packages in ``order``, each package's in its order."""
        rank = {f"{RUNTIME_PACKAGES}.{name}": i for i, name in enumerate(order)}

        def place(item):
            module = item[1].__module__
            return next((r for prefix, r in rank.items() if module == prefix or module.startswith(prefix + ".")),
                        len(rank))

        self._backends = dict(sorted(self._backends.items(), key=place))
        self._found = True
        return self

    def backend(self, device: str, word: str, fmt: "ProgramFormat | str") -> Backend:
        self._find()
        return self._backends[(device, word)]().for_format(ProgramFormat(fmt))

    def devices(self) -> Dict[str, Tuple[str, ...]]:
        """The backend words of every device, in registration order."""
        self._find()
        out: Dict[str, List[str]] = {}
        for device, word in self._backends:
            out.setdefault(device, []).append(word)
        return {device: tuple(words) for device, words in out.items()}

    def runtimes(self) -> Dict[str, Type[Backend]]:
        """One backend per runtime name (what a stage plan's ``runtime`` resolves through)."""
        self._find()
        out: Dict[str, Type[Backend]] = {}
        for backend in self._backends.values():
            out.setdefault(backend.runtime, backend)
        return out

    def cell_module(self, runtime: str) -> str:
        known = self.runtimes()
        if runtime not in known:
            raise KeyError(f"unknown runtime {runtime!r}; known: {', '.join(sorted(known))}")
        return known[runtime].cell

    def config_types(self) -> Dict[str, Type[StageConfig]]:
        """Every runtime's stage-config type, by runtime name."""
        return {name: backend.config for name, backend in self.runtimes().items()}

    def packages(self) -> Tuple[str, ...]:
        """Every registered runtime's packages (Paddle's own are the caller's to add)."""
        self._find()
        return tuple(dict.fromkeys(p for b in self._backends.values() for p in b.packages))

    def search_space(self, key: str) -> Optional[SearchSpace]:
        self._find()
        return _SPACES.get(key)

    def config_from_dict(self, data: JsonObject) -> StageConfig:
        """A stage's config from its record, of the type of the runtime it names. A record of
        schema 2 named none: Paddle's fields, another runtime's config beside them under its key."""
        types = self.config_types()
        if data.get("runtime") in types:
            return types[data["runtime"]].from_dict(data)
        for kind in types.values():
            if kind.schema2_key and isinstance(data.get(kind.schema2_key), dict):
                return kind.from_dict(dict(data[kind.schema2_key], device=data.get("device", "cpu")))
        return PredictorConfig.from_dict(data)

    def evidence_note(self, runtime: Optional[str], evidence: JsonMapping) -> Optional[str]:
        if not runtime:
            return None
        backend = self.runtimes().get(runtime)
        return backend().evidence_note(evidence) if backend is not None else None


# What registered so far; ``harness.runtimes.REGISTRY`` is this registry once every runtime did.
_REGISTERED = Registry()
register = _REGISTERED.register
