"""``kdd lsp`` on a pasted portBLAS launcher: a wrong argument is underlined where it is written, and the
hover over an argument shows its mapping, through the language server as an editor sees it."""
import asyncio

from kdd.server.lsp.client import running
from lsprotocol import types as lsp

LAUNCHER = ("container_0_t, container_1_t, container_2_t, 64, true, false, false, 64, Tile<4, 4, 8, 8>, _t_a, "
            "_t_b, s_a, s_b, static_cast<int>(gemm_memory_t::local), static_cast<int>(gemm_algorithm_t::standard), "
            "static_cast<int>(gemm_vectorization_t::full), is_beta_zero, 4, "
            "static_cast<int>(gemm_batch_type_t::strided)")
TEXT = (f'[problem]\nop = "gemm"\nshape = "m128n128k64"\ntypes = "f32"\nsrc = "ba"\nwei = "ab"\ndst = "ba"\n\n'
        f'[target]\nhw = "xehpc"\n\n[config]\nportblas = "{LAUNCHER.replace("_t_b,", "false,")}"\n')


async def _session(tmp_path):
    path = tmp_path / "portblas.kernel.toml"
    path.write_text(TEXT)
    uri = path.as_uri()
    async with running(tmp_path, "--cache-dir", str(tmp_path / "cache")) as client:
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="toml", version=1, text=TEXT)))
        diags = await client.wait_for("textDocument/publishDiagnostics", lambda p: p.uri == uri)
        (error,) = [d for d in diags.diagnostics if d.severity == lsp.DiagnosticSeverity.Error]
        line = TEXT.split("\n")[error.range.start.line]
        assert line[error.range.start.character:error.range.end.character] == "false"
        assert "TransB is false but the problem says _t_b = true (wei = 'ab'" in error.message
        row = TEXT.split("\n").index(line)
        hover = await client.text_document_hover_async(lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri), lsp.Position(row, line.index("Tile<") + 6)))
        assert hover is not None and hover.contents.value.startswith("**TileT = `Tile<4, 4, 8, 8>`**")
        assert "| `DoubleBuffer` | `true` | two local-memory buffers, half the barriers | slm bufs = 2 |" in \
            hover.contents.value


def test_the_language_server_diagnoses_and_hovers_a_portblas_launcher(tmp_path):
    asyncio.run(_session(tmp_path))
