"""ONNX Runtime as a runtime: the saved Paddle program converted by ``paddle2onnx.export``, run
by an ``onnxruntime.InferenceSession`` on the CPU execution provider.

Evidence, read back rather than assumed: the converter's opset, ONNX node counts and op types
before ONNX Runtime's optimizations (the converted graph) and after them (the graph the session
writes to ``optimized_model_filepath``), the execution providers the session really uses, and the
output dtypes. A session whose optimized graph equals the converted one says so (``not_as_claimed``):
the stage that switched the optimizations on is then ``noop``, never a pass.

The conversion runs once per program, in a forked child (the ONNX file is kept beside the program);
what paddle2onnx logged on the way (its optimizer can fail and fall back silently) is kept in the evidence.
A second conversion under glibc's malloc perturbation runs beside it: a converter whose output
depends on memory it never wrote is a finding (``settle``). paddle2onnx 2.x converts PIR programs
(Paddle 3), 1.x the ``.pdmodel`` of Paddle 2.6 (the matrix pins each per Paddle version).
paddle2onnx's optimizer imports Polygraphy with ``POLYGRAPHY_AUTOINSTALL_DEPS=1``, which would
pip-install onnx-graphsurgeon and sympy on the spot: their absence is an unmet requirement here.

Root cause: the search space is what ORT's verbose log says changed the graph (``search_items``);
the per-tensor diff fetches every converted value and pairs it with Paddle's (``tensor_diff``).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import importlib
import os
import re
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ...shared.backends import Requirement, StagePlan
from ...shared.config import PredictorConfig
from .base import Runtime, Session

LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
          "all": "ORT_ENABLE_ALL"}
# What the conversion needs importable, and what Polygraphy would otherwise install by itself.
NEEDED = ("paddle2onnx", "onnx", "onnxruntime", "onnx_graphsurgeon", "sympy")
# A PIR program's feeding and fetching ops: converted by paddle2onnx without being listed.
PLUMBING = {"data", "fetch", "feed", "parameter", "p", "shadow_output", "constant"}  # "p": a parameter
CONVERT_TIMEOUT = 600.0
# paddle2onnx names each value after the Paddle op that made it: ``p2o.<op>.<occurrence>.<output>``.
P2O_NAME = re.compile(r"p2o\.(.+)\.(\d+)\.(\d+)")
# What ONNX Runtime's verbose log says of each graph transformer it applied (1.2x-1.32 wording).
_MODIFIED = re.compile(r"GraphTransformer (\w+) modified: 1")
# The level-1 rule-based transformer applies rewrite rules it does not log one by one; a rule is
# switched off by its own name (``disabled_optimizers``), as a transformer is. ORT ignores a name it
# does not know, so a name missing from this ORT can never come out of the search as a culprit.
RULE_CONTAINER = re.compile(r"Level\d_RuleBasedTransformer")
LEVEL1_RULES = ("EliminateIdentity", "EliminateSlice", "UnsqueezeElimination", "EliminateDropout",
                "ExpandElimination", "CastElimination", "PreShapeNodeElimination", "NoopElimination",
                "DivMulFusion", "FuseReluClip", "GemmSumFusion", "GemmTransposeFusion", "NotWhereFusion",
                "ConvAddFusion", "ConvMulFusion", "ConvBNFusion", "ClipQuantFusion", "ReluQuantFusion",
                "LabelEncoderFusion")


# glibc's mallopt(M_PERTURB, byte): memory malloc hands out is filled with byte ^ 0xff, so a
# converter that reads memory it never wrote reads that instead of whatever happened to be there.
M_PERTURB = -6
PERTURB_BYTE = 0xA5
# The words every finding of that kind carries (the reproducer raises with them too).
DIFFERS_BY_MEMORY = "paddle2onnx's output depends on memory it never wrote"


def _fork_conversion(program: str, params: str, target: str, log: Path, perturb: int = 0) -> int:
    """``paddle2onnx.export`` in a forked child (paddle2onnx aborts its process on what it cannot
    convert; a fork costs no second ``import paddle``), its output to ``log``; the child's pid.
    ``perturb``: the byte glibc fills the child's fresh allocations with (0: untouched)."""
    import paddle2onnx  # imported here, before the fork: the child only converts

    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: nothing here returns
        try:
            fd = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            if perturb:
                import ctypes

                ctypes.CDLL("libc.so.6").mallopt(M_PERTURB, perturb)
            paddle2onnx.export(program, params, target, enable_onnx_checker=True)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
    return pid


