"""The servers' reader: kernel configs inside the roots only, links resolved, nothing quoted."""
import os

import pytest

from kdd.core.spec.confined import ConfinedReader

SECRET = "token=hunter2"


@pytest.fixture
def tree(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "ok.kernel.toml").write_text("[problem]\n")
    (root / ".env").write_text(SECRET)
    (outside / "x.kernel.toml").write_text(SECRET)
    os.symlink(outside / "x.kernel.toml", root / "escape.kernel.toml")  # a link out of the root
    os.symlink(root / ".env", root / "env.kernel.toml")  # a config's name on a file that is not one
    os.symlink(outside, root / "sub")
    return ConfinedReader.of([root]), root


def test_a_config_inside_the_root_is_read(tree):
    reader, root = tree
    assert reader(str(root / "ok.kernel.toml")) == "[problem]\n" and reader.allows(str(root / "ok.kernel.toml"))


@pytest.mark.parametrize("name, rule", [(".env", "not a kernel config"), ("env.kernel.toml", "not a kernel config"),
                                        ("escape.kernel.toml", "outside"), ("sub/x.kernel.toml", "outside"),
                                        ("../outside/x.kernel.toml", "outside")])
def test_links_and_other_files_are_refused_without_their_content(tree, name, rule):
    reader, root = tree
    with pytest.raises(OSError) as info:
        reader(str(root / name))
    assert rule in str(info.value) and SECRET not in str(info.value)


def test_a_fifo_inside_the_root_is_refused_not_waited_on(tree):
    reader, root = tree
    os.mkfifo(root / "pipe.kernel.toml")
    with pytest.raises(OSError, match="not a regular file"):
        reader(str(root / "pipe.kernel.toml"))
