"""The language server: LSP requests and notifications translated to engine calls.

Parsing (diagnostics as you type, hover, completion, inlay hints) runs in
this process on the latest text; it is fast and never blocked by a compile.
Compiles and checks run in :class:`~kdd.server.rpc.workers.WorkerPool`
processes, debounced per document, and a newer version of a document
supersedes an older compile (see :meth:`KddLanguageServer.schedule_compile`).
Custom requests and notifications are specified in ``protocol/lsp.schema.json``.

Files on disk (parents named by ``extends``, configs that are not open) are
read only inside the workspace roots (the workspace folders; without any,
the directory the server started in) and only when they are kernel configs
(:class:`~kdd.core.spec.confined.ConfinedReader`).
"""
from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter

from kdd.core.engine import Engine, Failure, Source
from kdd.core.engine.engine import DOCUMENT_START, failed
from kdd.core.engine.artifacts import failure_diagnostic
from kdd.core.spec.confined import ConfinedReader

from ..rpc.workers import WorkerFailed, WorkerPool
from . import convert
from .documents import DocumentState
from .protocol import KddProtocol

COMPILED, CHECKED = "kdd/compiled", "kdd/checked"
CUSTOM = ("kdd/passes", "kdd/irAfterPass", "kdd/assembly", "kdd/asmHover", "kdd/stats", "kdd/check", "kdd/content")
REQUEST_FAILED = -32803  # LSP's RequestFailed


@dataclass
class Settings:
    """``workspace/configuration`` section ``kdd`` (also accepted as initializationOptions)."""

    target: str | None = None
    time_limit: float = 60.0
    check_on_save: bool = True

    def update(self, data) -> None:
        if not isinstance(data, dict):
            return
        if data.get("target") is None or isinstance(data.get("target"), str):
            self.target = data.get("target") or None
        if isinstance(data.get("timeLimit"), (int, float)) and data["timeLimit"] > 0:
            self.time_limit = float(data["timeLimit"])
        if isinstance(data.get("checkOnSave"), bool):
            self.check_on_save = data["checkOnSave"]


def _converter():
    """pygls's converter, but the params of kdd's own methods stay plain dicts (pygls would make
    namedtuples of them, renaming keys such as ``pass``)."""
    from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage

    converter = default_converter()

    def keep_params(obj, cls):
        if "params" in obj and not str(obj.get("method", "")).startswith("kdd/"):
            from pygls.protocol import _dict_to_object
            obj["params"] = _dict_to_object(obj["params"])
        return cls(**obj)

    converter.register_structure_hook(JsonRPCRequestMessage, keep_params)
    converter.register_structure_hook(JsonRPCNotification, keep_params)
    return converter


def uri_path(uri: str) -> str | None:
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme == "file" else None


