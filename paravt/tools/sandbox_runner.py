"""The program that runs INSIDE the python tool's sandbox (one process per episode).

It is started by `paravt.tools.sandbox.SandboxRuntime` with one JSON argument (limits, the bound
video's path and info). Startup order matters for isolation:

1. import numpy / PIL (and later our decoder) while still privileged enough to read them;
2. keep the protocol pipes on private fds and point fds 0, 1, 2 at /dev/null, so code that writes
   to the raw fds cannot corrupt the protocol;
3. drop to the sandbox uid/gid when started as root (so RLIMIT_NPROC applies: the kernel exempts
   root), then set hard rlimits that the model's code cannot raise again;
4. answer requests: ``{"id", "code"}`` → ``{"id", "ok", "stdout", "error", "images": [shapes]}``
   followed by the raw uint8 bytes of each shown image.

Wire format (both ways): 4-byte big-endian length + JSON, then the blobs the JSON declares.
Everything here is trusted code, but it shares its process with the model's code, so the parent
treats every byte it reads back as untrusted (sizes capped, shapes checked).
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
PRELOAD = ("math", "statistics", "json", "re", "collections", "itertools", "functools", "random",
           "time", "datetime", "socket", "PIL.ImageDraw", "PIL.ImageOps", "PIL.ImageFilter")


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
        self.cap, self.parts, self.size, self.dropped = cap, [], 0, 0

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

    def __init__(self, path: str, info: dict[str, Any], max_frames: int, max_pixels: int, factor: int):
        self._path, self.info = path, dict(info)
        self._max_frames, self._max_pixels, self._factor = max_frames, max_pixels, factor

    def frames(self, start: float, end: float, n: int = 8) -> np.ndarray:
        """``n`` frames (≤ max_frames) sampled uniformly over [start, end] s, clamped to the video;
        uint8 array n×H×W×3. Timestamps: ``frames_with_times``."""
        return self.frames_with_times(start, end, n)[0]

    def frames_with_times(self, start: float, end: float, n: int = 8) -> tuple[np.ndarray, list[float]]:
        from paravt.video import sample_frames  # our decoder, imported on first use

        s = max(0.0, float(start))
        e = min(float(self.info["duration"]), float(end))
        if not e > s:
            raise ValueError(f"window [{start}, {end}] is empty inside the video [0, {self.info['duration']}]")
        n = max(1, min(int(n), self._max_frames))
        fr = sample_frames(self._path, s, e, nframes=n, max_pixels=self._max_pixels, size_factor=self._factor)
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
            arr = np.clip(arr.astype(np.float64) * (255.0 if arr.max(initial=0) <= 1.0 else 1.0), 0, 255).astype(np.uint8)
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
            pil = pil.resize((tw, th), Image.BILINEAR)
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
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<python>", "exec"), env)
    if last is not None:
        value = eval(compile(last, "<python>", "eval"), env)
        if value is not None:
            print(repr(value))


def _handle(req: dict[str, Any], env: dict[str, Any], cfg: dict[str, Any], my_pid: int) -> tuple[dict, list[bytes]]:
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
    header = {"id": req.get("id"), "ok": error is None, "stdout": out.text(), "error": error,
              "images": [list(a.shape) for a in shown.images]}
    return header, [a.tobytes() for a in shown.images]


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
    for name in PRELOAD:  # without bwrap the stdlib may be unreadable after the uid drop (/root)
        with contextlib.suppress(ImportError):
            __import__(name)
    _drop_privileges(cfg.get("uid"), cfg.get("gid"))
    os.chdir(cfg["workdir"])
    _set_limits(cfg["limits"])
    video = None
    if cfg.get("video"):
        video = VideoHandle(cfg["video"], cfg["info"], cfg["video_max_frames"], cfg["video_max_pixels"], cfg["size_factor"])
    env: dict[str, Any] = {"__name__": "__main__", "np": np, "numpy": np, "Image": Image, "video": video}
    my_pid = os.getpid()
    _send(proto_out, {"ready": True, "pid": my_pid, "uid": os.getuid()}, [])
    while True:
        try:
            (n,) = _HEADER.unpack(_read_exact(proto_in, _HEADER.size))
            req = json.loads(_read_exact(proto_in, n))
        except EOFError:
            return
        header, blobs = _handle(req, env, cfg, my_pid)
        _send(proto_out, header, blobs)


if __name__ == "__main__":
    main()
