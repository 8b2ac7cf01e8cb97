"""``kdd serve``: the JSON-RPC daemon for scripts, on stdio or TCP, over a worker pool.

Every connection is read frame by frame (:mod:`.framing`); every request runs
in a task of its own, so many clients are served at once. Answers already
computed are served from a reply cache in this process, keyed by the method,
its parameters and the content of the config and the files it extends: a
slow compile in a worker never delays another client's cached answer. A
malformed frame, an unknown method, wrong parameters or an oversized message
get a JSON-RPC error; the connection and the daemon carry on (only a frame
whose header cannot be read ends its connection, since the stream is lost).

Every request gets an answer: a bug inside kdd is a -32603 error of one line
(the traceback goes to stderr), never silence. Work that grows with a
request's size (decoding a large body, reading and parsing the config to key
the reply cache) runs on threads, so one client's 10 MB request does not
delay another's cached answer. With a token (``kdd serve --tcp`` makes one,
:mod:`.auth`) every request must carry it.
"""
from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import math
import sys
import threading
import traceback
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from kdd.core.engine import Engine, Source, StageFailed

from .workers import DEFAULT_MEMORY_MIB, WorkerFailed, WorkerPool
from . import auth
from .framing import JSON, DEFAULT_MAX_BODY, FrameDecoder, FrameError, encode
from .methods import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RpcError, cacheable, validate