class KddLanguageServer(LanguageServer):
    """``kdd lsp``: one engine for parsing here, a worker pool for compiles and checks."""

    def __init__(self, workers: int = 2, cache_dir: str | None = None, time_limit: float = 60.0,
                 memory_mib: int | None = None):
        from kdd.server.version import kdd_version

        super().__init__("kdd", kdd_version(), converter_factory=_converter, protocol_cls=KddProtocol)
        self.settings = Settings(time_limit=time_limit)
        self.docs: dict[str, DocumentState] = {}
        self.engine = Engine(read_text=self.read_text)
        self.reader = ConfinedReader.of([os.getcwd()])  # until initialize names the workspace folders
        self._pool_args = (workers, cache_dir, memory_mib)
        self._pool: WorkerPool | None = None
        self.watcher = None
        self.counters = {"compiles": 0, "superseded": 0, "timeouts": 0, "checks": 0}

    @property
    def pool(self) -> WorkerPool:
        if self._pool is None:
            workers, cache_dir, memory_mib = self._pool_args
            self._pool = WorkerPool(workers, cache_dir, self.settings.time_limit, memory_mib, self.reader)
        return self._pool

    def set_roots(self, roots: list[str]) -> None:
        """The workspace roots files are read under (none given: the directory the server started in)."""
        self.reader = ConfinedReader.of(roots or [os.getcwd()])

    def read_text(self, path: str) -> str:
        """A file's text: the editor's buffer when it is open, else the disk's (inside the roots)."""
        uri = Path(path).absolute().as_uri()
        state = self.docs.get(uri)
        if state is not None:
            return self.workspace.get_text_document(uri).source
        return self.reader(path)

    def source(self, uri: str) -> Source:
        """The text of open document ``uri``; a request about a document that is not open is refused
        (rather than read from anywhere on disk)."""
        if uri not in self.docs:
            raise JsonRpcException(f"{uri} is not open (send textDocument/didOpen first)", REQUEST_FAILED)
        return Source(self.workspace.get_text_document(uri).source, uri_path(uri))

    def request(self, uri: str, **fields) -> dict:
        """The params of a worker request about the open document ``uri``: its current text, its path,
        the target setting, and ``fields``."""
        source = self.source(uri)
        params = {"text": source.text, "path": source.path, **fields}
        if self.settings.target:
            params["target"] = self.settings.target
        return params

    def state(self, params) -> DocumentState:
        """The open document a custom request names (``{"textDocument": {"uri"}}``)."""
        doc = params.get("textDocument") if isinstance(params, dict) else None
        uri = doc.get("uri") if isinstance(doc, dict) else None
        if not isinstance(uri, str):
            raise JsonRpcInvalidParams("expected {\"textDocument\": {\"uri\": ...}}")
        self.source(uri)  # refuses a document that is not open
        return self.docs[uri]

    # ---- diagnostics and compiles -----------------------------------------

    def publish(self, state: DocumentState) -> None:
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=state.uri, version=state.version, diagnostics=[convert.diagnostic(d) for d in state.diagnostics()]))

    def changed(self, uri: str) -> None:
        """A new text version: diagnostics of the document now, a compile after the debounce."""
        state = self.docs[uri]
        parsed = self.engine.parse(self.source(uri))
        state.spec_diagnostics = parsed.diagnostics_json()
        state.compile_diagnostics = []
        self.publish(state)
        self.schedule_compile(state)

    def schedule_compile(self, state: DocumentState) -> None:
        """Compile the latest version after the debounce (:meth:`DocumentState.schedule`)."""
        if state.schedule(lambda version: self._compile(state, version)):
            self.counters["superseded"] += 1

    def _current(self, state: DocumentState, version: int) -> bool:
        return self.docs.get(state.uri) is state and state.version == version

    async def _compile(self, state: DocumentState, version: int) -> None:
        if not self._current(state, version):
            return
        params = self.request(state.uri, emit=["stats"])
        start = time.perf_counter()
        try:
            result = await self.pool.call("kdd/compile", params, state.uri, self.settings.time_limit,
                                          still_wanted=lambda: self._current(state, version))
        except WorkerFailed as exc:
            self.counters["timeouts"] += 1
            result = _worker_failure(params["path"], exc, "compile")
        if result is not None and result.get("ok"):
            result = await self._with_passes(state, version, params, result)
        if result is None or not self._current(state, version):
            self.counters["superseded"] += 1
            return
        self.counters["compiles"] += 1
        state.measured(time.perf_counter() - start)
        state.compiled, state.compiled_version = result, version
        parsed_diags = {(d["code"], d["message"]) for d in state.spec_diagnostics}
        state.compile_diagnostics = [d for d in result.get("diagnostics", [])
                                     if (d["code"], d["message"]) not in parsed_diags]
        if not result.get("ok") and not state.diagnostics() and result.get("failure"):
            # A failure of no range (an unknown kdd.target setting) still shows, at the document start.
            state.compile_diagnostics = [failure_diagnostic(result["failure"], DOCUMENT_START)]
        self.publish(state)
        state.compiled_event.set()
        self.protocol.notify(COMPILED, compiled_notification(state))
        self.refresh_client_views()

    def refresh_client_views(self) -> None:
        """Ask the client to fetch inlay hints and code lenses again (their figures come from the compile
        that just finished), where it says it can be asked."""
        workspace = self.client_capabilities.workspace
        if workspace is None:
            return
        if workspace.inlay_hint is not None and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if workspace.code_lens is not None and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

    async def _with_passes(self, state: DocumentState, version: int, params: dict, result: dict) -> dict | None:
        """``result`` with the pass table (from the same worker's memo, without the IR texts: the
        server keeps only small results, so answering a hover never waits on a large one) and the
        code generator's failure, when it has one, as a diagnostic. None: superseded."""
        request = {k: v for k, v in params.items() if k != "emit"}
        try:
            passes = await self.pool.call("kdd/passes", request, state.uri, self.settings.time_limit,
                                          still_wanted=lambda: self._current(state, version))
        except WorkerFailed as exc:
            passes = _worker_failure(params.get("path"), exc, "passes")
        if passes is None:
            return None
        out = {**result, "passes": passes}
        failure = result["stats"]["codegen"].get("failure")
        if failure is not None:
            anchor = self.engine.parse(self.source(state.uri)).anchor("config")
            out["diagnostics"] = result["diagnostics"] + [failure_diagnostic(failure, anchor)]
        return out

    async def run_check(self, state: DocumentState) -> dict:
        """The check of the current text (in a worker), published as a diagnostic and ``kdd/checked``."""
        version = state.version
        source = self.source(state.uri)
        token = f"kdd-check-{state.uri}-{version}"
        progress = self.client_capabilities.window and self.client_capabilities.window.work_done_progress
        if progress:
            try:
                await self.work_done_progress.create_async(token)
                self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title="kdd check", cancellable=False))
            except Exception:  # noqa: BLE001 - a client that refuses progress still gets the verdict
                progress = False
        try:
            result = await self.pool.call("kdd/check", self.request(state.uri), state.uri + "#check",
                                          self.settings.time_limit)
        except WorkerFailed as exc:
            self.counters["timeouts"] += 1
            result = _worker_failure(source.path, exc, "check")
        finally:
            if progress:
                self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="done"))
        self.counters["checks"] += 1
        if self._current(state, version):
            state.check = result
            state.check_diagnostics = check_diagnostics(result, self.engine.parse(source))
            self.publish(state)
        self.protocol.notify(CHECKED, {"uri": state.uri, "version": version, "result": result})
        return result

    async def documents_idle(self) -> None:
        """Wait until no open document has a compile waiting or running."""
        while busy := [s.pending for s in self.docs.values() if s.pending is not None and not s.pending.done()]:
            await asyncio.wait(busy)

    async def compile_on_disk(self, path: str) -> None:
        """Diagnostics for a config that is not open, compiled from the file on disk (none once it is gone)."""
        uri = Path(path).as_uri()
        diagnostics = []
        if os.path.isfile(path) and self.reader.allows(path):
            try:
                result = await self.pool.call("kdd/compile", {"path": path, "emit": ["ir"]}, uri,
                                              self.settings.time_limit)
            except WorkerFailed as exc:
                result = _worker_failure(path, exc, "compile")
            diagnostics = result.get("diagnostics", [])
        if uri not in self.docs:
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=uri, diagnostics=[convert.diagnostic(d) for d in diagnostics]))

    async def fetch_settings(self) -> None:
        caps = self.client_capabilities.workspace
        if caps is None or not caps.configuration:
            return
        try:
            found = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="kdd")]))
        except Exception:  # noqa: BLE001 - settings are optional
            return
        if found:
            self.settings.update(found[0])
            if self._pool is not None:
                self._pool.time_limit = self.settings.time_limit

    def shutdown_pool(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self.watcher is not None:
            self.watcher.stop()


def compiled_notification(state: DocumentState) -> dict:
    """``kdd/compiled``: the version compiled and its headline figures, for previews to refresh."""
    result = state.compiled or {}
    out = {"uri": state.uri, "version": state.compiled_version, "ok": bool(result.get("ok"))}
    if result.get("ok"):
        stats = result.get("stats", {})
        passes = result.get("passes", {}).get("passes", [])
        out.update({"target": result["target"], "config": result["config"],
                    "registers": stats.get("registers"),
                    "passes": {"ran": len(passes), "changed": sum(p["changed"] for p in passes)},
                    "compile_ms": round(1e3 * (state.compile_s or 0.0), 1)})
    else:
        out["error"] = result.get("error")
    return out


def check_diagnostics(result: dict, parsed) -> list[dict]:
    """A wrong check as an error at ``[check]`` (the document start without one), a check kdd could not
    run (``not-checkable``: a simulator gap, a shape over the bound) as a warning there; an ok check as
    none."""
    from kdd.core.engine.verdict import NOT_CHECKABLE, OK, verdict_of

    if "failure" in result:
        return [d for d in result["diagnostics"] if d.get("source") not in ("kdd/spec", "kdd/budget")]
    verdict = verdict_of(result)
    if verdict == OK:
        return []
    rng = parsed.anchor("check")
    if verdict == NOT_CHECKABLE:
        reason = result.get("reason") or (result.get("stages") or [{}])[-1].get("detail", "")
        failure = Failure("check", f"not checkable on {result.get('shape')}: {reason}", "not-checkable")
        return [{**failure_diagnostic(failure.to_dict(), rng), "severity": "warning"}]
    if "stages" in result:
        detail = f"first wrong after {result['first_bad']}"
    else:
        rel = "nan" if result.get("rel_err") is None else f"{result['rel_err']:.3g}"
        unwritten = result.get("unwritten")
        detail = result.get("error") or f"rel_err {rel} > tol {result['tol']:g}" + (
            f", {unwritten} element(s) of {result.get('tensor')} never written" if unwritten else "")
    failure = Failure("check", f"check failed on {result.get('shape')} ({result.get('artifact', 'ir')}): {detail}",
                      "check-failed")
    return [failure_diagnostic(failure.to_dict(), rng)]


def _worker_failure(path, exc: WorkerFailed, what: str) -> dict:
    """A request a worker did not finish, as a failed result whose one diagnostic says so at the document
    start (whatever stage it was in, parsing included)."""
    stage = exc.stage or ("check" if what == "check" else "build")
    failure = Failure(stage, f"{what} {exc}", "timeout" if exc.reason == "timeout" else "worker-crash",
                      internal=exc.reason != "timeout")
    return {**failed(path, failure, None), "diagnostics": [failure_diagnostic(failure.to_dict(), DOCUMENT_START)]}


def create_server(workers: int = 2, cache_dir: str | None = None, time_limit: float = 60.0,
                  memory_mib: int | None = None) -> KddLanguageServer:
    """The server with every feature registered."""
    server = KddLanguageServer(workers, cache_dir, time_limit, memory_mib)
    from .handlers import register

    register(server)
    return server
