"""Timing a command as a fresh process, and writing a bench script's JSON: what the shell-level benches share."""
from __future__ import annotations

import json
import resource
import subprocess
import time
from pathlib import Path


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list[str], env: dict, ok=(0,)) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the process and of its children) and the stdout of a fresh
    process of ``argv``; an exit status outside ``ok`` stops the run (its time is no figure)."""
    c0, t0 = _children_cpu(), time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if run.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {run.returncode}: {run.stderr[-800:]}")
    return wall, cpu, run.stdout


def write_json(path: str, out: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")
