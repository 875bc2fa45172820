"""The program that runs INSIDE the python tool's sandbox (one process per episode).

It is started by `paravt.tools.sandbox.runtime.SandboxRuntime` with one JSON argument (limits, the
bound video's path and info). Startup order matters for isolation:

1. import numpy / PIL (and later our decoder) while still privileged enough to read them;
2. keep the protocol pipes on private fds and point fds 0, 1, 2 at /dev/null, so code that writes
   to the raw fds cannot corrupt the protocol;
3. drop to the sandbox uid/gid when started as root in the weak (no bubblewrap) modes (bubblewrap
   sets the uid itself), then set hard rlimits that the model's code cannot raise again;
4. fork: the WORKER runs the model's code and holds only a private pipe pair to the SUPERVISOR
   (this process, non-dumpable so the worker cannot ptrace it or open its fds); the supervisor
   alone holds the host's protocol fds, and re-validates and re-caps every reply it relays;
5. answer requests: ``{"id", "code"}`` → ``{"id", "ok", "stdout", "error", "images": [shapes]}``
   followed by the raw uint8 bytes of each shown image.

Wire format (both ways): 4-byte big-endian length + JSON, then the blobs the JSON declares.
A forged reply from the model's code reaches the supervisor, which caps it; the host parent caps
and checks every byte it reads again (`paravt.tools.sandbox.runtime`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import resource
import signal
import struct
import sys
import traceback
from typing import Any

import numpy as np
from PIL import Image

_HEADER = struct.Struct(">I")
_MAX_FRAME = 4 << 20


def _read_exact(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        b = os.read(fd, n - got)
        if not b:
            raise EOFError
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def _send(fd: int, header: dict[str, Any], blobs: list[bytes]) -> None:
    body = json.dumps(header).encode()
    data = _HEADER.pack(len(body)) + body + b"".join(blobs)
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _CappedText(io.TextIOBase):
    """stdout/stderr replacement: keeps the first ``cap`` characters, counts the rest."""

    def __init__(self, cap: int) -> None:
        self.parts: list[str] = []
        self.cap, self.size, self.dropped = cap, 0, 0

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        room = self.cap - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(len(s), room)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def text(self) -> str:
        out = "".join(self.parts)
        return out + (f"\n…[{self.dropped} more characters truncated]" if self.dropped else "")


class VideoHandle:
    """Read-only handle to the episode's video: ``info`` (dict) and ``frames(start, end, n)``."""

    def __init__(
        self, path: str, info: dict[str, Any], max_frames: int, max_pixels: int, factor: int
    ):
        self._path, self.info = path, dict(info)
        self._max_frames, self._max_pixels, self._factor = max_frames, max_pixels, factor

    def frames(self, start: float, end: float, n: int = 8) -> np.ndarray:
        """``n`` frames (≤ max_frames) sampled uniformly over [start, end] s, clamped to the video;
        uint8 array n×H×W×3. Timestamps: ``frames_with_times``."""
        return self.frames_with_times(start, end, n)[0]

    def frames_with_times(
        self, start: float, end: float, n: int = 8
    ) -> tuple[np.ndarray, list[float]]:
        from paravt.video import sample_frames  # our decoder, imported on first use

        s = max(0.0, float(start))
        e = min(float(self.info["duration"]), float(end))
        if not e > s:
            raise ValueError(
                f"window [{start}, {end}] is empty inside the video [0, {self.info['duration']}]"
            )
        n = max(1, min(int(n), self._max_frames))
        fr = sample_frames(
            self._path, s, e, nframes=n, max_pixels=self._max_pixels, size_factor=self._factor
        )
        return np.array(fr.array), list(fr.timestamps)


