"""Host side: TIPC's own command plan for one config and mode.

Three drivers are mirrored, each pinned to the script it reads (line numbers are theirs):

* ``step6``: the models repo's ``tutorials/mobilenetv3_prod/Step6/test_tipc/
  test_train_inference_python.sh`` (239 lines) with its ``common_func.sh`` (32-line configs);
* ``clas``: PaddleClas's ``test_tipc/test_train_inference_python.sh`` (336 lines, develop
  branch) with its ``common_func.sh`` (51-line configs);
* ``ocr``: PaddleOCR's ``test_tipc/test_train_inference_python.sh`` at commit 038a933 (51-line
  configs), read, not replayed: the tests replay recordings of the other two only.

A driver builds each command *string* the way the script concatenates it (TIPC's spacing, its
``func_set_params`` blanks, its ``> log 2>&1`` suffix): that string is what
``results_python.log`` records. The argv is what bash's ``eval $cmd`` under ``IFS="|"`` would
split it into (``|`` and blanks separate words), without any other shell processing. What we do
differently, on purpose, is listed in ``DIFFERENCES`` and printed with every plan.
"""

from __future__ import annotations

import dataclasses
import posixpath
import itertools
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..shared.errors import UserError
from ..shared.vocab import Word
from .config import Layout, TipcConfig, check_values, parse_trainers, split_fields

MODES = ("lite_train_lite_infer", "lite_train_whole_infer", "whole_infer", "whole_train_whole_infer")

DIFFERENCES = (
    "no shell: each command runs as an argv list, the words bash's eval $cmd with IFS='|' makes "
    "(split at '|' and blanks, quotes removed, backslash escapes honoured); $variables, command "
    "substitution, globs and redirections in config values are passed literally and listed",
    "LOG_PATH is the run's folder (results/<run>/tipc/<model_name>/<mode>), not "
    "./test_tipc/output/...: the repository receives no harness output; every path TIPC derives "
    "from LOG_PATH (model output dirs, logs) moves with it",
    "the config's python: line is replaced by the Paddle environment's interpreter (--python)",
    "commands that need a GPU (a gpu_list entry other than -1, inference with use_gpu True) are "
    "skipped with the reason on a machine without one, and leave no line in results_python.log",
    "a command's status is its own exit code (PaddleClas's driver records the exit code of "
    "`cat train.log` for training)",
    "PaddleClas's whole_infer kl_quant chain: its `ln -s model.pdmodel inference.pdmodel` links are "
    "not made (they are written into the repository); the inference commands are planned as TIPC's",
    "prepare.sh is not run (it downloads data through a shell): run it once yourself",
    "no `sleep 5` between PaddleClas's commands; a training command's output goes to its own log "
    "file instead of the terminal",
)


class Driver(Word):
    """The bash driver a plan mirrors."""

    STEP6 = "step6"
    CLAS = "clas"
    OCR = "ocr"                  # PaddleOCR's driver up to 038a933
    OCR_CURRENT = "ocr-current"  # PaddleOCR's driver at 40c45e2c: status lines carry the log, no set_autocast
    TEMPLATE = "template"        # the models repo's TIPC template: OCR's older driver writing flat into ./test_tipc/output

    @property
    def layout(self) -> Layout:
        return Layout.STEP6 if self is Driver.STEP6 else Layout.FIFTY_ONE

    @property
    def script(self) -> str:
        return {
            Driver.STEP6: "models repo tutorials/mobilenetv3_prod/Step6/test_tipc/test_train_inference_python.sh",
            Driver.CLAS: "PaddleClas test_tipc/test_train_inference_python.sh",
            Driver.OCR: "PaddleOCR test_tipc/test_train_inference_python.sh (038a933 and before)",
            Driver.OCR_CURRENT: "PaddleOCR test_tipc/test_train_inference_python.sh (40c45e2c)",
            Driver.TEMPLATE: "models repo tutorials/tipc/train_infer_python/template/test/test_train_inference_python.sh (8042c21b)",
        }[self]


# How each driver variant is recognised: lines only it has (all must be present). The repository's
# own test_tipc/test_train_inference_python.sh decides which plan is made.
DRIVER_MARKERS: Dict[Driver, Tuple[str, ...]] = {
    Driver.STEP6: ("NR==1, NR==32{print}", "/python_infer_cpu_batchsize_${batch_size}.log"),
    Driver.CLAS: ("func_set_amp_params", "-o Global.print_mem_info=True", "cd deploy"),
    Driver.OCR: ('set_autocast=$(func_set_params "${autocast_key}" "${autocast}")',
                 "python_infer_cpu_usemkldnn_${use_mkldnn}", '"${LOG_PATH}/_export_${Count}.log"'),
    Driver.OCR_CURRENT: ("python_infer_cpu_gpus_${_gpu}_usemkldnn_${use_mkldnn}", '"${LOG_PATH}_export_${Count}.log"',
                         '"${status_log}" "${model_name}" "${_save_log_path}"'),
    # the template's common_func.sh (read beside the script) prints neither model nor log
    Driver.TEMPLATE: ('LOG_PATH="./test_tipc/output"\n', "save_infer_dir=$(dirname $infer_model)",
                      'Run successfully with command - ${run_command}!  '),
}
DRIVER_SCRIPT = Path("test_tipc") / "test_train_inference_python.sh"


