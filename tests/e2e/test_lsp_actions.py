"""``kdd lsp``'s actions: every command a lens names is advertised and runs, the server asks for fresh inlay
hints and lenses after each compile, code actions apply the fixes the diagnostics name (and the document
they leave compiles as promised), and the assembly hover documents each instruction."""
import asyncio
import shutil
from pathlib import Path

import pytest
from kdd.core.engine import Engine, Source
from kdd.server.lsp.client import running
from kdd.server.lsp.code_actions import EXTRACT_DEFAULTS
from lsprotocol import types as lsp
from protocol_schemas import validator
from pygls.exceptions import JsonRpcException

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# A config that runs out of registers with its sub-tiles pinned (tests/core/engine/test_register_figures.py).
OUT_OF_REGISTERS = ('[problem]\nop = "conv"\nprop = "fwd"\nshape = "mb32ic64ih56oc64oh56kh3ph1"\n'
                    'types = "f16:f16:f16"\n\n[target]\nhw = "xehpg"\n\n[config]\n'
                    'line = "simd=8 l=kh3kw3ic4 T=oc2ow2 i=ic16oc32ow16 bufs=3 S=a1b1"\nregs = 128\n')


def _open(client, path: Path, text: str | None = None):
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=path.as_uri(), language_id="toml", version=1, text=text or path.read_text())))


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        a = offsets[e.range.start.line] + e.range.start.character
        b = offsets[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


def _actions(client, uri: str, diagnostics, line: int = 0):
    return client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
        lsp.CodeActionContext(diagnostics=diagnostics)))


async def _session(tmp_path: Path):
    path = tmp_path / "resnet.kernel.toml"
    shutil.copy(EXAMPLES / "resnet50_3x3.kernel.toml", path)
    uri = path.as_uri()
    async with running(tmp_path, "--no-cache") as client:
        advertised = client.initialize_result.capabilities.execute_command_provider.commands
        _open(client, path)
        await client.wait_for("kdd/compiled", lambda p: p["uri"] == uri)
        # after the compile: fresh inlay hints (now the allocator's figure) and lenses
        await client.wait_for(lsp.WORKSPACE_INLAY_HINT_REFRESH)
        await client.wait_for(lsp.WORKSPACE_CODE_LENS_REFRESH)
        hints = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
            lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(40, 0))))
        assert any("by the allocator" in h.label for h in hints), [h.label for h in hints]

        # every lens's command is advertised, and runs
        lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
        assert {lens.command.command for lens in lenses} <= set(advertised)
        assert set(advertised) == {"kdd.runCheck", "kdd.showAssembly", "kdd.showIR", "kdd.showDiff"}
        for lens in lenses:
            answer = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
                lens.command.command, lens.command.arguments))
            if lens.command.command == "kdd.runCheck":
                assert answer["ok"] is True
            else:
                validator("lsp.schema.json", "commandResult").validate(answer)
        shown = [p.uri for m, p in client.messages if m == lsp.WINDOW_SHOW_DOCUMENT]
        assert any(u.startswith("kdd:/asm?") for u in shown) and any(u.startswith("kdd:/ir/final?") for u in shown)
        passes = await client.request("kdd/passes", {"textDocument": {"uri": uri}})
        changed = next(p["name"] for p in passes["passes"] if p["changed"])
        diff = await client.workspace_execute_command_async(lsp.ExecuteCommandParams("kdd.showDiff", [uri, changed]))
        assert diff["text"].startswith(f"--- before {changed}")
        for bad in (("kdd.nothing", [uri]), ("kdd.showDiff", [uri]), ("kdd.runCheck", [])):
            try:
                await client.workspace_execute_command_async(lsp.ExecuteCommandParams(*bad))
                raise AssertionError(f"{bad} was accepted")
            except JsonRpcException as exc:
                assert exc.code == -32602, exc

        # a misspelt value: the quick fix writes the suggestion, and the diagnostic goes away
        text = path.read_text().replace('fma = "dpas"', 'fma = "dpass"')
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=2, uri=uri), [lsp.TextDocumentContentChangeWholeDocument(text)]))
        published = await client.wait_for("textDocument/publishDiagnostics",
                                          lambda p: p.version == 2 and any("did you mean" in d.message
                                                                           for d in p.diagnostics))
        typo = [d for d in published.diagnostics if "did you mean" in d.message]
        actions = await _actions(client, uri, typo, typo[0].range.start.line)
        fix = next(a for a in actions if a.kind == lsp.CodeActionKind.QuickFix)
        assert fix.title == "Replace 'dpass' with 'dpas'"
        assert _apply(text, fix.edit.changes[uri]) == path.read_text()

        # the refactor (on the fixed text): every default written out; the same kernel, now all explicit
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=3, uri=uri),
            [lsp.TextDocumentContentChangeWholeDocument(_apply(text, fix.edit.changes[uri]))]))
        await client.wait_for("textDocument/publishDiagnostics", lambda p: p.version == 3)
        refactor = next(a for a in await _actions(client, uri, []) if a.title == EXTRACT_DEFAULTS)
        assert refactor.kind == lsp.CodeActionKind.RefactorExtract
        explicit = _apply(path.read_text(), refactor.edit.changes[uri])
        engine = Engine()
        before, after = engine.parse(Source(path.read_text(), str(path))), engine.parse(Source(explicit, str(path)))
        assert after.spec.config == before.spec.config
        assert set(after.spec.user_knobs) > set(before.spec.user_knobs)
        assert not [d for d in after.diagnostics if d.severity.name == "ERROR"]

        # out of registers: one quick fix per repair; each edit leaves a config that parses with that knob set
        oor = tmp_path / "oor.kernel.toml"
        _open(client, oor, OUT_OF_REGISTERS)
        published = await client.wait_for("textDocument/publishDiagnostics",
                                          lambda p: p.uri == oor.as_uri() and any(d.code == "regs"
                                                                                  for d in p.diagnostics))
        regs = [d for d in published.diagnostics if d.code == "regs"]
        assert "try: large GRF mode" in regs[0].message
        actions = await _actions(client, oor.as_uri(), regs, regs[0].range.start.line)
        titles = [a.title for a in actions if a.kind == lsp.CodeActionKind.QuickFix]
        assert titles[:3] == ["large GRF mode: regs = 256", 'split A/B: subtiles = "a2b1"', 'split A/B: subtiles = "a1b2"']
        assert 'reuse headers: pipeline = "ur"' in titles and 'fewer staging buffers: slm = 2' in titles
        assert 'smaller thread tile: iter = "ic16oc16ow16"' in titles  # oc32 halved
        assert not any(t.startswith("drop prefetch") for t in titles)  # the config prefetches nothing already
        for action in actions:
            if action.kind != lsp.CodeActionKind.QuickFix:
                continue
            repaired = engine.parse(Source(_apply(OUT_OF_REGISTERS, action.edit.changes[oor.as_uri()]), str(oor)))
            assert repaired.spec is not None, action.title
            knob = action.title.split(": ")[1].split(" = ")[0]
            assert getattr(repaired.spec.config, knob) != engine.parse(Source(OUT_OF_REGISTERS)).spec.config.__dict__[knob]
        fixed = next(a for a in actions if a.title == "large GRF mode: regs = 256")
        out = engine.compile(Source(_apply(OUT_OF_REGISTERS, fixed.edit.changes[oor.as_uri()])), "stats")
        assert not [d for d in out["diagnostics"] if d["code"] == "regs"]  # the repair fits

        # the assembly hover: the instruction's doc and the buffers live there, largest first
        asm = await client.request("kdd/assembly", {"textDocument": {"uri": uri}})
        lines = asm["asm"]["lines"]
        index = next(i for i, l in enumerate(lines) if "dpas" in l["text"])
        hover = await client.request("kdd/asmHover", {"textDocument": {"uri": uri}, "line": index})
        validator("lsp.schema.json", "asmHover").validate(hover)
        assert hover["doc"]["mnemonic"] == "dpas" and hover["doc"]["pipe"] == "xmx"
        assert "systolic" in hover["markdown"]
        live = [b["regs"] for b in hover["live"]]
        assert live == sorted(live, reverse=True) and {b["label"] for b in hover["live"]} == set(lines[index]["live"])


