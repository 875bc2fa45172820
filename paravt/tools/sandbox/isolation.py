"""The python tool's isolation POLICY: which isolation this host offers, what the sandbox sees
(what is mounted, the environment, the workdir) and the argv that launches it (bubblewrap,
unshare, or bare rlimits). The process side (spawning, the wire, timeouts, closing) is
`paravt.tools.sandbox.runtime`; the in-sandbox side (uid drop, rlimits, seccomp filter, the
worker/supervisor split) is `paravt.tools.sandbox.runner`.

What holds (with bubblewrap; without it the runtime refuses to start unless ``weak_isolation``):
- Filesystem: a fresh root with ONLY what Python needs bound read-only — ``/usr`` (and the
  ``/lib*``, ``/bin`` links), the interpreter's prefix, the virtualenv, the ``paravt`` package and
  the episode's video (at ``/video/<name>``). The rest of the host (home directories, other
  datasets, /etc, the working tree's other files, /tmp) does not exist inside. The root and
  ``/dev`` are re-mounted read-only; the only writable place is a private size-capped tmpfs at
  ``/tmp``.
- Network: an empty network namespace (no interfaces but a down loopback: connects fail).
- Processes: a new PID namespace (host processes are invisible), a new session; the whole
  sandbox dies with its parent and is killed (SIGKILL to the process group; the PID namespace
  takes every descendant with it) on a wall-time timeout.
- Namespaces and mounts: the runner's seccomp filter refuses new namespaces (a nested user
  namespace could mount a tmpfs beyond RLIMIT_AS) and mounts; non-root callers also get bwrap's
  ``--disable-userns``. (As root, bwrap's user namespace would map the sandbox to host uid 0,
  which the kernel exempts from RLIMIT_NPROC, so it is not used.)
- Environment: cleared (``--clearenv``); only a few fixed variables are set.
- Limits (hard rlimits the code cannot raise): address space, process count, CPU seconds, file
  size, open files; stdout is capped; shown images are capped in number and size.
- Protocol: the model's code runs in a worker that never holds the pipes to this process; the
  runner's supervisor re-checks its replies, and `SandboxRuntime.run` caps them again.
- Identity: when the parent is root, the runner drops to a random unprivileged uid/gid after
  startup (the kernel does not apply RLIMIT_NPROC to root, and a non-root uid cannot regain
  root: bwrap mounts are nosuid and it sets no_new_privs).

Weak modes (``weak_isolation=True`` only; a loud warning is logged): ``unshare`` gives network
and PID namespaces (the runner is the namespace's init and is SIGKILLed when ``unshare`` dies, so
no descendant survives); the uid drop, seccomp filter, rlimits, clean environment and a private
work dir still apply. What they do NOT give (docs/tools.md, "Threat model"): the host filesystem
is readable wherever the sandbox uid can read and writable wherever it can write (host /tmp and
/dev/shm are shared between trajectories and with the host); host AF_UNIX sockets in readable
paths can be connected to (the network namespace covers only IP); files in /dev/shm are not
counted by RLIMIT_AS (memory past the cap); ``rlimits`` (neither tool) adds no namespace at all
(network and host processes visible). The standard library is pre-imported before the uid drop
(`preload`: a list in every mode, the whole standard library in the weak modes), so honest code
imports the same modules as under bubblewrap.

Seccomp: `SECCOMP_DENIED` names the syscalls the runner's filter refuses (it builds the BPF).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).with_name("runner.py")
#: refused with EPERM in every mode (plus clone with CLONE_NEW* flags; clone3 gets ENOSYS so libc
#: falls back to clone): no new namespaces (a nested user namespace could mount a tmpfs beyond
#: RLIMIT_AS) and no mounts.
SECCOMP_DENIED = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
)
WEAK_REFUSAL = (
    "the python tool refuses to run without bubblewrap (isolation here: {mode}); install it "
    "(apt-get install -y bubblewrap) or opt into the weak sandbox explicitly "
    "(serve-tools --python-weak-isolation / PythonTool(weak_isolation=True))"
)


@dataclass(frozen=True)
class SandboxLimits:
    """Per-runtime limits. Defaults: 2 GiB address space, 64 processes/threads, 10 s wall and
    10 s CPU per call, 120 s CPU per episode, 16 MiB files, 64 MiB tmpfs, 8,000 output chars,
    8 shown images of ≤ 224×224 pixels each."""

    memory_bytes: int = 2 << 30
    max_processes: int = 64
    wall_s: float = 10.0
    cpu_call_s: int = 10
    cpu_total_s: int = 120
    max_file_bytes: int = 16 << 20
    tmpfs_bytes: int = 64 << 20
    max_open_files: int = 256
    max_output_chars: int = 8000
    max_images: int = 8
    image_max_pixels: int = 224 * 224
    startup_s: float = 20.0


@dataclass(frozen=True)
class VideoBinding:
    path: str  # host path (bound read-only)
    info: dict[str, Any]  # VideoInfo as a dict
    max_frames: int = 16
    max_pixels: int = 224 * 224
    size_factor: int = 32


def isolation_mode() -> str:
    """ "bwrap", "unshare" or "rlimits" — the strongest isolation available on this host."""
    if shutil.which("bwrap"):
        return "bwrap"
    if shutil.which("unshare"):
        return "unshare"
    return "rlimits"


def _python_paths() -> list[str]:
    """Host directories the sandboxed interpreter needs (prefix, venv, paravt package)."""
    import paravt

    paths = {sys.base_prefix, sys.prefix, str(Path(paravt.__file__).resolve().parent)}
    exe = Path(sys.executable).resolve()
    paths.add(str(exe.parent.parent))
    return sorted(p for p in paths if not p.startswith("/usr/") and p != "/usr")


def _paravt_root() -> str:
    """The directory holding the parent's ``paravt`` package (bound, and first on the runner's
    sys.path, so the sandbox decodes with the same code even when an editable install points
    elsewhere)."""
    import paravt

    return str(Path(paravt.__file__).resolve().parent.parent)


def _bwrap_args(workdir: str, video: VideoBinding | None, limits: SandboxLimits) -> list[str]:
    args = ["bwrap", "--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    # the private /tmp comes BEFORE the binds: a checkout under /tmp (a CI clone) stays visible
    args += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--perms",
        "1777",
        "--size",
        str(limits.tmpfs_bytes),
        "--tmpfs",
        "/tmp",
    ]
    binds = [(p, p) for p in _python_paths()]
    if video is not None:
        binds.append((video.path, video_mount(video.path)))
    args += _ro_binds(binds)
    # Nested user namespaces (a private tmpfs escapes RLIMIT_AS) are refused by the runner's
    # seccomp filter in every mode. A non-root caller's bwrap runs in a user namespace anyway, so
    # it also gets --disable-userns; as root bwrap must NOT map the sandbox uid to root (the kernel
    # exempts uid 0 from RLIMIT_NPROC): the runner drops to a random host uid instead.
    userns = [] if os.getuid() == 0 else ["--unshare-user", "--disable-userns"]
    args += [
        "--remount-ro",
        "/",
        "--remount-ro",
        "/dev",
        *userns,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--chdir",
        workdir,
    ]
    for key, value in child_env(workdir).items():
        args += ["--setenv", key, value]
    return args + ["--"]


def _ro_binds(binds: list[tuple[str, str]]) -> list[str]:
    """bwrap's read-only binds (source, destination). bwrap would create missing parents with the
    host's modes (/root is 0700): they are made traversable explicitly, or the unprivileged uid
    cannot reach the bound directory."""
    args: list[str] = []
    made: set[str] = set()
    for src, dest in binds:
        for parent in reversed(Path(dest).parents[:-1] if len(Path(dest).parents) > 1 else []):
            if str(parent) not in made and not str(parent).startswith("/usr"):
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", src, dest]
    return args


def video_mount(path: str) -> str:
    return "/video/" + Path(path).name


def child_env(workdir: str) -> dict[str, str]:
    return {
        "HOME": workdir,
        "TMPDIR": workdir,
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    host_tmp: str | None = None
    cfg: dict[str, Any] = field(default_factory=dict)


def plan_launch(video: VideoBinding | None, limits: SandboxLimits, mode: str) -> Launch:
    uid = gid = None
    if os.getuid() == 0:
        uid = gid = (1 << 20) + secrets.randbelow(1 << 29)  # random: per-sandbox NPROC accounting
    host_tmp = None
    if mode == "bwrap":
        workdir = "/tmp"
        video_path = video_mount(video.path) if video else None
    else:
        host_tmp = tempfile.mkdtemp(prefix="paravt-py-")
        if uid is not None:
            os.chown(host_tmp, uid, -1 if gid is None else gid)
        os.chmod(host_tmp, 0o700)
        workdir = host_tmp
        video_path = video.path if video else None
    lim = {
        "memory_bytes": limits.memory_bytes,
        "max_processes": limits.max_processes,
        "max_file_bytes": limits.max_file_bytes,
        "max_open_files": limits.max_open_files,
        "cpu_total_s": limits.cpu_total_s,
    }
    cfg = {
        "uid": uid,
        "gid": gid,
        "workdir": workdir,
        "limits": lim,
        "video": video_path,
        "info": video.info if video else None,
        "video_max_frames": video.max_frames if video else 0,
        "video_max_pixels": video.max_pixels if video else 0,
        "size_factor": video.size_factor if video else 32,
        "cpu_call_s": limits.cpu_call_s,
        "max_output_chars": limits.max_output_chars,
        "max_images": limits.max_images,
        "image_max_pixels": limits.image_max_pixels,
        "paravt_root": _paravt_root(),
        "seccomp_deny": list(SECCOMP_DENIED),
    }
    py = [sys.executable, "-I", str(RUNNER), json.dumps(cfg)]
    if mode == "bwrap":
        argv = _bwrap_args(workdir, video, limits) + py
    elif mode == "unshare":
        # a PID namespace whose init (the runner) is SIGKILLed when unshare dies: no descendant
        # (a setsid grandchild included) outlives the runtime
        user = [] if os.getuid() == 0 else ["--map-root-user"]
        argv = [
            "unshare",
            *user,
            "--net",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "--",
        ] + py
    else:
        argv = py
    return Launch(argv, child_env(workdir), host_tmp, cfg)


__all__ = [
    "RUNNER",
    "SECCOMP_DENIED",
    "WEAK_REFUSAL",
    "Launch",
    "SandboxLimits",
    "VideoBinding",
    "child_env",
    "isolation_mode",
    "plan_launch",
    "video_mount",
]