def recognise_driver(script: Path) -> Tuple[Optional[Driver], Driver, List[str]]:
    """(the variant whose every marker the script has, or None; the closest variant; the markers
    of the closest it lacks)."""
    text = script.read_text(encoding="utf-8", errors="replace")
    common = script.parent / "common_func.sh"  # status_check's wording lives there
    if common.is_file():
        text += "\n" + common.read_text(encoding="utf-8", errors="replace")
    found = {d: [m for m in markers if m not in text] for d, markers in DRIVER_MARKERS.items()}
    exact = [d for d, missing in found.items() if not missing]
    closest = min(found, key=lambda d: (len(found[d]) / len(DRIVER_MARKERS[d]), list(Driver).index(d)))
    return (exact[0] if len(exact) == 1 else None), closest, found[closest]


class CommandKind(Word):
    TRAIN = "train"
    EVAL = "eval"
    EXPORT = "export"
    INFER = "infer"
    QUANT = "kl_quant"


@dataclasses.dataclass
class Command:
    kind: CommandKind
    text: str                 # TIPC's command string, as results_python.log records it
    argv: List[str]
    cwd: Path
    log: Path                 # the command's output
    status_log_arg: Optional[str]  # status_check's 5th argument (None: the driver passes 4)
    env: Dict[str, str]       # what TIPC exported for it (CUDA_VISIBLE_DEVICES)
    trainer: Optional[str] = None
    stem: str = ""            # TIPC's name for the loop iteration (<trainer>_gpus_<gpu>_autocast_<x>)
    train_mode: Optional[str] = None  # the harness train mode an export's model was trained in
    skip: Optional[str] = None
    literal: List[str] = dataclasses.field(default_factory=list)

    def as_dict(self) -> Dict[str, object]:
        return {"kind": self.kind.value, "text": self.text, "argv": self.argv, "cwd": str(self.cwd),
                "log": str(self.log), "env": self.env, "trainer": self.trainer, "stem": self.stem,
                "train_mode": self.train_mode, "skip": self.skip, "literal": self.literal}


@dataclasses.dataclass
class Plan:
    driver: Driver
    config: TipcConfig
    mode: str
    model_name: str
    config_python: str
    python: str
    log_path: Path
    commands: List[Command]
    status_format: Callable[[bool, str, str, Optional[str]], str]

    def status_line(self, ok: bool, command: Command) -> str:
        return self.status_format(ok, self.model_name, command.text, command.status_log_arg)


# -- common_func.sh ----------------------------------------------------------------

def set_params(key: str, value: str) -> str:
    """func_set_params: ' ' for a null key or a null/blank/empty value, else key=value."""
    if key == "null":
        return " "
    if value in ("null", " ", ""):
        return " "
    return f"{key}={value}"


# What bash would still act on after quote removal: outside any quotes, globs, tilde/brace
# expansion, comments, control operators and redirections; outside single quotes, parameter and
# command substitution. Such words are passed literally, and each plan lists them.
_UNQUOTED_SPECIAL = set("*?[~{}#;&<>()")
_EXPANDED_IN_DOUBLE = set("$`")
_BLANKS = " \t\n"


def eval_words(text: str) -> Tuple[List[str], List[str]]:
    """The words ``eval $cmd`` runs with ``IFS='|'``, without a shell: ``$cmd`` is split at '|'
    only, eval joins the fields with blanks and parses the result as shell input — blanks separate
    words, quotes are removed (single quotes keep everything, double quotes keep all but ``\\$`"``
    escapes), a backslash outside quotes keeps the next character. Returns the words and, among
    them, those bash would expand further (kept literally here). An unbalanced quote, which makes
    bash's eval fail, raises ValueError."""
    source = text.replace("|", " ")
    words: List[str] = []
    special: List[str] = []
    current: List[str] = []
    in_word, flagged, quote = False, False, None
    i = 0
    while i < len(source):
        c = source[i]
        if quote == "'":
            if c == "'":
                quote = None
            else:
                current.append(c)
        elif quote == '"':
            if c == '"':
                quote = None
            elif c == "\\" and i + 1 < len(source) and source[i + 1] in '$`"\\\n':
                i += 1
                current.append(source[i])
            else:
                flagged = flagged or c in _EXPANDED_IN_DOUBLE
                current.append(c)
        elif c in _BLANKS:
            if in_word:
                words.append("".join(current))
                if flagged:
                    special.append(words[-1])
            current, in_word, flagged = [], False, False
        elif c in "'\"":
            quote, in_word = c, True
        elif c == "\\":
            if i + 1 < len(source):
                i += 1
                current.append(source[i])
            in_word = True
        else:
            flagged = flagged or c in _UNQUOTED_SPECIAL or c in _EXPANDED_IN_DOUBLE
            current.append(c)
            in_word = True
        i += 1
    if quote is not None:
        raise ValueError(f"unbalanced {quote} quote: bash's eval fails on this command")
    if in_word:
        words.append("".join(current))
        if flagged:
            special.append(words[-1])
    return words, special


def _status_step6(ok: bool, model: str, text: str, _log: Optional[str]) -> str:
    # models repo Step6 common_func.sh status_check (4 arguments)
    word = "successfully" if ok else "failed"
    return f"\033[33m Run {word} with command - {model} - {text}!  \033[0m"


