"""`BearerAuth`: the tool server's one key (docs/tools.md, "Who may call").

An ASGI middleware in front of every other one: a request whose ``Authorization`` header is not
``Bearer <key>`` gets 401 before its body is read or any route, tool or limit runs. The key is
compared in constant time (``hmac.compare_digest``) and never written into a response or a log
line. Without a key (``ToolServerConfig.api_key_file`` unset) the middleware is not installed; the
CLI then refuses to bind beyond loopback (`paravt.config.keys.require_key_beyond_loopback`).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any

UNAUTHORIZED = (
    "missing or wrong API key: send 'Authorization: Bearer <key>' with the key of the "
    "file `paravt serve-tools --api-key-file` reads (rollout.tool_server_key_file)"
)


class BearerAuth:
    def __init__(self, app: Any, *, key: str, on_refused: Callable[[], None] | None = None) -> None:
        self.app = app
        self.expected = f"Bearer {key}".encode("ascii")
        self.on_refused = on_refused

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan events carry no headers
            await self.app(scope, receive, send)
            return
        sent = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
        if hmac.compare_digest(sent, self.expected):
            await self.app(scope, receive, send)
            return
        if self.on_refused is not None:
            self.on_refused()
        body = json.dumps({"error": UNAUTHORIZED}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="paravt tool server"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
