"""The built kernel and its ABI (seed 000's ``kernel_arg_info_t``): body, arguments, launch geometry.

See ``docs/ir-semantics.md`` ("Kernels") for what each field means to the
interpreter and to code generators.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kdd.core.ir.expr import Var
from kdd.core.ir.stmt import Stmt
from kdd.core.ir.types import Type
from kdd.core.layout.layout import Layout


@dataclass(frozen=True)
class KernelArg:
    """One global buffer of the kernel.

    ``var`` is the ``u64`` IR variable naming the buffer in sends; ``dtype``
    and ``layout`` say how its bytes hold the tensor whose logical dims are
    ``dims`` (``(name, size)`` pairs, ``Problem.tensor_dims`` order for
    src/wei/dst). ``role`` is ``"input"``, ``"output"``, ``"inout"`` (an
    output also read, e.g. by the ``sum`` post-op) or ``"scratch"`` (working
    memory of the kernel, not a result: a split reduction's partial sums and
    arrival counters). ``zero_init``: the kernel accumulates into the buffer
    with atomic adds (split reduction), so the runtime must zero it before the
    launch.
    """

    name: str
    var: Var
    dtype: Type
    layout: Layout
    dims: tuple[tuple[str, int], ...]
    role: str
    zero_init: bool = False

    @property
    def size_bytes(self) -> int:
        return self.layout.size_bytes()

    def to_dict(self) -> dict:
        return {"name": self.name, "dtype": str(self.dtype), "dims": [list(d) for d in self.dims],
                "layout": self.layout.blocks_str([n for n, _ in self.dims]), "role": self.role,
                "zero_init": self.zero_init, "bytes": self.size_bytes}


@dataclass(frozen=True)
class Kernel:
    """A built kernel: ``body`` (a ``Group("kernel", ...)``) plus its ABI and launch geometry.

    ``grid`` is thread groups per dim, ``tg`` SIMD threads per group per dim
    (``thread_id0`` fastest), ``simd`` lanes per SIMD thread, ``reg_bytes``
    bytes of one register row. ``slm_bytes`` is the shared local memory one
    group allocates. ``problem`` and ``config`` are what the kernel was built
    from (the check computes its reference from ``problem``); ``regs`` (the
    registers a thread may take: Xe's GRF mode, sm_90's ``.maxnreg``; None, the
    target's default) and ``fma`` (the multiply instruction) are what code
    generation needs of the config, so it reads no config.
    """

    body: Stmt
    args: tuple[KernelArg, ...]
    grid: tuple[int, int, int]
    tg: tuple[int, int, int]
    simd: int
    target: str
    reg_bytes: int
    slm_bytes: int = 0
    problem: Any = None
    config: Any = None
    regs: int | None = None
    fma: str | None = None

    def arg(self, name: str) -> KernelArg:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(f"kernel has no argument {name!r} (has: {', '.join(a.name for a in self.args)})")

    @property
    def outputs(self) -> tuple[KernelArg, ...]:
        return tuple(a for a in self.args if a.role in ("output", "inout"))

    def to_dict(self) -> dict:
        """The ABI as JSON-ready data (the body is printed separately)."""
        return {"target": self.target, "grid": list(self.grid), "tg": list(self.tg), "simd": self.simd,
                "reg_bytes": self.reg_bytes, "slm_bytes": self.slm_bytes,
                "args": [a.to_dict() for a in self.args]}
