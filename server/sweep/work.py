"""One task run in a worker: the JSON-RPC methods the CLI calls, and the row that records it.

Each stage is what a user would run by hand on the task's document, and the row is that command's
``--json`` object plus the sweep's fields (``key``, ``task``, ``verdict``, ``wall_s``, ``cpu_s``,
``worker``):

- ``compile``: ``kdd compile --emit stats --json`` (build, passes, register allocation);
- ``asm``: ``kdd compile --emit stats,asm --json`` with the assembler's report but not the listing
  text nor each value's allocation (a row per task is kept small);
- ``check``: ``compile`` and, when it builds, ``kdd check --json`` (``--bisect``, ``--unbounded`` as
  asked) under ``check``;
- ``bench`` (sm_90 on a CUDA GPU): ``compile``, then ``kdd check --device --json`` under ``check``
  and, when that is right, ``kdd bench --json`` under ``bench``.

Failures are rows too: a refused config carries the failure object the CLI prints, and an exception
escaping kdd becomes an ``error`` row naming it. One engine per worker process serves every task it
runs, so its memo is warm across tasks.
"""
from __future__ import annotations

import os
import resource
import socket
import time

# Listing fields an ``asm`` row leaves out: the assembly text and its per-line forms.
ASM_TEXT = ("asm", "lines", "listing", "sass")
# Failure codes that say nothing about the task (the worker, not the config): their rows are redone.
LOST = ("worker-lost", "stale-worker")
_ENGINE: dict = {}
_FILES: dict[str, str] = {}


def run_task(task, version: str) -> dict:
    """The row of ``task``, computed here with the generator at ``version`` (a worker whose kdd differs
    answers a ``stale-worker`` row rather than a result the key would mislabel)."""
    from kdd.core.engine.versions import generator_version

    wall, cpu = time.perf_counter(), _cpu_seconds()
    if generator_version() != version:
        result = lost(f"this worker's kdd is at generator version {generator_version()}, the sweep's at "
                      f"{version}: install the same kdd on every node", "stale-worker")
    else:
        try:
            result = _run(task)
        except Exception as exc:   # noqa: BLE001 - a bug in kdd is a row of the sweep, never a lost task
            result = failure_result("sweep", f"internal error (please report it): {type(exc).__name__}: {exc}",
                                    "exception", internal=True)
    return row(task, result, time.perf_counter() - wall, _cpu_seconds() - cpu)


def _cpu_seconds() -> float:
    """CPU time of this process and of the tools it waited for (ptxas, iga64)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def row(task, result: dict, wall_s: float, cpu_s: float) -> dict:
    """``result`` (a CLI object) with the sweep's fields."""
    return {**result, "key": task.key, "task": task.describe(), "verdict": verdict(result),
            "wall_s": round(wall_s, 3), "cpu_s": round(cpu_s, 3), "worker": f"{socket.gethostname()}:{os.getpid()}"}


def same_as(first: dict, task) -> dict:
    """The row of ``task`` whose key ``first`` already answered: the same result, no time of its own."""
    return {**first, "file": task.path, "task": task.describe(), "same_as": first["task"]["label"],
            "wall_s": 0.0, "cpu_s": 0.0}


def failure_result(stage: str, message: str, code: str, internal: bool) -> dict:
    """The ``ok: false`` object of a failure outside the engine, shaped as the engine's."""
    return {"ok": False, "error": message,
            "failure": {"stage": stage, "message": message, "code": code, "internal": internal}, "diagnostics": []}


def lost(message: str, code: str = "worker-lost") -> dict:
    """The result of a task whose worker gave no answer (it died, or runs another kdd)."""
    return failure_result("sweep", message, code, internal=True)


def verdict(result: dict) -> dict:
    """``outcome`` (``ok``, ``wrong``: a check that fails, ``refused``: kdd declines the input,
    ``error``: a failure inside kdd, ``lost``: no answer from a worker) and ``class`` (the failure's
    code; for an invalid config, its first error diagnostic's code too)."""
    for part in (result, result.get("check"), result.get("bench")):
        failure = (part or {}).get("failure")
        if failure is not None:
            code = failure["code"]
            if code == "invalid-config":
                first = next((d for d in part.get("diagnostics", ()) if d["severity"] == "error"), None)
                code = f"{code}:{first['code']}" if first else code
            outcome = "lost" if code in LOST else "error" if failure.get("internal") else "refused"
            return {"outcome": outcome, "class": code}
    check = result.get("check")
    if check is not None and not (check["first_bad"] is None if "first_bad" in check else check["ok"]):
        return {"outcome": "wrong", "class": check.get("first_bad") or "mismatch"}
    bench = result.get("bench")
    if bench is not None and not bench["ok"]:       # right at the check shape, wrong at the timed one
        return {"outcome": "wrong", "class": "wrong at the timed shape"}
    return {"outcome": "ok", "class": None}


def _run(task) -> dict:
    from kdd.server.rpc.methods import call

    _FILES.clear()
    _FILES.update(task.files)
    engine = _engine()
    source = {"text": task.text, "path": task.path}
    o = task.options
    out = call(engine, "kdd/compile", {**source, "emit": "stats,asm" if o.stage == "asm" else "stats"})
    if not out["ok"]:
        return out
    if o.stage == "asm":
        out["asm"] = {k: v for k, v in out["asm"].items() if k not in ASM_TEXT}
        out["asm"]["registers"] = {k: v for k, v in out["asm"]["registers"].items() if k != "allocations"}
    elif o.stage == "check":
        out["check"] = call(engine, "kdd/check", {**source, "bisect": o.bisect, "unbounded": o.unbounded})
    elif o.stage == "bench":
        out["check"] = call(engine, "kdd/check", {**source, "device": True})
        if out["check"].get("ok"):
            out["bench"] = call(engine, "kdd/bench", {**source, "runs": o.runs})
    return out


def _engine():
    """This process's engine; it reads ``extends`` parents from the task's files (a worker on another
    machine has none of them on disk), and from disk only for a file the task did not carry."""
    if "engine" not in _ENGINE:
        from kdd.core.engine import Engine
        from kdd.core.spec import read_file

        def read_text(path: str) -> str:
            text = _FILES.get(os.path.normpath(os.path.abspath(path)))
            return text if text is not None else read_file(path)
        _ENGINE["engine"] = Engine(read_text=read_text)
    return _ENGINE["engine"]