SHUTDOWN = "kdd/shutdown"
SERVER_ERROR = -32000  # a request stopped by the time limit, or a worker that died
UNAUTHORIZED = -32001
# Buffered bytes past which a connection's frames are decoded on a thread rather than the event loop.
DECODE_OFF_LOOP = 1 << 18
KEYING_THREADS = 4


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Daemon:
    """The method table served to any number of connections."""

    def __init__(self, workers: int = 2, cache_dir: str | None = None, time_limit: float = 60.0,
                 token: str | bytes | None = None, max_body: int = DEFAULT_MAX_BODY, reply_cache: int = 256,
                 memory_mib: int | None = DEFAULT_MEMORY_MIB, read_text=None):
        self.pool = WorkerPool(workers, cache_dir, time_limit, memory_mib, read_text)
        self.token, self.max_body = (None if token is None else auth.as_bytes(token)), max_body
        # Parses in this process, to key the reply cache by content: off the event loop, on a few
        # threads (one client's large requests do not queue another's), each with an engine of its own
        # (an engine's memo is not shared between threads).
        self._read_text = read_text
        self._keying = ThreadPoolExecutor(KEYING_THREADS, thread_name_prefix="kdd-key")
        self._local = threading.local()
        self.replies: OrderedDict[str, object] = OrderedDict()
        self.reply_cache_size = reply_cache
        self.stopped = asyncio.Event()
        self.counters = {"requests": 0, "cached": 0, "errors": 0}

    def _engine(self) -> Engine:
        """This keying thread's engine."""
        engine = getattr(self._local, "engine", None)
        if engine is None:
            engine = self._local.engine = Engine(read_text=self._read_text) if self._read_text else Engine()
        return engine

    def _reply_key(self, method: str, params: dict) -> str | None:
        """A key naming what the answer depends on, or None when the config cannot be read here."""
        engine = self._engine()
        try:
            source = Source(params["text"], params.get("path")) if params.get("text") is not None \
                else engine.read(params["path"])
        except StageFailed:
            return None
        parsed = engine.parse(source)
        rest = {k: v for k, v in params.items() if k != "text"}
        digest = hashlib.sha256(json.dumps([method, rest, parsed.depends_on], sort_keys=True, default=str).encode())
        digest.update(b"\0" + source.text.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def _keys(self, method: str, params: dict) -> tuple[str | None, str]:
        """The reply-cache key (None: not cacheable) and the worker affinity of a request (its
        document); both read the whole text, so they are computed off the event loop."""
        key = self._reply_key(method, params) if cacheable(method, params) else None
        text = str(params.get("text")).encode("utf-8", "surrogatepass")
        return key, params.get("path") or hashlib.sha1(text).hexdigest()

    async def answer(self, request) -> dict | None:
        """The reply to one decoded message (None for a notification)."""
        if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(
                request.get("method"), str):
            rid = request.get("id") if isinstance(request, dict) else None
            return _error(rid if _valid_id(rid) else None, INVALID_REQUEST,
                          "not a JSON-RPC 2.0 request: expected an object with \"jsonrpc\": \"2.0\" and a "
                          "string \"method\"")
        rid, method = request.get("id"), request["method"]
        if not _valid_id(rid):
            return _error(None, INVALID_REQUEST, "\"id\" must be a string, an integer, a finite number or null")
        self.counters["requests"] += 1
        if self.token is not None and not auth.matches(request.get("token"), self.token):
            return _error(rid, UNAUTHORIZED, "this daemon requires its token in every request (\"token\"; "
                                             "kdd serve printed the file it is in)")
        try:
            if method == SHUTDOWN:
                # Set after this reply is written (the caller writes it in this same step); requests
                # already received are still answered, new ones are not read.
                asyncio.get_running_loop().call_soon(self.stopped.set)
                result = {"ok": True}
            else:
                result = await self._call(method, request.get("params"))
        except RpcError as exc:
            self.counters["errors"] += 1
            return None if rid is None else _error(rid, exc.code, exc.message)
        except WorkerFailed as exc:
            self.counters["errors"] += 1
            return None if rid is None else _error(rid, SERVER_ERROR, f"{method}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a bug in kdd is an error reply, never silence
            self.counters["errors"] += 1
            traceback.print_exc(file=sys.stderr)
            return None if rid is None else _error(rid, INTERNAL_ERROR, f"{method}: internal error in kdd "
                                                   f"({type(exc).__name__}: {str(exc)[:200]}; please report it)")
        return None if rid is None else {"jsonrpc": "2.0", "id": rid, "result": result}

    async def _call(self, method: str, params):
        p = validate(method, params)
        if method == "kdd/stats":  # the daemon's, not one worker's engine's
            return {"daemon": dict(self.counters), "workers": self.pool.stats()}
        key, affinity = await asyncio.get_running_loop().run_in_executor(self._keying, self._keys, method, p)
        if key is not None and key in self.replies:
            self.replies.move_to_end(key)
            self.counters["cached"] += 1
            return self.replies[key]
        result = await self.pool.call(method, p, affinity)
        if key is not None:
            self.replies[key] = result
            while len(self.replies) > self.reply_cache_size:
                self.replies.popitem(last=False)
        return result

    async def serve_stream(self, reader: asyncio.StreamReader, write) -> None:
        """Serve one connection until it closes or the daemon stops (``write(bytes)`` sends); requests
        already received are answered before it returns."""
        decoder = FrameDecoder(self.max_body)
        tasks = set()

        async def reply(frame):
            if frame.error is not None:
                out = _error(None, INVALID_REQUEST if frame.oversized else PARSE_ERROR, frame.error)
            else:
                out = await self.answer(frame.value)
            if out is not None:
                write(encode(out, frame.fmt))

        stopping = asyncio.ensure_future(self.stopped.wait())
        try:
            while True:
                reading = asyncio.ensure_future(reader.read(1 << 16))
                await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not reading.done():
                    reading.cancel()
                    break
                data = reading.result()
                if not data:
                    break
                try:
                    # Decoding a large body takes time: on a thread, so other connections are answered.
                    frames = await asyncio.to_thread(decoder.feed, data) \
                        if decoder.buffered + len(data) > DECODE_OFF_LOOP else decoder.feed(data)
                except FrameError as exc:
                    write(encode(_error(None, PARSE_ERROR, f"{exc}; closing the connection")))
                    break
                for frame in frames:
                    task = asyncio.ensure_future(reply(frame))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        finally:
            stopping.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        self.pool.close()
        self._keying.shutdown(wait=False, cancel_futures=True)


def _valid_id(rid) -> bool:
    """JSON-RPC ids are strings, numbers or null (NaN and infinities are not numbers JSON can carry)."""
    if isinstance(rid, float):
        return math.isfinite(rid)
    return rid is None or isinstance(rid, (str, int))


def _error(rid, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


async def serve_tcp(daemon: Daemon, host: str, port: int, ready=None) -> None:
    """Listen on ``host:port`` until ``kdd/shutdown``; ``ready(port)`` is told the bound port."""
    connections = set()

    async def on_connect(reader, writer):
        connections.add(asyncio.current_task())
        try:
            await daemon.serve_stream(reader, writer.write)
            await writer.drain()
        finally:
            writer.close()
            connections.discard(asyncio.current_task())

    server = await asyncio.start_server(on_connect, host, port)
    bound = server.sockets[0].getsockname()[1]
    if ready is not None:
        ready(bound)
    async with server:
        await daemon.stopped.wait()
        if connections:  # every connection answers what it already received
            await asyncio.gather(*connections, return_exceptions=True)


async def serve_stdio(daemon: Daemon) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    await daemon.serve_stream(reader, write)


__all__ = ["Daemon", "INVALID_PARAMS", "JSON", "is_loopback", "serve_stdio", "serve_tcp"]