def _status_ocr(ok: bool, model: str, text: str, log: Optional[str]) -> str:
    # PaddleOCR common_func.sh status_check (5 arguments; its driver up to 038a933 passes 4, so the
    # log field is empty there; the current one passes the command's log)
    word = "successfully" if ok else "failed"
    return f"\033[33m Run {word} with command - {model} - {text} - {log or ''} \033[0m"


def _status_template(ok: bool, _model: str, text: str, _log: Optional[str]) -> str:
    # the TIPC template's common_func.sh status_check: 3 arguments, "!  " before the colour reset
    word = "successfully" if ok else "failed"
    return f"\033[33m Run {word} with command - {text}!  \033[0m"


def _status_clas(ok: bool, model: str, text: str, log: Optional[str]) -> str:
    # PaddleClas common_func.sh status_check: OCR's line with a " !" before the colour reset
    word = "successfully" if ok else "failed"
    return f"\033[33m Run {word} with command - {model} - {text} - {log or ''} ! \033[0m"


def train_mode_for(trainer: str, run_train: str, autocast: str = "", pact_key: str = "pact_train") -> str:
    """The harness train mode of a TIPC trainer: the model a cell's export came from."""
    if trainer == pact_key or trainer == "pact_train":
        return "pact"
    if autocast in ("amp", "fp16", "True") or trainer == "amp_train":
        level = "O2" if ("O2" in run_train or autocast == "fp16") else "O1"
        return f"amp_{level.lower()}"
    if trainer in ("norm_train", "to_static_train"):
        return "normal"
    return trainer  # fpgm, distill and other trainers: a declared mode named after the trainer


# -- the planner -------------------------------------------------------------------

class _Builder:
    """State a driver carries between commands (cwd and exported variables, as bash does)."""

    def __init__(self, config: TipcConfig, mode: str, python: str, repo: Path, log_path: Path,
                 gpu_missing: Optional[str]):
        self.config, self.mode, self.python, self.repo = config, mode, python, repo
        self.log_path, self.gpu_missing = log_path, gpu_missing
        self.commands: List[Command] = []
        self.env: Dict[str, str] = {}
        self.export_weight = ""
        self.cwd = repo

    def add(self, kind: CommandKind, text: str, log: Optional[str], status_log_arg: Optional[str] = None,
            own_log: Optional[Path] = None, trailing_blank: bool = True, **fields) -> Command:
        suffix = (f" > {log} 2>&1" + (" " if trailing_blank else "")) if log is not None else ""
        body = text
        try:
            argv, literal = eval_words(body)
        except ValueError as exc:
            raise UserError(f"{self.config.path}: a {kind.value} command would not run under TIPC either "
                            f"({exc}): {body.strip()[:200]}; fix the config value.") from None
        command = Command(kind=kind, text=body + suffix, argv=argv, cwd=self.cwd,
                          log=Path(log) if log is not None else own_log, status_log_arg=status_log_arg,
                          env=dict(self.env), literal=literal, **fields)
        self.commands.append(command)
        return command

    def export_env(self, gpu_word: str) -> str:
        """What ``env="export CUDA_VISIBLE_DEVICES=..."`` holds for a gpu_list entry."""
        if gpu_word == "-1":
            return ""
        if len(gpu_word) <= 1:
            return gpu_word
        return split_fields(gpu_word, ",")[0] if len(gpu_word) <= 15 else ""

    def gpu_skip(self, gpu_word: str) -> Optional[str]:
        if gpu_word == "-1" or self.gpu_missing is None:
            return None
        return f"gpu_list entry {gpu_word!r} asks for a GPU: {self.gpu_missing.split(';')[0]}"


def plan(config: TipcConfig, mode: str, *, repo: Path, python: str, log_root: Path,
         driver: "Optional[str | Driver]" = None, gpu_missing: Optional[str] = None) -> Plan:
    if mode not in MODES:
        raise UserError(f"--mode {mode}: not a TIPC mode; one of {', '.join(MODES)}.")
    try:
        driver = Driver(driver) if driver else (Driver.STEP6 if config.layout is Layout.STEP6 else Driver.CLAS)
    except ValueError:
        raise UserError(f"--driver {driver}: unknown; one of {', '.join(d.value for d in Driver)}.") from None
    if config.layout is not driver.layout:
        fitting = ", ".join(d.value for d in Driver if d.layout is config.layout)
        raise UserError(f"{config.path}: a {config.layout} config, but --driver {driver} reads the {driver.layout} "
                        f"layout; drop --driver or pick {fitting}.")
    planner = {Driver.STEP6: _plan_step6, Driver.CLAS: _plan_clas, Driver.OCR: _plan_ocr,
               Driver.OCR_CURRENT: lambda b: _plan_ocr(b, current=True),
               Driver.TEMPLATE: lambda b: _plan_ocr(b, template=True)}[driver]
    model_name = config.value(2)
    if not model_name:
        raise UserError(f"{config.where(2)}: model_name is empty; TIPC names its output folder after it.")
    # the template writes every mode's logs into one folder: LOG_PATH="./test_tipc/output"
    log_path = Path(log_root) if driver is Driver.TEMPLATE else Path(log_root) / model_name / mode
    b = _Builder(config, mode, python, Path(repo), log_path, gpu_missing)
    status_format = planner(b)
    return Plan(driver, config, mode, model_name, config.value(3), python, log_path, b.commands, status_format)


