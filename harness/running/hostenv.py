"""Host side: facts about this machine that decide what can run (no paddle)."""

from __future__ import annotations

import shutil
import subprocess
from typing import Optional


def gpu_absence_reason() -> Optional[str]:
    """Why GPU sessions cannot run here (no driver, or no GPU), or None when an NVIDIA GPU
    answers. The third need, the engine's NVIDIA container runtime, is the container launcher's
    probe."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ("no NVIDIA driver on this machine (nvidia-smi not found); GPU sessions need an NVIDIA GPU, "
                "its driver and, in containers, the NVIDIA container runtime")
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi did not answer ({exc})"
    if out.returncode != 0 or "GPU" not in out.stdout:
        return f"no NVIDIA GPU: nvidia-smi lists none ({(out.stderr or out.stdout).strip().splitlines()[:1]})"
    return None
