"""A blocking JSON-RPC client of ``kdd serve`` over TCP: what ``kdd compile --connect`` uses.

With a ``timeout`` every connect and every wait for bytes is bounded, so a
daemon that never answers is an ``OSError`` (``TimeoutError``), not a hang.
A reply that is not JSON-RPC is a :class:`ProtocolError`.
"""
from __future__ import annotations

import itertools
import socket

from .framing import JSON, FrameDecoder, FrameError, encode
from .methods import RpcError


class ProtocolError(Exception):
    """The other end answered, but not with a JSON-RPC reply of ours."""


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a (host, port) pair; ValueError when malformed."""
    host, sep, port = address.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not host:
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    if int(port) > 65535:
        raise ValueError(f"port {port} is out of range (0-65535)")
    return host.strip("[]"), int(port)


class Client:
    """One connection; ``call`` sends a request and waits for its reply. Without ``token`` it sends the
    one the daemon on that port wrote for this user (:mod:`.auth`), if any."""

    def __init__(self, address: str, fmt: str = JSON, token: str | None = None, timeout: float | None = None):
        from . import auth

        host, port = parse_address(address)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.fmt, self.token = fmt, token if token is not None else auth.read_token(port)
        self._ids = itertools.count(1)
        self._decoder = FrameDecoder()
        self._pending: list = []

    def call(self, method: str, params=None):
        """The result of ``method``; raises :class:`RpcError` for an error reply."""
        rid = next(self._ids)
        request = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        if self.token is not None:
            request["token"] = self.token
        self.sock.sendall(encode(request, self.fmt))
        while True:
            reply = self._next()
            if isinstance(reply, dict) and reply.get("id") in (rid, None) and "error" in reply:
                error = reply["error"]
                if not (isinstance(error, dict) and isinstance(error.get("code"), int)):
                    raise ProtocolError(f"malformed error reply: {str(error)[:200]}")
                raise RpcError(error["code"], str(error.get("message")))
            if isinstance(reply, dict) and reply.get("id") == rid:
                return reply.get("result")

    def _next(self):
        while not self._pending:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the server closed the connection")
            try:
                self._pending.extend(self._decoder.feed(data))
            except FrameError as exc:
                raise ProtocolError(str(exc)) from None
        frame = self._pending.pop(0)
        if frame.error is not None:
            raise ProtocolError(frame.error)
        return frame.value

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
