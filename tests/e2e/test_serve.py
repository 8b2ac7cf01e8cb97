"""``kdd serve`` over TCP: JSON and msgpack clients at once, the same objects as the CLI, errors that
leave the connection and the daemon alive, a runaway compile stopped at its limit, --connect."""
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import msgpack
import pytest
from protocol_schemas import validator

from kdd.server.rpc.client import Client
from kdd.server.rpc.framing import MSGPACK, FrameDecoder, encode
from kdd.server.rpc.methods import RpcError

KDD = str(Path(sys.executable).parent / "kdd")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLASSIC_CONV = Path(__file__).resolve().parents[1] / "data" / "sm90_conv_classic.kernel.toml"


def _start(*args):
    """A daemon on a free port and its address; its token is in the file it printed, which Client reads."""
    proc = subprocess.Popen([KDD, "serve", "--tcp", "127.0.0.1:0", *args], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert "listening on 127.0.0.1:" in line, line
    assert "kdd serve: token in " in proc.stderr.readline()
    return proc, line.strip().rsplit(" ", 1)[1]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    proc, address = _start("--cache-dir", str(tmp_path_factory.mktemp("cache")))
    yield address
    try:
        with Client(address) as c:
            c.call("kdd/shutdown")
    finally:
        proc.wait(10)


def _raw(address):
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=60)


def _token(address):
    """The token the daemon at ``address`` wrote for this user (what a raw socket client must send)."""
    from kdd.server.rpc.auth import read_token

    return read_token(int(address.rsplit(":", 1)[1]))


def _read(sock, decoder):
    """The next frame (the decoder keeps frames that arrived together in ``pending``)."""
    pending = decoder.__dict__.setdefault("pending", [])
    while not pending:
        pending.extend(decoder.feed(sock.recv(1 << 16)))
    return pending.pop(0)


@pytest.mark.slow
def test_json_and_msgpack_clients_at_once_get_the_cli_objects(daemon, capsys):
    path = str(EXAMPLES / "gemm_bert.kernel.toml")
    results = {}

    def run(fmt):
        with Client(daemon, fmt=fmt) as c:
            results[fmt] = c.call("kdd/compile", {"path": path, "emit": ["ir", "passes"]})

    threads = [threading.Thread(target=run, args=(fmt,)) for fmt in ("json", MSGPACK)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert results["json"]["ok"] and results["json"] == results[MSGPACK]
    validator("compile.schema.json").validate(results["json"])
    from kdd.server.cli import main
    assert main(["compile", path, "--emit", "ir,passes", "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    strip = lambda d: {**d, "trace": {**d["trace"], "passes": [{**p, "ms": 0, "cached": False}
                                                                for p in d["trace"]["passes"]]}}
    assert strip(local) == strip(results["json"])


