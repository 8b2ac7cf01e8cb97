"""Worker processes: a request past its limit is stopped, a dead worker is replaced, and the pool goes on."""
import asyncio
from pathlib import Path

import pytest

from kdd.server.rpc.methods import RpcError
from kdd.server.rpc.workers import WorkerFailed, WorkerPool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLASSIC_CONV = Path(__file__).resolve().parents[1] / "data" / "sm90_conv_classic.kernel.toml"


async def _scenario():
    pool = WorkerPool(size=1, cache_dir=None, time_limit=30)
    try:
        request = {"path": str(EXAMPLES / "gemm_bert.kernel.toml"), "emit": ["ir"]}
        assert (await pool.call("kdd/compile", request))["ok"]
        first_pid = pool.workers[0].process.pid

        with pytest.raises(WorkerFailed) as info:  # the limit stops a compile mid-way, naming its stage
            await pool.call("kdd/compile", {"path": str(CLASSIC_CONV), "emit": ["passes"]},
                            timeout=0.2)
        assert info.value.reason == "timeout" and info.value.stage in ("parse", "build", "passes")
        assert pool.workers[0].process.pid != first_pid

        pool.workers[0].process.kill()  # a worker that dies between requests
        pool.workers[0].process.join(5)
        with pytest.raises(WorkerFailed) as info:
            await pool.call("kdd/compile", request)
        assert info.value.reason == "crash"
        assert (await pool.call("kdd/compile", request))["ok"]  # replaced

        with pytest.raises(RpcError) as bad:
            await pool.call("kdd/nope", {})
        assert bad.value.code == -32601
        dropped = await pool.call("kdd/compile", request, still_wanted=lambda: False)
        assert dropped is None  # superseded before it started: never run
        assert pool.stats()[0]["runs"]["build"] >= 1
    finally:
        pool.close()


def test_time_limit_crash_and_supersede():
    asyncio.run(_scenario())
