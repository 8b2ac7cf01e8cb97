"""``kdd view`` against what it should not trust (issue 29): a followed file replaced by a FIFO, a device or
a huge file, parents that change, a deeply nested body, and a bounded fuzz of HTTP requests (loopback)."""
import asyncio
import json
import os
import random
import shutil
from pathlib import Path

import pytest
from kdd.server.view.http import ViewServer, follow
from kdd.server.view.session import ViewSession
from kdd.server.rpc.workers import WorkerPool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def _http(port: int, raw: bytes, timeout: float = 30) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(1 << 20), timeout)
    finally:
        writer.close()


def _post(port: int, body: bytes) -> bytes:
    return (f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def _compiled(queue, ok: bool, timeout=120):
    """The next ``kdd/compiled`` event whose ``ok`` is ``ok`` (watchdog may report a change in steps)."""
    while True:
        event, params = await asyncio.wait_for(queue.get(), timeout)
        if event == "kdd/compiled" and params["ok"] == ok:
            return params


async def _serving(tmp_path: Path, body):
    path = tmp_path / "view.kernel.toml"
    shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", path)
    pool = WorkerPool(1, None, 60.0)
    session = ViewSession(str(path), pool)
    server = ViewServer(session)
    await server.start()
    observer = follow(session)
    session.reload()
    try:
        await body(session, server, path)
    finally:
        observer.stop()
        server.close()
        pool.close()


def test_a_followed_file_replaced_by_a_fifo_a_device_or_a_huge_file_is_an_error_not_a_hang(tmp_path):
    async def body(session, server, path):
        queue = session.subscribe()
        await _compiled(queue, True)
        for replace, reason in ((lambda: os.mkfifo(path), "not a regular file"),
                                (lambda: os.symlink("/dev/zero", path), "not a regular file"),
                                (lambda: open(path, "wb").truncate(300 * 2**20), "too large")):
            path.unlink()
            replace()
            session.reload()  # returns at once: once it blocked on the FIFO and read /dev/zero whole
            document = await session.request("kdd/document", {})
            assert reason in document["error"] and document["text"] == ""
            await _compiled(queue, False)
            path.unlink()
            shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", path)
            session.reload()
            await _compiled(queue, True)
    asyncio.run(_serving(tmp_path, body))


def test_a_parent_edited_removed_and_restored_recompiles_the_view(tmp_path):
    """``kdd view`` ignored parent edits."""
    async def body(session, server, path):
        queue = session.subscribe()
        await _compiled(queue, True)
        parent = path.with_name("base.kernel.toml")
        parent.write_text(path.read_text())
        path.write_text('extends = "base.kernel.toml"\n')
        await _compiled(queue, True)
        parent.write_text(parent.read_text().replace('op = "gemm"', 'op = "gemmm"'))  # seen by watchdog
        await _compiled(queue, False)
        parent.unlink()
        shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", parent)
        await _compiled(queue, True)
        parent.unlink()
        await _compiled(queue, False)
        shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", parent)
        await _compiled(queue, True)
    asyncio.run(_serving(tmp_path, body))


def test_a_deeply_nested_body_and_a_bad_length_are_answered(tmp_path):
    async def body(session, server, path):
        nested = await _http(server.port, _post(server.port, b"[" * 100_000 + b"]" * 100_000))
        assert nested.startswith(b"HTTP/1.1 200") and b"-32700" in nested
        bad = await _http(server.port, f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                                       "Content-Length: -5\r\n\r\n".encode())
        assert bad.startswith(b"HTTP/1.1 400")
    asyncio.run(_serving(tmp_path, body))


def test_fuzz_random_requests_get_an_answer_or_a_close(tmp_path):
    """Bounded soak: 120 random requests (methods, targets, headers, bodies); each is answered or its
    connection closed within the timeout, and the page is still served afterwards."""
    async def body(session, server, path):
        rng = random.Random(29)
        host = f"127.0.0.1:{server.port}"
        bodies = [b"", b"{}", b"null", b"[1]", b'{"method": 5}', b'{"method": "kdd/nope"}',
                  b'{"method": "kdd/document", "params": []}', b'{"method": "kdd/irAfterPass", "params": {"pass": 3}}',
                  b'{"method": "kdd/passes"}', bytes(rng.randrange(256) for _ in range(64))]
        for _ in range(120):
            data = rng.choice(bodies)
            head = [f"{rng.choice(['GET', 'POST', 'PUT', 'BREW'])} "
                    f"{rng.choice(['/', '/rpc', '/static/view.js', '/static/../http.py', '/x' * 50, '/events?'])} "
                    "HTTP/1.1",
                    f"Host: {rng.choice([host, 'evil.example', ''])}",
                    f"Content-Type: {rng.choice(['application/json', 'text/plain'])}",
                    f"Content-Length: {rng.choice([len(data), len(data), 0, 2**40])}"]
            raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
            if "/events" in head[0] and host in head[1] and head[0].startswith("GET"):
                continue  # an event stream stays open by design
            reply = await _http(server.port, raw, timeout=60)
            assert reply == b"" or reply.startswith(b"HTTP/1.1 ")
        page = await _http(server.port, f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        assert page.startswith(b"HTTP/1.1 200")
        document = json.loads((await _http(server.port, _post(server.port, b'{"method": "kdd/document"}')))
                              .split(b"\r\n\r\n", 1)[1])
        assert document["result"]["path"] == str(path)
    asyncio.run(_serving(tmp_path, body))


@pytest.mark.slow
def test_a_port_out_of_range_or_taken_is_one_line_and_exit_2(tmp_path):
    """``--port 99999`` printed a traceback."""
    import socket
    import subprocess
    import sys

    kdd = str(Path(sys.executable).parent / "kdd")
    path = tmp_path / "v.kernel.toml"
    shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        for port in ("99999", str(taken.getsockname()[1])):
            out = subprocess.run([kdd, "view", str(path), "--port", port, "--no-browser", "--no-cache"],
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 2 and "Traceback" not in out.stderr and "error" in out.stderr.splitlines()[-1]
