"""LSP-style message framing, sans I/O: ``Content-Length`` headers, a JSON or msgpack body.

A frame is ``Content-Length: N\\r\\n`` (plus optional headers such as
``Content-Type``) ``\\r\\n`` then N bytes. The body is JSON unless the frame's
``Content-Type`` is ``application/msgpack``; a reply uses the format of the
request it answers, so a client negotiates msgpack per message simply by
sending it. :class:`FrameDecoder` is fed bytes as they arrive and yields
whole messages, so the asyncio server and the blocking client share it.

A frame that looks like HTTP (a request line, a ``Host`` or ``Origin``
header) is refused as soon as its first line or its header is in, before any
body is read: a web page can make a browser send ``POST http://127.0.0.1:PORT/``
with a body of its choosing, and that must never reach a method.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import msgpack

JSON, MSGPACK = "json", "msgpack"
_CONTENT_TYPES = {JSON: "application/vscode-jsonrpc; charset=utf-8", MSGPACK: "application/msgpack"}
MAX_HEADER = 8192
DEFAULT_MAX_BODY = 64 * 2**20


class FrameError(Exception):
    """A header that cannot be read: the byte stream cannot be resynchronized."""


# Headers a browser always sends and an LSP-style client never does.
_BROWSER_HEADERS = (b"host", b"origin")


def _http_request_line(line: bytes) -> bool:
    """``GET / HTTP/1.1`` and its kin: a method, a target, a protocol version."""
    parts = line.split(b" ")
    return len(parts) == 3 and parts[2].startswith(b"HTTP/")


def encode(message, fmt: str = JSON) -> bytes:
    """One framed message."""
    body = msgpack.packb(message, use_bin_type=True) if fmt == MSGPACK else json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\nContent-Type: {_CONTENT_TYPES[fmt]}\r\n\r\n".encode() + body


@dataclass
class Frame:
    """A decoded message (``value``) or why it could not be read (``error``: ``oversized`` when its body
    was over the limit and skipped, else the body did not decode)."""

    fmt: str
    value: object = None
    error: str | None = None
    oversized: bool = False


class FrameDecoder:
    """Accumulates bytes and splits them into frames."""

    def __init__(self, max_body: int = DEFAULT_MAX_BODY):
        self.max_body = max_body
        self._buf = bytearray()
        self._skip = 0  # bytes of an oversized body still to discard

    @property
    def buffered(self) -> int:
        """Bytes received and not yet made into frames."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by ``data``; an oversized body is skipped and reported as a frame.
        Raises :class:`FrameError` for a malformed header: the stream is lost."""
        self._buf += data
        frames = []
        while True:
            if self._skip:
                n = min(self._skip, len(self._buf))
                del self._buf[:n]
                self._skip -= n
                if self._skip:
                    return frames
            first = self._buf.find(b"\r\n")
            if first >= 0 and _http_request_line(bytes(self._buf[:first])):
                raise FrameError("an HTTP request reached the JSON-RPC port (refused)")
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEADER:
                    raise FrameError("header too long or missing its blank line")
                return frames
            length, fmt = self._header(bytes(self._buf[:end]))
            if length > self.max_body:
                del self._buf[:end + 4]
                self._skip = length
                frames.append(Frame(fmt, error=f"message of {length} bytes is over the limit of {self.max_body} "
                                               "bytes", oversized=True))
                continue
            if len(self._buf) < end + 4 + length:
                return frames
            body = bytes(self._buf[end + 4:end + 4 + length])
            del self._buf[:end + 4 + length]
            frames.append(_decode(body, fmt))

    @staticmethod
    def _header(raw: bytes) -> tuple[int, str]:
        length, fmt = None, JSON
        for line in raw.split(b"\r\n"):
            name, sep, value = line.partition(b":")
            if not sep:
                raise FrameError(f"malformed header line {line[:80]!r}")
            name = name.strip().lower()
            if not name or b" " in name or b"\t" in name:
                raise FrameError(f"malformed header name {name[:80]!r}")
            if name in _BROWSER_HEADERS:
                raise FrameError(f"an HTTP request ('{name.decode()}' header) reached the JSON-RPC port (refused)")
            if name == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FrameError(f"Content-Length is not a number: {value.strip()[:40]!r}") from None
                if length < 0:
                    raise FrameError("Content-Length is negative")
            elif name == b"content-type" and b"msgpack" in value.lower():
                fmt = MSGPACK
        if length is None:
            raise FrameError("frame without Content-Length")
        return length, fmt


def _decode(body: bytes, fmt: str) -> Frame:
    try:
        if fmt == MSGPACK:
            return Frame(fmt, msgpack.unpackb(body, raw=False, strict_map_key=False))
        return Frame(fmt, json.loads(body.decode("utf-8")))
    except Exception as exc:  # noqa: BLE001 - any undecodable body is the client's parse error
        return Frame(fmt, error=f"cannot decode the {fmt} body: {exc}")
