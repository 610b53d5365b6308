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
import itertools
import posixpath
from pathlib import Path
from typing import Dict, Optional

from ..shared.errors import UserError
from .commands import (DIFFERENCES, DRIVER_MARKERS, DRIVER_SCRIPT, MODES, Command, CommandKind, Driver, Plan,
                       Builder, amp_params, clas_model_dir, fifty_one, select_trainer, status_clas, status_ocr,
                       status_step6, status_template, eval_words, recognise_driver, set_params, train_mode_for)
from .config import Layout, TipcConfig, check_values, parse_trainers, split_fields

__all__ = ["DIFFERENCES", "DRIVER_MARKERS", "DRIVER_SCRIPT", "MODES", "Command", "CommandKind", "Driver", "Plan",
           "eval_words", "plan", "recognise_driver"]


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
               Driver.OCR_CURRENT: lambda builder: _plan_ocr(builder, current=True),
               Driver.TEMPLATE: lambda builder: _plan_ocr(builder, template=True)}[driver]
    model_name = config.value(2)
    if not model_name:
        raise UserError(f"{config.where(2)}: model_name is empty; TIPC names its output folder after it.")
    # the template writes every mode's logs into one folder: LOG_PATH="./test_tipc/output"
    log_path = Path(log_root) if driver is Driver.TEMPLATE else Path(log_root) / model_name / mode
    builder = Builder(config, mode, python, Path(repo), log_path, gpu_missing)
    status_format = planner(builder)
    return Plan(driver, config, mode, model_name, config.value(3), python, log_path, builder.commands, status_format)


# ---------------------------------------------------------------------------------
# models repo, tutorials/mobilenetv3_prod/Step6/test_tipc/test_train_inference_python.sh

def _step6_func_inference(builder: Builder, infer: Dict[str, str], model_dir: str, img_dir: str, stem: str,
                 trainer: Optional[str], skip: Optional[str]) -> None:
    """func_inference of the Step6 driver (script lines 69-110)."""
    for use_gpu in split_fields(infer["gpus"], "|"):
        if use_gpu in ("False", "cpu", "True", "gpu"):
            on_gpu = use_gpu in ("True", "gpu")
            for bs in split_fields(infer["bss"], "|"):
                log = f"{builder.log_path}/python_infer_{'gpu' if on_gpu else 'cpu'}_batchsize_{bs}.log"
                text = (f"{builder.python} {infer['py']} {infer['gpu_key']}={use_gpu} "
                        f"{set_params(infer['model_key'], model_dir)} {set_params(infer['bs_key'], bs)} "
                        f"{set_params(infer['img_key'], img_dir)} {set_params(infer['bench_key'], infer['bench'])}")
                why = skip or (f"inference with {infer['gpu_key']}={use_gpu}: {builder.gpu_missing.split(';')[0]}"
                               if on_gpu and builder.gpu_missing else None)
                builder.add(CommandKind.INFER, text, log, trainer=trainer, stem=stem, skip=why)


