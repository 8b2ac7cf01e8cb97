"""The disk cache cannot lie: entries are verified on read, anything else is discarded and recomputed,
non-regular files are never read, a directory others can write is not used, a verdict is served only
for the artifact it judged, and ``put`` does not scan the cache on every write."""
import os
import random
import stat
from pathlib import Path

import msgpack
import pytest

from kdd.core.engine import DiskCache, Engine, Source
from kdd.core.engine.disk_cache import FORMAT, value_digest

EXAMPLE = Path(__file__).parents[3] / "examples" / "gemm_f16.kernel.toml"
TEXT = EXAMPLE.read_text()


class Recording(DiskCache):
    """A cache that remembers the keys put into it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.keys = []

    def put(self, key, value):
        self.keys.append(key)
        super().put(key, value)


def _entry(key, value, digest=None):
    packed = msgpack.packb(value, use_bin_type=True)
    return msgpack.packb({"format": FORMAT, "key": key, "digest": digest or value_digest(key, packed),
                          "value": packed}, use_bin_type=True)


def test_the_directory_is_private_and_sharded_by_the_hash_of_the_key(tmp_path):
    cache = DiskCache(tmp_path / "c")
    for kind in ("build", "check"):
        cache.put(f"{kind}-{'0' * 64}", {"v": kind})
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o700
    shards = {p.parent.name for p in (tmp_path / "c").glob("*/*.msgpack")}
    assert len(shards) == 2 and not shards & {"bu", "ch"}  # not by the kind the keys start with


def test_a_wrong_shaped_value_under_the_right_key_is_recomputed(tmp_path):
    """Once a failure forever: ``{"kernel": 1}`` under a build key made every compile fail."""
    cache = Recording(tmp_path)
    assert Engine(disk=cache).compile(Source(TEXT, str(EXAMPLE)), "ir")["ok"]
    for key in list(cache.keys):
        cache.put(key, [1, 2, 3])  # a well-formed entry whose value is not an artifact
    again = Engine(disk=DiskCache(tmp_path))
    out = again.compile(Source(TEXT, str(EXAMPLE)), "ir")
    assert out["ok"] and out["ir"]["text"].startswith("kernel {") and again.runs["build"] == 1


def test_a_value_that_does_not_match_its_digest_is_discarded(tmp_path):
    cache = DiskCache(tmp_path)
    cache.put("k" * 64, {"ok": False})
    path = cache._path("k" * 64)
    path.write_bytes(_entry("k" * 64, {"ok": True}, digest="0" * 64))
    assert cache.get("k" * 64) is None and not path.exists() and cache.discarded == 1


@pytest.mark.parametrize("kind", ["fifo", "zero-link", "directory"])
def test_a_non_regular_entry_is_refused_without_reading_it(tmp_path, kind):
    """A FIFO timed out every request; a link to /dev/zero read until memory ran out."""
    cache = DiskCache(tmp_path)
    path = cache._path("f" * 64)
    path.parent.mkdir(parents=True, exist_ok=True)
    {"fifo": lambda: os.mkfifo(path), "zero-link": lambda: os.symlink("/dev/zero", path),
     "directory": lambda: path.mkdir()}[kind]()
    assert cache.get("f" * 64) is None
    cache.put("f" * 64, {"v": 2})
    assert kind == "directory" or cache.get("f" * 64) == {"v": 2}


def test_a_directory_others_can_write_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    DiskCache(shared).put("s" * 64, {"v": 1})
    shared.chmod(0o777)
    cache = DiskCache(shared)
    assert cache.get("s" * 64) is None and "others can write" in cache.stats()["unusable"]
    cache.put("t" * 64, {"v": 2})
    assert not cache._path("t" * 64).exists()


def test_a_planted_verdict_for_another_artifact_is_not_served(tmp_path):
    """Anyone who could write the cache could make a wrong kernel pass: a verdict now names the digest of
    the IR it judged, and one that does not match this engine's IR is checked again."""
    cache = Recording(tmp_path)
    verdict = Engine(disk=cache).check(Source(TEXT, str(EXAMPLE)))
    assert verdict["ok"] is True
    for key in [k for k in cache.keys if k.startswith("check-")]:
        cache.put(key, {**verdict, "ok": False, "rel_err": 9.0, "judged": "0" * 64})
    again = Engine(disk=DiskCache(tmp_path))
    assert again.check(Source(TEXT, str(EXAMPLE)))["ok"] is True and again.runs["check"] == 1
    third = Engine(disk=DiskCache(tmp_path))  # the true verdict was rewritten, and is served
    assert third.check(Source(TEXT, str(EXAMPLE)))["ok"] is True and third.runs["check"] == 0


def test_put_scans_the_cache_once_and_then_only_past_the_bound(tmp_path):
    """Every write used to scan the whole cache (0.59 s a write at 50k entries)."""
    cache = DiskCache(tmp_path, max_bytes=20_000)
    for i in range(200):
        cache.put(f"{i:064x}", {"blob": "x" * 400})
    total = sum(p.stat().st_size for p in tmp_path.glob("*/*.msgpack"))
    assert total <= 20_000 and cache.evictions > 0
    assert cache.scans <= 1 + 200 * 460 // (20_000 * 0.2)  # one scan per fifth of the bound written
    assert cache.get(f"{199:064x}") == {"blob": "x" * 400}


def test_fuzz_random_damage_never_fails_and_never_lies(tmp_path):
    """Bounded soak: random bytes, truncations, swaps and special files over a live cache; every read
    is either the value put under that key or None."""
    rng = random.Random(29)
    cache = DiskCache(tmp_path)
    truth = {f"{i:064x}": {"i": i, "blob": "y" * rng.randrange(0, 300)} for i in range(40)}
    for key, value in truth.items():
        cache.put(key, value)
    for _ in range(300):
        key = rng.choice(list(truth))
        path = cache._path(key)
        action = rng.randrange(6)
        regular = path.is_file()  # (writing to a FIFO left by an earlier round would wait for a reader)
        other = cache._path(rng.choice(list(truth)))
        try:
            if action == 0:
                path.unlink(missing_ok=True)
                path.write_bytes(rng.randbytes(rng.randrange(0, 200)))
            elif action == 1 and regular:
                path.write_bytes(path.read_bytes()[: rng.randrange(0, 100)])
            elif action == 2 and other.is_file():
                path.unlink(missing_ok=True)
                path.write_bytes(other.read_bytes())
            elif action == 3:
                path.unlink(missing_ok=True)
                os.mkfifo(path)
            elif action == 4:
                cache.put(key, truth[key])
        except OSError:
            pass
        got = DiskCache(tmp_path).get(key)
        assert got is None or got == truth[key]
