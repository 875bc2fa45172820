"""API keys: read from a file named by a config field or a flag (never from the config itself, the
command line or an environment variable), and the loopback test that decides whether a server may
run without one (docs/tools.md, "Who may call").

A key is one line of printable ASCII without spaces: it travels in an HTTP header
(``Authorization: Bearer KEY``), so a CR, LF or other control character could forge headers. No
message here or in the callers quotes the key; they name the file.
"""

from __future__ import annotations

import ipaddress
import os
import stat
from pathlib import Path

from paravt.errors import ConfigError

MIN_SERVER_KEY_CHARS = 16  # a server's own key: long enough that guessing it over HTTP is hopeless
MAX_KEY_BYTES = 4096
_NEW_KEY = "python -c 'import secrets; print(secrets.token_urlsafe(32))' > KEY && chmod 600 KEY"


def read_key_file(path: str | os.PathLike[str], what: str, *, min_chars: int = 1) -> str:
    """The key on the first line of ``path`` (surrounding whitespace dropped). ``what`` names the
    field or flag in the error (``ConfigError``): a missing or unreadable file, an empty one, a key
    with spaces or control characters, or shorter than ``min_chars``."""
    p = Path(path)
    try:
        if not stat.S_ISREG(p.stat().st_mode):
            raise ConfigError(f"{what}: {p} is not a regular file; write the key on its first line")
        with p.open("rb") as f:
            raw = f.read(MAX_KEY_BYTES + 1)
    except OSError as e:
        raise ConfigError(
            f"{what}: cannot read the key file {p} ({e.strerror or e}); create it, e.g. {_NEW_KEY}"
        ) from None
    lines = raw[:MAX_KEY_BYTES].decode("ascii", errors="replace").strip().splitlines()
    key = lines[0].strip() if lines else ""
    if not key:
        raise ConfigError(
            f"{what}: the key file {p} is empty; write the key on its first line ({_NEW_KEY})"
        )
    if len(raw) > MAX_KEY_BYTES or not all(33 <= ord(ch) < 127 for ch in key):
        raise ConfigError(
            f"{what}: the first line of {p} is not a key (printable ASCII without spaces, "
            f"under {MAX_KEY_BYTES} bytes); write one, e.g. {_NEW_KEY}"
        )
    if len(key) < min_chars:
        raise ConfigError(
            f"{what}: the key in {p} has {len(key)} characters, fewer than {min_chars}; "
            f"write a longer one, e.g. {_NEW_KEY}"
        )
    return key


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` reaches this machine only (127.0.0.0/8, ::1, ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to any interface


def require_key_beyond_loopback(host: str, key_file: object, flag: str, command: str) -> None:
    """Refuse (``ConfigError``) to bind ``host`` beyond loopback when no key file is given, and a
    host with blanks in it (``'127.0.0.1 '`` passed the loopback test, then failed in uvicorn)."""
    if not host or host != "".join(host.split()):
        raise ConfigError(
            f"{command} --host {host!r}: a host has no spaces or blanks; pass e.g. 127.0.0.1"
        )
    if key_file is None and not is_loopback(host):
        raise ConfigError(
            f"{command} --host {host}: binding beyond loopback lets anyone who reaches "
            f"the port call it; pass {flag} FILE (clients send that key as a Bearer token) "
            "or bind 127.0.0.1"
        )