class _Shown:
    def __init__(self, max_images: int, max_pixels: int) -> None:
        self.max_images, self.max_pixels = max_images, max_pixels
        self.images: list[np.ndarray] = []

    def show(self, img: Any) -> None:
        """Show an image to the model (H×W×3 or H×W uint8 array, float in [0, 1], or PIL image)."""
        if len(self.images) >= self.max_images:
            print(f"[show: limit of {self.max_images} images reached; image dropped]")
            return
        arr = np.asarray(img)
        if arr.dtype != np.uint8:
            arr = np.clip(
                arr.astype(np.float64) * (255.0 if arr.max(initial=0) <= 1.0 else 1.0), 0, 255
            ).astype(np.uint8)
        if arr.ndim == 4 and arr.shape[0] == 1:
            arr = arr[0]
        if arr.ndim == 2:
            arr = np.stack([arr] * 3, axis=-1)
        if arr.ndim != 3 or arr.shape[2] not in (3, 4) or min(arr.shape[:2]) < 1:
            raise ValueError(f"show() needs an H×W×3 image, got shape {arr.shape}")
        pil = Image.fromarray(np.ascontiguousarray(arr[..., :3]))
        h, w = arr.shape[:2]
        if self.images:  # one Frames array: later images take the first one's size
            th, tw = self.images[0].shape[:2]
        else:
            scale = min(1.0, (self.max_pixels / (h * w)) ** 0.5)
            th, tw = max(1, int(h * scale)), max(1, int(w * scale))
        if (th, tw) != (h, w):
            pil = pil.resize((tw, th), Image.Resampling.BILINEAR)
        self.images.append(np.ascontiguousarray(np.asarray(pil, dtype=np.uint8)))


def _drop_privileges(uid: int | None, gid: int | None) -> None:
    if uid is None or os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(gid if gid is not None else uid)
    os.setuid(uid)  # as root this sets real, effective and saved uid: no way back


