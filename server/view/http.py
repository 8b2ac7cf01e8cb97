"""The HTTP side of ``kdd view``: the page, its requests and its live events, on a loopback address.

- ``GET /`` the page (``static/index.html``), ``GET /static/NAME`` its scripts and styles;
- ``POST /rpc`` with ``{"method", "params"}`` (``application/json``) answers ``{"result"}`` or
  ``{"error": {"code", "message"}}``: the methods of :class:`~.session.ViewSession`;
- ``GET /events`` a server-sent event stream of ``kdd/compiled`` (the language server's notification).

Only requests whose ``Host`` names the loopback address are served, so a web page elsewhere cannot
reach the view through DNS rebinding; ``/rpc`` takes JSON only, which a cross-origin form cannot send.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from kdd.server.rpc.methods import INVALID_REQUEST, PARSE_ERROR, RpcError

from .session import ViewSession

STATIC = Path(__file__).resolve().parent / "static"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".png": "image/png"}
MAX_BODY = 1 << 20
KEEPALIVE_S = 15.0
CHANGES = ("created", "modified", "deleted", "moved", "closed")


class ViewServer:
    """Serves one :class:`ViewSession` on ``host:port`` (port 0 picks a free one)."""

    def __init__(self, session: ViewSession, host: str = "127.0.0.1", port: int = 0):
        self.session, self.host, self.port = session, host, port
        self.server: asyncio.base_events.Server | None = None

    async def start(self) -> str:
        """Listen; returns the page's URL."""
        self.server = await asyncio.start_server(self._client, self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.url

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    async def _one(self, reader, writer) -> bool:
        """Answer one request; False when the connection ends."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
        length = headers.get("content-length") or "0"
        if not (length.isascii() and length.isdigit()):
            await _send(writer, 400, "text/plain", b"bad Content-Length")
            return False
        length = int(length)
        if length > MAX_BODY:
            await _send(writer, 413, "text/plain", b"request too large")
            return False
        body = await reader.readexactly(length) if length else b""
        if headers.get("host") not in (f"{self.host}:{self.port}", f"localhost:{self.port}"):
            await _send(writer, 403, "text/plain", b"kdd view answers its own address only")
            return False
        path = target.split("?", 1)[0]
        if method == "GET" and path == "/events":
            await self._events(writer)
            return False
        if method == "POST" and path == "/rpc":
            if not headers.get("content-type", "").startswith("application/json"):
                await _send(writer, 415, "text/plain", b"/rpc takes application/json")
                return True
            await _send(writer, 200, "application/json", json.dumps(await self._rpc(body)).encode())
            return True
        if method == "GET":
            name = "index.html" if path in ("/", "/index.html") else path.removeprefix("/static/")
            file = STATIC / name
            if "/" not in name and file.suffix in _TYPES and file.is_file():
                await _send(writer, 200, _TYPES[file.suffix], file.read_bytes())
                return True
        await _send(writer, 404, "text/plain", b"not found")
        return True

    async def _rpc(self, body: bytes) -> dict:
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as exc:  # a deeply nested body once went unanswered
            return {"error": RpcError(PARSE_ERROR, f"body is not JSON: {exc}").to_dict()}
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return {"error": RpcError(INVALID_REQUEST, 'expected {"method": ..., "params": {...}}').to_dict()}
        try:
            return {"result": await self.session.request(message["method"], message.get("params"))}
        except RpcError as exc:
            return {"error": exc.to_dict()}

    async def _events(self, writer) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n")
        queue = self.session.subscribe()
        try:
            while True:
                try:
                    event, params = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                    writer.write(f"event: {event}\ndata: {json.dumps(params)}\n\n".encode())
                except asyncio.TimeoutError:
                    writer.write(b": keep-alive\n\n")  # also how a closed page is noticed
                await writer.drain()
        finally:
            self.session.unsubscribe(queue)


async def _send(writer, status: int, content_type: str, body: bytes) -> None:
    reason = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 413: "Payload Too Large",
              415: "Unsupported Media Type"}[status]
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                 "Cache-Control: no-store\r\n\r\n".encode() + body)
    await writer.drain()


def follow(session: ViewSession):
    """Reload the session when its file or one of its parents changes on disk (watchdog, on their
    directories, inside the roots); the observer."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    loop = asyncio.get_running_loop()
    observer = Observer()
    watched: set[str] = set()

    def reload() -> None:
        session.reload()
        watch()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event) -> None:
            if event.event_type not in CHANGES:  # reading the file is an event too ("opened")
                return
            paths = [event.src_path, getattr(event, "dest_path", None) or ""]
            if any(p and session.follows(os.path.abspath(os.fsdecode(p))) for p in paths):
                loop.call_soon_threadsafe(reload)

    handler = Handler()

    def watch() -> None:
        for path in [session.path] + [p for p, _ in session.depends_on]:
            directory = os.path.dirname(os.path.abspath(path))
            if directory not in watched and os.path.isdir(directory) and (
                    path == session.path or session.reader.allows(path)):
                observer.schedule(handler, directory, recursive=False)
                watched.add(directory)

    watch()
    observer.start()
    return observer
