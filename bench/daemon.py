"""The daemon as an editor and a script see it: latency of edits, hovers and compiles, throughput, memory.

Drives the real servers over stdio with real clients, each with a fresh
on-disk cache:

- ``kdd lsp`` with pygls's LSP client on ``examples/resnet50_3x3.kernel.toml``:
  *edit -> diagnostics* (an edit of the thread and group tiles, each a
  different valid kernel, until the document's diagnostics are
  published for that version: at once from the parse, then *fresh* ones with
  the compile's results, announced by ``kdd/compiled``), and *hover while a
  compile runs* (hovers sent back to back right after an edit starts a compile);
- ``kdd serve --stdio`` with the JSON-RPC client: ``kdd/compile`` of the same
  example *cold* (nothing cached), *cached* (the same request again), and
  after a restart (*disk*: a new daemon over the same cache directory); every
  example compiled in turn (compiles per second), and the memory (resident
  set of the daemon and its workers) after that.

Prints a table and writes JSON (default ``bench/results/daemon.json``). The
issue's targets are printed beside the figures; nothing asserts on time.

    .venv/bin/python bench/daemon.py [--edits 12] [--hovers 200] [--json PATH]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp

from kdd.server.lsp.client import running
from kdd.server.rpc.framing import FrameDecoder, encode

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "resnet50_3x3.kernel.toml"
KDD = str(Path(sys.executable).parent / "kdd")
# Thread and group tiles a kernel author tries in turn: each a different valid kernel, nothing reused.
TILES = [("mb8oc16ic16", "oc2ow4"), ("mb8oc32ic16", "oc1ow4"), ("mb16oc16ic16", "oc2ow2"),
         ("mb8oc32ic16", "oc4ow2"), ("mb8oc16ic16", "oc1ow8"), ("mb16oc16ic16", "oc4ow4"),
         ("mb8oc32ic16", "oc2ow8"), ("mb8oc16ic16", "oc4ow1"), ("mb16oc16ic16", "oc1ow2"),
         ("mb8oc32ic16", "oc2oh2ow2"), ("mb8oc16ic16", "oc2ow2"), ("mb16oc16ic16", "oc2ow8")]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def lsp_figures(tmp: Path, edits: int, hovers: int) -> dict:
    path = tmp / "resnet.kernel.toml"
    text = EXAMPLE.read_text()
    path.write_text(text)
    uri = path.as_uri()
    async with running(tmp, "--cache-dir", str(tmp / "lsp-cache")) as client:
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="toml", version=1, text=text)))
        t0 = time.perf_counter()
        await client.wait_for("kdd/compiled", lambda p: p["version"] == 1, timeout=120)
        open_ms = (time.perf_counter() - t0) * 1e3
        lines = text.split("\n")
        line = next(i for i, ln in enumerate(lines) if ln.startswith("iter = "))
        assert lines[line + 1].startswith("tg = ")
        region = lsp.Range(lsp.Position(line, 0), lsp.Position(line + 1, len(lines[line + 1])))
        parse_ms, fresh_ms, failed = [], [], 0
        version = 1

        def edit(i: int) -> int:
            nonlocal version, region
            version += 1
            it, tg = TILES[i % len(TILES)]
            new = f'iter = "{it}"\ntg = "{tg}"'
            client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [lsp.TextDocumentContentChangePartial(range=region, text=new)]))
            region = lsp.Range(region.start, lsp.Position(line + 1, len(new.split("\n")[1])))
            return version

        for i in range(edits):
            mark = len(client.messages)
            t0 = time.perf_counter()
            v = edit(i)
            await client.wait_for("textDocument/publishDiagnostics", lambda p: p.version == v, after=mark)
            parse_ms.append((time.perf_counter() - t0) * 1e3)
            done = await client.wait_for("kdd/compiled", lambda p: p["version"] == v, after=mark, timeout=120)
            fresh_ms.append((time.perf_counter() - t0) * 1e3)
            failed += not done["ok"]
        # Hovers while a compile runs: an edit starts one, hovers follow back to back until it ends.
        hover_ms = []
        tag = lsp.Position(next(i for i, ln in enumerate(lines) if ln.startswith("wei")), 8)
        i = edits
        while len(hover_ms) < hovers:
            mark = len(client.messages)
            v = edit(i)
            i += 1
            done = asyncio.ensure_future(client.wait_for("kdd/compiled", lambda p: p["version"] == v,
                                                         after=mark, timeout=120))
            while not done.done() and len(hover_ms) < hovers:
                t0 = time.perf_counter()
                await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(uri), tag))
                hover_ms.append((time.perf_counter() - t0) * 1e3)
            await done
        stats = await client.request("kdd/stats", {"textDocument": {"uri": uri}})
    return {"open_to_compiled_ms": open_ms, "edit_to_parse_diagnostics_ms": parse_ms, "edits_not_compiled": failed,
            "edit_to_fresh_diagnostics_ms": fresh_ms, "hover_during_compile_ms": hover_ms,
            "compile_ms_avg": stats["compile_ms"], "debounce_ms": stats["debounce_ms"]}


class StdioDaemon:
    """``kdd serve --stdio`` and a blocking request/reply over its pipes."""

    def __init__(self, cache: Path):
        self.proc = subprocess.Popen([KDD, "serve", "--stdio", "--cache-dir", str(cache), "--root", str(ROOT)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.decoder, self.pending, self.ids = FrameDecoder(), [], 0

    def call(self, method: str, params: dict) -> tuple[object, float]:
        self.ids += 1
        t0 = time.perf_counter()
        self.proc.stdin.write(encode({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}))
        self.proc.stdin.flush()
        while not self.pending:
            self.pending.extend(self.decoder.feed(os.read(self.proc.stdout.fileno(), 1 << 20)))
        reply = self.pending.pop(0).value
        return reply.get("result", reply.get("error")), (time.perf_counter() - t0) * 1e3

    def rss_mb(self) -> float:
        """Resident memory of the daemon and every process under it."""
        pids, total = [self.proc.pid], 0
        while pids:
            pid = pids.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            total += int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmRSS")))
            pids += [int(c) for c in children]
        return total / 1024

    def close(self) -> None:
        self.call("kdd/shutdown", {})
        self.proc.wait(30)


def rpc_figures(tmp: Path) -> dict:
    cache = tmp / "rpc-cache"
    request = {"path": str(EXAMPLE), "emit": ["passes", "stats"]}
    daemon = StdioDaemon(cache)
    daemon.call("kdd/stats", {})  # started
    result, cold = daemon.call("kdd/compile", request)
    assert result["ok"], result
    cached = [daemon.call("kdd/compile", request)[1] for _ in range(20)]
    examples = sorted((ROOT / "examples").glob("*.kernel.toml"))
    t0 = time.perf_counter()
    for path in examples:
        daemon.call("kdd/compile", {"path": str(path), "emit": ["passes", "stats"]})
    all_s = time.perf_counter() - t0
    rss = daemon.rss_mb()
    daemon.close()
    restarted = StdioDaemon(cache)
    restarted.call("kdd/stats", {})
    _, disk = restarted.call("kdd/compile", request)
    restarted.close()
    return {"compile_cold_ms": cold, "compile_cached_ms": cached, "compile_after_restart_ms": disk,
            "examples": len(examples), "all_examples_s": all_s, "compiles_per_s": len(examples) / all_s,
            "rss_after_all_examples_mb": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=12)
    ap.add_argument("--hovers", type=int, default=200)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "daemon.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lsp_part = asyncio.run(lsp_figures(Path(tmp), args.edits, args.hovers))
        rpc_part = rpc_figures(Path(tmp))
    fresh, hover = lsp_part["edit_to_fresh_diagnostics_ms"], lsp_part["hover_during_compile_ms"]
    cold = rpc_part["compile_cold_ms"]
    rows = [
        ("edit -> parse diagnostics p50", percentile(lsp_part["edit_to_parse_diagnostics_ms"], 50), "ms", ""),
        ("edit -> fresh diagnostics p50", percentile(fresh, 50), "ms", f"< cold compile + 100 = {cold + 100:.0f}"),
        ("edit -> fresh diagnostics p95", percentile(fresh, 95), "ms", ""),
        ("edits whose compile failed", lsp_part["edits_not_compiled"], "", "0 (every edit a valid kernel)"),
        ("hover during compile p50", percentile(hover, 50), "ms", ""),
        ("hover during compile p99", percentile(hover, 99), "ms", "< 20"),
        ("kdd/compile cold", cold, "ms", ""),
        ("kdd/compile cached p50", statistics.median(rpc_part["compile_cached_ms"]), "ms", "< 10"),
        ("kdd/compile after restart (disk)", rpc_part["compile_after_restart_ms"], "ms", ""),
        ("compiles per second (all examples)", rpc_part["compiles_per_s"], "/s", ""),
        ("memory after all examples", rpc_part["rss_after_all_examples_mb"], "MB", "< 300"),
    ]
    print(f"{'figure':<38} {'value':>10}  {'':<3} target")
    for name, value, unit, target in rows:
        print(f"{name:<38} {value:>10.1f}  {unit:<3} {target}")
    out = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
           "lsp": lsp_part, "rpc": rpc_part, "table": [{"figure": r[0], "value": r[1], "unit": r[2],
                                                        "target": r[3]} for r in rows]}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
