"""``kdd lsp`` beyond the main session: completion, symbols, lenses, inlay hints, definition through
``extends``, virtual documents, files changed on disk, a runaway compile, and random edits and bad
requests that leave the server answering."""
import asyncio
import random
import shutil
from pathlib import Path

import pytest
from kdd.server.lsp.client import running
from lsprotocol import types as lsp
from protocol_schemas import validator
from pygls.exceptions import JsonRpcException

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLASSIC_CONV = Path(__file__).resolve().parents[1] / "data" / "sm90_conv_classic.kernel.toml"


def _open(client, path: Path, version: int = 1):
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=path.as_uri(), language_id="toml", version=version, text=path.read_text())))


async def _features(tmp_path: Path):
    base = tmp_path / "base.kernel.toml"
    shutil.copy(EXAMPLES / "resnet50_3x3.kernel.toml", base)
    child = tmp_path / "child.kernel.toml"
    child.write_text('extends = "base.kernel.toml"\n\n[config]\nslm = { bufs = 2 }\n')
    uri = child.as_uri()
    async with running(tmp_path, "--no-cache") as client:
        _open(client, child)
        await client.wait_for("kdd/compiled", lambda p: p["uri"] == uri)
        doc = lsp.TextDocumentIdentifier(uri)

        items = await client.text_document_completion_async(lsp.CompletionParams(doc, lsp.Position(4, 0)))
        assert "fma" in [i.label for i in items.items] and "slm" not in [i.label for i in items.items]
        symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
        assert [s.name for s in symbols] == ["extends", "config"] and symbols[1].children[0].name == "slm"
        lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(doc))
        assert {lens.command.command for lens in lenses} >= {"kdd.showIR", "kdd.showAssembly"}
        hints = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
            doc, lsp.Range(lsp.Position(0, 0), lsp.Position(10, 0))))
        assert hints == [] or all(isinstance(h.label, str) for h in hints)

        where = await client.text_document_definition_async(lsp.DefinitionParams(doc, lsp.Position(3, 1)))
        assert where.uri == base.as_uri() and base.read_text().splitlines()[where.range.start.line].startswith("slm")
        parent = await client.text_document_definition_async(lsp.DefinitionParams(doc, lsp.Position(0, 14)))
        assert parent.uri == base.as_uri()

        ir_uri = f"kdd:/ir/hoist?{uri.replace(':', '%3A').replace('/', '%2F')}"
        content = await client.request("kdd/content", {"uri": ir_uri})
        validator("lsp.schema.json", "content").validate(content)
        assert content["text"].startswith("kernel {")
        stats = await client.request("kdd/stats", {"textDocument": {"uri": uri}})
        validator("lsp.schema.json", "stats").validate(stats)
        asm = await client.request("kdd/assembly", {"textDocument": {"uri": uri}})
        validator("lsp.schema.json", "assembly").validate(asm)
        regs = asm["asm"]["registers"]
        assert asm["asm"]["assembler"]["ok"] and 0 < regs["peak"] <= regs["budget"]
        assert any("config_range" in line for line in asm["asm"]["lines"])
        listing = await client.request("kdd/content", {"uri": ir_uri.replace("kdd:/ir/hoist", "kdd:/asm")})
        assert listing["text"].startswith("// target xehpg")
        # sm_90: PTX checked by ptxas, with nvdisasm's figures.
        sm90 = tmp_path / "sm90.kernel.toml"
        shutil.copy(EXAMPLES / "sm90_gemm.kernel.toml", sm90)
        _open(client, sm90)
        ptx = await client.request("kdd/assembly", {"textDocument": {"uri": sm90.as_uri()}}, timeout=180)
        assert ptx["asm"]["asm"].startswith(".version") and ptx["asm"]["assembler"]["ok"]
        assert ptx["asm"]["registers"]["allocated"] <= 255 and ptx["asm"]["sass"]

        # The parent changes on disk: the open child is recompiled and gets the parent's error.
        mark = len(client.messages)
        base.write_text(base.read_text().replace('op = "conv"', 'op = "convv"'))
        bad = await client.wait_for("textDocument/publishDiagnostics",
                                    lambda p: p.uri == uri and any(d.code == "extends" for d in p.diagnostics),
                                    after=mark)
        assert bad.diagnostics[0].range.start.line == 0
        # A config that is not open gets diagnostics when it changes on disk.
        other = tmp_path / "other.kernel.toml"
        mark = len(client.messages)
        other.write_text("[problem]\nop = 1\n")
        found = await client.wait_for("textDocument/publishDiagnostics",
                                      lambda p: p.uri == other.as_uri() and p.diagnostics, after=mark)
        assert any(d.severity == lsp.DiagnosticSeverity.Error for d in found.diagnostics)


@pytest.mark.slow
def test_completion_symbols_lenses_definition_content_and_files_on_disk(tmp_path):
    asyncio.run(_features(tmp_path))


