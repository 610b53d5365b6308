"""Host side: build the images the matrix names, through the Docker SDK.

``python -m harness images [--paddle V ...] [--device cpu|gpu] [--make-base]`` (``nox -s images``):

* CPU images (``docker/cpu.Dockerfile``): ``[docker].cpu_base`` plus the version's CPU packages
  and the runtime packages its CPU sessions pin (ONNX Runtime, OpenVINO; ``Matrix.runtime_packages``),
  installed offline from wheels the host downloads once into a cache (``pip download``; the
  build itself needs no network). ``--wheels DIR`` uses a folder of wheels you bring instead.
* GPU images (``docker/gpu.Dockerfile``): ``paddle."<version>".gpu_base`` (Paddle's official GPU
  image). Not built on the project's machines: no registry can be reached from them.
* ``--make-base`` builds ``[docker].cpu_base`` itself where no registry is reachable:
  ``debootstrap --variant=minbase`` of Debian bookworm with python3, python3-venv,
  ca-certificates and libgomp1, imported into the engine (needs root and debootstrap).

The build log streams as it comes. Every failure is one line naming what is missing and what to
do (exit 2).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..launch import REPO_ROOT
from ..launch.containers import client_from_env, image_name, sdk
from ..shared.errors import UserError

DOCKERFILES = {"cpu": REPO_ROOT / "docker" / "cpu.Dockerfile", "gpu": REPO_ROOT / "docker" / "gpu.Dockerfile"}
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates", "libgomp1")
# pip's own build requirements of a fresh venv; Paddle's wheel imports fine without more.
CELL_SIDE_PACKAGES = ("setuptools",)


def wheel_cache() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "paddle-harness" / "wheels"


def download_wheels(packages: List[str], folder: Path, log=print) -> Path:
    """The wheels of ``packages`` and their dependencies, downloaded once into ``folder``."""
    stamp = folder / ".complete"
    wanted = "\n".join(sorted(packages)) + "\n"
    if stamp.exists() and stamp.read_text() == wanted:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    log(f"[images] pip download {' '.join(packages)} -> {folder}")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--dest", str(folder),
                           *packages], capture_output=True, text=True)
    if proc.returncode != 0:
        last = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or ["(no output)"]
        raise UserError(f"paddle packages {' '.join(packages)}: pip download failed ({last[0][:200]}); "
                        f"check the versions in the matrix or pass --wheels DIR with the wheels.")
    stamp.write_text(wanted)
    return folder


def _context(dockerfile: Path, wheels: Optional[Path]) -> Path:
    """A build context holding the Dockerfile and the wheels (hard links where possible)."""
    context = Path(tempfile.mkdtemp(prefix="harness-image-"))
    shutil.copy(dockerfile, context / "Dockerfile")
    (context / "wheels").mkdir()
    for wheel in sorted(Path(wheels).glob("*.whl")) if wheels else []:
        target = context / "wheels" / wheel.name
        try:
            os.link(wheel, target)
        except OSError:
            shutil.copy(wheel, target)
    return context


def build(client: Any, tag: str, dockerfile: Path, buildargs: Dict[str, str], wheels: Optional[Path],
          log=print) -> Dict[str, Any]:
    """Build one image, streaming its log; a failed build is a one-line user error."""
    context = _context(dockerfile, wheels)
    started = time.perf_counter()
    try:
        last_error = None
        for chunk in client.api.build(path=str(context), tag=tag, buildargs=buildargs, rm=True, forcerm=True,
                                      decode=True, network_mode="none"):
            if "stream" in chunk:
                text = chunk["stream"].rstrip()
                if text:
                    log(text)
            if "error" in chunk:
                last_error = chunk["error"].strip()
        if last_error:
            raise UserError(f"{dockerfile.relative_to(REPO_ROOT)}: building {tag} failed: {last_error.splitlines()[-1][:300]}; "
                            f"see the build log above.")
    except UserError:
        raise
    except Exception as exc:  # the engine refused the build (bad base, bad argument)
        raise UserError(f"{dockerfile.relative_to(REPO_ROOT)}: building {tag} failed: {str(exc).splitlines()[0][:300]}") from None
    finally:
        shutil.rmtree(context, ignore_errors=True)
    image = client.images.get(tag)
    return {"tag": tag, "id": image.id, "seconds": round(time.perf_counter() - started, 2)}


@dataclasses.dataclass(frozen=True)
class ImagePlan:
    version: str
    device: str
    tag: str
    base: str
    packages: List[str]


def _image_plan(matrix: Any, version: str, device: str) -> ImagePlan:
    docker = matrix.docker
    entry = matrix.version(version)
    tag = image_name(docker["image_prefix"], version, device)
    if device == "cpu":
        packages = list(entry.get("packages") or [])
        if not packages:
            raise UserError(f"{matrix.path}: paddle.\"{version}\".packages: none, so no CPU image can be built.")
        return ImagePlan(version, device, tag, docker["cpu_base"],
                         packages + matrix.runtime_packages(version, "cpu"))  # ONNX Runtime, OpenVINO sessions
    if not entry.get("gpu_base"):
        raise UserError(f"{matrix.path}: paddle.\"{version}\".gpu_base: missing; name Paddle's official GPU "
                        f"image for this version (e.g. paddlepaddle/paddle:{version}-gpu-cuda11.8-cudnn8.9).")
    return ImagePlan(version, device, tag, entry["gpu_base"], [])


def _check_base(client: Any, matrix: Any, plan: ImagePlan) -> None:
    try:
        client.images.get(plan.base)
    except sdk().errors.ImageNotFound:
        hint = ("run `python -m harness images --make-base` (debootstrap) or set [docker].cpu_base"
                if plan.device == "cpu" else "pull it where a registry is reachable (docker pull) or load it "
                "(docker load)")
        raise UserError(f"{matrix.path}: base image {plan.base!r} for {plan.tag} is not in the Docker engine; "
                        f"{hint}.") from None


def make_base(client: Any, tag: str, log=print) -> Dict[str, Any]:
    """Debian bookworm (minbase) with what Paddle's wheel needs, imported into the engine."""
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise UserError("--make-base: debootstrap is not installed; `apt-get install debootstrap` (as root) or "
                        "give [docker].cpu_base an image the engine has.")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="harness-base-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"[images] debootstrap --variant=minbase --include={','.join(BASE_PACKAGES)} bookworm")
        proc = subprocess.run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", "bookworm",
                               str(rootfs)], capture_output=True, text=True)
        if proc.returncode != 0:
            last = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()][-1:] or [""]
            raise UserError(f"--make-base: debootstrap failed ({last[0][:200]}); it needs root and the Debian mirror.")
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repository, _, version = tag.partition(":")
        client.api.import_image(src=str(tarball), repository=repository, tag=version or "latest")
    return {"tag": tag, "seconds": round(time.perf_counter() - started, 2)}


