"""The file ``kdd view`` follows and the requests its page makes.

The page asks the same methods as the VS Code preview asks the language server (``kdd/passes``,
``kdd/irAfterPass``, ``kdd/assembly``, ``kdd/asmHover``, ``kdd/stats``, ``kdd/check``;
``protocol/lsp.schema.json``) plus ``kdd/document`` (the config's text) and ``kdd/diagnostics`` (what an
editor would underline, of the latest compile), and is told ``kdd/compiled`` after every compile and
``kdd/checked`` after every check. Compiles
run in a :class:`~kdd.server.rpc.workers.WorkerPool`, debounced and superseded exactly as the language
server does it (the state is the server's :class:`~kdd.server.lsp.documents.DocumentState`).

The file is read as a kernel config is (a regular file of bounded size: a FIFO or ``/dev/zero`` put in
its place is an error, not a hang), and so are its parents, inside the roots only. A parent that
changes, disappears or comes back is a new version too.
"""
from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from kdd.core.engine import Engine, Source
from kdd.core.spec import read_file
from kdd.core.spec.confined import ConfinedReader
from kdd.server.lsp.documents import DocumentState
from kdd.server.lsp.server import CHECKED, COMPILED, REQUEST_FAILED, compiled_notification
from kdd.server.rpc.methods import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from kdd.server.rpc.workers import WorkerFailed, WorkerPool

METHODS = ("kdd/document", "kdd/diagnostics", "kdd/passes", "kdd/irAfterPass", "kdd/assembly", "kdd/asmHover",
           "kdd/stats", "kdd/check")


