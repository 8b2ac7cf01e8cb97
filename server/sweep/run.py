"""A sweep: the tasks not yet in the rows file run on Ray, each row appended as it finishes.

Tasks with the same key (the same descriptor written twice) run once and get a row each. A rerun
with the same rows file computes only the keys it lacks (and those whose worker was lost), so a
run that was interrupted or killed resumes where it stopped.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .ray_pool import map_unordered, progress_bar, ray_session
from .rows import RowWriter, done_keys, read_rows
from .tasks import check_cost
from .work import lost, row, run_task, same_as


@dataclass
class SweepRun:
    """What a run did: every task's row (earlier runs' for the keys it skipped), how many it computed."""

    rows: list[dict]
    computed: int
    skipped: int
    wall_s: float


def sweep(tasks: list, out: Path, *, address: str | None = None, workers: int | None = None) -> SweepRun:
    """Run ``tasks`` (keyed, :func:`.tasks.read_tasks`) into the rows file ``out``; raises
    KeyboardInterrupt after cancelling, with every finished row written."""
    from kdd.core.engine.versions import generator_version

    saved = read_rows([out])
    earlier = {r["key"]: r for r in saved}
    done = done_keys(saved)
    labelled = {(r["key"], r["task"]["label"]) for r in saved}
    by_key: dict[str, list] = {}
    writer = RowWriter(out)
    for t in tasks:
        if t.key not in done:
            by_key.setdefault(t.key, []).append(t)
        elif (t.key, t.label) not in labelled:     # its twin's row was written before the run stopped
            writer.write(same_as(earlier[t.key], t))
    if tasks and tasks[0].options.stage == "check":
        by_key = dict(sorted(by_key.items(), key=lambda item: -check_cost(item[1][0])))
    fresh: dict[str, dict] = {}
    start = time.perf_counter()
    bar = progress_bar(len(by_key), "task")

    def keep(key: str, first: dict) -> None:
        for i, t in enumerate(by_key[key]):
            writer.write(same_as(first, t) if i else first)
        fresh[key] = first
        bar.update()
    try:
        if by_key:
            gpus = 1 if tasks[0].options.stage == "bench" else 0
            with ray_session(address, workers) as ray:
                map_unordered(ray, run_task, [(ts[0], generator_version()) for ts in by_key.values()],
                              workers=workers, gpus=gpus,
                              on_result=lambda args, r: keep(args[0].key, r),
                              on_lost=lambda args, why: keep(args[0].key, row(args[0], lost(why), 0, 0)))
    finally:
        writer.close()
        bar.close()
    answers = earlier | fresh
    rows, seen = [], set()
    for t in tasks:
        if t.key in answers:
            rows.append(same_as(answers[t.key], t) if t.key in seen else {**answers[t.key], "task": t.describe()})
            seen.add(t.key)
    return SweepRun(rows, len(fresh), len(tasks) - sum(map(len, by_key.values())), time.perf_counter() - start)
