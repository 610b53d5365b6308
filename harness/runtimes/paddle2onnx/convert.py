"""paddle2onnx's conversion of a saved Paddle program, shared by the runtimes that read ONNX: ONNX
Runtime, and OpenVINO at Paddle 3 (its Paddle frontend reads only legacy ``.pdmodel`` programs;
PaddleX's high-performance inference reaches OpenVINO through this same ONNX). One conversion per
program and process, kept beside the program (``<prefix>.onnx``), whoever asks first.

paddle2onnx aborts its process (SIGABRT) on an op it cannot convert: the conversion runs in a forked
child, and its failure is the converter's finding in its own words (``ConversionError``). A second
conversion under glibc's malloc perturbation runs beside it: a converter whose output depends on
memory it never wrote is a finding too (``Converter.settle``). paddle2onnx 2.x converts PIR programs
(Paddle 3), 1.x the ``.pdmodel`` of Paddle 2.6 (the matrix pins each per Paddle version).
paddle2onnx's optimizer imports Polygraphy with ``POLYGRAPHY_AUTOINSTALL_DEPS=1``, which would
pip-install onnx-graphsurgeon and sympy on the spot: their absence is an unmet requirement
(``unmet``), never an install.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import importlib
import os
import re
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ...shared.errors import Finding, HarnessFailure
from ...cell.base import sandbox
from ...shared.protocol import forked
from ...shared.tensor_diff import DumpedTensor
from .launcher import Launched, launch, ready_for_children
from .reference import CONVERTED, ConversionJudge
from ...cell.paddle_api.export import program_op_types

# What the conversion needs importable (paddle2onnx 2.x), and what Polygraphy would otherwise
# install by itself; paddle2onnx 1.x's optimizer does not go through Polygraphy.
NEEDED = ("paddle2onnx", "onnx", "onnx_graphsurgeon", "sympy")
NEEDED_1X = ("paddle2onnx", "onnx")
# A PIR program's feeding and fetching ops: converted by paddle2onnx without being listed.
PLUMBING = {"data", "fetch", "feed", "parameter", "p", "shadow_output", "constant"}  # "p": a parameter
CONVERT_TIMEOUT = 600.0
# paddle2onnx names each value after the Paddle op that made it: ``p2o.<op>.<occurrence>.<output>``.
P2O_NAME = re.compile(r"p2o\.(.+)\.(\d+)\.(\d+)")
_KIND_SAID = re.compile(r"\((\w+)(?:, from [\w.]+(?:, [\w.]+)*)?\)")  # "(Pad, from pd_op.pad3d)" in what differs


def unmet() -> Optional[str]:
    """Why this environment cannot convert its Paddle's programs, or None."""
    from ...cell import paddle_api

    # Paddle 2.6 writes .pdmodel programs: paddle2onnx 1.x converts them (2.x imports only with
    # Paddle >= 3.0.0.dev20250426).
    for module in NEEDED if paddle_api.at_least("3.0.0") else NEEDED_1X:
        try:
            importlib.import_module(module)
        except Exception as exc:  # paddle2onnx raises ValueError on a Paddle it does not support
            return f"{module} cannot be imported here ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
    import paddle2onnx

    if not paddle_api.at_least("3.0.0") and not paddle2onnx.__version__.startswith("1."):
        return (f"paddle2onnx {paddle2onnx.__version__} here; Paddle {paddle_api.paddle.__version__}'s .pdmodel "
                f"programs are converted by paddle2onnx 1.x (the matrix's packages_before pins it)")
    return None