async def _runaway(tmp_path: Path):
    path = tmp_path / "slow.kernel.toml"
    shutil.copy(CLASSIC_CONV, path)      # a slow compile
    async with running(tmp_path, "--no-cache", "--time-limit", "0.3") as client:
        _open(client, path)
        stopped = await client.wait_for("textDocument/publishDiagnostics",
                                        lambda p: any("stopped after" in d.message for d in p.diagnostics))
        assert any(d.source.startswith("kdd/") for d in stopped.diagnostics)
        op_line = path.read_text().splitlines().index('op = "conv"')
        hover = await client.text_document_hover_async(lsp.HoverParams(
            lsp.TextDocumentIdentifier(path.as_uri()), lsp.Position(op_line, 1)))
        assert hover is not None


@pytest.mark.slow
def test_a_runaway_compile_is_killed_at_its_limit_and_the_server_still_answers(tmp_path):
    asyncio.run(_runaway(tmp_path))


async def _fuzz(tmp_path: Path, seconds: float = 6.0):
    path = tmp_path / "fuzz.kernel.toml"
    shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", path)
    text = path.read_text()
    uri = path.as_uri()
    rng = random.Random(7)
    alphabet = list('[]{}="#\n .,:abcxyz0123456789_') + ["\u00e9", "\U0001f600", "\ufeff"]
    async with running(tmp_path, "--no-cache") as client:
        _open(client, path)
        loop = asyncio.get_running_loop()
        end, version = loop.time() + seconds, 1
        while loop.time() < end:
            version += 1
            lines = text.split("\n")
            line = rng.randrange(len(lines))
            col = rng.randrange(len(lines[line]) + 1)
            cut = rng.randrange(0, 4)
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 5)))
            end_col = min(len(lines[line]), col + cut)
            lines[line] = lines[line][:col] + piece + lines[line][end_col:]
            new_text = "\n".join(lines)
            u16 = lambda s: len(s.encode("utf-16-le")) // 2  # noqa: E731
            old = text.split("\n")[line]
            client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(line, u16(old[:col])), lsp.Position(line, u16(old[:end_col]))),
                    text=piece)]))
            text = new_text
            if version % 5 == 0:
                for method, params in (("kdd/irAfterPass", {"textDocument": {"uri": uri}, "pass": 3}),
                                       ("kdd/nope", {}), ("kdd/passes", {"textDocument": "x"}),
                                       ("kdd/content", {"uri": "kdd:/bogus?x"})):
                    try:
                        await client.request(method, params, timeout=30)
                    except JsonRpcException:
                        pass
            await asyncio.sleep(0.01)
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(0, 0)))
        assert hover is None or hover.contents.value
        symbols = await client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri)))
        assert isinstance(symbols, list)


@pytest.mark.slow
def test_random_edits_and_bad_requests_leave_the_server_answering(tmp_path):
    asyncio.run(_fuzz(tmp_path))


async def _settings(tmp_path: Path):
    path = tmp_path / "bert.kernel.toml"
    shutil.copy(EXAMPLES / "gemm_bert.kernel.toml", path)  # written for xehpc, no knobs
    async with running(tmp_path, "--no-cache", settings={"target": "xehpg", "checkOnSave": False}) as client:
        _open(client, path)
        compiled = await client.wait_for("kdd/compiled", lambda p: p["uri"] == path.as_uri())
        assert compiled["ok"] and compiled["target"] == "xehpg"
        verdict = await client.request("kdd/check", {"textDocument": {"uri": path.as_uri()}}, timeout=120)
        assert verdict["ok"] is True and verdict["stage"] == "final"
        checked = await client.wait_for("kdd/checked", lambda p: p["uri"] == path.as_uri())
        assert checked["result"] == verdict


@pytest.mark.slow
def test_workspace_settings_override_the_target(tmp_path):
    asyncio.run(_settings(tmp_path))


async def _superseded(tmp_path: Path):
    path = tmp_path / "resnet.kernel.toml"
    shutil.copy(EXAMPLES / "resnet50_3x3.kernel.toml", path)
    text = path.read_text()
    uri = path.as_uri()
    async with running(tmp_path, "--no-cache") as client:
        _open(client, path)
        await client.wait_for("kdd/compiled", lambda p: p["version"] == 1)
        line = text.split("\n").index('iter = "mb16oc32ic16"')
        old = 'iter = "mb16oc32ic16"'
        mark = len(client.messages)
        for version, oc in enumerate([16, 64, 32, 16, 64, 32, 16, 64, 32, 16], start=2):
            new = f'iter = "mb16oc{oc}ic16"'
            client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, len(old))), text=new)]))
            old = new
        last = await client.wait_for("kdd/compiled", lambda p: p["version"] == 11, after=mark)
        assert last["ok"] and last["config"].find("oc16") >= 0
        compiled = [p["version"] for m, p in client.messages[mark:] if m == "kdd/compiled"]
        assert compiled[-1] == 11 and len(compiled) <= 3  # typing faster than the debounce compiles once
        stats = await client.request("kdd/stats", {"textDocument": {"uri": uri}})
        assert stats["server"]["superseded"] >= 7


@pytest.mark.slow
def test_a_burst_of_edits_compiles_the_last_version(tmp_path):
    asyncio.run(_superseded(tmp_path))