# ---------------------------------------------------------------------------------
# models repo, tutorials/mobilenetv3_prod/Step6/test_tipc/test_train_inference_python.sh

def _plan_step6(b: _Builder):
    c, mode, L = b.config, b.mode, str(b.log_path)
    # script lines 15-61: which config line feeds which variable (1-based config lines)
    reads = {2: "model_name", 3: "python", 4: "gpu_list", 5: "train use_gpu", 6: "epochs", 7: "save model key",
             8: "batch size", 9: "pretrained", 10: "train_model_name", 11: "data path", 13: "trainer",
             14: "trainer", 15: "nodes", 17: "eval", 20: "save_inference_dir", 21: "export weight key",
             22: "norm_export", 24: "train_model", 25: "infer_export", 27: "inference", 28: "use_gpu list",
             29: "batch sizes", 30: "model dir key", 31: "image dir", 32: "benchmark"}
    check_values(c, reads)
    trainer_py = c.value(14)
    parse_trainers(c, [(14, c.key(14))])
    infer = dict(py=c.value(27), gpu_key=c.key(28), gpus=c.value(28), bs_key=c.key(29), bss=c.value(29),
                 model_key=c.key(30), img_key=c.key(31), bench_key=c.key(32), bench=c.value(32))

    def inference(model_dir: str, img_dir: str, stem: str, trainer: Optional[str], skip: Optional[str]):
        # func_inference (script lines 69-110)
        for use_gpu in split_fields(infer["gpus"], "|"):
            if use_gpu in ("False", "cpu", "True", "gpu"):
                on_gpu = use_gpu in ("True", "gpu")
                for bs in split_fields(infer["bss"], "|"):
                    log = f"{L}/python_infer_{'gpu' if on_gpu else 'cpu'}_batchsize_{bs}.log"
                    text = (f"{b.python} {infer['py']} {infer['gpu_key']}={use_gpu} "
                            f"{set_params(infer['model_key'], model_dir)} {set_params(infer['bs_key'], bs)} "
                            f"{set_params(infer['img_key'], img_dir)} {set_params(infer['bench_key'], infer['bench'])}")
                    why = skip or (f"inference with {infer['gpu_key']}={use_gpu}: {b.gpu_missing.split(';')[0]}"
                                   if on_gpu and b.gpu_missing else None)
                    b.add(CommandKind.INFER, text, log, trainer=trainer, stem=stem, skip=why)

    if mode == "whole_infer":
        # script lines 112-141 (GPUID, the script's 3rd argument, is not taken: no CUDA_VISIBLE_DEVICES)
        save_infer_dir = c.value(20)
        if c.value(25) != "null":
            text = (f"{b.python} {c.value(25)} {set_params(c.key(21), c.value(24))} "
                    f"{set_params(c.key(20), save_infer_dir)}")
            b.add(CommandKind.EXPORT, text, f"{L}/export_0.log", stem="export_0", trainer=None,
                  train_mode="normal")
        inference(save_infer_dir, c.value(31), "export_0", None, None)
        return _status_step6

    epoch = c.mode_value(6, mode)
    batch = c.mode_value(8, mode)
    for gpu in split_fields(c.value(4), "|"):  # script lines 142-239
        ips, env = "", b.export_env(gpu)
        if len(gpu) > 15:  # "ips;gpus": multi-machine
            ips, gpu = (split_fields(gpu, ";") + ["", ""])[:2]
            env = (split_fields(gpu, ",") or [""])[0]
        skip = b.gpu_skip(gpu)
        for trainer in split_fields(c.value(13), "|"):
            autocast = "True" if trainer == "amp_train" else "False"
            run_train, run_export = trainer_py, c.value(22)
            if run_train == "null":
                continue
            nodes = 1 if len(ips) <= 15 else len(split_fields(ips, ","))
            stem = f"{trainer}_gpus_{gpu}_autocast_{autocast}_nodes_{nodes}"
            save_log = f"{L}/{stem}.log"  # a folder named .log: the script's own naming
            tail = (f"{set_params(c.key(7), save_log)} {set_params(c.key(6), epoch)} "
                    f"{set_params(c.key(9), c.value(9))} {set_params(c.key(8), batch)}")
            if len(gpu) <= 2:
                text = f"{b.python} {run_train} {tail}"
            elif len(ips) <= 15:
                text = f"{b.python} -m paddle.distributed.launch --gpus={gpu} {run_train} {tail}"
            else:
                text = f"{b.python} -m paddle.distributed.launch --ips={ips} --gpus={gpu} {run_train} {tail}"
            mode_name = train_mode_for(trainer, run_train)
            b.add(CommandKind.TRAIN, text, None, own_log=Path(f"{L}/{stem}_train.log"), trainer=trainer, stem=stem,
                  train_mode=mode_name, skip=skip)
            eval_pretrain = set_params(c.key(9), f"{save_log}/{c.value(10)}")
            if c.value(17) != "null":
                b.env = {"CUDA_VISIBLE_DEVICES": env} if env else dict(b.env)
                b.add(CommandKind.EVAL, f"{b.python} {c.value(17)} {eval_pretrain}",
                      f"{L}/{stem}_eval.log", trainer=trainer, stem=stem, train_mode=mode_name, skip=skip)
            if run_export != "null":
                text = (f"{b.python} {run_export} {set_params(c.key(21), f'{save_log}/{c.value(10)}')} "
                        f"{set_params(c.key(20), save_log)}")
                b.add(CommandKind.EXPORT, text, f"{L}/{stem}_export.log", trainer=trainer, stem=stem,
                      train_mode=mode_name, skip=skip)
                if env:
                    b.env = {"CUDA_VISIBLE_DEVICES": env}
                # the script passes ${train_infer_img_dir}, which it never sets: no image argument
                inference(save_log, "", stem, trainer, skip)
                b.env = {}
    return _status_step6


