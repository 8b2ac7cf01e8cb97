"""``kdd lsp`` end to end, driven by a real LSP client over stdio: open, diagnostics, hover, IR after a
pass, an edit that changes the figures, a typo, save and the check verdict."""
import asyncio
import shutil
from pathlib import Path

from kdd.server.lsp.client import field, running
from lsprotocol import types as lsp
from protocol_schemas import validator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resnet50_3x3.kernel.toml"


def _pos(text: str, needle: str, offset: int = 0) -> lsp.Position:
    i = text.index(needle) + offset
    line = text.count("\n", 0, i)
    return lsp.Position(line, i - (text.rindex("\n", 0, i) + 1 if line else 0))


def _edit(client, uri, version, text, needle, replacement):
    start_pos = _pos(text, needle)
    end_pos = lsp.Position(start_pos.line, start_pos.character + len(needle))
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangePartial(range=lsp.Range(start_pos, end_pos), text=replacement)]))
    return text.replace(needle, replacement, 1)


async def _session(tmp_path: Path):
    path = tmp_path / "resnet.kernel.toml"
    shutil.copy(EXAMPLE, path)
    text = path.read_text()
    uri = path.as_uri()
    cache = str(tmp_path / "cache")
    async with running(tmp_path, "--cache-dir", cache, settings={"checkOnSave": True}) as client:
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="toml", version=1, text=text)))
        diags = await client.wait_for("textDocument/publishDiagnostics", lambda p: p.uri == uri)
        assert not [d for d in diags.diagnostics if d.severity == lsp.DiagnosticSeverity.Error]
        first = await client.wait_for("kdd/compiled", lambda p: field(p, "version") == 1)
        assert field(first, "ok")
        validator("lsp.schema.json", "compiled").validate(_plain(first))
        assert 0 < _plain(first)["registers"]["allocated"] <= _plain(first)["registers"]["budget"]

        hover = await client.text_document_hover_async(lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri), _pos(text, '"axcb"', 2)))
        assert hover is not None and "axcb" in hover.contents.value
        hover = await client.text_document_hover_async(lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri), _pos(text, 'iter =', 1)))
        allocated, budget = _plain(first)["registers"]["allocated"], _plain(first)["registers"]["budget"]
        assert f"**Total by the allocator: {allocated} of {budget}**" in hover.contents.value
        hints = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
            lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(len(text.splitlines()), 0))))
        ir_model = _plain(first)["registers"]["ir"]
        assert f"  regs {allocated}/{budget} by the allocator (IR model {ir_model})" in [h.label for h in hints]

        ir = await client.request("kdd/irAfterPass", {"textDocument": {"uri": uri}, "pass": "unroll", "diff": True})
        validator("lsp.schema.json", "irAfterPass").validate(ir)
        assert ir["text"].startswith("kernel {\n") and ir["diff"].startswith("--- before unroll\n")
        assert any(entry.get("origin", {}).get("range") for entry in ir["lines"])
        passes = await client.request("kdd/passes", {"textDocument": {"uri": uri}})
        validator("lsp.schema.json", "passes").validate(passes)
        assert [p["name"] for p in passes["passes"]][:2] == ["buffering", "prefetch"]

        mark = len(client.messages)
        text = _edit(client, uri, 2, text, 'iter = "mb16oc32ic16"', 'iter = "mb16oc16ic16"')
        second = await client.wait_for("kdd/compiled", lambda p: field(p, "version") == 2, after=mark)
        assert field(second, "ok")
        assert _plain(second)["registers"]["estimate"] < _plain(first)["registers"]["estimate"]

        mark = len(client.messages)
        text = _edit(client, uri, 3, text, 'fma = "dpas"', 'fma = "dpsa"')
        typo = await client.wait_for("textDocument/publishDiagnostics",
                                     lambda p: p.version == 3 and p.diagnostics, after=mark)
        error = next(d for d in typo.diagnostics if d.severity == lsp.DiagnosticSeverity.Error)
        assert error.range.start == _pos(text, '"dpsa"') and "dpas" in error.message

        mark = len(client.messages)
        text = _edit(client, uri, 4, text, 'fma = "dpsa"', 'fma = "dpas"')
        client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
        checked = await client.wait_for("kdd/checked", after=mark, timeout=120)
        result = field(checked, "result")
        assert field(checked, "version") == 4 and _plain(result)["ok"] is True
        validator("check.schema.json").validate(_plain(result))


def _plain(obj):
    """A notification's params as plain data (pygls gives namedtuples for unknown methods)."""
    if hasattr(obj, "_asdict"):
        return {k: _plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def test_open_hover_ir_edit_typo_save(tmp_path):
    asyncio.run(_session(tmp_path))
