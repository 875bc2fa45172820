"""What the python tool's runner imports before it drops privileges (`paravt.tools.sandbox.runner`).

Without bubblewrap the interpreter's own files may be unreadable to the sandbox uid once the runner
has dropped to it (an interpreter under /root), so a module not imported before the drop imports
under bubblewrap but not in the weak modes. Two steps:

- `PRELOAD`, in EVERY mode: what an analysis script reaches for, PIL's helpers included;
- `preload_stdlib`, in the weak modes (the runner drops a uid): the WHOLE standard library, every
  module of ``sys.stdlib_module_names`` and its submodules (the codecs of ``encodings`` too), less
  `NOT_PRELOADED`, so honest code imports there what it imports under bubblewrap. Measured here:
  559 modules in 0.44–0.55 s and +22 MB of RSS per runtime start (weak modes only).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys

PRELOAD = (
    "abc",
    "array",
    "ast",
    "base64",
    "binascii",
    "bisect",
    "calendar",
    "cmath",
    "codecs",
    "collections",
    "collections.abc",
    "colorsys",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "enum",
    "fnmatch",
    "fractions",
    "functools",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "io",
    "itertools",
    "json",
    "keyword",
    "locale",
    "logging",
    "math",
    "numbers",
    "operator",
    "os",
    "os.path",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re",
    "reprlib",
    "secrets",
    "shlex",
    "shutil",
    "socket",
    "statistics",
    "string",
    "struct",
    "tempfile",
    "textwrap",
    "time",
    "timeit",
    "traceback",
    "types",
    "typing",
    "unicodedata",
    "uuid",
    "warnings",
    "weakref",
    "zlib",
    "PIL.ImageDraw",
    "PIL.ImageOps",
    "PIL.ImageFilter",
    "PIL.ImageStat",
    "PIL.ImageChops",
    "PIL.ImageEnhance",
)

#: Never imported ahead: side effects on import (a browser, a printed poem), GUI toolkits, the
#: interpreter's own tests and tools, the REPL; a module path containing one of these parts is
#: skipped (``__main__`` modules run a program when imported).
NOT_PRELOADED = frozenset(
    {
        "antigravity",
        "this",
        "idlelib",
        "tkinter",
        "turtle",
        "turtledemo",
        "test",
        "tests",
        "lib2to3",
        "ensurepip",
        "venv",
        "pydoc",
        "pydoc_data",
        "__main__",
        "__phello__",
    }
)


def preload(names: tuple[str, ...] = PRELOAD) -> None:
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def preload_stdlib() -> int:
    """Import the standard library (module docstring); how many modules imported. A module that
    does not import here (a Windows one, a missing C library) is skipped: it would not import
    under bubblewrap either. Names are filtered BEFORE anything is imported (`pkgutil.walk_packages`
    would import every sub-package, ``test`` ones included, before a filter could see it)."""
    return sum(
        _preload_tree(top)
        for top in sorted(sys.stdlib_module_names)
        if not top.startswith("_") and top not in NOT_PRELOADED
    )


def _preload_tree(name: str) -> int:
    """Import ``name`` and, for a package, its submodules depth-first; how many imported."""
    module = _load(name)
    if module is None:
        return 0
    done = 1
    for info in pkgutil.iter_modules(getattr(module, "__path__", None) or [], f"{name}."):
        if NOT_PRELOADED.isdisjoint(info.name.split(".")):
            done += _preload_tree(info.name)
    return done


def _load(name: str) -> object | None:
    try:
        return importlib.import_module(name)
    except (Exception, SystemExit):  # noqa: BLE001 - any module may fail here as it would later
        return None