def build_matrix_images(matrix: Any, versions: List[str], devices: List[str], *, wheels: Optional[Path] = None,
                        base: bool = False, log=print) -> List[Dict[str, Any]]:
    """The images of ``versions`` x ``devices``. The base (debootstrap) and each version's wheels are
    fetched at once, in threads: both wait on the network, neither needs the other (measured in
    ``nox -s bench``'s containers bench and the test suite's image setup)."""
    client = client_from_env()
    docker = matrix.docker
    plans = [_image_plan(matrix, version, device) for version in versions for device in devices]
    for plan in plans:  # bad input before any download: a base this run does not make must be there
        if not (base and plan.base == docker["cpu_base"]):
            _check_base(client, matrix, plan)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1 + len(plans)) as pool:
        made = pool.submit(make_base, client, docker["cpu_base"], log) if base else None
        fetched = {plan.tag: pool.submit(download_wheels, [*plan.packages, *CELL_SIDE_PACKAGES],
                                         wheel_cache() / plan.version, log)
                   for plan in plans if wheels is None and plan.packages}
        built = [made.result()] if made is not None else []
        for plan in plans:
            _check_base(client, matrix, plan)
            folder = wheels if wheels is not None else (fetched[plan.tag].result() if plan.tag in fetched else None)
            log(f"[images] building {plan.tag} FROM {plan.base}")
            built.append(build(client, plan.tag, DOCKERFILES[plan.device], {"BASE_IMAGE": plan.base,
                                                                             "PADDLE_PACKAGES": " ".join(plan.packages)},
                               folder, log))
            log(f"[images] {plan.tag}: {built[-1]['id'][:19]} in {built[-1]['seconds']} s")
    return built