def _reap(pid: int, deadline: float) -> int:
    """The child's exit code, negative for a signal; killed (SIGKILL, -9) past ``deadline``."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -signal.SIGKILL
        time.sleep(0.05)


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
    return said[:limit] or (["the files differ"] if plain != perturbed else [])


CONVERTER_SAID = "; it said:"


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


class ConversionError(RuntimeError):
    """paddle2onnx could not convert the program: its words and the op types it does not list."""


def program_op_types(program: Path) -> List[str]:
    """The op names of a PIR ``.json`` program (``"<dialect id>.<name>"`` under ``"#"``)."""
    import json

    names: List[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for op in node.get("ops") or [] if isinstance(node.get("ops"), list) else []:
                if isinstance(op, dict) and isinstance(op.get("#"), str):
                    names.append(op["#"].split(".", 1)[-1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(program.read_text(encoding="utf-8")))
    return names


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """File descriptor 2 (where ONNX Runtime's C++ logger writes) into ``path`` for a while."""
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def _session_options(config: PredictorConfig) -> Tuple[Any, Dict[str, Any]]:
    """The SessionOptions and InferenceSession keywords of a stage's config (``config_calls``
    writes the same as code for reproducers)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[config.ort.level])
    options.intra_op_num_threads = config.ort.threads
    options.inter_op_num_threads = 1
    kwargs = {"disabled_optimizers": list(config.ort.disabled_optimizers)} if config.ort.disabled_optimizers else {}
    return options, kwargs


def _graph_evidence(model: Any) -> Dict[str, Any]:
    ops = [node.op_type for node in model.graph.node]
    return {"nodes": len(ops), "op_types": dict(collections.Counter(ops)),
            "op_sequence_sha1": hashlib.sha1("\n".join(ops).encode()).hexdigest()[:16]}


class OrtSession(Session):
    def __init__(self, session: Any, evidence: Dict[str, Any], settle: Any = None):
        self.session = session
        self.build_evidence = evidence
        self.settle = settle  # raises when the program's second conversion differed

    def input_names(self) -> List[str]:
        return [i.name for i in self.session.get_inputs()]

    def run(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        names = [o.name for o in self.session.get_outputs()]
        wanted = {i.name for i in self.session.get_inputs()}
        outputs = self.session.run(names, {k: v for k, v in feeds.items() if k in wanted})
        return names, [np.asarray(o) for o in outputs]

    def run_with_evidence(self, feeds: Dict[str, np.ndarray]) -> Tuple[List[str], List[np.ndarray], Dict[str, Any]]:
        names, outputs = self.run(feeds)
        if self.settle is not None:
            self.settle()
        dtypes = dict(collections.Counter(str(o.dtype) for o in outputs))
        return names, outputs, {"output_dtypes": dtypes, "providers": self.session.get_providers()}


class OnnxRuntime(Runtime):
    name = "onnxruntime"
    reproducer_imports = "import subprocess\n\nimport onnxruntime as ort\nimport paddle2onnx\n"

    def __init__(self) -> None:
        self._converted: Dict[str, Tuple[Path, Dict[str, Any]]] = {}
        self._failed: Dict[str, str] = {}  # program -> why its conversion is a finding
        self._pending: Dict[str, Tuple[int, float]] = {}  # program -> the perturbed conversion's child

    def unmet(self, requirement: Requirement) -> Optional[str]:
        if requirement is not Requirement.ONNXRUNTIME:
            return None
        from .. import compat

        # Paddle 2.6 writes .pdmodel programs: paddle2onnx 1.x converts them (2.x imports only with
        # Paddle >= 3.0.0.dev20250426); its optimizer does not go through Polygraphy.
        needed = NEEDED if compat.at_least("3.0.0") else ("paddle2onnx", "onnx", "onnxruntime")
        for module in needed:
            try:
                importlib.import_module(module)
            except Exception as exc:  # paddle2onnx raises ValueError on a Paddle it does not support
                return f"{module} cannot be imported here ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        import paddle2onnx

        if not compat.at_least("3.0.0") and not paddle2onnx.__version__.startswith("1."):
            return (f"paddle2onnx {paddle2onnx.__version__} here; Paddle {compat.paddle.__version__}'s .pdmodel "
                    f"programs are converted by paddle2onnx 1.x (the matrix's packages_before pins it)")
        return None

    def convert(self, files: Dict[str, str]) -> Tuple[Path, Dict[str, Any]]:
        """The program as ONNX (converted once, kept beside the program) and what the converter did.

        paddle2onnx aborts its process (SIGABRT) on an op it cannot convert, with the op's name
        left in an unflushed buffer: the conversion runs in a forked child, and when it dies the
        program's op types missing from paddle2onnx's own supported list name the op."""
        import onnx

        program = Path(files["program"])
        self.settle(program)  # a use after the first waits for the second conversion
        if str(program) in self._converted:  # every stage and probe of a cell asks for the same program
            return self._converted[str(program)]
        target = program.with_suffix(".onnx")
        report = target.with_suffix(".convert.log")
        if not target.exists():
            # The conversion users get, and beside it (on the other core) one whose fresh memory
            # holds other bytes: a converter that reads memory it never wrote shows in the
            # difference. The second is compared when the first stage that uses the ONNX has run
            # (``settle``): nobody waits for it before then.
            deadline = time.monotonic() + CONVERT_TIMEOUT
            params = files.get("params") or ""
            pid = _fork_conversion(str(program), params, str(target), report)
            if _glibc():
                perturbed = target.with_suffix(".perturbed.onnx")
                self._pending[str(program)] = (_fork_conversion(
                    str(program), params, str(perturbed), perturbed.with_suffix(".log"), perturb=PERTURB_BYTE), deadline)
            code = _reap(pid, deadline)
            if code != 0 or not target.exists():
                self.settle(program, compare=False)
                raise ConversionError(self._why_not(program, code, report.read_text(encoding="utf-8", errors="replace")))
        said = [ln for ln in report.read_text(encoding="utf-8").splitlines() if ln.strip()] if report.exists() else []
        model = onnx.load(str(target))
        import paddle2onnx

        evidence = {"converter": f"paddle2onnx {paddle2onnx.__version__}",
                    "opset": max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=None),
                    "converted": _graph_evidence(model),
                    "converter_fell_back": [ln.strip() for ln in said if "Fail to" in ln][:3],
                    "converted_twice": str(program) in self._pending}
        self._converted[str(program)] = (target, evidence)
        return target, evidence

    def settle(self, program: Path, compare: bool = True) -> None:
        """The second conversion of ``program`` (under malloc perturbation), once finished,
        compared with the first; a difference is the program's conversion finding from now on."""
        import onnx
        import paddle2onnx

        if str(program) in self._pending:
            pid, deadline = self._pending.pop(str(program))
            code = _reap(pid, deadline)
            perturbed = program.with_suffix(".perturbed.onnx")
            if compare and code == 0 and perturbed.exists():
                differs = memory_dependent_values(onnx.load(str(program.with_suffix(".onnx"))), onnx.load(str(perturbed)))
                if differs:
                    self._failed[str(program)] = (
                        f"{DIFFERS_BY_MEMORY} (paddle2onnx {paddle2onnx.__version__}; converted again with glibc's "
                        f"M_PERTURB filling fresh memory with 0x{PERTURB_BYTE:02x} ^ 0xff): {'; '.join(differs)}")
        if str(program) in self._failed:
            self._converted.pop(str(program), None)
            raise ConversionError(self._failed[str(program)])

    @staticmethod
    def _why_not(program: Path, code: int, output: str) -> str:
        import paddle2onnx

        how = f"signal {-code}" if code < 0 else f"exit {code}"
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
        where = (f"; op types of this program missing from paddle2onnx's supported list: {', '.join(missing)}"
                 if missing else "")
        return f"paddle2onnx {paddle2onnx.__version__} could not convert the program ({how}){CONVERTER_SAID} {said}{where}"

    def session(self, files: Dict[str, str], config: PredictorConfig, feeds: Dict[str, np.ndarray],
                scratch: Path, variants: Sequence[Dict[str, np.ndarray]] = ()) -> OrtSession:
        import onnx
        import onnxruntime as ort

        path, converted = self.convert(files)
        evidence = dict(converted)  # the cached conversion evidence stays as it was
        options, kwargs = _session_options(config)
        optimized = Path(f"{scratch}.optimized.onnx")
        optimized.parent.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(optimized)
        options.log_severity_level = 0  # verbose: the only place ORT says which transformers changed the graph
        log = Path(f"{scratch}.ort.log")
        with _stderr_to(log):
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"], **kwargs)
        applied = list(dict.fromkeys(_MODIFIED.findall(log.read_text(encoding="utf-8", errors="replace"))))
        log.unlink()
        after = _graph_evidence(onnx.load(str(optimized)))
        evidence.update(
            runtime=f"onnxruntime {ort.__version__}", level=LEVELS[config.ort.level],
            # The session's own options (its copy), not the object this code filled in.
            providers=session.get_providers(), config_read_back={
                "graph_optimization_level": str(session.get_session_options().graph_optimization_level),
                "intra_op_num_threads": session.get_session_options().intra_op_num_threads},
            optimized=after, ops=after["nodes"], op_types=after["op_types"], optimizers_applied=applied,
            disabled_optimizers=list(config.ort.disabled_optimizers),
            op_sequence_sha1=after["op_sequence_sha1"])
        if config.ort.level != "disabled" and after["op_sequence_sha1"] == evidence["converted"]["op_sequence_sha1"]:
            evidence["not_as_claimed"] = (f"ONNX Runtime's {LEVELS[config.ort.level]} left the converted graph as it was "
                                     f"({after['nodes']} nodes)")
        return OrtSession(session, evidence, settle=lambda: self.settle(Path(files["program"])))

    def search_items(self, plan: StagePlan, evidence: Dict[str, Any], baseline_evidence: Dict[str, Any]) -> List[str]:
        """The transformers ORT's log says changed the graph, the rule container replaced by its
        rewrite rules (which the log does not name)."""
        applied = evidence.get("optimizers_applied") or []
        items = [name for name in applied if not RULE_CONTAINER.fullmatch(name)]
        if any(RULE_CONTAINER.fullmatch(name) for name in applied):
            items += [rule for rule in LEVEL1_RULES if rule not in items]
        return items

    def without(self, plan: StagePlan, disabled: List[str]) -> PredictorConfig:
        import dataclasses

        return plan.config.replace(ort=dataclasses.replace(plan.config.ort, disabled_optimizers=tuple(disabled)))

    def config_calls(self, files: Dict[str, str], config: PredictorConfig) -> List[str]:
        ort = config.ort
        calls = ["options = ort.SessionOptions()",
                 f"options.graph_optimization_level = ort.GraphOptimizationLevel.{LEVELS[ort.level]}",
                 f"options.intra_op_num_threads = {ort.threads}",
                 "options.inter_op_num_threads = 1"]
        return calls

    def reproducer_lines(self, model: str, params: str, config: PredictorConfig, files: Dict[str, str]) -> str:
        params_path = f"os.path.join(here, {params!r})" if params else '""'
        disabled = config.ort.disabled_optimizers
        return "\n".join([
            'onnx_file = os.path.join(here, "model.onnx")',
            f"program, params = os.path.join(here, {model!r}), {params_path}",
            "# paddle2onnx aborts the process on an op it cannot convert (its message, then SIGABRT).",
            "paddle2onnx.export(program, params, onnx_file, enable_onnx_checker=True)",
            "# The same conversion in a process whose fresh memory glibc fills with other bytes",
            f"# (MALLOC_PERTURB_={PERTURB_BYTE}): a converter that reads memory it never wrote writes another file.",
            'again = os.path.join(here, "model.perturbed.onnx")',
            'subprocess.run([sys.executable, "-c", "import sys, paddle2onnx; paddle2onnx.export(*sys.argv[1:4], '
            'enable_onnx_checker=True)", program, params, again],',
            f'               env=dict(os.environ, MALLOC_PERTURB_="{PERTURB_BYTE}"), check=True, capture_output=True)',
            'with open(onnx_file, "rb") as one, open(again, "rb") as other:',
            '    if one.read() != other.read():',
            f'        raise RuntimeError("{DIFFERS_BY_MEMORY}: model.onnx and model.perturbed.onnx differ")',
            *self.config_calls(files, config),
            "session = ort.InferenceSession(onnx_file, options, providers=[\"CPUExecutionProvider\"]"
            + (f", disabled_optimizers={list(disabled)!r})" if disabled else ")"),
            "names = [o.name for o in session.get_outputs()]",
            "outputs = session.run(names, {i.name: inputs[i.name] for i in session.get_inputs()})",
        ]) + "\n"

    def tensor_diff(self, files: Dict[str, str], feeds: Dict[str, np.ndarray], base: PredictorConfig,
                    test: PredictorConfig, out: Path, tolerance: Dict[str, float]) -> Dict[str, Any]:
        """Paddle's predictor at ``base`` (every op output hooked) against the converted graph at
        ``test`` with every value paddle2onnx named after a Paddle op made a graph output (what
        Polygraphy calls marking all), paired by that name (``layerwise.match_converted``).

        Marking outputs keeps ONNX Runtime from fusing across them: the marked run's final outputs
        are compared with an unmarked session's, and a difference is said (``hooks_changed_output``)."""
        from .. import layerwise

        if Path(files["program"]).suffix == ".json":
            program_ops = collections.Counter(layerwise.normalized_op(op) for op in program_op_types(Path(files["program"])))
            pair = lambda b, t: layerwise.match_converted(b, t, program_ops)  # noqa: E731
        else:  # paddle2onnx 1.x names each value after the legacy Paddle variable it computes
            pair = layerwise.match_by_tensor_name
        return layerwise.diff_against_paddle(files, feeds, base, test, tolerance, out,
                                             lambda folder: self._dump_marked(files, test, feeds, folder, out / "session"),
                                             pair)

    def _dump_marked(self, files: Dict[str, str], config: PredictorConfig, feeds: Dict[str, np.ndarray],
                     out_dir: Path, scratch: Path) -> Dict[str, Any]:
        import onnx
        import onnxruntime as ort

        from .. import layerwise

        plain = self.session(files, config, feeds, scratch)
        _, plain_outputs = plain.run(feeds)
        path, _ = self.convert(files)
        model = onnx.load(str(path))
        legacy = Path(files["program"]).suffix != ".json"
        finals = [o.name for o in model.graph.output]
        marked: List[Tuple[str, str, int, int]] = []  # (value, op, occurrence, output index)
        for node in model.graph.node:
            for value in node.output:
                named = P2O_NAME.fullmatch(value)
                if value in finals or node.op_type == "Constant":
                    continue
                if named and not legacy:  # paddle2onnx 2.x: p2o.<op>.<k>.<output>
                    marked.append((value, named.group(1), int(named.group(2)), int(named.group(3))))
                elif legacy and not value.startswith("p2o."):  # 1.x: the legacy variable's own name
                    marked.append((value, node.op_type, -1, -1))
                else:
                    continue
                model.graph.output.append(onnx.ValueInfoProto(name=value))
        options, kwargs = _session_options(config)  # the stage's own options, outputs marked
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"], **kwargs)
        wanted = {i.name for i in session.get_inputs()}
        got = session.run(finals + [m[0] for m in marked], {k: v for k, v in feeds.items() if k in wanted})
        index = layerwise.save_tensors(out_dir, [({"op": op, "raw": value, "occurrence": k, "output": o}, array)
                                                 for (value, op, k, o), array in zip(marked, got[len(finals):])])
        outputs = [np.asarray(a) for a in got[:len(finals)]]
        return {"index": index, "outputs": outputs, "hooks_changed_output": not layerwise.same_outputs(plain_outputs, outputs)}

    def cause_words(self, message: str) -> str:
        """A conversion the converter aborted: its own words (the harness's sentence around them
        is not what the script prints)."""
        from ...shared.causes import cause_of, stage_cause

        if DIFFERS_BY_MEMORY in message:
            return cause_of(DIFFERS_BY_MEMORY)
        if CONVERTER_SAID in message:
            return cause_of(message.split(CONVERTER_SAID, 1)[1].split("; op types")[0].strip())[:120]
        return stage_cause(message)[:120]
