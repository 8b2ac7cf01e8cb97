"""Every LSP method kdd answers, registered on a :class:`~.server.KddLanguageServer`."""
from __future__ import annotations

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from kdd.core.spec.completion import complete
from kdd.core.spec.hover import hover

from . import convert, features
from .code_actions import code_actions
from .commands import COMMANDS, execute, virtual_text, worker_call
from .documents import DocumentState
from .server import REQUEST_FAILED, KddLanguageServer, uri_path


def _current_compile(ls: KddLanguageServer, uri: str) -> dict | None:
    """The compile of the document's current text, if one has finished."""
    state = ls.docs.get(uri)
    return state.compiled if state is not None and state.compiled_version == state.version else None


def _compiled_registers(ls: KddLanguageServer, uri: str) -> dict | None:
    """The register figures of the compile of the document's current text, if one has finished."""
    compiled = _current_compile(ls, uri)
    return compiled["stats"].get("registers") if compiled and compiled.get("ok") and "stats" in compiled else None


def register(server: KddLanguageServer) -> None:  # noqa: C901 - one flat list of handlers reads best
    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: KddLanguageServer, params):
        ls.settings.update(getattr(ls, "initialization_options", None))
        await ls.fetch_settings()
        from kdd.server.watch import start_watching

        folders = [uri_path(f.uri) for f in (ls.workspace.folders or {}).values()] if ls.workspace else []
        ls.watcher = start_watching(ls, [f for f in folders if f])

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: KddLanguageServer, params: lsp.InitializeParams):
        ls.initialization_options = params.initialization_options
        roots = [uri_path(f.uri) for f in params.workspace_folders or []]
        if not roots and params.root_uri:
            roots = [uri_path(params.root_uri)]
        ls.set_roots([r for r in roots if r] or ([params.root_path] if params.root_path else []))

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: KddLanguageServer, params):
        await ls.fetch_settings()
        for state in ls.docs.values():
            ls.schedule_compile(state)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: KddLanguageServer, params: lsp.DidOpenTextDocumentParams):
        doc = params.text_document
        ls.docs[doc.uri] = DocumentState(doc.uri, uri_path(doc.uri), doc.version)
        ls.changed(doc.uri)
        if ls.watcher is not None:
            ls.watcher.refresh()

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: KddLanguageServer, params: lsp.DidChangeTextDocumentParams):
        state = ls.docs.get(params.text_document.uri)
        if state is not None:
            state.version = params.text_document.version
            ls.changed(state.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: KddLanguageServer, params: lsp.DidSaveTextDocumentParams):
        state = ls.docs.get(params.text_document.uri)
        if state is not None and ls.settings.check_on_save:
            await ls.run_check(state)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: KddLanguageServer, params: lsp.DidCloseTextDocumentParams):
        state = ls.docs.pop(params.text_document.uri, None)
        if state is not None and state.pending is not None:
            state.pending.cancel()
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                          diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: KddLanguageServer, params: lsp.HoverParams):
        source = ls.source(params.text_document.uri)
        markdown = hover(source.text, params.position.line, params.position.character,
                         path=source.path, read_text=ls.read_text,
                         registers=_compiled_registers(ls, params.text_document.uri))
        if markdown is None:
            return None
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, markdown))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=['"', "[", "="]))
    def on_completion(ls: KddLanguageServer, params: lsp.CompletionParams):
        items = complete(ls.source(params.text_document.uri).text, params.position.line, params.position.character)
        return lsp.CompletionList(is_incomplete=False, items=[convert.completion(c) for c in items])

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    def on_inlay_hint(ls: KddLanguageServer, params: lsp.InlayHintParams):
        parsed = ls.engine.parse(ls.source(params.text_document.uri))
        return features.inlay_hints(parsed, params.range, _compiled_registers(ls, params.text_document.uri))

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(ls: KddLanguageServer, params: lsp.DocumentSymbolParams):
        return features.document_symbols(ls.engine.parse(ls.source(params.text_document.uri)).document)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    def on_code_lens(ls: KddLanguageServer, params: lsp.CodeLensParams):
        parsed = ls.engine.parse(ls.source(params.text_document.uri))
        return features.code_lenses(parsed.document, params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(ls: KddLanguageServer, params: lsp.DefinitionParams):
        uri = params.text_document.uri
        parsed = ls.engine.parse(ls.source(uri))
        return features.definition(parsed.document, uri_path(uri), params.position.line,
                                   params.position.character, ls.read_text)

    # pygls advertises what is registered as a command (executeCommandProvider) and answers other names
    # with InvalidParams; the arguments arrive as they were sent
    for name in COMMANDS:
        def runner(command: str):
            async def run(ls: KddLanguageServer, *args):
                return await execute(ls, command, list(args))
            return run
        server.command(name)(runner(name))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorExtract]))
    def on_code_action(ls: KddLanguageServer, params: lsp.CodeActionParams):
        uri = params.text_document.uri
        source = ls.source(uri)
        return code_actions(uri, source.text, ls.engine.parse(source), params, _current_compile(ls, uri))

    # ---- kdd's own requests (protocol/lsp.schema.json) ---------------------

    async def latest(ls: KddLanguageServer, state: DocumentState) -> dict:
        """The compile of the current version, waiting for it when it is still running."""
        while state.compiled_version != state.version:
            state.compiled_event.clear()
            if state.pending is None or state.pending.done():
                ls.schedule_compile(state)
            await state.compiled_event.wait()
        return state.compiled

    @server.feature("kdd/passes")
    async def kdd_passes(ls: KddLanguageServer, params):
        result = await latest(ls, ls.state(params))
        if not result["ok"]:
            return result
        return {**result["passes"], "version": ls.state(params).compiled_version}

    @server.feature("kdd/irAfterPass")
    async def kdd_ir_after(ls: KddLanguageServer, params):
        state = ls.state(params)
        name = params.get("pass", "final")
        if not isinstance(name, str):
            raise JsonRpcInvalidParams("'pass' is a pass name (build, a pass, or final)")
        return await ir_request(ls, state, name, bool(params.get("diff")))

    async def ir_request(ls, state, name: str, diff: bool) -> dict:
        return await worker_call(ls, "kdd/irAfterPass", ls.request(state.uri, **{"pass": name, "diff": diff}),
                                 state.uri)

    @server.feature("kdd/assembly")
    async def kdd_assembly(ls: KddLanguageServer, params):
        state = ls.state(params)
        result = await worker_call(ls, "kdd/compile", ls.request(state.uri, emit=["asm"]), state.uri)
        if not result["ok"]:
            raise JsonRpcException(result["error"], REQUEST_FAILED, data=result.get("failure"))
        return result

    @server.feature("kdd/stats")
    async def kdd_stats(ls: KddLanguageServer, params):
        state = ls.state(params)
        result = await latest(ls, state)
        codegen = (result.get("stats") or {}).get("codegen") or {}
        out_asm = None if not codegen.get("ok") else {
            "registers": {k: codegen[k] for k in ("allocated", "peak", "peak_line", "by_label")},
            "mix": codegen["mix"], "roofline": codegen["roofline"]}
        return {"ok": result["ok"], "version": state.compiled_version, "stats": result.get("stats"), "asm": out_asm,
                "compile_ms": round(1e3 * (state.compile_s or 0.0), 1),
                "debounce_ms": round(1e3 * state.debounce_s, 1), "server": dict(ls.counters),
                "workers": ls.pool.stats()}

    @server.feature("kdd/check")
    async def kdd_check(ls: KddLanguageServer, params):
        return await ls.run_check(ls.state(params))

    @server.feature("kdd/asmHover")
    async def kdd_asm_hover(ls: KddLanguageServer, params):
        state = ls.state(params)
        line = params.get("line")
        if not isinstance(line, int) or isinstance(line, bool) or line < 0:
            raise JsonRpcInvalidParams("'line' is a 0-based line of the assembly listing")
        result = await worker_call(ls, "kdd/asmHover", ls.request(state.uri, line=line), state.uri)
        if not result["ok"]:
            raise JsonRpcException(result["error"], REQUEST_FAILED, data=result.get("failure"))
        return result["hover"]

    @server.feature("kdd/content")
    async def kdd_content(ls: KddLanguageServer, params):
        uri = params.get("uri") if isinstance(params, dict) else None
        return {"uri": uri, "text": await virtual_text(ls, uri if isinstance(uri, str) else "")}

    @server.feature(lsp.SHUTDOWN)
    def on_shutdown(ls: KddLanguageServer, params):
        ls.shutdown_pool()

