"""What other clients cost: a cached answer while another client sends 10 MB requests, and a cache write
in a full cache (issue 29's "slowness others cause").

- ``kdd serve --tcp`` on loopback: client B asks a cached ``kdd/compile`` again and again while client A
  sends ``--big`` requests of 10 MB of text; B's latency (p50, max) beside B's latency alone;
- ``DiskCache.put`` into a cache of ``--entries`` entries: the mean cost of a write after the first
  (which scans the cache once).

Prints a table and writes JSON (default ``bench/results/serve_under_load.json``); nothing asserts.

    .venv/bin/python bench/serve_under_load.py [--big 8] [--entries 20000] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kdd.core.engine import DiskCache
from kdd.server.rpc.client import Client

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gemm_f16.kernel.toml"
KDD = str(Path(sys.executable).parent / "kdd")


def _latencies(address: str, seconds: float, stop: threading.Event | None = None) -> list[float]:
    out = []
    with Client(address, timeout=120) as c:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (stop and stop.is_set()):
            t0 = time.perf_counter()
            c.call("kdd/compile", {"path": str(EXAMPLE)})
            out.append((time.perf_counter() - t0) * 1e3)
    return out


def cached_under_load(big: int) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        proc = subprocess.Popen([KDD, "serve", "--tcp", "127.0.0.1:0", "--cache-dir", cache, "--root", str(ROOT)],
                                stderr=subprocess.PIPE, text=True)
        address = proc.stderr.readline().strip().rsplit(" ", 1)[1]
        proc.stderr.readline()
        try:
            with Client(address, timeout=120) as c:
                c.call("kdd/compile", {"path": str(EXAMPLE)})  # now cached
            alone = _latencies(address, 1.0)
            done = threading.Event()

            def load() -> None:
                with Client(address, timeout=300) as a:
                    for i in range(big):
                        a.call("kdd/compile", {"text": f"# {i}\n" + "#" * (10 * 2**20), "path": "big.kernel.toml"})
                done.set()
            loader = threading.Thread(target=load)
            loader.start()
            loaded = _latencies(address, 120.0, done)
            loader.join()
            with Client(address, timeout=30) as c:
                c.call("kdd/shutdown")
        finally:
            proc.wait(30)
    return {"alone_p50_ms": statistics.median(alone), "alone_max_ms": max(alone),
            "under_load_p50_ms": statistics.median(loaded), "under_load_max_ms": max(loaded),
            "under_load_requests": len(loaded), "big_requests": big}


def cache_put(entries: int) -> dict:
    with tempfile.TemporaryDirectory() as root:
        cache = DiskCache(root, max_bytes=2**40)
        value = {"blob": "x" * 200}
        t0 = time.perf_counter()
        for i in range(entries):
            cache.put(f"{i:064x}", value)
        fill_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(200):
            cache.put(f"more-{i:059x}", value)
        put_ms = (time.perf_counter() - t0) / 200 * 1e3
    return {"entries": entries, "fill_s": fill_s, "put_ms_at_full": put_ms, "scans": cache.scans}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", type=int, default=8)
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "serve_under_load.json"))
    args = parser.parse_args()
    figures = {"machine": platform.processor() or platform.machine(), "cached": cached_under_load(args.big),
               "cache_put": cache_put(args.entries)}
    c, p = figures["cached"], figures["cache_put"]
    print(f"{'measure':<46} {'value':>10}")
    print(f"{'cached kdd/compile alone p50 / max (ms)':<46} {c['alone_p50_ms']:>5.1f} / {c['alone_max_ms']:.1f}")
    print(f"{'... while 10 MB requests arrive p50 / max (ms)':<46} "
          f"{c['under_load_p50_ms']:>5.1f} / {c['under_load_max_ms']:.1f}")
    print(f"{'DiskCache.put at %d entries (ms)' % p['entries']:<46} {p['put_ms_at_full']:>10.3f}")
    print(f"{'cache scans for %d puts' % (p['entries'] + 200):<46} {p['scans']:>10}")
    Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
