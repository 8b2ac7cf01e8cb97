"""A scripted LSP client (pygls's) driving ``kdd lsp`` as a subprocess: what the end-to-end tests and
``bench/daemon.py`` use, and a starting point for scripts that want the editor's view."""
from __future__ import annotations

import asyncio
import sys
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage, _dict_to_object, default_converter

KDD = str(Path(sys.executable).parent / "kdd")


def _converter():
    """pygls's converter, with kdd's custom results and notifications left as plain dicts."""
    converter = default_converter()
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))

    def notification(obj, cls):
        if "params" in obj and not str(obj.get("method", "")).startswith("kdd/"):
            obj["params"] = _dict_to_object(obj["params"])
        return cls(**obj)
    converter.register_structure_hook(JsonRPCNotification, notification)
    return converter


class KddClient(LanguageClient):
    """Collects diagnostics and kdd's notifications; ``wait_for`` awaits one that satisfies a predicate."""

    def __init__(self, settings: dict | None = None):
        super().__init__("kdd-client", "1", converter_factory=_converter)
        self.messages: list[tuple[str, object]] = []
        self._changed = asyncio.Condition()
        self.settings = settings or {}

        for method in ("textDocument/publishDiagnostics", "kdd/compiled", "kdd/checked", "$/progress"):
            self.feature(method)(self._recorder(method))

        @self.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params):
            return [self.settings for _ in params.items]

        @self.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress_create(params):
            return None

        # What the server asks of an editor after a compile or a command, recorded like notifications.
        for method, answer in ((lsp.WORKSPACE_INLAY_HINT_REFRESH, None), (lsp.WORKSPACE_CODE_LENS_REFRESH, None),
                               (lsp.WINDOW_SHOW_DOCUMENT, lsp.ShowDocumentResult(success=True))):
            self.feature(method)(self._recorder(method, answer))

    def _recorder(self, method, answer=None):
        async def record(params):
            async with self._changed:
                self.messages.append((method, params))
                self._changed.notify_all()
            return answer
        return record

    async def wait_for(self, method: str, predicate=lambda p: True, timeout: float = 60.0, after: int = 0):
        """The first message ``method`` (from index ``after`` on) that satisfies ``predicate``."""
        async def find():
            async with self._changed:
                while True:
                    for m, p in self.messages[after:]:
                        if m == method and predicate(p):
                            return p
                    await self._changed.wait()
        return await asyncio.wait_for(find(), timeout)

    async def request(self, method: str, params: dict, timeout: float = 60.0):
        return await asyncio.wait_for(self.protocol.send_request_async(method, params), timeout)

    async def raw_request(self, method: str, params, timeout: float = 60.0):
        """A request whose params are sent as given, unchecked (pygls would validate a standard
        method's params first): what a careless or hostile client sends."""
        from concurrent.futures import Future

        rid, future = str(uuid.uuid4()), Future()
        self.protocol._request_futures[rid] = future
        self.protocol._send_data({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout)


def field(obj, name):
    """A field of a notification's params, whether pygls made it a dict or an object."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


async def start(root: Path, *args: str, settings: dict | None = None) -> KddClient:
    client = KddClient(settings)
    await client.start_io(KDD, "lsp", *args)
    client.stderr = bytearray()
    client._async_tasks.append(asyncio.ensure_future(_drain(client._server.stderr, client.stderr)))
    caps = lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            configuration=True, inlay_hint=lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True),
            code_lens=lsp.CodeLensWorkspaceClientCapabilities(refresh_support=True)),
        window=lsp.WindowClientCapabilities(work_done_progress=True,
                                            show_document=lsp.ShowDocumentClientCapabilities(support=True)))
    client.initialize_result = await client.initialize_async(lsp.InitializeParams(
        capabilities=caps, root_uri=root.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(root.as_uri(), "root")]))
    client.initialized(lsp.InitializedParams())
    return client


async def _drain(stream, into: bytearray) -> None:
    """Read the server's stderr as an editor does (an unread pipe fills up and blocks the server)."""
    while chunk := await stream.read(1 << 16):
        into += chunk


async def stop(client: KddClient) -> None:
    await asyncio.wait_for(client.shutdown_async(None), 30)
    client.exit(None)
    await client.stop()


@asynccontextmanager
async def running(root: Path, *args: str, settings: dict | None = None):
    """A started client for the duration of a block, shut down (and the server gone) after it."""
    client = await start(root, *args, settings=settings)
    try:
        yield client
    finally:
        await stop(client)
