"""The kernel builder (seed 000): problem + config + target -> kernel IR skeleton.

Entry point: :func:`build_kernel`. The pieces, one concept per module:
``kernel`` (the Kernel ABI), ``loop_nest`` (grid, thread group, reduction
loops), ``tile`` (per-thread tiles as matrices), ``loads`` (send
decomposition), ``slm`` (single SLM buffering), ``fma`` (mad/dp4a/dpas/mma
decomposition), ``lanes`` (sm_90 lane distributions), ``elementwise``
(register fills, maps, conversions), ``epilogue`` (post-ops, stores),
``bias_grad`` (bwd_w's bias gradient), ``build`` (the whole kernel).
"""
from .build import build_kernel
from .errors import BuildError
from .kernel import Kernel, KernelArg
from .origin import Origin

__all__ = ["BuildError", "Kernel", "KernelArg", "Origin", "build_kernel"]