@pytest.mark.slow
def test_connect_prints_what_the_in_process_cli_prints(daemon):
    path = str(EXAMPLES / "resnet50_1x1.kernel.toml")
    local = subprocess.run([KDD, "compile", path, "--json"], capture_output=True, text=True)
    remote = subprocess.run([KDD, "compile", path, "--json", "--connect", daemon], capture_output=True, text=True)
    assert local.returncode == remote.returncode == 0
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert a == {**b, "file": a["file"]}
    check = subprocess.run([KDD, "check", path, "--connect", daemon], capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.startswith("ok ")


def test_bad_requests_get_errors_and_the_connection_survives(daemon):
    sock, decoder, token = _raw(daemon), FrameDecoder(), _token(daemon)
    cases = [
        (b"Content-Length: 5\r\n\r\n{nope", -32700),
        (encode([1, 2, 3]), -32600),
        (encode({"jsonrpc": "2.0", "token": token, "id": 1, "method": "kdd/nope"}), -32601),
        (encode({"jsonrpc": "2.0", "token": token, "id": 2, "method": "kdd/compile", "params": {"emit": "ir"}}), -32602),
        (encode({"jsonrpc": "2.0", "token": token, "id": 3, "method": "kdd/compile", "params": {"text": 5}}), -32602),
        (encode({"jsonrpc": "2.0", "token": token, "id": 4, "method": "kdd/compile", "params": {"text": "", "bogus": 1}}), -32602),
        (encode({"jsonrpc": "2.0", "token": token, "id": 5, "method": "kdd/compile", "params": [1]}), -32602),
    ]
    for data, code in cases:
        sock.sendall(data)
        reply = _read(sock, decoder).value
        assert reply["error"]["code"] == code and reply["error"]["message"]
    sock.sendall(encode({"jsonrpc": "2.0", "token": token, "id": 9, "method": "kdd/compile",
                         "params": {"text": "[problem]\nop = 3\n", "path": "bad.kernel.toml"}}))
    reply = _read(sock, decoder).value["result"]
    assert reply["ok"] is False and reply["diagnostics"]
    validator("compile.schema.json").validate(reply)
    sock.close()


def test_an_oversized_message_is_refused_and_the_next_one_answered(tmp_path):
    proc, address = _start("--max-message", "2000", "--no-cache")
    try:
        sock, decoder = _raw(address), FrameDecoder()
        big = encode({"jsonrpc": "2.0", "id": 1, "method": "kdd/compile", "params": {"text": "#" * 5000}})
        sock.sendall(big + encode({"jsonrpc": "2.0", "token": _token(address), "id": 2, "method": "kdd/stats"},
                                  MSGPACK))
        first = _read(sock, decoder).value
        assert first["error"]["code"] == -32600 and "over the limit" in first["error"]["message"]
        second = _read(sock, decoder)
        assert second.fmt == MSGPACK and second.value["id"] == 2 and "daemon" in second.value["result"]
    finally:
        with Client(address) as c:
            c.call("kdd/shutdown")
        proc.wait(10)


def test_a_runaway_compile_is_stopped_at_its_limit_and_the_daemon_answers(tmp_path):
    proc, address = _start("--time-limit", "0.3", "--no-cache", "--workers", "1")
    try:
        with Client(address) as c:
            with pytest.raises(RpcError) as info:
                c.call("kdd/compile", {"path": str(CLASSIC_CONV), "emit": "passes"})
            assert info.value.code == -32000 and "stopped after" in info.value.message
            assert "stage" in info.value.message
            assert "daemon" in c.call("kdd/stats")
            assert c.call("kdd/compile", {"text": "[problem]\n", "emit": "ir"})["ok"] is False
    finally:
        with Client(address) as c:
            c.call("kdd/shutdown")
        proc.wait(10)


def test_a_remote_address_needs_a_flag_and_a_token():
    refused = subprocess.run([KDD, "serve", "--tcp", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr
    proc = subprocess.Popen([KDD, "serve", "--tcp", "127.0.0.1:0", "--token", "s3cret"], stderr=subprocess.PIPE,
                            text=True)
    address = proc.stderr.readline().strip().rsplit(" ", 1)[1]
    try:
        with Client(address, token="s3cre") as c:
            with pytest.raises(RpcError) as info:
                c.call("kdd/stats")
            assert info.value.code == -32001
        with Client(address, token="s3cret") as c:
            assert "daemon" in c.call("kdd/stats")
    finally:
        with Client(address, token="s3cret") as c:
            c.call("kdd/shutdown")
        proc.wait(10)


def test_stdio_serves_one_client():
    proc = subprocess.Popen([KDD, "serve", "--stdio", "--no-cache"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write(encode({"jsonrpc": "2.0", "id": 1, "method": "kdd/passes",
                             "params": {"path": str(EXAMPLES / "gemm_bert.kernel.toml")}}, MSGPACK))
    proc.stdin.write(encode({"jsonrpc": "2.0", "id": 2, "method": "kdd/shutdown"}))
    proc.stdin.flush()
    out, _ = proc.communicate(timeout=120)
    frames = FrameDecoder().feed(out)
    replies = {f.value["id"]: f for f in frames}
    assert replies[1].fmt == MSGPACK and replies[1].value["result"]["ok"]
    assert [p["name"] for p in replies[1].value["result"]["passes"]][0] == "buffering"
    assert msgpack.packb(replies[1].value)  # plain data all the way


def test_a_scripted_session_edit_typo_check(daemon):
    """What the editor session does, as a script: new figures after a tile edit, a precise diagnostic
    for a typo, a check verdict; a JSON and a msgpack client side by side."""
    text = (EXAMPLES / "resnet50_3x3.kernel.toml").read_text()
    with Client(daemon) as js, Client(daemon, fmt=MSGPACK) as mp:
        first = js.call("kdd/compile", {"text": text, "emit": "stats"})
        edited = text.replace('iter = "mb16oc32ic16"', 'iter = "mb16oc16ic16"')
        second = mp.call("kdd/compile", {"text": edited, "emit": ["stats"]})
        assert second["stats"]["registers"]["estimate"] < first["stats"]["registers"]["estimate"]
        typo = js.call("kdd/compile", {"text": edited.replace('fma = "dpas"', 'fma = "dpsa"')})
        assert typo["ok"] is False
        error = next(d for d in typo["diagnostics"] if d["severity"] == "error")
        line = edited.split("\n").index('fma = "dpsa"'.replace("dpsa", "dpas"))
        assert error["range"]["start"] == {"line": line, "character": 6} and "dpas" in error["message"]
        verdict = mp.call("kdd/check", {"text": edited, "path": str(EXAMPLES / "x.kernel.toml")})
        assert verdict["ok"] is True and verdict["stage"] == "final"
        validator("check.schema.json").validate(verdict)
