"""The commands kdd's code lenses, buttons and docs name, run by ``workspace/executeCommand``.

Every one takes the config's URI first. The ``show`` commands answer the ``kdd:`` virtual document
(``{"uri", "text"}``, what ``kdd/content`` answers for it) and, where the client can, ask it to open
that document (``window/showDocument``); editors that draw the view themselves (VS Code's preview,
Neovim's splits) run the same-named command on their side instead.

- ``kdd.runCheck URI``: the check of the current text (the ``kdd/check`` answer);
- ``kdd.showAssembly URI``: the assembly (``kdd:/asm?URI``);
- ``kdd.showIR URI [PASS]``: the IR after PASS (default ``final``);
- ``kdd.showDiff URI PASS``: what PASS changed.
"""
from __future__ import annotations

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from ..rpc.workers import WorkerFailed
from . import virtual_docs
from .server import REQUEST_FAILED, KddLanguageServer

COMMANDS = ("kdd.runCheck", "kdd.showAssembly", "kdd.showIR", "kdd.showDiff")


async def execute(ls: KddLanguageServer, command: str, arguments: list | None) -> dict:
    """Run one of :data:`COMMANDS`; a bad command or argument is InvalidParams naming what is expected."""
    args = list(arguments or [])
    if command not in COMMANDS:
        raise JsonRpcInvalidParams(f"unknown command {command!r} (commands: {', '.join(COMMANDS)})")
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams(f"{command} takes the config's URI as its first argument")
    uri = args[0]
    state = ls.state({"textDocument": {"uri": uri}})
    if command == "kdd.runCheck":
        return await ls.run_check(state)
    if command == "kdd.showAssembly":
        target = virtual_docs.asm_uri(uri)
    else:
        name = args[1] if len(args) > 1 else ("final" if command == "kdd.showIR" else None)
        if not isinstance(name, str):
            raise JsonRpcInvalidParams(f"{command} takes a pass name after the URI (build, a pass or final)")
        target = virtual_docs.ir_uri(uri, name, diff=command == "kdd.showDiff")
    answer = {"uri": target, "text": await virtual_text(ls, target)}
    window = ls.client_capabilities.window
    if window is not None and window.show_document is not None and window.show_document.support:
        ls.window_show_document(lsp.ShowDocumentParams(uri=target, take_focus=False))
    return answer


async def virtual_text(ls: KddLanguageServer, uri: str) -> str:
    """The text of a ``kdd:`` virtual document; RequestFailed with the stage's reason when there is none."""
    try:
        kind, name, doc_uri = virtual_docs.parse(uri)
    except ValueError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    ls.state({"textDocument": {"uri": doc_uri}})  # open, or RequestFailed saying so
    if kind == "asm":
        result = await worker_call(ls, "kdd/compile", ls.request(doc_uri, emit=["asm"]), doc_uri)
    else:
        result = await worker_call(ls, "kdd/irAfterPass", ls.request(doc_uri, **{"pass": name, "diff": kind == "diff"}),
                                   doc_uri)
    if not result["ok"]:
        raise JsonRpcException(result["error"], REQUEST_FAILED, data=result.get("failure"))
    if kind == "asm":
        return result["asm"]["listing"]
    return result["diff"] if kind == "diff" else result["text"]


async def worker_call(ls: KddLanguageServer, method: str, request: dict, affinity: str):
    """A request run by a worker; one stopped at the time limit is a RequestFailed error naming the stage."""
    try:
        return await ls.pool.call(method, request, affinity, ls.settings.time_limit)
    except WorkerFailed as exc:
        raise JsonRpcException(f"{method}: {exc}", REQUEST_FAILED) from None
