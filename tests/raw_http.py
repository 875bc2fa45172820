"""A hostile HTTP/1.1 server on a raw loopback socket, for the bounds of the HTTP clients (teacher,
judge, openai backend): each connection's request is read, then ``respond(conn, stop)`` writes
whatever it likes (one byte a second after the headers, an endless chunked body) until the client
hangs up or the test ends."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

Respond = Callable[[socket.socket, threading.Event], None]


def read_request(conn: socket.socket) -> bytes:
    """The request's head and its Content-Length body (the client has sent it all before
    reading)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(ln.split(b":", 1)[1])
            for ln in head.split(b"\r\n")
            if ln.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


class RawServer:
    """``with RawServer(respond) as srv: srv.url``: one thread per connection, all stopped on
    exit."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> RawServer:
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(timeout=5)
        self.sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                read_request(conn)
                self.respond(conn, self.stop)
            except OSError:
                pass  # the client hung up: what the tests expect


def drip(interval_s: float) -> Respond:
    """Headers of a 1,000-byte JSON reply at once, then its body one byte per ``interval_s``."""

    def respond(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        )
        for _ in range(1000):
            if stop.wait(interval_s):
                return
            conn.sendall(b" ")

    return respond


def endless_chunks(chunk_bytes: int) -> Respond:
    """A 200 reply with a chunked body that never ends (no Content-Length to refuse it by)."""

    def respond(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: "
            b"chunked\r\n\r\n"
        )
        piece = b"%x\r\n" % chunk_bytes + b" " * chunk_bytes + b"\r\n"
        while not stop.is_set():
            conn.sendall(piece)

    return respond


def fixed(raw: bytes) -> Respond:
    """The same raw reply (status line, headers and body) to every request."""

    def respond(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(raw)

    return respond


#: A 200 reply declaring a 1 GB body it never sends: refused by its Content-Length, before any body
#: byte.
DECLARED_HUGE = fixed(
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
)