def _set_limits(lim: dict[str, int]) -> None:
    pairs = {
        resource.RLIMIT_AS: lim["memory_bytes"],
        resource.RLIMIT_NPROC: lim["max_processes"],
        resource.RLIMIT_FSIZE: lim["max_file_bytes"],
        resource.RLIMIT_NOFILE: lim["max_open_files"],
        resource.RLIMIT_CPU: lim["cpu_total_s"],
        resource.RLIMIT_CORE: 0,
    }
    for res, value in pairs.items():
        resource.setrlimit(res, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too-large writes fail with EFBIG instead


def _run_code(code: str, env: dict[str, Any]) -> None:
    """exec ``code`` in ``env``; a trailing expression's repr is printed (like a notebook)."""
    tree = ast.parse(code, "<python>", "exec")
    last = None
    if tree.body and isinstance(tail := tree.body[-1], ast.Expr):
        tree.body.pop()
        last = ast.Expression(tail.value)
    exec(compile(tree, "<python>", "exec"), env)
    if last is not None:
        value = eval(compile(last, "<python>", "eval"), env)
        if value is not None:
            print(repr(value))


def _handle(
    req: dict[str, Any], env: dict[str, Any], cfg: dict[str, Any], my_pid: int
) -> tuple[dict, list[bytes]]:
    shown = _Shown(cfg["max_images"], cfg["image_max_pixels"])
    env["show"] = shown.show
    out = _CappedText(cfg["max_output_chars"])
    error = None
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime)
    soft = min(spent + int(cfg["cpu_call_s"]) + 1, cfg["limits"]["cpu_total_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (soft, cfg["limits"]["cpu_total_s"]))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            _run_code(str(req.get("code", "")), env)
    except BaseException as exc:  # noqa: BLE001 - the model's code may raise anything
        if os.getpid() != my_pid:
            os._exit(0)  # a child the code forked must never answer on the protocol pipe
        if isinstance(exc, SystemExit):
            error = f"SystemExit({exc.code})"
        else:
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next  # hide the runner's own frames: the model sees only its code
            lines = traceback.format_exception(type(exc), exc, tb)
            error = "".join(lines[-6:])[-2000:]
    finally:
        if os.getpid() != my_pid:
            os._exit(0)
    header = {
        "id": req.get("id"),
        "ok": error is None,
        "stdout": out.text(),
        "error": error,
        "images": [list(a.shape) for a in shown.images],
    }
    return header, [a.tobytes() for a in shown.images]


def _serve(req_fd: int, rep_fd: int, env: dict[str, Any], cfg: dict[str, Any]) -> None:
    """The worker: runs the model's code; its replies go to the supervisor, never to the host."""
    my_pid = os.getpid()
    while True:
        try:
            req = _read_frame(req_fd, _MAX_FRAME)
        except EOFError:
            os._exit(0)
        header, blobs = _handle(req, env, cfg, my_pid)
        _send(rep_fd, header, blobs)


def _read_frame(fd: int, limit: int) -> dict[str, Any]:
    (n,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if n > limit:
        raise ValueError(f"a {n}-byte frame (limit {limit})")
    msg = json.loads(_read_exact(fd, n))
    if not isinstance(msg, dict):
        raise ValueError("a frame that is not a JSON object")
    return msg


def _checked_reply(fd: int, cfg: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    """One reply of the worker, re-validated and re-capped (the model's code can forge it)."""
    header = _read_frame(fd, _MAX_FRAME)
    shapes = header.get("images") or []
    if not isinstance(shapes, list) or len(shapes) > cfg["max_images"]:
        raise ValueError("too many images")
    blobs = []
    for s in shapes:
        if (
            not isinstance(s, list)
            or len(s) != 3
            or s[2] != 3
            or not all(isinstance(d, int) and d > 0 for d in s)
            or s[0] * s[1] > cfg["image_max_pixels"]
        ):
            raise ValueError(f"invalid image shape {s!r}")
        blobs.append(_read_exact(fd, s[0] * s[1] * 3))
    cap = int(cfg["max_output_chars"])
    stdout, error = str(header.get("stdout", "")), header.get("error")
    if len(stdout) > cap + 64:
        stdout = stdout[:cap] + f"\n…[{len(stdout) - cap} more characters truncated]"
    clean = {
        "id": header.get("id"),
        "ok": bool(header.get("ok")),
        "stdout": stdout,
        "error": None if error is None else str(error)[-2000:],
        "images": shapes,
    }
    return clean, blobs


def _supervise(
    proto_in: int,
    proto_out: int,
    req_fd: int,
    rep_fd: int,
    worker: int,
    cfg: dict[str, Any],
    filtered: bool,
) -> None:
    """Relay host requests to the worker and its checked replies back; exit as the worker did."""
    with contextlib.suppress(Exception):  # no ptrace / /proc/<pid>/fd access from the worker
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    _send(proto_out, {"ready": True, "pid": worker, "uid": os.getuid(), "seccomp": filtered}, [])
    try:
        while True:
            try:
                req = _read_frame(proto_in, _MAX_FRAME)
            except EOFError:
                break
            _send(req_fd, req, [])
            header, blobs = _checked_reply(rep_fd, cfg)
            _send(proto_out, header, blobs)
    except (EOFError, OSError, ValueError):
        pass  # the worker died or sent garbage: the host sees EOF and restarts the runtime
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker, signal.SIGKILL)
    _, status = os.waitpid(worker, 0)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))  # report the worker's death reason to the host
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    proto_in, proto_out = os.dup(0), os.dup(1)  # os.dup → non-inheritable (close-on-exec)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if cfg.get("paravt_root"):
        sys.path.insert(0, cfg["paravt_root"])  # the parent's paravt (bound read-only)
    if cfg.get("video"):
        import paravt.video  # noqa: F401 - import the decoder before the rlimits (AS) apply
    from paravt.tools.sandbox.preload import preload, preload_stdlib
    from paravt.tools.sandbox.seccomp import install_seccomp

    preload()  # without bwrap the stdlib may be unreadable after the uid drop (/root): preload.py
    if (
        cfg.get("uid") is not None and os.getuid() == 0
    ):  # a uid drop follows (the weak modes as root):
        preload_stdlib()  # the whole standard library, importable as it is under bubblewrap
    _drop_privileges(cfg.get("uid"), cfg.get("gid"))
    os.chdir(cfg["workdir"])
    _set_limits(cfg["limits"])
    filtered = install_seccomp(list(cfg["seccomp_deny"]))
    video = None
    if cfg.get("video"):
        video = VideoHandle(
            cfg["video"],
            cfg["info"],
            cfg["video_max_frames"],
            cfg["video_max_pixels"],
            cfg["size_factor"],
        )
    env: dict[str, Any] = {
        "__name__": "__main__",
        "np": np,
        "numpy": np,
        "Image": Image,
        "video": video,
    }
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    worker = os.fork()
    if worker == 0:  # the model's code never holds the host's protocol fds
        for fd in (proto_in, proto_out, req_w, rep_r):
            os.close(fd)
        _serve(req_r, rep_w, env, cfg)
    for fd in (req_r, rep_w):
        os.close(fd)
    _supervise(proto_in, proto_out, req_w, rep_r, worker, cfg, filtered)


if __name__ == "__main__":
    main()
