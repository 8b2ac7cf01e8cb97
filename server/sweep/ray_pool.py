"""Tasks on Ray: a local cluster by default, or an existing one; a bounded number in flight; results
handed over as they finish; Ctrl-C cancels what is still running.

``ray.init()`` with no address starts a local cluster on this machine's cores (``--workers N``
starts it with N CPUs), so nothing is set up on a laptop; ``--address auto`` joins the cluster
``ray start`` made here, ``--address ray://HOST:10001`` a remote one through Ray Client. Every node
needs the same kdd installed (a worker checks the generator version a task was keyed with).
"""
from __future__ import annotations

import logging
import socket
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator


class ClusterError(RuntimeError):
    """The cluster cannot run the work: it cannot be reached, or it lacks a resource the tasks need."""


@contextmanager
def ray_session(address: str | None, workers: int | None) -> Iterator[Any]:
    """The ``ray`` module, connected: to ``address``, else to a new local cluster (shut down on exit).
    A process already connected (a test's fixture, a notebook) keeps its connection."""
    try:
        import ray
    except ImportError:
        raise ClusterError("kdd sweep and kdd tune run on Ray: pip install 'kdd[sweep]' "
                           "(tools/setup.sh installs it)") from None
    if ray.is_initialized():
        yield ray
        return
    if address and address != "auto":
        _check_reachable(address)
    try:
        if address:
            ray.init(address=address, logging_level=logging.WARNING)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"cannot start or reach a Ray cluster{f' at {address}' if address else ''}: {exc}") \
            from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """Fail at once when nothing listens at ``[ray://]HOST:PORT`` (Ray itself retries for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"--address {address!r}: write auto, HOST:PORT or ray://HOST:10001")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ClusterError(f"no Ray cluster answers at {address}: {exc.strerror or exc}") from None


def map_unordered(ray, fn: Callable, calls: Iterable[tuple], *, workers: int | None, gpus: float = 0,
                  on_result: Callable[[tuple, Any], None], on_lost: Callable[[tuple, str], None]) -> None:
    """Run ``fn(*args)`` for every ``args`` of ``calls`` as Ray tasks (one CPU each, and ``gpus`` GPUs),
    at most ``workers`` at a time (default: the cluster's CPUs, or GPUs for GPU tasks). Each result
    goes to ``on_result(args, result)`` as it arrives; a task with no result (its worker died, it was
    cancelled, kdd is not importable there) to ``on_lost(args, why)``. On KeyboardInterrupt every task
    still in flight is cancelled before it propagates."""
    resources = ray.cluster_resources()
    if gpus and not resources.get("GPU"):
        raise ClusterError("these tasks need a GPU and the Ray cluster has none")
    limit = workers or max(1, int(resources.get("GPU" if gpus else "CPU", 1)))
    remote = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=0)(fn)
    todo = iter(calls)
    pending: dict[Any, tuple] = {}

    def submit() -> None:
        while len(pending) < limit:
            args = next(todo, None)
            if args is None:
                return
            pending[remote.remote(*args)] = args
    submit()
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=5.0)
            for ref in ready:
                args = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    on_lost(args, f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}")
                else:
                    on_result(args, result)
            submit()
    except KeyboardInterrupt:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:   # noqa: BLE001 - a cluster going down with us cancels them anyway
                pass
        raise


def progress_bar(total: int, what: str):
    """A tqdm bar on stderr when it is a terminal (a bar that does nothing otherwise)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=what, file=sys.stderr, disable=not sys.stderr.isatty(), dynamic_ncols=True)