def _plan_step6(builder: Builder):
    c, mode, log_dir = builder.config, builder.mode, str(builder.log_path)
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

    if mode == "whole_infer":
        # script lines 112-141 (GPUID, the script's 3rd argument, is not taken: no CUDA_VISIBLE_DEVICES)
        save_infer_dir = c.value(20)
        if c.value(25) != "null":
            text = (f"{builder.python} {c.value(25)} {set_params(c.key(21), c.value(24))} "
                    f"{set_params(c.key(20), save_infer_dir)}")
            builder.add(CommandKind.EXPORT, text, f"{log_dir}/export_0.log", stem="export_0", trainer=None,
                  train_mode="normal")
        _step6_func_inference(builder, infer, save_infer_dir, c.value(31), "export_0", None, None)
        return status_step6

    epoch = c.mode_value(6, mode)
    batch = c.mode_value(8, mode)
    for gpu in split_fields(c.value(4), "|"):  # script lines 142-239
        ips, env = "", builder.export_env(gpu)
        if len(gpu) > 15:  # "ips;gpus": multi-machine
            ips, gpu = (split_fields(gpu, ";") + ["", ""])[:2]
            env = (split_fields(gpu, ",") or [""])[0]
        skip = builder.gpu_skip(gpu)
        for trainer in split_fields(c.value(13), "|"):
            autocast = "True" if trainer == "amp_train" else "False"
            run_train, run_export = trainer_py, c.value(22)
            if run_train == "null":
                continue
            nodes = 1 if len(ips) <= 15 else len(split_fields(ips, ","))
            stem = f"{trainer}_gpus_{gpu}_autocast_{autocast}_nodes_{nodes}"
            save_log = f"{log_dir}/{stem}.log"  # a folder named .log: the script's own naming
            tail = (f"{set_params(c.key(7), save_log)} {set_params(c.key(6), epoch)} "
                    f"{set_params(c.key(9), c.value(9))} {set_params(c.key(8), batch)}")
            if len(gpu) <= 2:
                text = f"{builder.python} {run_train} {tail}"
            elif len(ips) <= 15:
                text = f"{builder.python} -m paddle.distributed.launch --gpus={gpu} {run_train} {tail}"
            else:
                text = f"{builder.python} -m paddle.distributed.launch --ips={ips} --gpus={gpu} {run_train} {tail}"
            mode_name = train_mode_for(trainer, run_train)
            builder.add(CommandKind.TRAIN, text, None, own_log=Path(f"{log_dir}/{stem}_train.log"), trainer=trainer, stem=stem,
                  train_mode=mode_name, skip=skip)
            eval_pretrain = set_params(c.key(9), f"{save_log}/{c.value(10)}")
            if c.value(17) != "null":
                builder.env = {"CUDA_VISIBLE_DEVICES": env} if env else dict(builder.env)
                builder.add(CommandKind.EVAL, f"{builder.python} {c.value(17)} {eval_pretrain}",
                      f"{log_dir}/{stem}_eval.log", trainer=trainer, stem=stem, train_mode=mode_name, skip=skip)
            if run_export != "null":
                text = (f"{builder.python} {run_export} {set_params(c.key(21), f'{save_log}/{c.value(10)}')} "
                        f"{set_params(c.key(20), save_log)}")
                builder.add(CommandKind.EXPORT, text, f"{log_dir}/{stem}_export.log", trainer=trainer, stem=stem,
                      train_mode=mode_name, skip=skip)
                if env:
                    builder.env = {"CUDA_VISIBLE_DEVICES": env}
                # the script passes ${train_infer_img_dir}, which it never sets: no image argument
                _step6_func_inference(builder, infer, save_log, "", stem, trainer, skip)
                builder.env = {}
    return status_step6


# ---------------------------------------------------------------------------------
# The 51-line layout: PaddleClas's and PaddleOCR's drivers share the parse (lines 2-51)

@dataclasses.dataclass(frozen=True)
class _Flavour:
    """Which 51-line driver: PaddleClas (not ``ocr``), PaddleOCR's older one, its ``current`` one
    (40c45e2c), or the models repo's ``template``."""

    ocr: bool
    current: bool = False
    template: bool = False


@dataclasses.dataclass(frozen=True)
class _Inference:
    """One func_inference call: what it reads, where its logs go, what it belongs to."""

    model_dir: str
    img_dir: str
    flag_quant: str
    gpu: str
    stem: str
    trainer: Optional[str] = None
    skip: Optional[str] = None
    status_log: bool = False
    ocr_gpus: bool = False


def _func_inference(builder: Builder, values: Dict[str, str], ocr: bool, call: _Inference) -> None:
    """func_inference of PaddleClas (lines 103-161) and PaddleOCR (``ocr_gpus``: the current
    driver's log names carry ``gpus_<gpu>_``, as PaddleClas's do)."""
    for use_gpu in split_fields(values["use_gpu_list"], "|"):
        if use_gpu in ("False", "cpu"):
            _func_inference_cpu(builder, values, ocr, call, use_gpu)
        elif use_gpu in ("True", "gpu"):
            _func_inference_gpu(builder, values, ocr, call, use_gpu)
        # any other use_gpu word: the script echoes "Does not support hardware..." and runs nothing