# ---------------------------------------------------------------------------------
# The 51-line layout: PaddleClas's and PaddleOCR's drivers share the parse (lines 2-51)

def _fifty_one(b: _Builder, ocr: bool) -> Dict[str, str]:
    c, mode = b.config, b.mode
    reads = {n: "read by the driver" for n in list(range(2, 14)) + list(range(15, 22)) + [24, 25]
             + list(range(28, 36)) + list(range(37, 52))}
    if ocr:
        reads[36] = "inference_dir"
    check_values(c, reads)
    parse_trainers(c, [(n, c.key(n)) for n in range(16, 22)])
    v = {
        "gpu_list": c.value(4), "train_use_gpu_key": c.key(5), "train_use_gpu_value": c.value(5),
        "autocast_list": c.value(6), "autocast_key": c.key(6), "epoch_key": c.key(7),
        # PaddleClas calls func_parser_params without the mode (its line 23): never a match
        "epoch_num": c.mode_value(7, mode) if ocr else c.mode_value(7, ""),
        "save_model_key": c.key(8), "train_batch_key": c.key(9),
        "train_batch_value": c.mode_value(9, mode) if ocr else c.value(9),
        "pretrain_model_key": c.key(10), "pretrain_model_value": c.value(10), "train_model_name": c.value(11),
        "train_infer_img_dir": c.value(12), "train_param_key1": c.key(13), "train_param_value1": c.value(13),
        "trainer_list": c.value(15), "trainer_norm": c.key(16), "norm_trainer": c.value(16),
        "pact_key": c.key(17), "pact_trainer": c.value(17), "fpgm_key": c.key(18), "fpgm_trainer": c.value(18),
        "distill_key": c.key(19), "distill_trainer": c.value(19),
        "key19": c.key(20), "value19": c.value(20), "trainer_key2": c.key(21), "trainer_value2": c.value(21),
        "eval_py": c.value(24), "eval_key1": c.key(25), "eval_value1": c.value(25),
        "save_infer_key": c.key(28), "export_weight": c.key(29), "norm_export": c.value(30),
        "pact_export": c.value(31), "fpgm_export": c.value(32), "distill_export": c.value(33),
        "key33": c.key(34), "value33": c.value(34), "export_key2": c.key(35), "export_value2": c.value(35),
        "inference_dir": c.value(36), "infer_model_dir_list": c.value(37), "infer_export": c.value(38),
        "infer_is_quant": c.value(39), "inference_py": c.value(40),
        "use_gpu_key": c.key(41), "use_gpu_list": c.value(41), "use_mkldnn_key": c.key(42),
        "use_mkldnn_list": c.value(42), "cpu_threads_key": c.key(43), "cpu_threads_list": c.value(43),
        "batch_size_key": c.key(44), "batch_size_list": c.value(44), "use_trt_key": c.key(45),
        "use_trt_list": c.value(45), "precision_key": c.key(46), "precision_list": c.value(46),
        "infer_model_key": c.key(47), "image_dir_key": c.key(48), "infer_img_dir": c.value(48),
        "save_log_key": c.key(49), "benchmark_key": c.key(50), "benchmark_value": c.value(50),
        "infer_key1": c.key(51), "infer_value1": c.value(51),
    }
    if not ocr:
        if not v["epoch_num"]:
            v["epoch_num"] = "2"  # PaddleClas lines 91-96
        if v["train_use_gpu_value"] == "npu":
            v["epoch_num"] = "1"
    return v


def _select_trainer(v: Dict[str, str], trainer: str, ocr: bool) -> Tuple[str, str, bool]:
    """(run_train, run_export, flag_quant): PaddleClas lines 210-235, PaddleOCR's equivalent."""
    if trainer == v["pact_key"]:
        return v["pact_trainer"], v["pact_export"], True
    if trainer == v["fpgm_key"]:
        return v["fpgm_trainer"], v["fpgm_export"], False
    if trainer == v["distill_key"]:
        return v["distill_trainer"], v["distill_export"], False
    if trainer == v["key19"]:
        if ocr:  # trainer_key1 runs its own trainer and export_key1's export
            return v["value19"], v["value33"], False
        # to_static_train: the norm trainer plus its -o flag, the norm export (two blanks: theirs)
        return f"{v['norm_trainer']}  {v['value19']}", v["norm_export"], False
    if trainer == v["trainer_key2"]:
        return v["trainer_value2"], v["export_value2"], False
    return v["norm_trainer"], v["norm_export"], False