def canonical_ops(graph: Any) -> List[str]:
    """The op types in an order that depends on the graph, not on how the file lists its nodes:
    ONNX Runtime writes its optimized model in another node order on every run (measured: one cell
    run three times, three digests of the file order, the same op histogram), so a digest of the
    file order would say a graph changed when it did not. Each node is named by its op type and
    the names of what feeds it, input by input (a graph's structure, whatever it is listed as),
    and nodes go by depth from the graph's inputs, then by that name."""
    nodes = list(graph.node)
    producer = {out: i for i, node in enumerate(nodes) for out in node.output if out}
    feeds = [[producer.get(name) for name in node.input] for node in nodes]
    waiting = [len({j for j in inputs if j is not None}) for inputs in feeds]
    consumers: Dict[int, set] = collections.defaultdict(set)
    for i, inputs in enumerate(feeds):
        for j in inputs:
            if j is not None:
                consumers[j].add(i)
    order = [i for i, count in enumerate(waiting) if count == 0]
    for i in order:  # grows as nodes become ready: a topological order (Kahn's)
        for k in sorted(consumers[i]):
            waiting[k] -= 1
            if waiting[k] == 0:
                order.append(k)
    order += [i for i, count in enumerate(waiting) if count > 0]  # a cycle: kept, named by op type
    names: Dict[int, str] = {}
    depth: Dict[int, int] = {}
    for i in order:
        inputs = ",".join(names.get(j, "?") if j is not None else "in" for j in feeds[i])
        names[i] = hashlib.sha1(f"{nodes[i].op_type}({inputs})".encode()).hexdigest()[:12]
        depth[i] = 1 + max((depth.get(j, 0) for j in feeds[i] if j is not None), default=0)
    return [nodes[i].op_type for i in sorted(order, key=lambda i: (depth[i], names[i]))]


def graph_evidence(model: Any) -> Dict[str, Any]:
    ops = canonical_ops(model.graph)
    return {"nodes": len(ops), "op_types": dict(collections.Counter(ops)),
            "op_sequence_sha1": hashlib.sha1("\n".join(ops).encode()).hexdigest()[:16]}


# glibc's mallopt(M_PERTURB, byte): memory malloc hands out is filled with byte ^ 0xff, so a
# converter that reads memory it never wrote reads that instead of whatever happened to be there.
M_PERTURB = -6
PERTURB_BYTE = 0xA5
# The words every finding of that kind carries (the reproducer raises with them too).
DIFFERS_BY_MEMORY = "paddle2onnx's output depends on memory it never wrote"


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """paddle2onnx's own options a stage's config carries (``opset``, ``converter_optimize`` of
    ``OrtConfig`` and ``OpenVinoConfig``): the defaults are what deployments get; a workaround may
    ask another opset or the converter's optimizer off."""

    opset: Optional[int] = None   # None: paddle2onnx's own choice (its default, raised as the ops need)
    optimize: bool = True

    @classmethod
    def of(cls, config: Any) -> "ExportOptions":
        return cls(getattr(config, "opset", None), getattr(config, "converter_optimize", True))

    def keywords(self) -> Dict[str, Any]:
        """``paddle2onnx.export``'s keywords for them (none for the defaults)."""
        return ({"opset_version": self.opset} if self.opset else {}) | ({} if self.optimize else {"enable_optimize": False})

    def suffix(self) -> str:
        """What the ONNX file's name carries for them ("" for the defaults)."""
        return (f".opset{self.opset}" if self.opset else "") + ("" if self.optimize else ".noopt")

    def arguments(self) -> str:
        """The keywords as a call's source text, each after ", "."""
        return "".join(f", {k}={v!r}" for k, v in self.keywords().items())


# The opsets a workaround asks (paddle2onnx 2.1.0 converts 7 to 21, measured; 1.x fewer: an opset
# it refuses is a candidate that does not verify). A newer opset changes how ops convert (measured:
# ``x.mean()`` with no axis aborts "Can not get input 'axis(dim)' value" below opset 18).
CANDIDATE_OPSETS = (13, 15, 17, 18, 19, 21)


def option_candidates(config: Any) -> List[Tuple[str, Any]]:
    """Converter-side workarounds for a stage on paddle2onnx's ONNX, smallest change first: its
    optimizer off, then each newer opset."""
    now = ExportOptions.of(config)
    found: List[Tuple[str, Any]] = []
    if now.optimize:
        found.append(("paddle2onnx: its optimizer off (enable_optimize=False)", config.replace(converter_optimize=False)))
    found += [(f"paddle2onnx: opset_version={opset}", config.replace(opset=opset))
              for opset in CANDIDATE_OPSETS if now.opset is None or opset > now.opset]
    return found


def conversion_calls(config: Any) -> List[str]:
    """A stage's conversion as a call, when its options are not the defaults (what a workaround changed)."""
    options = ExportOptions.of(config)
    return [f"paddle2onnx.export(program, params, onnx_file{options.arguments()})"] if options.keywords() else []


