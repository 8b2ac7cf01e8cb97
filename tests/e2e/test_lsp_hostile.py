"""``kdd lsp`` against hostile or careless input (issue 29): an answer to every request, parents followed as
files even while missing, reads confined to the workspace, files appearing on disk never delaying the open
document, and a bounded fuzz of requests."""
import asyncio
import random
import shutil
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from kdd.server.lsp.client import running, start

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"


def _example(tmp_path: Path, name: str = "a.kernel.toml") -> Path:
    """A copy of a shipped example in the workspace."""
    path = tmp_path / name
    shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", path)
    return path


def _open(client, path: Path, text: str | None = None):
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(
        uri=path.as_uri(), language_id="toml", version=1, text=path.read_text() if text is None else text)))


def _hover(uri, line, character):
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


async def _answers(tmp_path: Path):
    path = _example(tmp_path)
    client = await start(tmp_path, "--no-cache")
    _open(client, path)
    for position in ((0, -1), (2**31, 0)):  # once never answered
        with pytest.raises(JsonRpcException) as info:
            await client.raw_request("textDocument/hover", _hover(path.as_uri(), *position), timeout=30)
        assert info.value.code == -32602 and "textDocument/hover" in str(info.value)
    with pytest.raises(JsonRpcException) as info:  # once a traceback
        await client.raw_request("textDocument/hover", _hover((tmp_path / "missing.kernel.toml").as_uri(), 0, 0))
    assert "not open" in str(info.value) and "Traceback" not in str(info.value)
    assert await client.raw_request("textDocument/hover", _hover(path.as_uri(), 2, 1)) is not None
    await asyncio.wait_for(client.shutdown_async(None), 30)
    with pytest.raises(JsonRpcException) as info:  # once never answered
        await client.raw_request("textDocument/hover", _hover(path.as_uri(), 2, 1), timeout=30)
    assert info.value.code == -32600 and "shut down" in str(info.value)
    client.exit(None)
    await client.stop()


@pytest.mark.slow
def test_invalid_params_requests_after_shutdown_and_unopened_documents_are_answered(tmp_path):
    asyncio.run(_answers(tmp_path))


async def _target(tmp_path: Path):
    path = _example(tmp_path)
    async with running(tmp_path, "--no-cache", settings={"target": "xehpx"}) as client:
        _open(client, path)
        found = await client.wait_for("textDocument/publishDiagnostics",
                                      lambda p: p.uri == path.as_uri() and p.diagnostics)
        assert "unknown target 'xehpx'" in found.diagnostics[0].message


@pytest.mark.slow
def test_an_unknown_target_setting_is_a_diagnostic(tmp_path):
    asyncio.run(_target(tmp_path))


def _errors(p):
    return [d for d in p.diagnostics if d.severity == lsp.DiagnosticSeverity.Error]


async def _parents(tmp_path: Path):
    base = _example(tmp_path, "base.kernel.toml")
    child = tmp_path / "child.kernel.toml"
    child.write_text('extends = "base.kernel.toml"\n')
    uri = child.as_uri()
    async with running(tmp_path, "--no-cache") as client:
        _open(client, child)
        assert (await client.wait_for("kdd/compiled", lambda p: p["uri"] == uri))["ok"]
        for step, broken in (("rename", True), ("restore", False), ("delete", True), ("restore", False)):
            mark = len(client.messages)
            if step == "rename":
                base.rename(tmp_path / "moved.kernel.toml")
            elif step == "delete":
                base.unlink()
            elif (tmp_path / "moved.kernel.toml").exists():
                (tmp_path / "moved.kernel.toml").rename(base)
            else:
                shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", base)
            found = await client.wait_for("textDocument/publishDiagnostics",
                                          lambda p: p.uri == uri and bool(_errors(p)) == broken, after=mark)
            if broken:
                assert any(d.code == "extends" and "cannot read" in d.message for d in _errors(found))
        mark = len(client.messages)  # a parent edited after all that still recompiles its child
        base.write_text(base.read_text().replace('op = "gemm"', 'op = "gemmm"'))
        found = await client.wait_for("textDocument/publishDiagnostics",
                                      lambda p: p.uri == uri and bool(_errors(p)), after=mark)
        assert any(d.code == "extends" for d in _errors(found))