def _amp_params(autocast: str) -> str:
    """PaddleClas common_func.sh func_set_amp_params (its lines 27-37)."""
    if autocast == "fp16":
        return "-o AMP.use_amp=True -o AMP.scale_loss=128 -o AMP.use_dynamic_loss_scaling=True -o AMP.level=O2"
    if autocast == "amp":
        return "-o AMP.use_amp=True -o AMP.scale_loss=128 -o AMP.use_dynamic_loss_scaling=True -o AMP.level=O1"
    return "-o AMP.use_amp=False"


def _inference_51(b: _Builder, v: Dict[str, str], ocr: bool, model_dir: str, img_dir: str, flag_quant: str,
                  gpu: str, stem: str, trainer: Optional[str], skip: Optional[str], status_log: bool,
                  ocr_gpus: bool = False) -> None:
    """func_inference of PaddleClas (lines 103-161) and PaddleOCR (``ocr_gpus``: the current
    driver's log names carry ``gpus_<gpu>_``, as PaddleClas's do)."""
    L = str(b.log_path)
    sp = set_params
    for use_gpu in split_fields(v["use_gpu_list"], "|"):
        if use_gpu in ("False", "cpu"):
            # the script's four nested loops, in its order
            for mkldnn, threads, bs, precision in itertools.product(
                    *(split_fields(v[key], "|") for key in ("use_mkldnn_list", "cpu_threads_list",
                                                             "batch_size_list", "precision_list"))):
                if ocr and mkldnn == "False" and precision == "fp16":
                    continue
                if ocr and flag_quant == "True" and precision != "int8":
                    continue
                common = (f"{sp(v['cpu_threads_key'], threads)} {sp(v['infer_model_key'], model_dir)} "
                          f"{sp(v['batch_size_key'], bs)}")
                data = f"{sp(v['image_dir_key'], img_dir)} {sp(v['benchmark_key'], v['benchmark_value'])}"
                if ocr:
                    gpus = f"gpus_{gpu}_" if ocr_gpus else ""
                    log = (f"{L}/python_infer_cpu_{gpus}usemkldnn_{mkldnn}_threads_{threads}_precision_"
                           f"{precision}_batchsize_{bs}.log")
                    text = (f"{b.python} {v['inference_py']} {v['use_gpu_key']}={use_gpu} "
                            f"{sp(v['use_mkldnn_key'], mkldnn)} {common} {sp(v['save_log_key'], '')} "
                            f"{data} {sp(v['precision_key'], precision)} "
                            f"{sp(v['infer_key1'], v['infer_value1'])}")
                else:
                    log = (f"{L}/python_infer_cpu_gpus_{gpu}_usemkldnn_{mkldnn}_threads_{threads}_"
                           f"precision_{precision}_batchsize_{bs}.log")
                    text = (f"{b.python} {v['inference_py']} {v['use_gpu_key']}={use_gpu} "
                            f"{v['use_mkldnn_key']}={mkldnn} {common} {data} "
                            f"{sp(v['infer_key1'], v['infer_value1'])}")
                b.add(CommandKind.INFER, text, log, log if status_log else None, trainer=trainer,
                      stem=stem, skip=skip)
        elif use_gpu in ("True", "gpu"):
            why = skip or (f"inference with {v['use_gpu_key']}={use_gpu}: {b.gpu_missing.split(';')[0]}" if b.gpu_missing else None)
            for trt in split_fields(v["use_trt_list"], "|"):
                for precision in split_fields(v["precision_list"], "|"):
                    if not ocr and precision == "True" and trt == "False":
                        continue
                    if ocr and ((flag_quant == "False" and "int8" in precision)
                                or (("fp16" in precision or "int8" in precision) and trt == "False")
                                or (trt == "False" and "int8" in precision and flag_quant == "True")):
                        continue
                    for bs in split_fields(v["batch_size_list"], "|"):
                        gpus = "" if ocr and not ocr_gpus else f"gpus_{gpu}_"
                        log = f"{L}/python_infer_gpu_{gpus}usetrt_{trt}_precision_{precision}_batchsize_{bs}.log"
                        text = (f"{b.python} {v['inference_py']} {v['use_gpu_key']}={use_gpu} "
                                f"{sp(v['use_trt_key'], trt)} {sp(v['precision_key'], precision)} "
                                f"{sp(v['infer_model_key'], model_dir)} {sp(v['batch_size_key'], bs)} "
                                f"{sp(v['image_dir_key'], img_dir)} {sp(v['benchmark_key'], v['benchmark_value'])}")
                        if ocr:
                            text += f" {sp(v['infer_key1'], v['infer_value1'])} {sp(v['save_log_key'], '')}"
                        b.add(CommandKind.INFER, text, log, log if status_log else None, trainer=trainer,
                              stem=stem, skip=why)
        # any other use_gpu word: the script echoes "Does not support hardware..." and runs nothing