def _fork_conversion(program: str, params: str, target: str, log: str, perturb: int = 0,
                     keywords: Optional[Dict[str, Any]] = None) -> int:
    """``paddle2onnx.export`` in a forked child (paddle2onnx aborts its process on what it cannot
    convert; a fork costs no second ``import paddle``), its output to ``log``; the child's pid.
    ``perturb``: the byte glibc fills the child's fresh allocations with (0: untouched). A trial's
    child cannot fork after Paddle ran: its conversions are forked by the launcher (``launcher.py``)."""
    import paddle2onnx  # imported here, before the fork: the child only converts

    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)

    def conversion() -> None:
        fd = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        # paddle2onnx folds constants with Polygraphy, whose ONNX Runtime shape inference saves
        # ``sym_shape_infer_temp.onnx`` and its external-data files into the working directory when it
        # cannot finish: the conversion's own folder, never the user's repository (read-only in a container).
        os.chdir(log.parent)
        print(f"converting in {log.parent}", flush=True)
        if perturb:
            import ctypes

            ctypes.CDLL("libc.so.6").mallopt(M_PERTURB, perturb)
        paddle2onnx.export(program, params, target, enable_onnx_checker=True, **(keywords or {}))

    return forked(conversion)


def _glibc() -> bool:
    import platform

    return platform.libc_ver()[0] == "glibc"


def memory_dependent_values(plain: Any, perturbed: Any, limit: int = 3) -> List[str]:
    """Where two conversions of one program differ: node attributes and initializers, by name."""
    import onnx
    from onnx import numpy_helper

    said: List[str] = []

    def made_by(node: Any) -> str:
        """The Paddle op paddle2onnx converted into ``node`` (from its outputs' names)."""
        ops = {m.group(1) for m in (P2O_NAME.fullmatch(o) for o in node.output) if m}
        return f", from {', '.join(sorted(ops))}" if ops else ""

    if len(plain.graph.node) != len(perturbed.graph.node):
        return [f"{len(plain.graph.node)} vs {len(perturbed.graph.node)} nodes"]
    for a, b in zip(plain.graph.node, perturbed.graph.node):
        if a == b:
            continue
        for x, y in zip(a.attribute, b.attribute):
            if x != y:
                left, right = onnx.helper.get_attribute_value(x), onnx.helper.get_attribute_value(y)
                if isinstance(left, onnx.TensorProto):
                    left, right = numpy_helper.to_array(left).ravel()[:4].tolist(), numpy_helper.to_array(right).ravel()[:4].tolist()
                said.append(f"node {a.name} ({a.op_type}{made_by(a)}) attribute {x.name}: {left} vs {right}")
        if a.input != b.input or a.output != b.output:
            said.append(f"node {a.name} ({a.op_type}): its inputs or outputs differ")
    inits = {i.name: i for i in perturbed.graph.initializer}
    for init in plain.graph.initializer:
        other = inits.get(init.name)
        if other is not None and init != other:
            users = "; ".join(f"{n.name} ({n.op_type}{made_by(n)})" for n in plain.graph.node if init.name in n.input)
            said.append(f"initializer {init.name} (input of {users or 'no node'}): "
                        f"{numpy_helper.to_array(init).ravel()[:4].tolist()} vs {numpy_helper.to_array(other).ravel()[:4].tolist()}")
    # Every kind of node whose values differ, counted: the first few alone name whichever came first (the
    # zoo's SCINet listed three Pads under one runtime, two Pads and a LeakyRelu under the other).
    kinds = collections.Counter(m.group(0) for line in said for m in _KIND_SAID.finditer(line.split(": ", 1)[0]))
    every = [f"every value that differs: {', '.join(f'{n} {kind}' for kind, n in sorted(kinds.items()))}"]
    return said[:limit] + (every if len(said) > limit and kinds else []) or (["the files differ"] if plain != perturbed else [])


# A conversion finding reads "paddle2onnx 2.1.0 said: <its words> (its conversion died by signal 6)":
# the converter's words first, where a table cut at a word still shows them.
CONVERTER_SAID = " said:"
_HOW_IT_ENDED = " (its conversion "
MISSING_SAID = "; op types of this program missing from paddle2onnx's supported list: "


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LOG_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \[\w+\]\s*")


