"""``kdd serve`` against a hostile client (issue 29): what it reads, whom it lets in, and an answer to every
request; ``--connect`` failures as exit statuses; a bounded fuzz of frames (loopback only)."""
import json
import math
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import pytest

from kdd.server.rpc.client import Client
from kdd.server.rpc.framing import MSGPACK, FrameDecoder, encode
from kdd.server.rpc.methods import RpcError

KDD = str(Path(sys.executable).parent / "kdd")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"


def _start(*args, cwd=None):
    proc = subprocess.Popen([KDD, "serve", "--tcp", "127.0.0.1:0", "--no-cache", *args], stderr=subprocess.PIPE,
                            text=True, cwd=cwd)
    line = proc.stderr.readline()
    assert "listening on 127.0.0.1:" in line, line + proc.stderr.read()
    return proc, line.strip().rsplit(" ", 1)[1], proc.stderr.readline()


def _stop(proc, address, token=None):
    try:
        with Client(address, token=token, timeout=30) as c:
            c.call("kdd/shutdown")
    finally:
        proc.wait(10)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A daemon whose root is a workspace holding a config, a parent and a secret; another secret outside."""
    root = tmp_path_factory.mktemp("workspace")
    outside = tmp_path_factory.mktemp("elsewhere")
    shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", root / "base.kernel.toml")
    (root / ".env").write_text(SECRET + "\n")
    (outside / "secret.kernel.toml").write_text(f'[problem]\nop = "{SECRET}"\n')
    proc, address, token_line = _start("--root", str(root), "--workers", "1", "--worker-memory", "700")
    yield address, root, outside, token_line
    _stop(proc, address)


def _raw(address):
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=60)


def _token(address):
    from kdd.server.rpc.auth import read_token

    return read_token(int(address.rsplit(":", 1)[1]))


def test_the_token_is_made_by_default_in_a_private_file_and_required(served):
    address, _, _, token_line = served
    path = Path(token_line.strip().removeprefix("kdd serve: token in "))
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert len(path.read_text()) >= 32
    for wrong in ("", "é", "x" * 43, "\udcff"):
        with Client(address, token=wrong, timeout=30) as c:
            with pytest.raises(RpcError) as info:
                c.call("kdd/stats")
            assert info.value.code == -32001
    with Client(address, timeout=30) as c:  # the file's token
        assert "daemon" in c.call("kdd/stats")


def test_no_token_needs_the_unsafe_flag():
    refused = subprocess.run([KDD, "serve", "--tcp", "127.0.0.1:0", "--no-token"], capture_output=True, text=True,
                             timeout=30)
    assert refused.returncode == 2 and "--unsafe" in refused.stderr and "Traceback" not in refused.stderr


def test_a_non_ascii_token_of_the_daemon_is_compared_as_bytes():
    """A daemon started with a non-ASCII token never answered anyone."""
    proc = subprocess.Popen([KDD, "serve", "--tcp", "127.0.0.1:0", "--no-cache", "--token", "pässwört"],
                            stderr=subprocess.PIPE, text=True)
    address = proc.stderr.readline().strip().rsplit(" ", 1)[1]
    try:
        with Client(address, token="pässwort", timeout=30) as c:
            with pytest.raises(RpcError):
                c.call("kdd/stats")
        with Client(address, token="pässwört", timeout=30) as c:
            assert "daemon" in c.call("kdd/stats")
        sock, decoder = _raw(address), FrameDecoder()
        sock.sendall(encode({"jsonrpc": "2.0", "id": 1, "method": "kdd/stats", "token": "pässwört".encode()},
                            MSGPACK))
        assert "daemon" in decoder.feed(sock.recv(1 << 16))[0].value["result"]
    finally:
        _stop(proc, address, "pässwört")


def test_files_outside_the_roots_and_files_that_are_not_configs_are_never_quoted(served):
    address, root, outside, _ = served
    with Client(address, timeout=60) as c:
        replies = [
            c.call("kdd/compile", {"path": str(outside / "secret.kernel.toml")}),
            c.call("kdd/compile", {"path": str(root / ".env")}),
            c.call("kdd/compile", {"path": "/etc/passwd"}),
            c.call("kdd/compile", {"text": 'extends = ".env"\n', "path": str(root / "x.kernel.toml")}),
            c.call("kdd/compile", {"text": f'extends = "{outside}/secret.kernel.toml"\n',
                                   "path": str(root / "x.kernel.toml")}),
            c.call("kdd/compile", {"text": 'extends = "/etc/passwd"\n', "path": str(root / "x.kernel.toml")}),
        ]
        for reply in replies:
            text = json.dumps(reply)
            assert reply["ok"] is False and "wJalrXUtnFEMI" not in text and "root:x:" not in text, text
        assert "outside the workspace roots" in replies[0]["error"]
        assert "not a kernel config" in replies[1]["error"]
        assert any("not a kernel config" in d["message"] for d in replies[3]["diagnostics"])
        inside = c.call("kdd/compile", {"text": 'extends = "base.kernel.toml"\n', "path": str(root / "x.kernel.toml")})
        assert inside["ok"] is True


def test_an_http_request_is_refused_before_its_body():
    """A browser's no-cors ``POST http://127.0.0.1:PORT/a:b`` parsed as a frame; a page shut a daemon down."""
    proc, address, _ = _start("--no-token", "--unsafe")
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "kdd/shutdown"}).encode()
        for head in (b"POST /a:b HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                     b"Content-Length: %d\r\nOrigin: http://evil.example\r\n" % len(body)):
            sock = _raw(address)
            sock.sendall(head + b"Content-Length: %d\r\nContent-Type: text/plain\r\n\r\n" % len(body) + body)
            data = b""
            while chunk := sock.recv(1 << 16):  # the daemon closes the connection
                data += chunk
            assert b"HTTP request" in data and b'"result"' not in data
        with Client(address, timeout=30) as c:
            assert "daemon" in c.call("kdd/stats")  # still running
    finally:
        _stop(proc, address)


def test_malformed_requests_get_an_answer(served):
    address, _, _, _ = served
    token = _token(address)
    sock, decoder = _raw(address), FrameDecoder()
    pending = []

    def reply():
        while not pending:
            pending.extend(decoder.feed(sock.recv(1 << 16)))
        return pending.pop(0).value
    # a msgpack map with a non-string key once got no answer
    sock.sendall(encode({"jsonrpc": "2.0", "id": 1, "token": token, "method": "kdd/compile",
                         "params": {1: "x", "text": ""}}, MSGPACK))
    assert reply()["error"]["code"] == -32602
    sock.sendall(b"Content-Length: 58\r\n\r\n" + json.dumps(
        {"jsonrpc": "2.0", "id": float("nan"), "method": "kdd/stats"}).encode().ljust(58))
    nan = reply()
    assert nan["id"] is None and nan["error"]["code"] == -32600
    sock.close()


@pytest.mark.slow
def test_a_request_over_the_memory_limit_is_a_clear_error(served):
    """``unbounded: true`` at an exact full shape allocated without limit (a MemoryError came back with a
    traceback)."""
    address, root, _, _ = served
    with Client(address, timeout=120) as c:
        with pytest.raises(RpcError) as info:
            c.call("kdd/check", {"path": str(root / "base.kernel.toml"), "shape": "m8192n8192k8192",
                                 "exact": True, "unbounded": True})
        assert "out of memory" in info.value.message and "Traceback" not in info.value.message
        assert c.call("kdd/compile", {"path": str(root / "base.kernel.toml")})["ok"] is True


def test_a_removed_and_restored_parent_is_seen(served):
    """A parent removed and restored kept answering "cannot read" until the daemon restarted."""
    address, root, _, _ = served
    parent = root / "parent.kernel.toml"
    child = {"text": 'extends = "parent.kernel.toml"\n', "path": str(root / "child.kernel.toml")}
    with Client(address, timeout=60) as c:
        assert c.call("kdd/compile", child)["ok"] is False
        shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", parent)
        assert c.call("kdd/compile", child)["ok"] is True
        parent.unlink()
        assert c.call("kdd/compile", child)["ok"] is False
        shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", parent)
        assert c.call("kdd/compile", child)["ok"] is True


def _cli(*args, timeout=60):
    return subprocess.run([KDD, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_connect_failures_are_one_line_and_an_exit_status():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = _cli("compile", str(EXAMPLES / "gemm_f16.kernel.toml"), "--connect", f"127.0.0.1:{port}")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1 and "cannot reach" in refused.stderr
    with socket.socket() as silent:  # accepts and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        start = time.monotonic()
        hung = _cli("check", str(EXAMPLES / "gemm_f16.kernel.toml"), "--connect",
                    f"127.0.0.1:{silent.getsockname()[1]}", "--connect-timeout", "1")
        assert hung.returncode == 3 and len(hung.stderr.splitlines()) == 1 and "did not answer" in hung.stderr
        assert time.monotonic() - start < 30
    for bad in ("127.0.0.1:99999", "127.0.0.1:x"):
        out = _cli("serve", "--tcp", bad)
        assert out.returncode == 2 and len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr


def test_fuzz_random_frames_leave_every_request_answered(served):
    """Bounded soak: 150 random frames (good, malformed, wrong types, odd ids and encodings) on one
    connection; every request with an id gets exactly one reply and the daemon still serves."""
    address, root, _, _ = served
    token = _token(address)
    rng = random.Random(29)
    values = [None, 0, -1, 2**40, 1.5, math.inf, "", "é" * 3, b"\xff", [], {}, {"a": 1}, True, "kdd/compile"]
    sock, decoder = _raw(address), FrameDecoder()
    expected = set()
    for rid in range(150):
        fmt = rng.choice(["json", MSGPACK])
        params = {rng.choice(["path", "text", "emit", "shape", "target", "bisect", "x"]): rng.choice(values)
                  for _ in range(rng.randrange(3))}
        message = {"jsonrpc": rng.choice(["2.0", "2.0", "1.0"]), "id": rid, "token": token,
                   "method": rng.choice(["kdd/stats", "kdd/compile", "kdd/passes", "kdd/nope", 5]), "params": params}
        if rng.random() < 0.1:
            message["params"] = rng.choice(values[:9])
        if fmt == "json":  # what JSON can carry: bytes as text, infinities as a large number
            message = json.loads(json.dumps(message, default=lambda b: b.decode("latin-1")).replace(
                "Infinity", "1e308"))
        sock.sendall(encode(message, fmt))
        expected.add(rid)
    seen = []
    deadline = time.monotonic() + 120
    while len(seen) < len(expected) and time.monotonic() < deadline:
        for frame in decoder.feed(sock.recv(1 << 16)):
            seen.append(frame.value["id"])
            assert "error" in frame.value or "result" in frame.value
    assert sorted(seen) == sorted(expected)
    with Client(address, timeout=30) as c:
        assert c.call("kdd/stats")["daemon"]["requests"] > 0