def _func_inference_cpu(builder: Builder, values: Dict[str, str], ocr: bool, call: _Inference, use_gpu: str) -> None:
    log_dir = str(builder.log_path)
    # the script's four nested loops, in its order
    for mkldnn, threads, bs, precision in itertools.product(
            *(split_fields(values[key], "|") for key in ("use_mkldnn_list", "cpu_threads_list",
                                                     "batch_size_list", "precision_list"))):
        if ocr and mkldnn == "False" and precision == "fp16":
            continue
        if ocr and call.flag_quant == "True" and precision != "int8":
            continue
        common = (f"{set_params(values['cpu_threads_key'], threads)} {set_params(values['infer_model_key'], call.model_dir)} "
                  f"{set_params(values['batch_size_key'], bs)}")
        data = f"{set_params(values['image_dir_key'], call.img_dir)} {set_params(values['benchmark_key'], values['benchmark_value'])}"
        if ocr:
            gpus = f"gpus_{call.gpu}_" if call.ocr_gpus else ""
            log = (f"{log_dir}/python_infer_cpu_{gpus}usemkldnn_{mkldnn}_threads_{threads}_precision_"
                   f"{precision}_batchsize_{bs}.log")
            text = (f"{builder.python} {values['inference_py']} {values['use_gpu_key']}={use_gpu} "
                    f"{set_params(values['use_mkldnn_key'], mkldnn)} {common} {set_params(values['save_log_key'], '')} "
                    f"{data} {set_params(values['precision_key'], precision)} "
                    f"{set_params(values['infer_key1'], values['infer_value1'])}")
        else:
            log = (f"{log_dir}/python_infer_cpu_gpus_{call.gpu}_usemkldnn_{mkldnn}_threads_{threads}_"
                   f"precision_{precision}_batchsize_{bs}.log")
            text = (f"{builder.python} {values['inference_py']} {values['use_gpu_key']}={use_gpu} "
                    f"{values['use_mkldnn_key']}={mkldnn} {common} {data} "
                    f"{set_params(values['infer_key1'], values['infer_value1'])}")
        builder.add(CommandKind.INFER, text, log, log if call.status_log else None, trainer=call.trainer,
              stem=call.stem, skip=call.skip)


def _func_inference_gpu(builder: Builder, values: Dict[str, str], ocr: bool, call: _Inference, use_gpu: str) -> None:
    log_dir = str(builder.log_path)
    why = call.skip or (f"inference with {values['use_gpu_key']}={use_gpu}: {builder.gpu_missing.split(';')[0]}"
                        if builder.gpu_missing else None)
    for trt in split_fields(values["use_trt_list"], "|"):
        for precision in split_fields(values["precision_list"], "|"):
            if not ocr and precision == "True" and trt == "False":
                continue
            if ocr and ((call.flag_quant == "False" and "int8" in precision)
                        or (("fp16" in precision or "int8" in precision) and trt == "False")
                        or (trt == "False" and "int8" in precision and call.flag_quant == "True")):
                continue
            for bs in split_fields(values["batch_size_list"], "|"):
                gpus = "" if ocr and not call.ocr_gpus else f"gpus_{call.gpu}_"
                log = f"{log_dir}/python_infer_gpu_{gpus}usetrt_{trt}_precision_{precision}_batchsize_{bs}.log"
                text = (f"{builder.python} {values['inference_py']} {values['use_gpu_key']}={use_gpu} "
                        f"{set_params(values['use_trt_key'], trt)} {set_params(values['precision_key'], precision)} "
                        f"{set_params(values['infer_model_key'], call.model_dir)} {set_params(values['batch_size_key'], bs)} "
                        f"{set_params(values['image_dir_key'], call.img_dir)} {set_params(values['benchmark_key'], values['benchmark_value'])}")
                if ocr:
                    text += f" {set_params(values['infer_key1'], values['infer_value1'])} {set_params(values['save_log_key'], '')}"
                builder.add(CommandKind.INFER, text, log, log if call.status_log else None, trainer=call.trainer,
                      stem=call.stem, skip=why)


@dataclasses.dataclass(frozen=True)
class _TrainPoint:
    """One trainer at one gpu_list entry and autocast word (the loops of the train branch)."""

    gpu: str
    ips: str
    env: str
    skip: Optional[str]
    train_use_gpu: str
    autocast: str
    trainer: str


