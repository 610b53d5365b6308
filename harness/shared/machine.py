"""The machine a cell ran on, as far as it changes numbers.

oneDNN picks its kernels by the CPU's instruction set: int8 without VNNI and bf16 without
AVX512-BF16/AMX take other code paths with other numerics (measured: the PACT test model under
oneDNN int8 is 35% of the output's scale off on one CPU and within the int8 tolerance on a VNNI
one). Two people running the same matrix can get different verdicts; the record must say why.
So every record carries:

* the CPU model and the instruction-set flags that change numerics (``/proc/cpuinfo``);
* the ISA oneDNN itself chose (``dnnl_get_effective_cpu_isa``, read by the cell side from the
  oneDNN library Paddle ships; it honours ``ONEDNN_MAX_CPU_ISA``, which the flags do not);
* cores (online and usable by this process), the environment variables that pin threads or
  ISAs, OS, kernel, libc and Python;
* a short ``key`` over what changes numerics (CPU model, those flags, oneDNN's ISA): records with
  the same key came from machines that compute the same; ``regress`` and the reports compare it.

Standard library only: the cell side describes the machine from inside its container, the host
side from outside when a worker died before it could say anything.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
from typing import Dict, List, Optional
from .json_types import JsonMapping, JsonObject

# The /proc/cpuinfo flags whose presence changes which kernels oneDNN (and MKL) run.
NUMERIC_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
                 "amx_bf16", "amx_int8", "amx_tile", "amx_fp16")
# Environment variables that change kernels or thread counts of the process that computes.
NUMERIC_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA",
               "ONEDNN_CPU_ISA_HINTS", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "FLAGS_use_mkldnn")


def _cpuinfo(path: str = "/proc/cpuinfo") -> Dict[str, str]:
    """The first processor's fields (every core of these machines is the same model)."""
    fields: Dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def _os_name() -> Optional[str]:
    try:
        with open("/etc/os-release", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def _in_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        with open("/proc/1/cgroup", encoding="utf-8") as handle:
            return bool(re.search(r"docker|containerd|kubepods|libpod", handle.read()))
    except OSError:
        return False


def numeric_key(cpu_model: Optional[str], flags: List[str], onednn_isa: Optional[str]) -> str:
    text = "|".join([cpu_model or "?", ",".join(sorted(flags)), onednn_isa or "-"])
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def describe(onednn: Optional[JsonObject] = None, seen_from: str = "cell") -> JsonObject:
    """This machine, as one record block. ``onednn`` is what the cell side read from Paddle's
    oneDNN (``{"isa": ..., "version": ...}``), None where oneDNN was not asked (host side)."""
    info = _cpuinfo()
    present = set(info.get("flags", "").split())
    flags = [f for f in NUMERIC_FLAGS if f in present]
    model = info.get("model name") or platform.processor() or None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    libc = platform.libc_ver()
    isa = (onednn or {}).get("isa")
    return {
        "cpu": model,
        "vendor": info.get("vendor_id"),
        "arch": platform.machine(),
        "flags": flags,
        "onednn": onednn,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "env": {k: os.environ[k] for k in NUMERIC_ENV if k in os.environ},
        "os": _os_name(),
        "kernel": platform.release(),
        "libc": "-".join(p for p in libc if p) or None,
        "python": platform.python_version(),
        "container": _in_container(),
        "seen_from": seen_from,
        "key": numeric_key(model, flags, isa),
    }


def label(machine: Optional[JsonMapping]) -> str:
    """One line a person reads: CPU, the numeric flags, oneDNN's ISA, cores."""
    if not machine:
        return "unknown machine (the record predates machine facts)"
    parts = [machine.get("cpu") or "unknown CPU"]
    flags = machine.get("flags") or []
    parts.append("flags " + (" ".join(flags) if flags else "none of " + "/".join(NUMERIC_FLAGS[:5])))
    onednn = machine.get("onednn") or {}
    if onednn.get("isa"):
        # oneDNN's version is Paddle's (each release bundles its own): the record keeps it; the
        # machine line names the ISA, which is the machine's.
        parts.append(f"oneDNN isa {onednn['isa']}")
    parts.append(f"{machine.get('usable_cores')}/{machine.get('cores')} cores")
    if machine.get("env"):
        parts.append(" ".join(f"{k}={v}" for k, v in sorted(machine["env"].items())))
    if machine.get("container"):
        parts.append("in a container")
    return ", ".join(parts)


def has(machine: Optional[JsonMapping], *flags: str) -> bool:
    """Whether the recorded machine had every one of ``flags`` (cpuinfo flags)."""
    return bool(machine) and all(f in (machine.get("flags") or []) for f in flags)


def onednn_isa(machine: Optional[JsonMapping]) -> Optional[str]:
    return ((machine or {}).get("onednn") or {}).get("isa")