def _plain(line: str) -> str:
    """A converter log line without colours, timestamp, level and paddle2onnx's tag."""
    text = _ANSI.sub("", line).strip()
    text = _LOG_PREFIX.sub("", text).replace("[ERROR][Paddle2ONNX] ", "")
    return text.rstrip(".").strip()


def _listed(op: str, supported: "set[str]") -> bool:
    """Whether paddle2onnx lists a PIR op: its list keeps the legacy names (``elementwise_add`` for
    ``add``, ``reduce_mean`` for ``mean``, ``matmul_v2``), inplace ops drop their ``_``."""
    name = op.rstrip("_")
    return op in PLUMBING or any(c in supported for c in (
        op, name, f"elementwise_{name}", f"reduce_{name}", f"{name}_v2", f"{name}2d",
        {"subtract": "elementwise_sub", "multiply": "elementwise_mul", "divide": "elementwise_div",
         "maximum": "elementwise_max", "minimum": "elementwise_min", "remainder": "elementwise_mod",
         "full": "fill_constant", "full_int_array": "fill_constant", "flatten": "flatten_contiguous_range"}
        .get(name, name)))


# A trial's child asks the launcher for its conversions: it exists before the first trial forks.
sandbox.before_children(lambda: ready_for_children(_fork_conversion))


class ConversionError(Finding):
    """paddle2onnx could not convert the program: its words and the op types it does not list."""

    def __init__(self, words: str, program: Path, options: "ExportOptions") -> None:
        super().__init__(words)
        self.shared_step = conversion_step(program, options)


def conversion_step(program: Path, options: "ExportOptions") -> str:
    """The conversion as a step other sessions run alike: the converter's version, its options and
    the program's and weights' bytes (sha256). ONNX Runtime and OpenVINO convert one program so."""
    import paddle2onnx

    from ...shared.records import file_sha256

    params = program.with_suffix(".pdiparams")
    weights = file_sha256(params)[:16] if params.is_file() else "-"
    return f"paddle2onnx {paddle2onnx.__version__}{options.suffix()} {file_sha256(program)[:16]} {weights}"