@dataclasses.dataclass(frozen=True)
class _Trained:
    """What a train command leaves for the eval and export after it."""

    stem: str
    save_log: str
    nodes: int
    mode_name: str
    weights_dir: str
    set_use_gpu: str


def _train_branch(builder: Builder, values: Dict[str, str], flavour: _Flavour) -> None:
    """The train branch (PaddleClas lines 183-336; PaddleOCR's else-branch; ``current``: PaddleOCR's
    driver at 40c45e2c, whose training commands dropped ``${set_autocast}`` and whose status lines
    carry each command's log)."""
    use_gpu_words = split_fields(values["train_use_gpu_value"], "|")
    for count, gpu in enumerate(split_fields(values["gpu_list"], "|")):
        train_use_gpu = use_gpu_words[count] if count < len(use_gpu_words) else ""
        ips = ""
        env = builder.export_env(gpu)
        if len(gpu) > 15:
            ips, gpu = (split_fields(gpu, ";") + ["", ""])[:2]
        if not flavour.ocr and gpu != "-1" and len(gpu) <= 1:
            builder.env = {"CUDA_VISIBLE_DEVICES": gpu}  # PaddleClas evals env at once for one GPU (line 195)
        skip = builder.gpu_skip(gpu)
        for autocast in split_fields(values["autocast_list"], "|"):
            for trainer in split_fields(values["trainer_list"], "|"):
                _train_one(builder, values, flavour, _TrainPoint(gpu, ips, env, skip, train_use_gpu, autocast, trainer))


def _train_one(builder: Builder, values: Dict[str, str], flavour: _Flavour, point: _TrainPoint) -> None:
    ocr, model_name = flavour.ocr, builder.config.value(2)
    run_train, run_export, quant = select_trainer(values, point.trainer, ocr)
    if run_train == "null":
        return
    gpu, autocast, trainer = point.gpu, point.autocast, point.trainer
    set_use_gpu = set_params(values["train_use_gpu_key"], point.train_use_gpu if ocr else values["train_use_gpu_value"])
    nodes = 1 if len(point.ips) <= 15 else len(split_fields(point.ips, ","))
    stem = f"{trainer}_gpus_{gpu}_autocast_{autocast}"
    save_log = f"{builder.log_path}/{stem}" + (f"_nodes_{nodes}" if (not ocr or nodes > 1) else "")
    text = _train_command(builder, values, flavour, point, run_train, set_use_gpu, save_log)
    if not ocr and any(n in model_name for n in ("CLIP_vit_base_patch16_224",
                                                "SwinTransformer_base_patch4_window7_224_ampo2_ultra")) \
            and autocast in ("amp", "fp16"):
        text += " -o Arch.use_fused_attn=True -o Arch.use_fused_linear=True"
    mode_name = train_mode_for(trainer, run_train, autocast if autocast != "null" else "", values["pact_key"])
    weights_dir = save_log if ocr else f"{save_log}/{clas_model_dir(model_name)}"
    builder.add(CommandKind.TRAIN, text, None, None if ocr and not flavour.current else f"{save_log}.log",
          own_log=Path(f"{save_log}.log" if not ocr or flavour.current else f"{builder.log_path}/{stem}_train.log"),
          trainer=trainer, stem=stem, train_mode=mode_name, skip=point.skip)
    trained = _Trained(stem, save_log, nodes, mode_name, weights_dir, set_use_gpu)
    if values["eval_py"] != "null":
        _eval_after_train(builder, values, flavour, point, trained)
    if run_export != "null":
        _export_after_train(builder, values, flavour, point, trained, run_export, quant)
    if not ocr:
        builder.env = {}  # `unset CUDA_VISIBLE_DEVICES` after every trainer (line 332)


