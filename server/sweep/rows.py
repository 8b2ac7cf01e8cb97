"""The rows file of a sweep: JSON lines, appended as tasks finish, read back to resume and to summarize.

A run that is killed may leave its last line cut short; reading skips a line that does not parse
(the task it was for runs again), and appending starts on a fresh line.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, TextIO


def read_rows(paths: Iterable[Path]) -> list[dict]:
    """Every complete row of the files, in order (a missing file has none)."""
    out = []
    for path in paths:
        if not Path(path).exists():
            continue
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue        # the line a killed run was writing
            if isinstance(row, dict) and "key" in row:
                out.append(row)
    return out


def latest(rows: Iterable[dict]) -> list[dict]:
    """One row per task (key and label), the last written: a rerun's row replaces an earlier one."""
    by_task: dict[tuple[str, str], dict] = {}
    for r in rows:
        by_task[(r["key"], r["task"]["label"])] = r
    return list(by_task.values())


def done_keys(rows: Iterable[dict]) -> set[str]:
    """Keys whose task has an answer (``lost`` rows are retried)."""
    return {r["key"] for r in rows if r["verdict"]["outcome"] != "lost"}


class RowWriter:
    """Appends rows to a file, one flushed line each, so that every finished row survives a kill."""

    def __init__(self, path: Path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        cut = path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n")
        self._file: TextIO = path.open("a", encoding="utf-8")
        if cut:
            self._file.write("\n")

    def write(self, row: dict) -> None:
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