@pytest.mark.slow
def test_a_renamed_deleted_or_restored_parent_updates_the_open_child(tmp_path):
    asyncio.run(_parents(tmp_path))


async def _confined(tmp_path: Path):
    root, outside = tmp_path / "ws", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / ".env").write_text(SECRET + "\n")
    (outside / "base.kernel.toml").write_text(f'[problem]\nop = "{SECRET}"\n')
    child = root / "child.kernel.toml"
    async with running(root, "--no-cache") as client:
        for parent, reason in ((".env", "not a kernel config"), ("../elsewhere/base.kernel.toml", "outside")):
            mark = len(client.messages)
            _open(client, child, f'extends = "{parent}"\n')
            found = await client.wait_for("textDocument/publishDiagnostics",
                                          lambda p: p.uri == child.as_uri() and any(
                                              d.code == "extends" for d in p.diagnostics), after=mark)
            messages = " ".join(d.message for d in found.diagnostics)
            assert reason in messages and "wJalrXUtnFEMI" not in messages
            client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(child.as_uri())))


@pytest.mark.slow
def test_parents_are_read_inside_the_workspace_only_and_never_quoted(tmp_path):
    asyncio.run(_confined(tmp_path))


async def _burst(tmp_path: Path):
    path = _example(tmp_path, "open.kernel.toml")
    uri = path.as_uri()
    async with running(tmp_path, "--no-cache", "--workers", "1") as client:
        _open(client, path)
        await client.wait_for("kdd/compiled", lambda p: p["uri"] == uri)
        mark = len(client.messages)
        text = path.read_text()
        for i in range(300):  # 300 configs appear in the workspace (6.3 s before an edit compiled)
            (tmp_path / f"new{i}.kernel.toml").write_text(text)
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text="# edited\n" + text)]))
        await client.wait_for("kdd/compiled", lambda p: p["uri"] == uri and p["version"] == 2, after=mark,
                              timeout=120)
        at = next(i for i, (m, p) in enumerate(client.messages) if m == "kdd/compiled" and p["version"] == 2)
        others = [p for m, p in client.messages[mark:at] if m == "textDocument/publishDiagnostics" and p.uri != uri]
        assert len(others) <= 3  # the open document's compile did not queue behind the 300 others
        await client.wait_for("textDocument/publishDiagnostics", lambda p: p.uri != uri, after=at)  # theirs follow


@pytest.mark.slow
def test_configs_appearing_on_disk_wait_behind_the_open_document(tmp_path):
    asyncio.run(_burst(tmp_path))


async def _fuzz(tmp_path: Path):
    path = _example(tmp_path)
    uri = path.as_uri()
    rng = random.Random(29)
    numbers = [-1, 0, 1, 3, 2**31, 2**31 - 1, 10**6]
    uris = [uri, (tmp_path / "nope.kernel.toml").as_uri(), "file:///etc/passwd", "kdd:/ir/x", "", "not a uri"]
    methods = ["textDocument/hover", "textDocument/completion", "textDocument/definition",
               "textDocument/documentSymbol", "textDocument/inlayHint", "kdd/irAfterPass", "kdd/stats",
               "kdd/content", "kdd/nope"]
    async with running(tmp_path, "--no-cache") as client:
        _open(client, path)
        for _ in range(80):
            position = {"line": rng.choice(numbers), "character": rng.choice(numbers)}
            params = rng.choice([
                {"textDocument": {"uri": rng.choice(uris)}, "position": position},
                {"textDocument": {"uri": rng.choice(uris)}, "range": {"start": position, "end": position}},
                {"textDocument": {"uri": rng.choice(uris)}, "pass": rng.choice(["final", "nope", 3])},
                {"uri": rng.choice(uris)}, {}, {"textDocument": 5}])
            try:
                await client.raw_request(rng.choice(methods), params, timeout=60)
            except JsonRpcException as exc:
                assert exc.code in (-32602, -32601, -32600, -32803) or "not open" in str(exc), str(exc)
        assert await client.raw_request("textDocument/hover", _hover(uri, 2, 1)) is not None


@pytest.mark.slow
def test_fuzz_random_requests_are_all_answered(tmp_path):
    asyncio.run(_fuzz(tmp_path))