def _train_chain_51(b: _Builder, v: Dict[str, str], ocr: bool, current: bool = False, template: bool = False) -> None:
    """The train branch (PaddleClas lines 183-336; PaddleOCR's else-branch; ``current``: PaddleOCR's
    driver at 40c45e2c, whose training commands dropped ``${set_autocast}`` and whose status lines
    carry each command's log)."""
    L, sp, model_name = str(b.log_path), set_params, b.config.value(2)
    use_gpu_words = split_fields(v["train_use_gpu_value"], "|")
    for count, gpu in enumerate(split_fields(v["gpu_list"], "|")):
        train_use_gpu = use_gpu_words[count] if count < len(use_gpu_words) else ""
        ips = ""
        env = b.export_env(gpu)
        if len(gpu) > 15:
            ips, gpu = (split_fields(gpu, ";") + ["", ""])[:2]
        if not ocr and gpu != "-1" and len(gpu) <= 1:
            b.env = {"CUDA_VISIBLE_DEVICES": gpu}  # PaddleClas evals env at once for one GPU (line 195)
        skip = b.gpu_skip(gpu)
        for autocast in split_fields(v["autocast_list"], "|"):
            amp_config = "Global.use_amp=True Global.scale_loss=1024.0 Global.use_dynamic_loss_scaling=True" \
                if autocast == "amp" else " "
            for trainer in split_fields(v["trainer_list"], "|"):
                run_train, run_export, quant = _select_trainer(v, trainer, ocr)
                if run_train == "null":
                    continue
                set_autocast = sp(v["autocast_key"], autocast) if ocr else _amp_params(autocast)
                if current:
                    set_autocast = ""  # gone from its commands: "${set_pretrain}  ${set_batchsize}"
                set_use_gpu = sp(v["train_use_gpu_key"], train_use_gpu if ocr else v["train_use_gpu_value"])
                nodes = 1 if len(ips) <= 15 else len(split_fields(ips, ","))
                stem = f"{trainer}_gpus_{gpu}_autocast_{autocast}"
                save_log = f"{L}/{stem}" + (f"_nodes_{nodes}" if (not ocr or nodes > 1) else "")
                args = dict(epoch=sp(v["epoch_key"], v["epoch_num"]),
                            pretrain=sp(v["pretrain_model_key"], v["pretrain_model_value"]),
                            batch=sp(v["train_batch_key"], v["train_batch_value"]),
                            params1=sp(v["train_param_key1"], v["train_param_value1"]),
                            save=sp(v["save_model_key"], save_log))
                rest = (f"{set_use_gpu} {args['save']} {args['epoch']} {args['pretrain']} {set_autocast} "
                        f"{args['batch']} {args['params1']}")
                multi_rest = (f"{set_use_gpu} {args['save']} {args['pretrain']} {args['epoch']} {set_autocast} "
                              f"{args['batch']} {args['params1']}")
                launcher = "--gpus" if ocr else "--devices"
                tail = f" {amp_config}" if ocr else " -o Global.print_mem_info=True"
                log_rank = "" if ocr else " -o Global.log_ranks=0,1,2,3,4,5,6,7"
                if len(gpu) <= 2:
                    if ocr:
                        text = (f"{b.python} {run_train} {set_use_gpu}  {args['save']} {args['epoch']} "
                                f"{args['pretrain']} {set_autocast} {args['batch']} {args['params1']} {amp_config} ")
                    else:
                        text = f"{b.python} {run_train} {rest}{tail} "
                elif len(ips) <= 15:
                    text = f"{b.python} -m paddle.distributed.launch {launcher}={gpu} {run_train} {rest}{tail}{log_rank}"
                else:
                    text = (f"{b.python} -m paddle.distributed.launch --ips={ips} {launcher}={gpu} {run_train} "
                            f"{multi_rest}{tail}{log_rank}")
                if not ocr and any(n in model_name for n in ("CLIP_vit_base_patch16_224",
                                                            "SwinTransformer_base_patch4_window7_224_ampo2_ultra")) \
                        and autocast in ("amp", "fp16"):
                    text += " -o Arch.use_fused_attn=True -o Arch.use_fused_linear=True"
                mode_name = train_mode_for(trainer, run_train, autocast if autocast != "null" else "", v["pact_key"])
                weights_dir = save_log if ocr else f"{save_log}/{_clas_model_dir(model_name)}"
                b.add(CommandKind.TRAIN, text, None, None if ocr and not current else f"{save_log}.log",
                      own_log=Path(f"{save_log}.log" if not ocr or current else f"{L}/{stem}_train.log"),
                      trainer=trainer, stem=stem, train_mode=mode_name, skip=skip)
                eval_pretrain = sp(v["pretrain_model_key"], f"{weights_dir}/{v['train_model_name']}")
                if v["eval_py"] != "null":
                    if ocr and env:
                        b.env = {"CUDA_VISIBLE_DEVICES": env}
                    eval_log = f"{L}/{trainer}_gpus_{gpu}_autocast_{autocast}_nodes_{nodes}_eval.log"
                    text = f"{b.python} {v['eval_py']} {eval_pretrain} {set_use_gpu} {sp(v['eval_key1'], v['eval_value1'])}"
                    if template:  # not redirected: TIPC's stdout, kept in the log the harness names
                        b.add(CommandKind.EVAL, text, None, own_log=Path(eval_log), trainer=trainer, stem=stem,
                              train_mode=mode_name, skip=skip)
                    else:
                        b.add(CommandKind.EVAL, text, eval_log, None if ocr and not current else eval_log,
                              trailing_blank=ocr, trainer=trainer, stem=stem, train_mode=mode_name, skip=skip)
                if run_export != "null":
                    export_log = f"{L}/{trainer}_gpus_{gpu}_autocast_{autocast}_nodes_{nodes}_export.log"
                    if ocr or _clas_model_dir(model_name) == model_name:
                        b.export_weight = sp(v["export_weight"], f"{weights_dir}/{v['train_model_name']}")
                    # else PaddleClas (lines 314-318) resets set_eval_pretrain and keeps the previous
                    # set_export_weight (empty at first): mirrored
                    text = f"{b.python} {run_export} {b.export_weight} {sp(v['save_infer_key'], save_log)}"
                    if template:
                        b.add(CommandKind.EXPORT, text, None, own_log=Path(export_log), trainer=trainer, stem=stem,
                              train_mode=mode_name, skip=skip)
                    else:
                        b.add(CommandKind.EXPORT, text, export_log, None if ocr and not current else export_log,
                              trailing_blank=ocr, trainer=trainer, stem=stem, train_mode=mode_name, skip=skip)
                    if env:
                        b.env = {"CUDA_VISIBLE_DEVICES": env}
                    model_dir = save_log
                    if ocr and v["inference_dir"] not in ("null", "##"):
                        model_dir = f"{save_log}/{v['inference_dir']}"
                    if not ocr:
                        b.cwd = b.repo / "deploy"  # `cd deploy` (PaddleClas line 328)
                    _inference_51(b, v, ocr, model_dir, v["train_infer_img_dir"] if ocr else v["infer_img_dir"],
                                  "True" if quant else "False", gpu, stem, trainer, skip,
                                  status_log=not ocr or current, ocr_gpus=current)
                    b.cwd = b.repo
                    if ocr:
                        b.env = {}
                if not ocr:
                    b.env = {}  # `unset CUDA_VISIBLE_DEVICES` after every trainer (line 332)


