"""Worker processes that run engine requests, so compile work never runs on a server's event loop.

Each worker is a process with its own :class:`~kdd.core.engine.Engine`
(memoized stages) over the shared on-disk cache. Requests with the same
affinity key (a document) go to the same worker, so its in-memory memo makes
their recompiles incremental. A request that exceeds its time limit is
stopped by killing its worker, which is replaced at once; a worker that
dies is replaced too. Either way the caller gets a :class:`WorkerFailed`
naming the stage the worker was in, and the server keeps running: Python
cannot interrupt a running thread, but it can kill a process.

Each worker runs under a memory limit (``RLIMIT_DATA``, ``--worker-memory``):
a request that would need more (a huge check with ``unbounded``) is an
error reply saying so, not a machine out of memory.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import sys
import time
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path


DEFAULT_MEMORY_MIB = 4096
OUT_OF_MEMORY = -32002


@dataclass
class WorkerFailed(Exception):
    """A request that did not finish: ``reason`` is ``timeout`` or ``crash``; ``stage`` the stage it was in."""

    reason: str
    stage: str | None
    seconds: float

    def __str__(self) -> str:
        where = f" in stage '{self.stage}'" if self.stage else ""
        if self.reason == "timeout":
            return f"stopped after {self.seconds:.1f} s{where}: over the time limit (setting kdd.timeLimit)"
        return f"the worker process died{where} after {self.seconds:.1f} s; it was restarted"


def _limit_memory(mib: int | None) -> None:
    """Cap the heap of this process (and of the tools it starts) at ``mib`` MiB; None: no cap."""
    if not mib:
        return
    try:
        import resource
    except ImportError:  # not on this platform: the time limit still bounds a request
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = mib * 2**20 if hard == resource.RLIM_INFINITY else min(hard, mib * 2**20)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _serve(conn, cache_dir: str | None, memory_mib: int | None = None, read_text=None) -> None:
    """The worker's loop: requests in, ``("stage", name)`` progress and one reply per request out."""
    from kdd.core.engine import DiskCache, Engine
    from .methods import RpcError, call

    # stdout may be a protocol stream (kdd lsp, kdd serve --stdio): a worker must neither write to it
    # nor keep it open after the server exits, or the client never sees the end of the stream.
    os.dup2(2, 1)
    _limit_memory(memory_mib)
    engine = Engine(disk=DiskCache(cache_dir) if cache_dir is not None else None,
                    **({"read_text": read_text} if read_text is not None else {}))
    engine.on_stage = lambda stage: conn.send(("stage", stage))
    while True:
        try:
            method, params = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("ok", call(engine, method, params), engine.stats())
        except RpcError as exc:
            reply = ("rpc-error", exc.code, exc.message)
        except MemoryError:
            engine = Engine(disk=engine.disk, read_text=engine.read_text, on_stage=engine.on_stage)
            reply = ("rpc-error", OUT_OF_MEMORY, f"{method}: out of memory: the request needs more than the "
                                                 f"worker's limit of {memory_mib} MiB (--worker-memory)")
        except Exception:  # noqa: BLE001 - a bug in a request must not end the worker
            reply = ("error", traceback.format_exc())
        conn.send(reply)


class Worker:
    """One worker process and the pipe to it; ``call`` blocks, so callers run it in a thread."""

    def __init__(self, ctx, cache_dir: str | None, memory_mib: int | None = None, read_text=None):
        self._ctx, self._cache_dir = ctx, cache_dir
        self._memory_mib, self._read_text = memory_mib, read_text
        self.closed = False
        self.lock = asyncio.Lock()
        self.stats: dict = {}
        self._start()

    def _start(self) -> None:
        self.conn, child = self._ctx.Pipe()
        self.process = self._ctx.Process(target=_serve, args=(child, self._cache_dir, self._memory_mib,
                                                                  self._read_text), daemon=True)
        self.process.start()
        child.close()

    def restart(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()
        if not self.closed:
            self._start()

    def call(self, method: str, params, timeout: float | None):
        """The reply of one request; raises :class:`WorkerFailed` (after replacing the process) when
        the request runs past ``timeout`` seconds or the process dies."""
        from .methods import INTERNAL_ERROR, RpcError

        start = time.monotonic()
        stage = None
        try:
            self.conn.send((method, params))
            while True:
                left = None if timeout is None else timeout - (time.monotonic() - start)
                if left is not None and left <= 0:
                    self.restart()
                    raise WorkerFailed("timeout", stage, time.monotonic() - start)
                if not self.conn.poll(left if left is None else min(left, 0.5)):
                    continue
                message = self.conn.recv()
                if message[0] == "stage":
                    stage = message[1]
                    continue
                break
        except (EOFError, OSError, BrokenPipeError):
            self.restart()
            raise WorkerFailed("crash", stage, time.monotonic() - start) from None
        if message[0] == "ok":
            self.stats = message[2]
            return message[1]
        if message[0] == "rpc-error":
            raise RpcError(message[1], message[2])
        # One line for the client; the traceback goes to the server's stderr, where a bug report starts.
        sys.stderr.write(message[1])
        last = message[1].strip().splitlines()[-1][:200]
        raise RpcError(INTERNAL_ERROR, f"{method}: internal error in kdd ({last}; please report it, with the "
                                       "traceback the server printed)")

    def close(self) -> None:
        self.closed = True
        self.process.kill()
        self.conn.close()


class WorkerPool:
    """``size`` workers; :meth:`call` runs a request on the worker of its affinity key. Each worker's
    heap is capped at ``memory_mib`` MiB (None: no cap) and reads files with ``read_text`` (plain data,
    such as a :class:`~kdd.core.spec.confined.ConfinedReader`; None: any file)."""

    def __init__(self, size: int = 2, cache_dir: Path | str | None = None, time_limit: float | None = 60.0,
                 memory_mib: int | None = DEFAULT_MEMORY_MIB, read_text=None):
        ctx = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
        if os.name == "posix":
            # the compiler itself (kdd.core.engine loads it lazily), so a forked worker starts with it loaded
            ctx.set_forkserver_preload(["kdd.core.engine.engine", "kdd.server.rpc.methods"])
        self.time_limit = time_limit
        self.workers = [Worker(ctx, None if cache_dir is None else str(cache_dir), memory_mib, read_text)
                        for _ in range(max(1, size))]

    def worker_for(self, affinity: str) -> Worker:
        return self.workers[zlib.crc32(affinity.encode()) % len(self.workers)]

    async def call(self, method: str, params, affinity: str = "", timeout: float | None = None,
                   still_wanted=lambda: True):
        """The result of ``method`` run by a worker, or None when ``still_wanted()`` turned false while
        the request waited for its worker (a newer edit superseded it: it never starts)."""
        worker = self.worker_for(affinity)
        async with worker.lock:
            if not still_wanted():
                return None
            limit = timeout if timeout is not None else self.time_limit
            return await asyncio.to_thread(worker.call, method, params, limit)

    def stats(self) -> list[dict]:
        return [w.stats for w in self.workers]

    def close(self) -> None:
        for w in self.workers:
            w.close()