def _train_command(builder: Builder, values: Dict[str, str], flavour: _Flavour, point: _TrainPoint, run_train: str,
                   set_use_gpu: str, save_log: str) -> str:
    ocr, gpu, ips = flavour.ocr, point.gpu, point.ips
    set_autocast = set_params(values["autocast_key"], point.autocast) if ocr else amp_params(point.autocast)
    if flavour.current:
        set_autocast = ""  # gone from its commands: "${set_pretrain}  ${set_batchsize}"
    amp_config = "Global.use_amp=True Global.scale_loss=1024.0 Global.use_dynamic_loss_scaling=True" \
        if point.autocast == "amp" else " "
    args = dict(epoch=set_params(values["epoch_key"], values["epoch_num"]),
                pretrain=set_params(values["pretrain_model_key"], values["pretrain_model_value"]),
                batch=set_params(values["train_batch_key"], values["train_batch_value"]),
                params1=set_params(values["train_param_key1"], values["train_param_value1"]),
                save=set_params(values["save_model_key"], save_log))
    rest = (f"{set_use_gpu} {args['save']} {args['epoch']} {args['pretrain']} {set_autocast} "
            f"{args['batch']} {args['params1']}")
    multi_rest = (f"{set_use_gpu} {args['save']} {args['pretrain']} {args['epoch']} {set_autocast} "
                  f"{args['batch']} {args['params1']}")
    launcher = "--gpus" if ocr else "--devices"
    tail = f" {amp_config}" if ocr else " -o Global.print_mem_info=True"
    log_rank = "" if ocr else " -o Global.log_ranks=0,1,2,3,4,5,6,7"
    if len(gpu) <= 2:
        if ocr:
            return (f"{builder.python} {run_train} {set_use_gpu}  {args['save']} {args['epoch']} "
                    f"{args['pretrain']} {set_autocast} {args['batch']} {args['params1']} {amp_config} ")
        return f"{builder.python} {run_train} {rest}{tail} "
    if len(ips) <= 15:
        return f"{builder.python} -m paddle.distributed.launch {launcher}={gpu} {run_train} {rest}{tail}{log_rank}"
    return (f"{builder.python} -m paddle.distributed.launch --ips={ips} {launcher}={gpu} {run_train} "
            f"{multi_rest}{tail}{log_rank}")


def _eval_after_train(builder: Builder, values: Dict[str, str], flavour: _Flavour, point: _TrainPoint, trained: _Trained) -> None:
    ocr = flavour.ocr
    if ocr and point.env:
        builder.env = {"CUDA_VISIBLE_DEVICES": point.env}
    eval_pretrain = set_params(values["pretrain_model_key"], f"{trained.weights_dir}/{values['train_model_name']}")
    eval_log = f"{builder.log_path}/{point.trainer}_gpus_{point.gpu}_autocast_{point.autocast}_nodes_{trained.nodes}_eval.log"
    text = f"{builder.python} {values['eval_py']} {eval_pretrain} {trained.set_use_gpu} {set_params(values['eval_key1'], values['eval_value1'])}"
    fields = dict(trainer=point.trainer, stem=trained.stem, train_mode=trained.mode_name, skip=point.skip)
    if flavour.template:  # not redirected: TIPC's stdout, kept in the log the harness names
        builder.add(CommandKind.EVAL, text, None, own_log=Path(eval_log), **fields)
    else:
        builder.add(CommandKind.EVAL, text, eval_log, None if ocr and not flavour.current else eval_log,
              trailing_blank=ocr, **fields)


def _export_after_train(builder: Builder, values: Dict[str, str], flavour: _Flavour, point: _TrainPoint, trained: _Trained,
               run_export: str, quant: bool) -> None:
    ocr, model_name = flavour.ocr, builder.config.value(2)
    export_log = f"{builder.log_path}/{point.trainer}_gpus_{point.gpu}_autocast_{point.autocast}_nodes_{trained.nodes}_export.log"
    if ocr or clas_model_dir(model_name) == model_name:
        builder.export_weight = set_params(values["export_weight"], f"{trained.weights_dir}/{values['train_model_name']}")
    # else PaddleClas (lines 314-318) resets set_eval_pretrain and keeps the previous
    # set_export_weight (empty at first): mirrored
    text = f"{builder.python} {run_export} {builder.export_weight} {set_params(values['save_infer_key'], trained.save_log)}"
    fields = dict(trainer=point.trainer, stem=trained.stem, train_mode=trained.mode_name, skip=point.skip)
    if flavour.template:
        builder.add(CommandKind.EXPORT, text, None, own_log=Path(export_log), **fields)
    else:
        builder.add(CommandKind.EXPORT, text, export_log, None if ocr and not flavour.current else export_log,
              trailing_blank=ocr, **fields)
    if point.env:
        builder.env = {"CUDA_VISIBLE_DEVICES": point.env}
    model_dir = trained.save_log
    if ocr and values["inference_dir"] not in ("null", "##"):
        model_dir = f"{trained.save_log}/{values['inference_dir']}"
    if not ocr:
        builder.cwd = builder.repo / "deploy"  # `cd deploy` (PaddleClas line 328)
    _func_inference(builder, values, ocr, _Inference(model_dir, values["train_infer_img_dir"] if ocr else values["infer_img_dir"],
                                        "True" if quant else "False", point.gpu, trained.stem, point.trainer,
                                        point.skip, status_log=not ocr or flavour.current,
                                        ocr_gpus=flavour.current))
    builder.cwd = builder.repo
    if ocr:
        builder.env = {}


