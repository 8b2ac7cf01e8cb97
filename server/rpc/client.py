"""A blocking JSON-RPC client of ``kdd serve`` over TCP: what ``kdd compile --connect`` uses."""
from __future__ import annotations

import itertools
import socket

from .framing import JSON, FrameDecoder, encode
from .methods import RpcError


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a (host, port) pair; ValueError when malformed."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


class Client:
    """One connection; ``call`` sends a request and waits for its reply."""

    def __init__(self, address: str, fmt: str = JSON, token: str | None = None, timeout: float | None = None):
        self.sock = socket.create_connection(parse_address(address), timeout=timeout)
        self.fmt, self.token = fmt, token
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
            if isinstance(reply, dict) and reply.get("id") == rid:
                if "error" in reply:
                    raise RpcError(reply["error"]["code"], reply["error"]["message"])
                return reply.get("result")

    def _next(self):
        while not self._pending:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the server closed the connection")
            self._pending.extend(self._decoder.feed(data))
        return self._pending.pop(0).value

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
