"""TIPC's vocabulary as types, and what its shell does with a command line (cell of the planner).

The commands a driver plans (``Command``, ``CommandKind``, ``Plan``), the drivers it knows
(``Driver``), ``common_func.sh``'s parameter setting and the word splitting bash applies, the status
lines each driver prints, and the builder that carries cwd and exported variables between commands.
``harness.tipc.plan`` walks a config with them the way each driver script does.
"""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class StatusLine:
    """A driver's ``common_func.sh status_check`` line, byte for byte: ``shape`` between the yellow
    colour and its reset, with ``{word}`` (successfully/failed), ``{model}``, ``{text}``, ``{log}``."""

    shape: str

    def __call__(self, ok: bool, model: str, text: str, log: Optional[str]) -> str:
        word = "successfully" if ok else "failed"
        return f"\033[33m {self.shape.format(word=word, model=model, text=text, log=log or '')}\033[0m"


# models repo Step6 common_func.sh status_check (4 arguments)
status_step6 = StatusLine("Run {word} with command - {model} - {text}!  ")
# PaddleOCR's (5 arguments; its driver up to 038a933 passes 4, so the log field is empty there; the
# current one passes the command's log)
status_ocr = StatusLine("Run {word} with command - {model} - {text} - {log} ")
# the TIPC template's: 3 arguments, "!  " before the colour reset
status_template = StatusLine("Run {word} with command - {text}!  ")
# PaddleClas's: OCR's line with a " !" before the colour reset
status_clas = StatusLine("Run {word} with command - {model} - {text} - {log} ! ")


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

class Builder:
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


# -- the 51-line layout: PaddleClas's and PaddleOCR's drivers share the parse (lines 2-51) ----

def fifty_one(builder: Builder, ocr: bool) -> Dict[str, str]:
    c, mode = builder.config, builder.mode
    reads = {n: "read by the driver" for n in list(range(2, 14)) + list(range(15, 22)) + [24, 25]
             + list(range(28, 36)) + list(range(37, 52))}
    if ocr:
        reads[36] = "inference_dir"
    check_values(c, reads)
    parse_trainers(c, [(n, c.key(n)) for n in range(16, 22)])
    values = {
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
        if not values["epoch_num"]:
            values["epoch_num"] = "2"  # PaddleClas lines 91-96
        if values["train_use_gpu_value"] == "npu":
            values["epoch_num"] = "1"
    return values


def select_trainer(values: Dict[str, str], trainer: str, ocr: bool) -> Tuple[str, str, bool]:
    """(run_train, run_export, flag_quant): PaddleClas lines 210-235, PaddleOCR's equivalent."""
    if trainer == values["pact_key"]:
        return values["pact_trainer"], values["pact_export"], True
    if trainer == values["fpgm_key"]:
        return values["fpgm_trainer"], values["fpgm_export"], False
    if trainer == values["distill_key"]:
        return values["distill_trainer"], values["distill_export"], False
    if trainer == values["key19"]:
        if ocr:  # trainer_key1 runs its own trainer and export_key1's export
            return values["value19"], values["value33"], False
        # to_static_train: the norm trainer plus its -o flag, the norm export (two blanks: theirs)
        return f"{values['norm_trainer']}  {values['value19']}", values["norm_export"], False
    if trainer == values["trainer_key2"]:
        return values["trainer_value2"], values["export_value2"], False
    return values["norm_trainer"], values["norm_export"], False


def amp_params(autocast: str) -> str:
    """PaddleClas common_func.sh func_set_amp_params (its lines 27-37)."""
    if autocast == "fp16":
        return "-o AMP.use_amp=True -o AMP.scale_loss=128 -o AMP.use_dynamic_loss_scaling=True -o AMP.level=O2"
    if autocast == "amp":
        return "-o AMP.use_amp=True -o AMP.scale_loss=128 -o AMP.use_dynamic_loss_scaling=True -o AMP.level=O1"
    return "-o AMP.use_amp=False"


def clas_model_dir(model_name: str) -> str:
    """PaddleClas saves under <output>/<model_name>/, RecModel for two families (its lines 284-296)."""
    return "RecModel" if ("GeneralRecognition" in model_name or "MetaBIN_ResNet50" in model_name) else model_name