async def _sm90(tmp_path: Path):
    path = tmp_path / "sm90.kernel.toml"
    shutil.copy(EXAMPLES / "sm90_gemm.kernel.toml", path)
    async with running(tmp_path, "--no-cache") as client:
        _open(client, path)
        compiled = await client.wait_for("kdd/compiled", lambda p: p["uri"] == path.as_uri(), timeout=180)
        asm = await client.request("kdd/assembly", {"textDocument": {"uri": path.as_uri()}}, timeout=180)
        listing = asm["asm"]["registers"]
        # the one figure is ptxas's allocation, not nvdisasm's live peak nor the IR model's
        assert compiled["registers"]["source"] == "ptxas"
        assert compiled["registers"]["estimate"] == compiled["registers"]["allocated"] == listing["allocated"]
        found = []      # ptxas places each HGMMA at one of the wgmma lines it merged
        for index in (i for i, l in enumerate(asm["asm"]["lines"]) if "wgmma.mma_async" in l["text"]):
            hover = await client.request("kdd/asmHover", {"textDocument": {"uri": path.as_uri()}, "line": index})
            assert hover["doc"]["mnemonic"] == "wgmma.mma_async"
            found += [s["doc"]["mnemonic"] for s in hover["sass"] if s["doc"]]
        assert "HGMMA" in found


@pytest.mark.slow
def test_sm90_reports_ptxas_figure_and_documents_ptx_with_its_sass(tmp_path):
    asyncio.run(_sm90(tmp_path))


@pytest.mark.slow
def test_commands_refreshes_code_actions_and_assembly_hover(tmp_path):
    asyncio.run(_session(tmp_path))
