"""Host side: run cell-side children in containers, through the Docker SDK.

One container per child (a cell worker, a hazard probe, a portability load), started from the
session's image with least privilege: no network, every capability dropped, no new privileges,
not privileged, memory and pid limits, an unprivileged user, the repository mounted read-only
and only the run's results folder writable. Paths are mounted at the same absolute paths as on
the host, so records, journals and spec files mean the same on both sides (``path`` is the
identity); with a remote engine (``DOCKER_HOST=ssh://...``) those paths must exist on the engine's
machine too (a shared folder), which this launcher checks by starting nothing else than the child.

Exit codes from a container follow the shell's convention (128 + signal): they are turned into
the negative return codes of a local child, so a segfault is ``SIGSEGV`` wherever it ran.
GPU children get a device request; an engine without the NVIDIA runtime refuses it, which
``probe`` reports in one line.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..shared.errors import UserError
from ..shared.protocol import CELL_ENVIRONMENT, FORK_SAFE_ENVIRONMENT, cell_command
from . import REPO_ROOT

# A container that ends with 128+N died of signal N (137 SIGKILL, 139 SIGSEGV).
SIGNAL_EXIT_BASE = 128
# As root on the host, children still run unprivileged: as this uid/gid in the container, with
# the results folder handed over for the run and given back afterwards.
UNPRIVILEGED = (1000, 1000)
CONTAINER_PYTHON = "python3"
RUN_LABEL = "paddle-harness.results"


def sdk() -> Any:
    """The Docker SDK. The repository's own ``docker/`` folder (Dockerfiles) is a namespace package
    when the repository is on ``sys.path``; the installed SDK wins over it, and without the SDK
    the folder is what ``import docker`` finds: check for the SDK's API, not the import."""
    try:
        import docker
    except ImportError:
        docker = None
    if not hasattr(docker, "from_env"):
        raise UserError("--runner docker: the docker SDK is not installed; `pip install docker` "
                        "(nox sessions install it themselves).")
    return docker


def client_from_env() -> Any:
    """The Docker engine named by ``DOCKER_HOST`` (or the default socket), or a one-line error."""
    docker = sdk()
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # DockerException, requests' ConnectionError, FileNotFoundError...
        where = os.environ.get("DOCKER_HOST", "the default socket (unix:///var/run/docker.sock)")
        raise UserError(f"DOCKER_HOST: no Docker engine answers at {where} ({str(exc).splitlines()[0][:160]}); "
                        f"start dockerd or point DOCKER_HOST at a running engine.") from None
    return client


def gpu_runtime_missing(client: Any) -> Optional[str]:
    """Why this engine cannot give a container a GPU, or None."""
    runtimes = (client.info() or {}).get("Runtimes") or {}
    if "nvidia" not in runtimes:
        return (f"the Docker engine has no NVIDIA container runtime (runtimes: {', '.join(sorted(runtimes)) or 'none'}); "
                f"install nvidia-container-toolkit on the engine's host")
    return None


class ContainerChild:
    """A running container with the ``poll()``/``returncode`` face of a ``subprocess.Popen``."""

    def __init__(self, container: Any, log: Any):
        self.container = container
        self.returncode: Optional[int] = None
        self._done = threading.Event()
        self._log = log
        self._streamer = threading.Thread(target=self._stream, daemon=True)
        self._waiter = threading.Thread(target=self._wait, daemon=True)
        self._streamer.start()
        self._waiter.start()

    def _stream(self) -> None:
        try:
            for chunk in self.container.logs(stream=True, follow=True, stdout=True, stderr=True):
                self._log.write(chunk)
                self._log.flush()
        except Exception:  # the container was removed under the stream (a stop): nothing to add
            pass

    def _wait(self) -> None:
        try:
            code = int(self.container.wait().get("StatusCode", -1))
        except Exception:
            code = -9
        self.returncode = -(code - SIGNAL_EXIT_BASE) if code > SIGNAL_EXIT_BASE else code
        self._done.set()

    def poll(self) -> Optional[int]:
        if not self._done.is_set():
            return None
        self._streamer.join(timeout=5)  # the log's last lines (a crash's tail) land before we read it
        return self.returncode


