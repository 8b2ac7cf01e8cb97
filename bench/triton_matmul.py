"""Triton's tutorial f16 matmul compiled for sm_90 from a cold cache: run by ``bench/compile_vs_triton.py``.

Run with the Python of a throwaway virtual environment holding ``triton``
(never kdd's), in a fresh process with an empty ``TRITON_CACHE_DIR``. The
kernel is the tutorial's (``03-matrix-multiplication``): grouped program
ordering, masked K tail, fp32 accumulator stored as fp16, with the
tutorial's first sm_90 configuration (128x256x64 tiles, group 8, 8 warps,
3 stages). Prints one JSON line: Triton's version, the seconds from
start-up to the cubin, and the PTX and cubin sizes.
"""
import json
import time

START = time.perf_counter()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


@triton.jit
def matmul(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    blocks_m, blocks_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * blocks_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_at = a + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_at = b + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        acc = tl.dot(tl.load(a_at, mask=ks[None, :] < left, other=0.0),
                     tl.load(b_at, mask=ks[:, None] < left, other=0.0), acc)
        a_at += BLOCK_K * stride_ak
        b_at += BLOCK_K * stride_bk
    out_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c + out_m[:, None] * stride_cm + out_n[None, :] * stride_cn, acc.to(tl.float16),
             mask=(out_m[:, None] < M) & (out_n[None, :] < N))


SIGNATURE = ({name: "*fp16" for name in ("a", "b", "c")}
             | {name: "i32" for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                                         "stride_cm", "stride_cn")}
             | {name: "constexpr" for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")})

if __name__ == "__main__":
    source = ASTSource(matmul, SIGNATURE, constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 3})
    print(json.dumps({"triton": triton.__version__, "seconds": time.perf_counter() - START,
                      "ptx_lines": len(compiled.asm["ptx"].splitlines()), "cubin_bytes": len(compiled.asm["cubin"])}))