class ViewSession:
    """One config file on disk: its latest text, its latest compile, and the pages listening."""

    def __init__(self, path: str, pool: WorkerPool, target: str | None = None, reader: ConfinedReader | None = None):
        self.path = os.path.abspath(path)
        self.reader = reader or ConfinedReader.of([os.path.dirname(self.path)])
        self.engine = Engine(read_text=self.reader)  # parses here, to know the parents to follow
        self.depends_on: tuple = ()  # the parents read, with their digests (None: cannot be read)
        self.uri = Path(self.path).as_uri()
        self.pool = pool
        self.target = target
        self.state = DocumentState(self.uri, self.path, version=0)
        self.text: str | None = None
        self.read_error: str | None = None
        self.last: dict | None = None  # the latest kdd/compiled event, for pages that connect later
        self.checked: dict | None = None  # the latest kdd/checked event
        self.listeners: set[asyncio.Queue] = set()

    # ---- following the file ------------------------------------------------

    def reload(self) -> bool:
        """Read the file and its parents again; a new version (and a compile) when any of them changed."""
        try:
            text, error = read_file(self.path), None
        except (OSError, UnicodeDecodeError) as exc:
            text, error = None, f"cannot read {self.path}: {getattr(exc, 'strerror', None) or exc}"
        depends_on = self.engine.parse(Source(text, self.path)).depends_on if text is not None else ()
        if self.state.version and (text, error, depends_on) == (self.text, self.read_error, self.depends_on):
            return False
        self.text, self.read_error, self.depends_on = text, error, depends_on
        self.state.version += 1
        self.schedule_compile()
        return True

    def schedule_compile(self) -> None:
        self.state.schedule(self._compile)

    async def _compile(self, version: int) -> None:
        state = self.state
        start = time.perf_counter()
        if self.text is None:
            result = {"ok": False, "error": self.read_error}
        else:
            try:
                result = await self.pool.call("kdd/compile", self._source(emit=["passes", "stats"]), self.uri,
                                              still_wanted=lambda: version == state.version)
            except WorkerFailed as exc:
                result = {"ok": False, "error": f"compile {exc}"}
            if result is None or version != state.version:
                return
            state.measured(time.perf_counter() - start)
        state.compiled, state.compiled_version = result, version
        state.compiled_event.set()
        self.last = compiled_notification(state)
        self._tell(COMPILED, self.last)

    def _tell(self, event: str, params: dict) -> None:
        for queue in list(self.listeners):
            queue.put_nowait((event, params))

    def _source(self, **fields) -> dict:
        params = {"text": self.text, "path": self.path, **fields}
        if self.target:
            params["target"] = self.target
        return params

    def follows(self, path: str) -> bool:
        """Whether a change to ``path`` may change what this session shows: the file or a parent."""
        return path == self.path or any(path == os.path.abspath(p) for p, _ in self.depends_on)

    def subscribe(self) -> asyncio.Queue:
        """A queue of ``(event, params)``; it starts with the latest compile when there is one."""
        queue: asyncio.Queue = asyncio.Queue()
        if self.last is not None:
            queue.put_nowait((COMPILED, self.last))
        if self.checked is not None:
            queue.put_nowait((CHECKED, self.checked))
        self.listeners.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue) -> None:
        self.listeners.discard(queue)

    # ---- the page's requests -----------------------------------------------

    async def request(self, method: str, params: dict | None) -> dict:
        """The answer to one of :data:`METHODS`; :class:`RpcError` when it has none."""
        params = params if isinstance(params, dict) else {}
        if method not in METHODS:
            raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r} (methods: {', '.join(METHODS)})")
        if method == "kdd/document":
            return {"uri": self.uri, "path": self.path, "version": self.state.version, "text": self.text or "",
                    "error": self.read_error}
        if self.text is None:
            raise RpcError(REQUEST_FAILED, self.read_error or f"{self.path} is not readable")
        answer = {"kdd/stats": self._stats, "kdd/passes": self._passes, "kdd/irAfterPass": self._ir_after_pass,
                  "kdd/diagnostics": self._diagnostics, "kdd/asmHover": self._asm_hover, "kdd/check": self._check,
                  "kdd/assembly": self._assembly}[method]
        return await answer(params)

    async def _stats(self, params: dict) -> dict:
        result = await self.latest()
        return {"ok": bool(result.get("ok")), "version": self.state.compiled_version,
                "stats": result.get("stats"), "compile_ms": round(1e3 * (self.state.compile_s or 0.0), 1)}

    async def _passes(self, params: dict) -> dict:
        return await self._call("kdd/passes", self._source())

    async def _ir_after_pass(self, params: dict) -> dict:
        name = params.get("pass", "final")
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "'pass' is a pass name (build, a pass, or final)")
        return await self._call("kdd/irAfterPass", self._source(**{"pass": name, "diff": bool(params.get("diff"))}))

    async def _diagnostics(self, params: dict) -> dict:
        result = await self.latest()
        return {"version": self.state.compiled_version, "diagnostics": result.get("diagnostics") or []}

    async def _asm_hover(self, params: dict) -> dict:
        line = params.get("line")
        if not isinstance(line, int) or isinstance(line, bool) or line < 0:
            raise RpcError(INVALID_PARAMS, "'line' is a 0-based line of the assembly listing")
        result = await self._call("kdd/asmHover", self._source(line=line))
        if not result.get("ok"):
            raise RpcError(REQUEST_FAILED, result.get("error") or "no assembly")
        return result["hover"]

    async def _check(self, params: dict) -> dict:
        version = self.state.version
        result = await self._call("kdd/check", {"text": self.text, "path": self.path})
        self.checked = {"uri": self.uri, "version": version, "result": result}
        self._tell(CHECKED, self.checked)
        return result

    async def _assembly(self, params: dict) -> dict:
        result = await self._call("kdd/compile", self._source(emit=["asm"]))
        if not result.get("ok"):
            raise RpcError(REQUEST_FAILED, result.get("error") or "no assembly")
        return result

    async def latest(self) -> dict:
        """The compile of the current version, waiting for it when it is still running."""
        while self.state.compiled_version != self.state.version:
            self.state.compiled_event.clear()
            if self.state.pending is None or self.state.pending.done():
                self.schedule_compile()
            await self.state.compiled_event.wait()
        return self.state.compiled or {}

    async def _call(self, method: str, params: dict) -> dict:
        try:
            return await self.pool.call(method, params, self.uri)
        except WorkerFailed as exc:
            raise RpcError(REQUEST_FAILED, f"{method}: {exc}") from None