def _clas_model_dir(model_name: str) -> str:
    """PaddleClas saves under <output>/<model_name>/, RecModel for two families (its lines 284-296)."""
    return "RecModel" if ("GeneralRecognition" in model_name or "MetaBIN_ResNet50" in model_name) else model_name


def _plan_clas(b: _Builder):
    v = _fifty_one(b, ocr=False)
    if b.mode != "whole_infer":
        _train_chain_51(b, v, ocr=False)
        return _status_clas
    # whole_infer: PaddleClas runs only the kl_quant chain (its lines 164-182)
    kl = v["value33"]
    if kl not in ("null", "False"):
        L = str(b.log_path)
        b.add(CommandKind.QUANT, f"{b.python} {kl}", f"{L}/export.log", f"{L}/export.log", trailing_blank=False)
        # `cd ${infer_model_dir_list}/quant_post_static_model` then `cd ../../deploy`: the repository's
        # deploy/ for a model folder one level down, elsewhere for another depth (as bash goes)
        b.cwd = Path(posixpath.normpath(f"{b.repo}/{v['infer_model_dir_list']}/quant_post_static_model/../../deploy"))
        model_dir = f"../{v['infer_model_dir_list']}/quant_post_static_model"
        _inference_51(b, v, False, model_dir, v["infer_img_dir"], "True", "0", "kl_quant", None, None,
                      status_log=True)
        b.cwd = b.repo
    return _status_clas


def _plan_ocr(b: _Builder, current: bool = False, template: bool = False):
    """PaddleOCR's drivers, and the models repo's TIPC template (OCR's older driver with flat
    logs, a three-argument status_check, whole_infer exports saved beside their weights and not
    redirected)."""
    v = _fifty_one(b, ocr=True)
    status = _status_template if template else _status_ocr
    if b.mode != "whole_infer":
        # (the template's pact/fpgm trainers start from the norm trainer's weights: not mirrored)
        _train_chain_51(b, v, ocr=True, current=current, template=template)
        return status
    L = str(b.log_path)
    exports = split_fields(v["infer_export"], "|")
    quant_flags = split_fields(v["infer_is_quant"], "|")
    for count, infer_model in enumerate(split_fields(v["infer_model_dir_list"], "|")):
        export = exports[count] if count < len(exports) else ""
        save_dir = infer_model  # what inference reads: the export's save dir, else the listed model
        if export != "null":
            save_dir = posixpath.dirname(infer_model) if template else infer_model
            text = (f"{b.python} {export} {set_params(v['export_weight'], infer_model)} "
                    f"{set_params(v['save_infer_key'], save_dir)}")
            if template:  # no redirection: its output is TIPC's stdout, kept in a log of the harness's
                b.add(CommandKind.EXPORT, text, None, own_log=Path(f"{L}/export_{count}.log"), trailing_blank=False,
                      stem=f"export_{count}", train_mode="normal")
            else:
                # the current driver writes "${LOG_PATH}_export_N.log" (no slash) and passes it on
                log = f"{L}_export_{count}.log" if current else f"{L}/_export_{count}.log"
                b.add(CommandKind.EXPORT, text, log, log if current else None, stem=f"export_{count}", train_mode="normal")
        flag = quant_flags[count] if count < len(quant_flags) else ""
        _inference_51(b, v, True, save_dir, v["infer_img_dir"], flag, "0" if current else "", f"export_{count}",
                      None, None, status_log=current, ocr_gpus=current)
    return status