class Converter:
    """Conversions of this process, by program and options: done, failed (a finding), or the
    perturbed second conversion still running."""

    def __init__(self) -> None:
        self._converted: Dict[str, Tuple[Path, Dict[str, Any]]] = {}
        self._failed: Dict[str, str] = {}  # conversion -> why it is a finding
        self._pending: Dict[str, Tuple[Launched, float, Path, Path]] = {}  # the perturbed conversion's child
        # Off only for trials of a failure the second conversion cannot bear on (``for_trials``).
        self.second_conversion = True

    def convert(self, files: Dict[str, str], options: ExportOptions = ExportOptions()) -> Tuple[Path, Dict[str, Any]]:
        """The program as ONNX (converted once per options, kept beside the program) and what the
        converter did.

        paddle2onnx aborts its process (SIGABRT) on an op it cannot convert, with the op's name
        left in an unflushed buffer: the conversion runs in a forked child, and when it dies the
        program's op types missing from paddle2onnx's own supported list name the op."""
        import onnx

        # Absolute: the conversion's child works in its own folder (a run given as ``--results results``
        # passed relative paths, and the child looked for the program there: measured on the zoo).
        program = Path(files["program"]).resolve()
        if not program.is_file():  # the harness's own gap, never words of the converter's
            raise HarnessFailure(f"no program to convert at {program}")
        key = str(program) + options.suffix()
        self.settle(program, options)  # a use after the first waits for the second conversion
        if key in self._converted:  # every stage and probe of a cell asks for the same program
            return self._converted[key]
        target = program.with_suffix(options.suffix() + ".onnx")
        report = target.with_suffix(".convert.log")
        if not target.exists():
            # The conversion users get, and beside it (on the other core) one whose fresh memory
            # holds other bytes: a converter that reads memory it never wrote shows in the
            # difference. The second is compared when the first stage that uses the ONNX has run
            # (``settle``): nobody waits for it before then.
            deadline = time.monotonic() + CONVERT_TIMEOUT
            params = str(Path(files["params"]).resolve()) if files.get("params") else ""
            keywords = options.keywords()
            plain = launch(_fork_conversion, program=str(program), params=params, target=str(target), log=str(report),
                           keywords=keywords)
            if _glibc() and self.second_conversion:
                perturbed = target.with_suffix(".perturbed.onnx")
                self._pending[key] = (launch(
                    _fork_conversion, program=str(program), params=params, target=str(perturbed),
                    log=str(perturbed.with_suffix(".log")), perturb=PERTURB_BYTE, keywords=keywords),
                    deadline, target, perturbed)
            code = plain.wait(deadline)
            if code != 0 or not target.exists():
                self.settle(program, options, compare=False)
                raise ConversionError(self._why_not(program, code, report.read_text(encoding="utf-8", errors="replace")),
                                      program, options)
        said = [ln for ln in report.read_text(encoding="utf-8").splitlines() if ln.strip()] if report.exists() else []
        model = onnx.load(str(target))
        import paddle2onnx

        evidence = {"converter": f"paddle2onnx {paddle2onnx.__version__}",
                    "opset": max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=None),
                    "converted": graph_evidence(model),
                    "converter_fell_back": [ln.strip() for ln in said if "Fail to" in ln][:3],
                    "converted_twice": key in self._pending}
        if options.keywords():  # what was asked beside what the ONNX says (its opset above)
            evidence["converter_options"] = options.keywords()
        self._converted[key] = (target, evidence)
        return target, evidence

    def settle(self, program: Path, options: ExportOptions = ExportOptions(), compare: bool = True) -> None:
        """The second conversion of ``program`` (under malloc perturbation), once finished,
        compared with the first; a difference is the conversion's finding from now on."""
        import onnx
        import paddle2onnx

        key = str(program) + options.suffix()
        if key in self._pending:
            second, deadline, plain, perturbed = self._pending.pop(key)
            # Nothing to compare with when the conversion users get failed: the second is stopped, not awaited.
            code = second.wait(deadline if compare else time.monotonic())
            if compare and code == 0 and perturbed.exists():
                differs = memory_dependent_values(onnx.load(str(plain)), onnx.load(str(perturbed)))
                if differs:
                    self._failed[key] = (
                        f"{DIFFERS_BY_MEMORY} (paddle2onnx {paddle2onnx.__version__}; converted again with glibc's "
                        f"M_PERTURB filling fresh memory with 0x{PERTURB_BYTE:02x} ^ 0xff): {'; '.join(differs)}")
        if key in self._failed:
            self._converted.pop(key, None)
            raise ConversionError(self._failed[key], program, options)

    @staticmethod
    def _why_not(program: Path, code: int, output: str) -> str:
        import paddle2onnx

        how = f"died by signal {-code}" if code < 0 else f"exited with {code}"
        text = output.splitlines()
        lines = ([ln.strip() for ln in text if "[ERROR]" in ln] or
                 [ln.strip() for ln in text if ln.split(":")[0].endswith(("Error", "Exception"))])
        said = _plain(lines[0]) if lines else "no message"
        missing: List[str] = []
        # Only an abort over unsupported operators is about op coverage; other failures (an
        # attribute a converter rejects) name no missing op.
        if program.suffix == ".json" and "unsupported operators" in said:
            # paddle2onnx 2.x only (1.x, for .pdmodel, has no PIR list)
            from paddle2onnx.paddle2onnx_cpp2py_export import get_all_supported_operators_pir

            supported = set(get_all_supported_operators_pir())
            missing = sorted({op for op in program_op_types(program) if not _listed(op, supported)})
        where = f"{MISSING_SAID}{', '.join(missing)}" if missing else ""
        return f"paddle2onnx {paddle2onnx.__version__}{CONVERTER_SAID} {said}{_HOW_IT_ENDED}{how}){where}"


_CONVERTER: Optional[Converter] = None


def converter() -> Converter:
    """The process's one converter: every runtime reading ONNX shares its conversions."""
    global _CONVERTER
    if _CONVERTER is None:
        _CONVERTER = Converter()
    return _CONVERTER


def judge(runtime: str) -> ConversionJudge:
    """The judge of a failure of ``runtime`` reading this process's converter's files."""
    import paddle2onnx

    return ConversionJudge(f"paddle2onnx {paddle2onnx.__version__}", runtime,
                           converter_said=lambda message: cause_words(message) is not None)


