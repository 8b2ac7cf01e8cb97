"""The daemon's token: compared as bytes whatever the encoding, written for this user only."""
import stat

from kdd.server.rpc import auth


def test_tokens_compare_as_bytes_of_any_encoding():
    expected = auth.as_bytes("pässwört")
    assert auth.matches("pässwört", expected) and auth.matches("pässwört".encode(), expected)
    for wrong in ("passwort", "pässwört ", "\udcff", b"\xff", None, 5, ["pässwört"], {"t": 1}):
        assert not auth.matches(wrong, expected)


def test_the_token_file_is_private_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    path = auth.write_token(4242, "t0ken")
    assert path == tmp_path / "kdd" / "serve-4242.token" and auth.read_token(4242) == "t0ken"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    auth.remove_token(path, "other")  # another daemon's token is left alone
    assert path.exists()
    auth.remove_token(path, "t0ken")
    assert auth.read_token(4242) is None