def _plan_clas(builder: Builder):
    values = fifty_one(builder, ocr=False)
    if builder.mode != "whole_infer":
        _train_branch(builder, values, _Flavour(ocr=False))
        return status_clas
    # whole_infer: PaddleClas runs only the kl_quant chain (its lines 164-182)
    kl = values["value33"]
    if kl not in ("null", "False"):
        log_dir = str(builder.log_path)
        builder.add(CommandKind.QUANT, f"{builder.python} {kl}", f"{log_dir}/export.log", f"{log_dir}/export.log", trailing_blank=False)
        # `cd ${infer_model_dir_list}/quant_post_static_model` then `cd ../../deploy`: the repository's
        # deploy/ for a model folder one level down, elsewhere for another depth (as bash goes)
        builder.cwd = Path(posixpath.normpath(f"{builder.repo}/{values['infer_model_dir_list']}/quant_post_static_model/../../deploy"))
        model_dir = f"../{values['infer_model_dir_list']}/quant_post_static_model"
        _func_inference(builder, values, False, _Inference(model_dir, values["infer_img_dir"], "True", "0", "kl_quant",
                                               status_log=True))
        builder.cwd = builder.repo
    return status_clas


def _plan_ocr(builder: Builder, current: bool = False, template: bool = False):
    """PaddleOCR's drivers, and the models repo's TIPC template (OCR's older driver with flat
    logs, a three-argument status_check, whole_infer exports saved beside their weights and not
    redirected)."""
    values = fifty_one(builder, ocr=True)
    status = status_template if template else status_ocr
    if builder.mode != "whole_infer":
        # (the template's pact/fpgm trainers start from the norm trainer's weights: not mirrored)
        _train_branch(builder, values, _Flavour(ocr=True, current=current, template=template))
        return status
    log_dir = str(builder.log_path)
    exports = split_fields(values["infer_export"], "|")
    quant_flags = split_fields(values["infer_is_quant"], "|")
    for count, infer_model in enumerate(split_fields(values["infer_model_dir_list"], "|")):
        export = exports[count] if count < len(exports) else ""
        save_dir = infer_model  # what inference reads: the export's save dir, else the listed model
        if export != "null":
            save_dir = posixpath.dirname(infer_model) if template else infer_model
            text = (f"{builder.python} {export} {set_params(values['export_weight'], infer_model)} "
                    f"{set_params(values['save_infer_key'], save_dir)}")
            if template:  # no redirection: its output is TIPC's stdout, kept in a log of the harness's
                builder.add(CommandKind.EXPORT, text, None, own_log=Path(f"{log_dir}/export_{count}.log"), trailing_blank=False,
                      stem=f"export_{count}", train_mode="normal")
            else:
                # the current driver writes "${LOG_PATH}_export_N.log" (no slash) and passes it on
                log = f"{log_dir}_export_{count}.log" if current else f"{log_dir}/_export_{count}.log"
                builder.add(CommandKind.EXPORT, text, log, log if current else None, stem=f"export_{count}", train_mode="normal")
        flag = quant_flags[count] if count < len(quant_flags) else ""
        _func_inference(builder, values, True, _Inference(save_dir, values["infer_img_dir"], flag, "0" if current else "",
                                             f"export_{count}", status_log=current, ocr_gpus=current))
    return status