class DockerLauncher:
    kind = "docker"

    def __init__(self, image: str, writable: Path, *, gpu: bool = False, memory: str = "8g", pids: int = 1024,
                 client: Any = None, repo: Path = REPO_ROOT):
        self.image = image
        self.writable = Path(writable).resolve()
        self.gpu = gpu
        self.memory = memory
        self.pids = pids
        self.repo = Path(repo).resolve()
        self._client = client
        self._image_id: Optional[str] = None
        uid, gid = os.getuid(), os.getgid()
        self.user = UNPRIVILEGED if uid == 0 else (uid, gid)
        self.caller = (uid, gid)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = client_from_env()
        return self._client

    # -- the launcher verbs ------------------------------------------------------
    def probe(self) -> Optional[str]:
        """Why this launcher cannot run here (engine, image, GPU runtime), or None."""
        try:
            client = self.client
        except UserError as exc:
            return str(exc)
        docker = sdk()
        try:
            image = client.images.get(self.image)
        except docker.errors.ImageNotFound:
            return (f"image {self.image!r} is not in the Docker engine; build it with `nox -s images` "
                    f"(or name an image the engine has)")
        self._image_id = image.id
        if self.gpu:
            return gpu_runtime_missing(client)
        return None

    def path(self, host_path: Path) -> str:
        return str(Path(host_path).resolve())

    def grant(self, folder: Path) -> None:
        if self.user != self.caller:
            _chown_tree(Path(folder), *self.user)

    def reclaim(self, folder: Path) -> None:
        if self.user != self.caller:
            _chown_tree(Path(folder), *self.caller)

    def describe(self, fresh: bool = True, preload: Optional[str] = None, preloaded: bool = False) -> Dict[str, Any]:  # every container is a fresh interpreter
        image = self.client.images.get(self.image)
        return {"kind": self.kind, "image": self.image, "image_id": image.id,
                "digests": list(image.attrs.get("RepoDigests") or []), "gpu": self.gpu,
                "user": f"{self.user[0]}:{self.user[1]}", "network": "none"}

    def start(self, args: Sequence[str], log: Any, fresh: bool = True, preload: Optional[str] = None) -> ContainerChild:
        # every container is a fresh interpreter
        docker = sdk()

        self.writable.mkdir(parents=True, exist_ok=True)
        options: Dict[str, Any] = dict(
            command=cell_command(CONTAINER_PYTHON, list(args)),
            detach=True,
            # The worker must not be PID 1: PID 1 of a namespace ignores signals it has no handler
            # for, so a worker killing itself (or a hung one) would not die as it does outside.
            init=True,
            user=f"{self.user[0]}:{self.user[1]}",
            network_mode="none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            privileged=False,
            mem_limit=self.memory,
            pids_limit=self.pids,
            working_dir=str(self.repo),
            # oneDNN's ISA caps are the caller's choice of kernels (a machine without VNNI, reproduced
            # on one with it): the container must compute as a venv of the same caller would.
            environment={"PYTHONPATH": str(self.repo), **CELL_ENVIRONMENT, **FORK_SAFE_ENVIRONMENT, "HOME": "/tmp",
                         "PYTHONDONTWRITEBYTECODE": "1",
                         **{k: os.environ[k] for k in ISA_ENV if k in os.environ}},
            volumes={str(self.repo): {"bind": str(self.repo), "mode": "ro"},
                     str(self.writable): {"bind": str(self.writable), "mode": "rw"}},
            tmpfs={"/tmp": "rw,size=1g"},
            # Whose run it belongs to: a host killed by -9 cannot stop its containers; the next run
            # on the folder, holding its lock, removes them (``reap``).
            labels={RUN_LABEL: str(self.writable)},
        )
        if self.gpu:
            options["device_requests"] = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
        try:
            container = self.client.containers.run(self._image_id or self.image, **options)
        except docker.errors.ImageNotFound:
            raise UserError(f"image {self.image!r} is not in the Docker engine; build it with `nox -s images`.") from None
        except docker.errors.APIError as exc:
            raise UserError(f"{self.image}: the Docker engine refused the container: "
                            f"{exc.explanation or exc}") from None
        return ContainerChild(container, log)

    def stop(self, child: ContainerChild) -> None:
        try:
            child.container.remove(force=True)  # kills it first
        except Exception:
            pass
        child._done.wait(timeout=30)

    def reap(self) -> int:
        """Remove the containers a dead run on this results folder left running (the caller holds
        the folder's lock, so none of them is anybody's now); how many."""
        found = self.client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={self.writable}"})
        for container in found:
            try:
                container.remove(force=True)
            except Exception:
                pass
        return len(found)

    def cleanup(self, child: ContainerChild) -> None:
        try:
            child.container.remove(force=True)
        except Exception:
            pass


ISA_ENV = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_CPU_ISA_HINTS")


def _chown_tree(folder: Path, uid: int, gid: int) -> None:
    if not folder.exists():
        return
    os.chown(folder, uid, gid)
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            try:
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
            except FileNotFoundError:
                pass


def image_name(prefix: str, version: str, device: str) -> str:
    return f"{prefix}:{version}-{device}"


__all__: List[str] = ["DockerLauncher", "client_from_env", "gpu_runtime_missing", "image_name"]
