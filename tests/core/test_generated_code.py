"""The table of generated code: what a fresh process compiles, what the next one finds, and that it changes nothing."""
from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import sys
from importlib.util import MAGIC_NUMBER

import pytest

from kdd.core import generated_code

PROBE = ("import kdd.core.ir.stmt, kdd.core.targets.target\n"
         "from kdd.core import generated_code\n"
         "print(generated_code.compiled_this_process())")


def _compiled_by_a_fresh_process(prefix, **env) -> int:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environ.update(PYTHONPYCACHEPREFIX=str(prefix), **env)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=environ, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def _tables(prefix) -> list:
    return sorted(prefix.rglob("generated_code.*.code"))


def test_the_next_process_compiles_nothing_and_a_damaged_table_is_rebuilt(tmp_path):
    assert _compiled_by_a_fresh_process(tmp_path) > 100  # dataclass methods and IR node methods
    [table] = _tables(tmp_path)
    assert _compiled_by_a_fresh_process(tmp_path) == 0
    table.write_bytes(table.read_bytes()[:100])  # cut short
    assert _compiled_by_a_fresh_process(tmp_path) > 100
    assert _compiled_by_a_fresh_process(tmp_path) == 0
    entries = marshal.loads(table.read_bytes()[len(MAGIC_NUMBER):])
    table.write_bytes(MAGIC_NUMBER + marshal.dumps({source: b"\xff" for source in entries}))  # every entry damaged
    assert _compiled_by_a_fresh_process(tmp_path) > 100
    assert _compiled_by_a_fresh_process(tmp_path) == 0


def test_no_table_is_written_where_no_bytecode_is(tmp_path):
    assert _compiled_by_a_fresh_process(tmp_path, PYTHONDONTWRITEBYTECODE="1") > 100
    assert _tables(tmp_path) == []


def test_a_compiled_text_is_what_compiling_gives_and_is_compiled_once():
    source = "def f(a, b=3):\n    return a * b + 1\n"
    code = generated_code.compiled(source)
    assert generated_code.compiled(source) is code
    assert code == compile(source, "<string>", "exec", dont_inherit=True)  # code objects compare by content
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102
    assert namespace["f"](2) == 7


def test_dataclasses_made_through_the_table_behave_as_dataclasses():
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 2

    p = Point(1)
    assert p == Point(1, 2) and p != Point(2) and hash(p) == hash(Point(1, 2))
    assert repr(p).endswith(".Point(x=1, y=2)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3


def test_dataclasses_load_inspect_only_for_a_class_without_a_docstring():
    probe = ("import sys, kdd.core, dataclasses\n"
             "print('inspect' in sys.modules)\n"
             "@dataclasses.dataclass\n"
             "class Point:\n"
             "    x: int\n"
             "    y: int = 0\n"
             "import inspect\n"
             "print(Point.__doc__, dataclasses.inspect is inspect, hasattr(inspect, 'signature'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False", "Point(x: int, y: int = 0) True True"]
