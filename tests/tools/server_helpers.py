"""Run a tool server app on 127.0.0.1 (a free port) in a background thread, with the same
connection limits as ``paravt serve-tools`` (`paravt.tools.server.limits.uvicorn_config`)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from paravt.tools.server.limits import uvicorn_config


class ServerThread:
    def __init__(self, app) -> None:  # noqa: ANN001
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        cfg = app.state.config
        config = uvicorn_config(
            app,
            header_timeout_s=cfg.header_timeout_s,
            max_connections=cfg.max_connections,
            lifespan="on",
            timeout_keep_alive=30,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("tool server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()