def for_trials(numeric: bool, message: str) -> None:
    """Trials of a failure the converter raised in its own words (it aborted or rejected the program)
    need no second conversion: their question is whether the converter says those words again, and
    an output that depends on memory is not those words. A numeric failure, or one of memory, keeps
    it (measured on the zoo: the second conversion took the other core during every trial)."""
    converter().second_conversion = numeric or DIFFERS_BY_MEMORY in message or CONVERTER_SAID not in message


def cause_words(message: str) -> Optional[str]:
    """A conversion finding's own words (what a reproducer, run alone, prints), or None when the
    message is not one."""
    from ...shared.causes import cause_of

    if DIFFERS_BY_MEMORY in message:
        return cause_of(DIFFERS_BY_MEMORY)
    if CONVERTER_SAID in message:
        return cause_of(message.split(CONVERTER_SAID, 1)[1].split(_HOW_IT_ENDED)[0].split("; op types")[0].strip())[:120]
    return None


def causes(message: str) -> List[str]:
    """One cause per op a conversion finding names as missing from the converter's list (the
    converter's words and the op): a program with two such ops holds two causes, and a piece
    with one of them reproduces that one only. Empty when the message names no op."""
    words = cause_words(message)
    if not words or MISSING_SAID not in message:
        return []
    ops = [op.strip() for op in message.split(MISSING_SAID, 1)[1].split(";")[0].split(",") if op.strip()]
    return [f"{words} ({op})" for op in ops]


def pairing(files: Dict[str, str]) -> Any:
    """How a converted graph's tensors pair with Paddle's predictor's (``layerwise``): paddle2onnx
    2.x names each value after the PIR op that made it and its occurrence in the program; 1.x (and
    OpenVINO's Paddle frontend) keep the legacy variable names."""
    from ...cell.anatomy import layerwise

    program = Path(files["program"])
    if program.suffix != ".json":
        return layerwise.match_by_tensor_name
    program_ops = collections.Counter(layerwise.normalized_op(op) for op in program_op_types(program))
    return lambda base, test: layerwise.match_converted(base, test, program_ops)


def marked_entry(names: Any) -> Optional[DumpedTensor]:
    """The per-tensor table's entry of a converted value named by paddle2onnx 2.x, or None."""
    for name in sorted(names):
        found = P2O_NAME.fullmatch(name)
        if found:
            return DumpedTensor(found.group(1), name, occurrence=int(found.group(2)), output=int(found.group(3)))
    return None


def reproducer_lines(model: str, params: str, options: ExportOptions = ExportOptions()) -> List[str]:
    """A reproducer's conversion: paddle2onnx as the harness called it, twice (the second under
    malloc perturbation); leaves ``onnx_file``."""
    params_path = f"os.path.join(here, {params!r})" if params else '""'
    extra = options.arguments()
    return [
        "import atexit",
        "import subprocess",
        "",
        "import paddle2onnx",
        "",
        f'onnx_file = os.path.join(here, "{CONVERTED}")',
        f"program, params = os.path.join(here, {model!r}), {params_path}",
        "# paddle2onnx aborts the process on an op it cannot convert (its message, then SIGABRT).",
        f"paddle2onnx.export(program, params, onnx_file, enable_onnx_checker=True{extra})",
        "# The same conversion in a process whose fresh memory glibc fills with other bytes",
        f"# (MALLOC_PERTURB_={PERTURB_BYTE}): a converter that reads memory it never wrote writes another file.",
        'again = os.path.join(here, "model.perturbed.onnx")',
        'subprocess.run([sys.executable, "-c", "import sys, paddle2onnx; paddle2onnx.export(*sys.argv[1:4], '
        f'enable_onnx_checker=True{extra})", program, params, again],',
        f'               env=dict(os.environ, MALLOC_PERTURB_="{PERTURB_BYTE}"), check=True, capture_output=True)',
        'with open(onnx_file, "rb") as one, open(again, "rb") as other:',
        '    differs = one.read() != other.read()',
        'if differs:  # a finding, said; the runtime is asked all the same: its own failure, where it has one, follows',
        f'    print("{DIFFERS_BY_MEMORY}: model.onnx and model.perturbed.onnx differ", flush=True)',
        '    # ... and the script exits non-zero, whatever the runtime does (what it printed flushed first)',
        '    atexit.register(lambda: (sys.stdout.flush(), sys.stderr.flush(), os._exit(1)))',
    ]

